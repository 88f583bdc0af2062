"""The episode views of the API: open one, read it, its log of steps, its diff and state checksum, close it."""

from __future__ import annotations

import uuid

from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from world_app.api.pagination import ApiPagination, paginated
from world_app.api.parsers import StrictJSONParser
from world_app.api.selectors import (
    MAX_VERSION,
    episode_exists,
    episode_get,
    episode_step_list,
    snapshot_checksum_of_episode,
    snapshot_get,
    snapshot_versions,
)
from world_app.api.views import (
    AUTH_ERRORS,
    BAD_INPUT,
    EPISODE_ID,
    EPISODE_NOT_FOUND,
    PAGE_PARAMETERS,
    EpisodesAccess,
    error_response,
    owned_episode_id,
)
from world_app.episodes import episode_close, episode_create, episode_diff, episode_state_checksum
from world_app.models import Episode

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
            409: error_response("No snapshot is published yet."),
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
        return Response(_episode_data(request, owned_episode_id(request, episode_id)))


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
        found_id = owned_episode_id(request, episode_id)
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
        found_id = owned_episode_id(request, episode_id)
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
        found_id = owned_episode_id(request, episode_id)
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
        found_id = owned_episode_id(request, episode_id)
        closed = episode_close(found_id)
        data = {
            "episode": _episode_data(request, found_id),
            "state_checksum": closed.final_checksum,
            "diff": closed.final_diff,
        }
        return Response(data)
