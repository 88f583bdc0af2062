"""The client's errors: ``ApiError`` and one subclass per status class, each carrying the API's error body
(``code``, ``message``, ``fields``), and ``TransportError`` when the server cannot be reached. Standard library only."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """An error answer of the API: its status and the body's ``{"error": {code, message, fields}}``."""

    def __init__(self, status: int, code: str, message: str, fields: dict | None = None, body: Any = None):
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.body = body
        detail = f" {self.fields}" if self.fields else ""
        super().__init__(f"HTTP {status} {code}: {message}{detail}")


class ValidationError(ApiError):
    """400: the request's fields were refused; ``fields`` names each one."""


class AuthenticationError(ApiError):
    """401: no token, or an unknown or revoked one."""


class PermissionDeniedError(ApiError):
    """403: the token lacks the scope."""


class NotFoundError(ApiError):
    """404: no such release, row or episode, or the token may not see it (holdout for a training token)."""


class ConflictError(ApiError):
    """409: the resource's state refuses it (a finished episode, an unpublished snapshot)."""


class ServerError(ApiError):
    """5xx, after the retries ran out."""


class TransportError(Exception):
    """The server could not be reached (after the retries), or it answered something that is not the API."""


_ERRORS_BY_STATUS = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
}


def api_error(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        body = raw[:2000].decode("utf-8", "replace")
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code, message, fields = str(error.get("code", "error")), str(error.get("message", "")), error.get("fields")
    else:
        code, message, fields = "error", str(body)[:500] if body else f"HTTP {status}", None
    cls = _ERRORS_BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, code, message, fields if isinstance(fields, dict) else None, body)
