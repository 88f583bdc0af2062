"""The trainer-time API: a GRPO job opens an episode per rollout on a release row, calls tools, and gets its reward.

Thin views over ``trainer_bridge.trainer_services``. Scopes: ``episodes`` opens and drives episodes (and the row's
split must be readable: train with ``train:read``, holdout with ``eval:read``); finishing and batch scoring take
``reward`` or ``episodes``. A row or an episode the token may not see answers 404, exactly like one that does not
exist, so a training token learns nothing about the holdout. Errors leave in the project's one JSON shape.
"""

from __future__ import annotations

import logging
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from trainer_bridge.api.trainer_serializers import (
    BatchInputSerializer,
    BatchItemInputSerializer,
    BatchOutputSerializer,
    EpisodeOpenInputSerializer,
    EpisodeOpenOutputSerializer,
    FinishInputSerializer,
    RewardOutputSerializer,
    ToolCallInputSerializer,
    ToolCallOutputSerializer,
)
from trainer_bridge.auth import HasScope, TokenApiView, token_scopes
from trainer_bridge.models import ApiToken
from trainer_bridge.trainer_models import TrainerEpisode
from trainer_bridge.trainer_rows import row_contract, row_max_turns, row_tools_held
from trainer_bridge.trainer_services import (
    TrainerEpisodeError,
    release_row_for_scopes,
    reward_options_make,
    trainer_episode_finish,
    trainer_episode_get,
    trainer_episode_open,
    trainer_episode_result,
    trainer_episode_tool_call,
)
from world_app.api.exceptions import Conflict, _flatten, error_body
from world_app.api.parsers import StrictJSONParser
from world_app.api.views import BAD_INPUT, error_response
from world_app.credentials import Credential
from world_app.episodes import EpisodeClosed, EpisodeError, EpisodeNotFound
from world_app.episodes.owners import credential_of

logger = logging.getLogger(__name__)
TAGS = ["trainer"]


AUTH_ERRORS = {
    401: error_response("No token, or a bad or revoked one: send `Authorization: Bearer <token>`."),
    403: error_response("The token lacks the scope this endpoint needs."),
}
EPISODE_NOT_FOUND = {404: error_response("No such episode for this token (or its split is not readable by it).")}
EPISODE_ID = OpenApiParameter(
    "episode_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The episode's id, from the open call."
)
TOOL_NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The tool's name.")


def _is_token(request: Request) -> bool:
    return isinstance(request.auth, ApiToken)


def _credential(request: Request) -> Credential:
    credential = credential_of(auth=request.auth, user=request.user)
    if credential is None:  # the permission classes let only authenticated requests in
        raise exceptions.NotAuthenticated()
    return credential


def _not_found(episode_id: Any) -> exceptions.NotFound:
    return exceptions.NotFound(f"no episode {str(episode_id)[:60]!r} for this token", code="episode_not_found")


def _episode_or_404(request: Request, episode_id: Any, *, held: bool = False) -> TrainerEpisode:
    found = trainer_episode_get(
        episode_id=episode_id, credential=_credential(request), scopes=token_scopes(request), held=held
    )
    if found is None:
        raise _not_found(episode_id)
    return found


def _error_code(exc: Exception) -> str:
    if isinstance(exc, EpisodeClosed):
        return "episode_closed"
    return getattr(exc, "code", "conflict")


def _conflict(exc: Exception) -> Conflict:
    return Conflict(str(exc) or "the episode refuses this request in its current state", code=_error_code(exc))


