"""Thin API views over the episode engine and the tool registry: validate, call one service or selector, render.

Errors of every kind leave through ``exceptions.api_exception_handler`` in one JSON shape. A tool's own refusal
or a validation error of its arguments is not an HTTP error: it is the tool's result (200, ``is_error: true``),
because the agent must read it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from world_app.api.negotiation import AcceptHeaderNegotiation
from world_app.api.pagination import ApiPagination, paginated
from world_app.api.parsers import StrictJSONParser
from world_app.api.selectors import (
    MAX_VERSION,
    episode_exists,
    episode_get,
    episode_step_list,
    snapshot_checksum_of_episode,
    snapshot_get,
    snapshot_list,
    snapshot_versions,
)
from world_app.api.services import episode_tool_call
from world_app.credentials import Credential
from world_app.episodes import episode_close, episode_create, episode_diff, episode_state_checksum
from world_app.episodes.owners import credential_of, episode_reachable
from world_app.models import Episode, WorldSnapshot
from world_app.tools import all_tools, get_tool, tool_schemas

SCHEMA_FORMATS = ("openai", "openai-strict", "mcp", "registry")
JSON_TYPE_NAMES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


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


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ApiErrorSerializer, description=description)


AUTH_ERRORS = {
    401: _error("No credentials, or bad ones: send `Authorization: Bearer <token>` or a session cookie."),
    403: _error("Authenticated but not allowed (a session POST without a CSRF token, for one)."),
}
EPISODE_NOT_FOUND = {404: _error("No episode with that id (a malformed id included).")}
BAD_INPUT = {400: _error("Invalid input: `error.fields` names each bad field.")}


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


def _owned_episode_id(request: Request, raw: str) -> uuid.UUID:
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
        responses={200: SnapshotOutputSerializer, 404: _error("No snapshot with that version."), **AUTH_ERRORS},
        tags=["snapshots"],
    )
    def get(self, request: Request, version: str) -> Response:
        # isdigit() alone accepts "²", which int() refuses.
        snapshot = snapshot_get(version=int(version)) if version.isascii() and version.isdigit() else None
        if snapshot is None:
            raise exceptions.NotFound(f"no snapshot version {version!r}", code="snapshot_not_found")
        return Response(SnapshotOutputSerializer(snapshot, context={"request": request}).data)


# --- episodes -------------------------------------------------------------------------------------------------


class EpisodeOutputSerializer(serializers.ModelSerializer):
    snapshot_version = serializers.IntegerField()
    urls = serializers.SerializerMethodField()

    class Meta:
        model = Episode
        ref_name = "Episode"
        fields = (
            "id",
            "snapshot_version",
            "status",
            "label",
            "step_count",
            "created_at",
            "last_activity_at",
            "closed_at",
            "urls",
        )

    def get_urls(self, episode: Episode) -> dict[str, str]:
        request = self.context["request"]
        kwargs = {"episode_id": episode.pk}
        names = {
            "self": "episode-detail",
            "tools": "tool-list",
            "steps": "episode-steps",
            "diff": "episode-diff",
            "state_checksum": "episode-state-checksum",
            "close": "episode-close",
        }
        urls = {key: reverse(f"api:{name}", kwargs=kwargs) for key, name in names.items() if key != "tools"}
        urls["tools"] = reverse("api:tool-list")
        urls["call_tool"] = reverse("api:episode-tool-call", kwargs={**kwargs, "name": "TOOL_NAME"})
        return {key: request.build_absolute_uri(path) for key, path in urls.items()}


def _episode_data(request: Request, episode_id: uuid.UUID) -> dict:
    return EpisodeOutputSerializer(episode_get(episode_id=episode_id), context={"request": request}).data


class EpisodeCreateApi(APIView):
    permission_classes = [EpisodesAccess]
    parser_classes = [StrictJSONParser]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeCreateInput"

        snapshot_version = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=MAX_VERSION,
            help_text="The snapshot to start from; by default the latest published one.",
        )
        label = serializers.CharField(
            required=False, allow_blank=True, max_length=200, default="", help_text="Who opens it and why."
        )

        def validate_snapshot_version(self, value: int) -> int:
            if snapshot_get(version=value) is None:
                published = ", ".join(str(v) for v in snapshot_versions()) or "none yet"
                raise serializers.ValidationError(f"no snapshot version {value}; published versions: {published}")
            return value

    @extend_schema(
        operation_id="episodes_create",
        summary="Open an episode: a private world made from a snapshot",
        description="Writes made by tools in the episode are seen by that episode only, never by another episode "
        "or the live world. 409 `snapshot_not_published` when no snapshot exists yet.",
        request=InputSerializer,
        responses={
            201: EpisodeOutputSerializer,
            **BAD_INPUT,
            409: _error("No snapshot is published yet."),
            **AUTH_ERRORS,
        },
        tags=["episodes"],
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = serializer.validated_data.get("snapshot_version")
        snapshot = snapshot_get(version=version) if version is not None else None
        credential = request.episode_credential
        episode = episode_create(
            snapshot=snapshot,
            label=serializer.validated_data["label"],
            owner_id=credential.user_id,
            credential=credential.key,
        )
        return Response(_episode_data(request, episode.pk), status=status.HTTP_201_CREATED)


class EpisodeDetailApi(APIView):
    permission_classes = [EpisodesAccess]

    @extend_schema(
        operation_id="episodes_retrieve",
        summary="An episode's status and step count",
        parameters=[EPISODE_ID],
        responses={200: EpisodeOutputSerializer, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=["episodes"],
    )
    def get(self, request: Request, episode_id: str) -> Response:
        return Response(_episode_data(request, _owned_episode_id(request, episode_id)))


# --- tools ----------------------------------------------------------------------------------------------------


class ToolListApi(APIView):
    content_negotiation_class = AcceptHeaderNegotiation

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolListQuery"

        format = serializers.ChoiceField(
            choices=SCHEMA_FORMATS,
            default="openai",
            help_text="openai: `tools` entries of the OpenAI API; openai-strict: the same for `strict: true` "
            "function calling (every argument required, optionals nullable, maps as {name, value} lists); compact: "
            "the same tools in fewer tokens (shorter parameter texts, no keywords the tools enforce); mcp: MCP "
            "`tools/list` entries; registry: name, group, description, input_schema.",
        )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolList"

        format = serializers.CharField()
        count = serializers.IntegerField()
        tools = serializers.ListField(child=serializers.DictField(), help_text="One schema per tool, in order.")

    @extend_schema(
        operation_id="tools_list",
        summary="The tool schemas, ready for an LLM API",
        parameters=[InputSerializer],
        responses={200: OutputSerializer, **BAD_INPUT, **AUTH_ERRORS},
        tags=["tools"],
    )
    def get(self, request: Request) -> Response:
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        schemas = tool_schemas(query.validated_data["format"])
        return Response({"format": query.validated_data["format"], "count": len(schemas), "tools": schemas})


class ToolDetailApi(APIView):
    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolDetail"

        name = serializers.CharField()
        group = serializers.ChoiceField(choices=("search", "read", "compute", "write"))
        summary = serializers.CharField()
        description = serializers.CharField()
        input_schema = serializers.DictField(help_text="The JSON Schema of the tool's arguments.")

    @extend_schema(
        operation_id="tools_retrieve",
        summary="One tool: its description and the JSON Schema of its arguments",
        parameters=[TOOL_NAME],
        responses={200: OutputSerializer, 404: _error("No tool with that name."), **AUTH_ERRORS},
        tags=["tools"],
    )
    def get(self, request: Request, name: str) -> Response:
        found = get_tool(name)
        if found is None:
            raise exceptions.NotFound(f"there is no tool named {name!r}", code="unknown_tool")
        return Response({**found.as_dict(), "summary": found.summary})


def _unstorable_text(value: Any, path: str = "body") -> str | None:
    """Where a string holds a NUL or an unpaired surrogate (the episode log, jsonb, cannot keep either)."""
    if isinstance(value, str):
        if "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value):
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unstorable_text(key, path) or _unstorable_text(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _unstorable_text(item, f"{path}[{index}]")
            if found:
                return found
    return None


class EpisodeToolCallApi(APIView):
    permission_classes = [EpisodesAccess]
    parser_classes = [StrictJSONParser]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolCallOutcome"

        episode = serializers.UUIDField()
        seq = serializers.IntegerField(help_text="The step's number in the episode's log (1, 2, ...).")
        tool = serializers.CharField()
        result = serializers.DictField(help_text='The tool\'s answer; a refusal is `{"error": {code, message}}`.')
        is_error = serializers.BooleanField(help_text="True when the tool refused or the arguments were invalid.")
        duration_ms = serializers.FloatField(help_text="Time the tool took inside the episode's world.")

    @extend_schema(
        operation_id="episodes_tools_call",
        summary="Call a tool in the episode; the call is appended to its log",
        description="The body is the tool's arguments, a JSON object (`{}` or an empty body for none). Invalid "
        "arguments and refusals by the business rules come back as the tool's result with `is_error: true` and "
        "status 200: the agent is meant to read them. A body that is not a JSON object is a 400.",
        parameters=[EPISODE_ID, TOOL_NAME],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: OutputSerializer,
            **BAD_INPUT,
            404: _error("No such episode, or no such tool."),
            409: _error("The episode is closed: it takes no more steps."),
            **AUTH_ERRORS,
        },
        tags=["episodes"],
    )
    def post(self, request: Request, episode_id: str, name: str) -> Response:
        found_id = _owned_episode_id(request, episode_id)
        if get_tool(name) is None:
            raise exceptions.NotFound(
                f"there is no tool named {name!r}; GET /api/v1/tools/ lists them", code="unknown_tool"
            )
        arguments = request.data
        if not isinstance(arguments, dict):
            kind = JSON_TYPE_NAMES.get(type(arguments), "null")
            raise serializers.ValidationError(
                {"body": [f"the body must be a JSON object of the tool's named arguments, not {kind}"]}
            )
        bad_text = _unstorable_text(arguments)
        if bad_text:
            raise serializers.ValidationError(
                {bad_text: ["text may not contain NUL (\\u0000) characters or unpaired surrogates"]}
            )
        step = episode_tool_call(episode_id=found_id, name=name, arguments=arguments)
        data = {
            "episode": found_id,
            "seq": step.seq,
            "tool": step.name,
            "result": step.result,
            "is_error": step.is_error,
            "duration_ms": step.duration_ms,
        }
        return Response(self.OutputSerializer(data).data)


# --- the log, the diff, the checksum, closing ------------------------------------------------------------------


class EpisodeStepListApi(APIView):
    permission_classes = [EpisodesAccess]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeStepQuery"

        changes = serializers.BooleanField(
            default=False, help_text="Also return the row images each step wrote (what a rebuild replays)."
        )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeStepBrief"

        seq = serializers.IntegerField()
        tool = serializers.CharField(source="name")
        arguments = serializers.DictField()
        result = serializers.JSONField()
        is_error = serializers.BooleanField()
        duration_ms = serializers.FloatField()
        created_at = serializers.DateTimeField()

    class OutputWithChangesSerializer(OutputSerializer):
        class Meta:
            ref_name = "EpisodeStep"

        changes = serializers.ListField(child=serializers.DictField(), required=False)

    @extend_schema(
        operation_id="episodes_steps_list",
        summary="The episode's log: every tool call made in it, oldest first",
        parameters=[EPISODE_ID, InputSerializer, *PAGE_PARAMETERS],
        responses={200: paginated(OutputWithChangesSerializer), **BAD_INPUT, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=["episodes"],
    )
    def get(self, request: Request, episode_id: str) -> Response:
        found_id = _owned_episode_id(request, episode_id)
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if not episode_exists(episode_id=found_id):
            raise exceptions.NotFound(f"no episode {found_id}", code="episode_not_found")
        with_changes = query.validated_data["changes"]
        pager = ApiPagination()
        page = pager.paginate_queryset(episode_step_list(episode_id=found_id, with_changes=with_changes), request)
        output = self.OutputWithChangesSerializer if with_changes else self.OutputSerializer
        return pager.get_paginated_response(output(page, many=True).data)


DIFF_SCHEMA = inline_serializer(
    "EpisodeDiff",
    fields={
        "created": serializers.ListField(child=serializers.DictField(), help_text="[{table, model, pk, row}]"),
        "updated": serializers.ListField(
            child=serializers.DictField(), help_text="[{table, model, pk, fields: {name: {before, after}}}]"
        ),
        "deleted": serializers.ListField(child=serializers.DictField(), help_text="[{table, model, pk, row}]"),
    },
)


class EpisodeDiffApi(APIView):
    permission_classes = [EpisodesAccess]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeDiffOutcome"

        episode = serializers.UUIDField()
        status = serializers.CharField()
        step_count = serializers.IntegerField()
        counts = serializers.DictField(child=serializers.IntegerField(), help_text="Rows created, updated, deleted.")
        diff = DIFF_SCHEMA

    @extend_schema(
        operation_id="episodes_diff",
        summary="The episode's world against its snapshot, field by field",
        parameters=[EPISODE_ID],
        responses={200: OutputSerializer, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=["episodes"],
    )
    def get(self, request: Request, episode_id: str) -> Response:
        found_id = _owned_episode_id(request, episode_id)
        diff = episode_diff(found_id)
        episode = episode_get(episode_id=found_id)
        data = {
            "episode": found_id,
            "status": episode.status,
            "step_count": episode.step_count,
            "counts": {kind: len(rows) for kind, rows in diff.items()},
            "diff": diff,
        }
        return Response(data)


class EpisodeStateChecksumApi(APIView):
    permission_classes = [EpisodesAccess]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeStateChecksum"

        episode = serializers.UUIDField()
        state_checksum = serializers.CharField(help_text="The world content checksum of the episode's world now.")
        snapshot_checksum = serializers.CharField(help_text="The same checksum of the snapshot it started from.")
        changed = serializers.BooleanField(help_text="Whether the episode's world differs from its snapshot.")

    @extend_schema(
        operation_id="episodes_state_checksum",
        summary="The content checksum of the episode's world",
        parameters=[EPISODE_ID],
        responses={200: OutputSerializer, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=["episodes"],
    )
    def get(self, request: Request, episode_id: str) -> Response:
        found_id = _owned_episode_id(request, episode_id)
        checksum = episode_state_checksum(found_id)
        snapshot_checksum = snapshot_checksum_of_episode(episode_id=found_id)
        data = {
            "episode": found_id,
            "state_checksum": checksum,
            "snapshot_checksum": snapshot_checksum,
            "changed": checksum != snapshot_checksum,
        }
        return Response(data)


class EpisodeCloseApi(APIView):
    permission_classes = [EpisodesAccess]
    parser_classes = [StrictJSONParser]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EpisodeClosed"

        episode = EpisodeOutputSerializer()
        state_checksum = serializers.CharField(help_text="The final world's content checksum.")
        diff = DIFF_SCHEMA

    @extend_schema(
        operation_id="episodes_close",
        summary="Close the episode: store and return its final diff and checksum",
        description="Closing twice is harmless: a closed episode answers with what it stored. After closing, a tool "
        "call on it is a 409.",
        parameters=[EPISODE_ID],
        request=None,
        responses={200: OutputSerializer, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=["episodes"],
    )
    def post(self, request: Request, episode_id: str) -> Response:
        found_id = _owned_episode_id(request, episode_id)
        closed = episode_close(found_id)
        data = {
            "episode": _episode_data(request, found_id),
            "state_checksum": closed.final_checksum,
            "diff": closed.final_diff,
        }
        return Response(data)
