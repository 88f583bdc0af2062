"""Thin API views over the episode engine and the tool registry: validate, call one service or selector, render.

This module holds what the views share (the error shape and the path parameters for the OpenAPI document, the
``episodes`` scope and the episode a credential may reach) and the snapshot views; ``views_episodes`` the
episodes, their log, diff, checksum and closing; ``views_tools`` the tool list and the tool calls.

Errors of every kind leave through ``exceptions.api_exception_handler`` in one JSON shape. A tool's own refusal
or a validation error of its arguments is not an HTTP error: it is the tool's result (200, ``is_error: true``),
because the agent must read it.
"""

from __future__ import annotations

import uuid

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from world_app.api.pagination import ApiPagination, paginated
from world_app.api.selectors import snapshot_get, snapshot_list
from world_app.credentials import Credential
from world_app.episodes.owners import credential_of, episode_reachable
from world_app.models import WorldSnapshot
from world_app.tools import all_tools

# --- the error shape, for the OpenAPI document --------------------------------------------------------------


class ApiErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable: invalid, not_authenticated, episode_closed, ...")
    message = serializers.CharField(help_text="What went wrong, for a person.")


# "fields" would shadow Serializer.fields as a class attribute, so it is declared this way.
ApiErrorDetailSerializer._declared_fields["fields"] = serializers.DictField(
    child=serializers.ListField(child=serializers.CharField()),
    help_text='Per input field, its errors: {"label": ["Ensure this field has no more than 200 characters."]}.',
)


class ApiErrorSerializer(serializers.Serializer):
    error = ApiErrorDetailSerializer()


def error_response(description: str) -> OpenApiResponse:
    return OpenApiResponse(ApiErrorSerializer, description=description)


AUTH_ERRORS = {
    401: error_response("No credentials, or bad ones: send `Authorization: Bearer <token>` or a session cookie."),
    403: error_response("Authenticated but not allowed (a session POST without a CSRF token, for one)."),
}
EPISODE_NOT_FOUND = {404: error_response("No episode with that id (a malformed id included).")}
BAD_INPUT = {400: error_response("Invalid input: `error.fields` names each bad field.")}


# --- path parameters ------------------------------------------------------------------------------------------

EPISODE_ID = OpenApiParameter(
    "episode_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The episode's id (a UUID)."
)
SNAPSHOT_VERSION = OpenApiParameter(
    "version", OpenApiTypes.INT, OpenApiParameter.PATH, description="The snapshot's version number (1, 2, ...)."
)
TOOL_NAME = OpenApiParameter(
    "name",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="The tool's name, as `GET /api/v1/tools/` lists it.",
    enum=[t.name for t in all_tools()],
)


PAGE_PARAMETERS = [
    OpenApiParameter("limit", OpenApiTypes.INT, description="Items per page (default 50, at most 500)."),
    OpenApiParameter("offset", OpenApiTypes.INT, description="Items to skip, from the first."),
]


def _episode_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        shown = raw[:60].replace("\x00", "\\0")
        raise exceptions.NotFound(f"no episode {shown!r}: an episode id is a UUID", code="episode_not_found") from None


def request_credential(request: Request) -> Credential | None:
    return credential_of(auth=request.auth, user=request.user)


class EpisodesAccess(permissions.BasePermission):
    """The ``episodes`` scope: a token holding it, or a user granted ``world_app.open_episode``."""

    message = "This credential lacks the scope: needs episodes."

    def has_permission(self, request, view) -> bool:
        credential = request_credential(request)
        if credential is None or not credential.may_open_episodes:
            return False
        request.episode_credential = credential
        return True


def owned_episode_id(request: Request, raw: str) -> uuid.UUID:
    """The episode's id when this request's credential may reach it; otherwise the same 404 as a missing one."""
    found_id = _episode_id(raw)
    if not episode_reachable(credential=request.episode_credential, episode_id=found_id):
        raise exceptions.NotFound(f"no episode {raw[:60]!r} for this credential", code="episode_not_found")
    return found_id


# --- snapshots ------------------------------------------------------------------------------------------------


class SnapshotOutputSerializer(serializers.ModelSerializer):
    total_entities = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = WorldSnapshot
        ref_name = "Snapshot"
        fields = (
            "version",
            "note",
            "content_checksum",
            "image_sha256",
            "schema_fingerprint",
            "image_bytes",
            "world_now",
            "entity_counts",
            "total_entities",
            "created_at",
            "url",
        )

    def get_total_entities(self, snapshot: WorldSnapshot) -> int:
        return sum(snapshot.entity_counts.values())

    def get_url(self, snapshot: WorldSnapshot) -> str:
        path = reverse("api:snapshot-detail", kwargs={"version": snapshot.version})
        return self.context["request"].build_absolute_uri(path)


class SnapshotListApi(APIView):
    @extend_schema(
        operation_id="snapshots_list",
        summary="List the published world snapshots, newest first",
        parameters=PAGE_PARAMETERS,
        responses={200: paginated(SnapshotOutputSerializer), **AUTH_ERRORS},
        tags=["snapshots"],
    )
    def get(self, request: Request) -> Response:
        pager = ApiPagination()
        page = pager.paginate_queryset(snapshot_list(), request, view=self)
        data = SnapshotOutputSerializer(page, many=True, context={"request": request}).data
        return pager.get_paginated_response(data)


class SnapshotDetailApi(APIView):
    @extend_schema(
        operation_id="snapshots_retrieve",
        summary="One published world snapshot",
        parameters=[SNAPSHOT_VERSION],
        responses={200: SnapshotOutputSerializer, 404: error_response("No snapshot with that version."), **AUTH_ERRORS},
        tags=["snapshots"],
    )
    def get(self, request: Request, version: str) -> Response:
        # isdigit() alone accepts "²", which int() refuses.
        snapshot = snapshot_get(version=int(version)) if version.isascii() and version.isdigit() else None
        if snapshot is None:
            raise exceptions.NotFound(f"no snapshot version {version!r}", code="snapshot_not_found")
        return Response(SnapshotOutputSerializer(snapshot, context={"request": request}).data)
