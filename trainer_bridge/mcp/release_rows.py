"""MCP task mode for release rows: the provider ``trainer_bridge.mcp.tasks`` asks for (``settings.MCP_TASK_PROVIDER``).

An MCP episode opened for a frozen release row IS a trainer episode: opened, driven and judged by the trainer
API's services (``trainer_bridge.trainer_services``), with the same scopes. A row is opened with ``episodes``
and its split readable (train rows with ``train:read``, holdout rows only with ``eval:read``); a row the
credential may not read is refused like a missing one. ``finish`` judges the episode against the row's frozen
rubric and returns exactly what ``POST /api/v1/rollouts/episodes/<id>/finish/`` returns, so a trajectory earns
the same reward through MCP as through the trainer API.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from trainer_bridge.api.trainer_serializers import RewardOutputSerializer
from trainer_bridge.mcp.tasks import EpisodeTask, TaskRefused
from trainer_bridge.models import ApiToken
from trainer_bridge.trainer_models import TrainerEpisode, TrainerEpisodeStatus
from trainer_bridge.trainer_rows import row_contract, row_max_turns, row_tools
from trainer_bridge.trainer_services import (
    TrainerEpisodeError,
    release_row_for_scopes,
    reward_options_make,
    trainer_episode_finish,
    trainer_episode_get,
    trainer_episode_open,
    trainer_episode_result,
)
from world_app.credentials import Credential
from world_app.episodes import EpisodeClosed, EpisodeError

ROW_NOT_FOUND = "no such row in a frozen release for this token"


def _token_of(credential: Credential) -> ApiToken | None:
    """The API token behind a token credential (``token:<pk>``), recorded on the trainer episode as the API does."""
    kind, _, pk = credential.key.partition(":")
    if kind != "token" or not pk.isdigit():
        return None
    return ApiToken.objects.filter(pk=int(pk)).first()


def _episode_task(trainer_episode: TrainerEpisode) -> EpisodeTask:
    row = trainer_episode.row
    content = row.content or {}
    contract = row_contract(row)
    return EpisodeTask(
        episode_id=trainer_episode.episode_id,
        title=f"{row.release.slug} row {row.pk}",
        instruction=content.get("instruction", ""),
        snapshot_version=content.get("snapshot_version"),
        tools=tuple(row_tools(row)),
        ref={
            "release": row.release.slug,
            "row_id": row.pk,
            "split": row.split,
            "task_type": row.task_type,
            "max_turns": row_max_turns(row),
            "contract_version": contract["contract_version"],
            "limits": contract["limits"],
        },
        finished=trainer_episode.status == TrainerEpisodeStatus.FINISHED,
    )


class ReleaseRowTasks:
    """Opens MCP episodes for release rows and judges them through the trainer API's services."""

    def open(self, *, credential: Credential, spec: Mapping[str, Any]) -> EpisodeTask:
        row = release_row_for_scopes(release=str(spec["release"]), row_id=spec["row_id"], scopes=credential.scopes)
        if row is None:
            raise TaskRefused(ROW_NOT_FOUND, status=404, code="row_not_found")
        try:
            opened = trainer_episode_open(row=row, token=_token_of(credential), credential=credential)
        except TrainerEpisodeError as exc:
            raise TaskRefused(str(exc), status=409, code=exc.code) from None
        return _episode_task(opened)

    def task_of(self, *, credential: Credential, episode_id: uuid.UUID) -> EpisodeTask | None:
        found = trainer_episode_get(episode_id=episode_id, credential=credential, scopes=credential.scopes)
        return None if found is None else _episode_task(found)

    def finish(self, *, credential: Credential, episode_id: uuid.UUID, final_answer: str) -> dict[str, Any]:
        """The judgement as the trainer API's finish answers it (rubric dropout off, as an API finish without
        ``reward_options``)."""
        found = trainer_episode_get(episode_id=episode_id, credential=credential, scopes=credential.scopes)
        if found is None:
            raise TaskRefused(f"no episode {episode_id} for this token", code="episode_not_found")
        try:
            finished = trainer_episode_finish(
                trainer_episode=found,
                final_answer=final_answer,
                options=reward_options_make(episode_id=found.episode_id),
            )
        except (TrainerEpisodeError, EpisodeError) as exc:
            code = "episode_closed" if isinstance(exc, EpisodeClosed) else getattr(exc, "code", "conflict")
            raise TaskRefused(str(exc) or "the episode refuses to finish", status=409, code=code) from None
        data = RewardOutputSerializer(trainer_episode_result(finished)).data
        return json.loads(json.dumps(data, cls=DjangoJSONEncoder))