class TrainerEpisodeOpenApi(TokenApiView):
    parser_classes = [StrictJSONParser]
    permission_classes = [HasScope("episodes")]

    @extend_schema(
        operation_id="trainer_episodes_open",
        summary="Open an episode for a release row (one per rollout)",
        description="A private world on the snapshot version the row was frozen with. Needs `episodes`, and the "
        "row's split readable by the token: train rows with `train:read` (or `eval:read`), holdout rows with "
        "`eval:read`. A row the token may not read is a 404, like a missing one. The tool schemas come with their "
        "`tools_sha256`; an open that sends the digest of the schemas it holds gets `tools` left out when they are "
        "the row's.",
        request=EpisodeOpenInputSerializer,
        responses={
            201: EpisodeOpenOutputSerializer,
            **BAD_INPUT,
            404: error_response("No such row in a frozen release, for this token."),
            409: error_response("The row's snapshot version is not published on this server."),
            **AUTH_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request: Request) -> Response:
        data = EpisodeOpenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row = release_row_for_scopes(
            release=data.validated_data["release"], row_id=data.validated_data["row_id"], scopes=token_scopes(request)
        )
        if row is None:
            raise exceptions.NotFound("no such row in a frozen release for this token", code="row_not_found")
        try:
            opened = trainer_episode_open(
                row=row, token=request.auth if _is_token(request) else None, credential=_credential(request)
            )
        except TrainerEpisodeError as exc:
            raise _conflict(exc) from None
        tools, tools_sha256 = row_tools_held(row)
        body = {
            "episode_id": opened.episode_id,
            "release": row.release.slug,
            "row_id": row.pk,
            "split": row.split,
            "snapshot_version": row.content.get("snapshot_version"),
            "instruction": row.content.get("instruction", ""),
            "tools_sha256": tools_sha256,
            "max_turns": row_max_turns(row),
            **row_contract(row),
        }
        if data.validated_data.get("tools_sha256") != tools_sha256:  # a trainer that holds them gets the digest
            body["tools"] = tools
        return Response(EpisodeOpenOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class TrainerEpisodeDetailApi(TokenApiView):
    permission_classes = [HasScope("episodes", "reward")]

    @extend_schema(
        operation_id="trainer_episodes_retrieve",
        summary="An episode's status, and its reward once finished",
        parameters=[EPISODE_ID],
        responses={200: RewardOutputSerializer, **EPISODE_NOT_FOUND, **AUTH_ERRORS},
        tags=TAGS,
    )
    def get(self, request: Request, episode_id: str) -> Response:
        found = _episode_or_404(request, episode_id)
        return Response(RewardOutputSerializer(trainer_episode_result(found)).data)


class TrainerToolCallApi(TokenApiView):
    parser_classes = [StrictJSONParser]
    permission_classes = [HasScope("episodes")]

    @extend_schema(
        operation_id="trainer_episodes_tools_call",
        summary="Call a tool in the episode",
        description='The body is `{"arguments": {...}}`. Invalid arguments, an unknown tool name and refusals by '
        "the business rules are the tool's result (`is_error: true`, status 200) and are logged as steps: the "
        "agent is meant to read them, and the rubric sees them.",
        parameters=[EPISODE_ID, TOOL_NAME],
        request=ToolCallInputSerializer,
        responses={
            200: ToolCallOutputSerializer,
            **BAD_INPUT,
            **EPISODE_NOT_FOUND,
            409: error_response("The episode is finished or closed: it takes no more tool calls."),
            **AUTH_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request: Request, episode_id: str, name: str) -> Response:
        found = _episode_or_404(request, episode_id, held=True)  # this process's copy: no read per call
        if not isinstance(request.data, dict):
            raise serializers.ValidationError({"body": ['the body must be a JSON object: {"arguments": {...}}']})
        data = ToolCallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            step = trainer_episode_tool_call(
                trainer_episode=found, name=name, arguments=data.validated_data.get("arguments")
            )
        except EpisodeNotFound:  # purged since this process held it
            raise _not_found(episode_id) from None
        except (TrainerEpisodeError, EpisodeError) as exc:
            raise _conflict(exc) from None
        body = {
            "result": step.result,
            "is_error": step.is_error,
            "step": {"seq": step.seq, "tool": step.name, "duration_ms": step.duration_ms},
        }
        return Response(ToolCallOutputSerializer(body).data)


class TrainerEpisodeFinishApi(TokenApiView):
    parser_classes = [StrictJSONParser]
    permission_classes = [HasScope("reward", "episodes")]

    @extend_schema(
        operation_id="trainer_episodes_finish",
        summary="Finish the episode with a final answer; get the reward and each criterion's verdict",
        description="Judged against the rubric frozen in the release row. `llm` criteria need a configured LLM "
        "judge: without one they stay `pending`, `final` is false, `reward` is null and `partial_reward` covers "
        "the judged criteria (`note` says so). Finishing again with the same answer returns the same judgement.",
        parameters=[EPISODE_ID],
        request=FinishInputSerializer,
        responses={
            200: RewardOutputSerializer,
            **BAD_INPUT,
            **EPISODE_NOT_FOUND,
            409: error_response("Already finished with another final answer."),
            **AUTH_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request: Request, episode_id: str) -> Response:
        found = _episode_or_404(request, episode_id, held=True)  # finishing re-reads it under its lock
        data = FinishInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            finished = trainer_episode_finish(
                trainer_episode=found,
                final_answer=data.validated_data["final_answer"],
                messages=data.validated_data.get("messages"),
                options=reward_options_make(
                    episode_id=found.episode_id, **(data.validated_data.get("reward_options") or {})
                ),
            )
        except (TrainerEpisodeError, EpisodeError) as exc:
            raise _conflict(exc) from None
        return Response(RewardOutputSerializer(trainer_episode_result(finished)).data)


def _item_error(index: int, episode_id: Any, code: str, message: str, fields: dict | None = None) -> dict:
    return {
        "index": index,
        "episode_id": None if episode_id is None else str(episode_id)[:100],
        "ok": False,
        "reward": None,
        "partial_reward": None,
        "passed": None,
        "final": None,
        "note": "",
        "verdicts": [],
        "trajectory_hash": "",
        "reward_options": {},
        "error": error_body(code, message, fields)["error"],
    }


class RewardBatchApi(TokenApiView):
    parser_classes = [StrictJSONParser]
    permission_classes = [HasScope("reward", "episodes")]

    @extend_schema(
        operation_id="rewards_batch",
        summary="Score a whole GRPO group (or any batch) of episodes in one call",
        description="Each item finishes one episode, in its own transaction: a bad item (unknown episode, invalid "
        "fields, already finished with another answer) gets `ok: false` and an `error` in its result while the "
        "others are scored. Results come back in the order of the items.",
        request=BatchInputSerializer,
        responses={200: BatchOutputSerializer, **BAD_INPUT, **AUTH_ERRORS},
        tags=TAGS,
    )
    def post(self, request: Request) -> Response:
        data = BatchInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        shared = data.validated_data.get("reward_options") or {}
        results = [self._score(request, index, item, shared) for index, item in enumerate(data.validated_data["items"])]
        failed = sum(1 for r in results if not r["ok"])
        body = {"results": results, "scored": len(results) - failed, "failed": failed}
        return Response(BatchOutputSerializer(body).data)

    def _score(self, request: Request, index: int, raw: Any, shared_options: dict) -> dict:
        episode_id = raw.get("episode_id") if isinstance(raw, dict) else None
        item = BatchItemInputSerializer(data=raw)
        if not item.is_valid():
            fields = _flatten(item.errors)
            summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())
            return _item_error(index, episode_id, "invalid", f"Invalid input. {summary}", fields)
        valid = item.validated_data
        found = trainer_episode_get(
            episode_id=valid["episode_id"],
            credential=_credential(request),
            scopes=token_scopes(request),
        )
        if found is None:
            return _item_error(index, valid["episode_id"], "episode_not_found", "no such episode for this token")
        try:
            # Its own transaction (inside the service): one item's failure never undoes another's reward.
            options = valid.get("reward_options") or shared_options
            finished = trainer_episode_finish(
                trainer_episode=found,
                final_answer=valid["final_answer"],
                messages=valid.get("messages"),
                options=reward_options_make(episode_id=found.episode_id, **options),
            )
        except (TrainerEpisodeError, EpisodeError) as exc:
            return _item_error(index, valid["episode_id"], _error_code(exc), str(exc) or "refused")
        except Exception:
            # One item's crash must not cost the group its rewards; the log keeps the traceback.
            logger.exception("scoring episode %s failed", valid["episode_id"])
            return _item_error(index, valid["episode_id"], "internal_error", "scoring this item failed; retry it")
        result = trainer_episode_result(finished)
        return {
            "index": index,
            "episode_id": str(finished.episode_id),
            "ok": True,
            "reward": result["reward"],
            "partial_reward": result["partial_reward"],
            "passed": result["passed"],
            "final": result["final"],
            "note": result["note"],
            "verdicts": result["verdicts"],
            "trajectory_hash": result["trajectory_hash"],
            "reward_options": result["reward_options"],
            "error": None,
        }
