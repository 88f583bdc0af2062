"""One JSON shape for every API error: ``{"error": {"code", "message", "fields"}}``.

Domain errors of the episode engine become 404s and 409s here, so views never translate them by hand.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from world_app.episodes import EpisodeClosed, EpisodeNotFound, SnapshotNotPublished

logger = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the resource's current state."
    default_code = "conflict"


def _translated(exc: Exception) -> Exception:
    if isinstance(exc, EpisodeNotFound):
        return exceptions.NotFound(str(exc), code="episode_not_found")
    if isinstance(exc, EpisodeClosed):
        return Conflict(str(exc), code="episode_closed")
    if isinstance(exc, SnapshotNotPublished):
        return Conflict(str(exc), code="snapshot_not_published")
    if isinstance(exc, Http404):
        return exceptions.NotFound(*exc.args)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(*exc.args)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return exceptions.ParseError(f"the body is larger than the {limit:,} bytes allowed", code="body_too_large")
    return exc


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as ``{"a.b": ["..."], "items[0].c": [...]}``."""
    if isinstance(detail, dict):
        fields: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            fields.update(_flatten(value, name))
        return fields
    if isinstance(detail, list) and any(isinstance(item, dict | list) for item in detail):
        fields = {}
        for index, item in enumerate(detail):
            fields.update(_flatten(item, f"{prefix}[{index}]"))
        return fields
    messages = [str(item) for item in detail] if isinstance(detail, list) else [str(detail)]
    return {prefix or "non_field_errors": messages} if messages else {}


def _code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str):
        return codes
    return exc.default_code


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def api_exception_handler(exc: Exception, context: dict) -> Response:
    exc = _translated(exc)
    if not isinstance(exc, exceptions.APIException):
        # Never an HTML page or a traceback to an API client; the log keeps the traceback.
        logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
        set_rollback()
        body = error_body("internal_error", "The server failed to handle the request; nothing was changed.")
        return Response(body, status=status.HTTP_500_INTERNAL_SERVER_ERROR)

    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = f"{int(exc.wait)}"
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())
        body = error_body("invalid", f"Invalid input. {summary}".strip(), fields)
    else:
        body = error_body(_code(exc), str(exc.detail))
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)
