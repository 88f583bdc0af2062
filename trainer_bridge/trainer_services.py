"""The trainer-time API's logic: open an episode for a frozen release row, run tools in it, judge it when finished.

Judgement reads the rubric frozen in the row (never the task's current rubric) through the one judgement,
``rubrics_app.judgement.trajectory_judge``: ``llm`` criteria through the LLM judge when one is configured.
Without a judge they stay ``pending``: the reward is then not final (``reward`` is None, ``partial_reward`` is
over the judged criteria) and the answer says so.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, F, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from rubrics_app.judgement import (
    Judgement,
    JudgeOptions,
    Trajectory,
    judgement_fold,
    rubric_of,
    trajectory_judge,
)
from rubrics_app.models import CriterionKind
from trainer_bridge.held import Held
from trainer_bridge.models import ApiToken, Release, ReleaseRow, ReleaseStatus
from trainer_bridge.selectors import release_row_criteria, release_row_get, visible_splits
from trainer_bridge.trainer_calls import call_record, calls_held
from trainer_bridge.trainer_judge import judge_config_for_trainer
from trainer_bridge.trainer_models import TrainerEpisode, TrainerEpisodeStatus
from world_app.credentials import Credential
from world_app.episodes import EpisodeClosed, EpisodeNotFound, episode_close, episode_create, episode_world_free
from world_app.episodes.owners import episodes_reachable
from world_app.models import Episode, EpisodeStep, WorldSnapshot
from world_app.tools.steps import call_tool_step

logger = logging.getLogger(__name__)

FINAL_ANSWER_MAX = 100_000
# A condition true of every row that makes the statement's own transaction commit without waiting for the disk.
UNHURRIED = RawSQL("set_config('synchronous_commit', 'off', true) = 'off'", [], output_field=BooleanField())


class TrainerEpisodeError(Exception):
    """A trainer-time request that the episode's state refuses; ``code`` is the API error code."""

    code = "conflict"


class EpisodeFinished(TrainerEpisodeError):
    code = "episode_finished"


class RowSnapshotMissing(TrainerEpisodeError):
    code = "snapshot_not_published"


# --- selectors ------------------------------------------------------------------------------------------------


# The trainer episodes open in this process, with their release, row (and so rubric) and owner: a tool call reads
# none of them again. Only ``status`` can go stale (finished by another process), and the engine refuses a step on
# the closed world episode, which ``trainer_episode_tool_call`` then reports as finished.
_open_episodes = Held(4096)


# Frozen release rows (with their release and version) and snapshots (without their image) this process has read:
# both are immutable once they exist and never deleted (``release_delete_draft`` refuses a frozen release; episodes
# protect their snapshot), so an open reads neither again (the row's content holds the rubric and the release the
# 40 KB of tool schemas: reading them was half an open's time).
_frozen_rows = Held(4096)
_snapshots = Held(64)


def release_row_for_scopes(*, release: str, row_id: int | str, scopes: Iterable[str]) -> ReleaseRow | None:
    """The row of a frozen release, or None when it does not exist or the scopes may not see its split.

    Both cases read the same to the caller, so a training token learns nothing about the holdout.
    """
    key = (release, str(row_id))
    row = _frozen_rows.get(key)
    if row is None:
        row = release_row_get(release=release, row_id=row_id)
        if row is not None:
            _frozen_rows.put(key, row)
    if row is None or row.split not in visible_splits(set(scopes)):
        return None
    return row


def trainer_episodes_visible(*, credential: Credential, scopes: Iterable[str]) -> QuerySet[TrainerEpisode]:
    """The trainer episodes a requester may drive: those its credential opened (all for an admin session), on
    the splits it may read."""
    episodes = TrainerEpisode.objects.select_related("release", "row").filter(split__in=visible_splits(set(scopes)))
    if credential.any_episode:
        return episodes
    return episodes.filter(episode__in=episodes_reachable(credential))


def _visible(trainer_episode: TrainerEpisode, *, credential: Credential, scopes: Iterable[str]) -> bool:
    """``trainer_episodes_visible``'s rule on one loaded episode (``owner_id``: its world episode's owner)."""
    if trainer_episode.split not in visible_splits(set(scopes)):
        return False
    if credential.any_episode:
        return True
    return credential.user_id is not None and trainer_episode.owner_id == credential.user_id


def trainer_episode_get(
    *, episode_id: Any, credential: Credential, scopes: Iterable[str], held: bool = False
) -> TrainerEpisode | None:
    """The trainer episode if the requester may drive it, else None.

    ``held``: an open episode may come from this process's memory (its ``status`` possibly stale: only for tool
    calls, which the closed world episode refuses anyway); otherwise it is read from the database.
    """
    try:
        found = uuid.UUID(str(episode_id))
    except (TypeError, ValueError, AttributeError):
        return None
    trainer_episode = _open_episodes.get(found) if held else None
    if trainer_episode is None:
        trainer_episode = (
            TrainerEpisode.objects.select_related("release", "row")
            .annotate(owner_id=F("episode__owner_id"))
            .filter(pk=found)
            .first()
        )
        if trainer_episode is None:
            return None
        if trainer_episode.status == TrainerEpisodeStatus.OPEN:
            _open_episodes.put(found, trainer_episode)
        else:
            _open_episodes.drop(found)
    return trainer_episode if _visible(trainer_episode, credential=credential, scopes=scopes) else None


# --- services -------------------------------------------------------------------------------------------------


def trainer_episode_open(*, row: ReleaseRow, token: ApiToken | None, credential: Credential) -> TrainerEpisode:
    """A fresh world episode on the snapshot version the row was frozen with, linked to the row, owned by
    ``credential`` (the token's, or a session user's).

    Both rows (the world episode and the trainer's link) go in one statement: one round trip, no transaction.
    """
    version = (row.content or {}).get("snapshot_version")
    snapshot = _snapshots.get(version) if version else None
    if snapshot is None and version:
        snapshot = WorldSnapshot.objects.defer("image").filter(version=version).first()
        if snapshot is not None:
            _snapshots.put(version, snapshot)
    if snapshot is None:
        raise RowSnapshotMissing(f"snapshot version {version!r} of this row is not published here")
    opened: list[TrainerEpisode] = []

    def link(episode: Episode) -> list[TrainerEpisode]:
        opened.append(TrainerEpisode(episode=episode, release=row.release, row=row, split=row.split, token=token))
        return opened

    episode_create(
        snapshot=snapshot,
        label=f"release {row.release.slug} row {row.pk}"[:200],
        owner_id=credential.user_id,
        credential=credential.key,
        simulated_user=(row.content or {}).get("simulated_user") or {},
        linked=link,
    )
    trainer_episode = opened[0]
    trainer_episode.owner_id = credential.user_id
    trainer_episode._calls = {}  # opened here: every call this process serves is recorded (``calls_held``)
    # Held once committed (at once in autocommit): its tool calls then read nothing but the step they append.
    transaction.on_commit(lambda: _open_episodes.put(trainer_episode.pk, trainer_episode))
    return trainer_episode


def trainer_episode_tool_call(*, trainer_episode: TrainerEpisode, name: str, arguments: Any) -> EpisodeStep:
    """Run a tool in the episode and log the step; a refusal or unknown tool is the tool's result, not an error."""
    if trainer_episode.status == TrainerEpisodeStatus.FINISHED:
        raise EpisodeFinished("the episode is finished: it takes no more tool calls")
    try:
        step = call_tool_step(trainer_episode.episode_id, name, arguments)
    except (EpisodeClosed, EpisodeNotFound):
        trainer_episode._calls = None
        _open_episodes.drop(trainer_episode.pk)
        status = TrainerEpisode.objects.filter(pk=trainer_episode.pk).values_list("status", flat=True).first()
        if status == TrainerEpisodeStatus.FINISHED:  # finished meanwhile, maybe by another process
            raise EpisodeFinished("the episode is finished: it takes no more tool calls") from None
        raise
    except BaseException:
        trainer_episode._calls = None  # a step this process answered may be lost (EpisodeStepsLost): read the log
        raise
    call_record(trainer_episode, step)
    return step


def row_trajectory(*, trainer_episode: TrainerEpisode, final_answer: str, episode: Episode | None = None) -> Trajectory:
    """The episode's trajectory on its row: every tool call the trainer made is a logged step (``episode``: its
    world episode's row when the caller holds it, e.g. as ``episode_close`` returned it)."""
    content = trainer_episode.row.content or {}
    held = calls_held(trainer_episode, episode) if isinstance(episode, Episode) and episode.closed_at else None
    if held is not None:
        return Trajectory.of(
            instruction=content.get("instruction", ""),
            snapshot_version=content.get("snapshot_version"),
            tool_calls=held,
            final_answer=final_answer,
            episode=episode,
            simulated_user=episode.simulated_user,
        )
    return Trajectory.from_episode(
        episode=episode if episode is not None else trainer_episode.episode_id,
        instruction=content.get("instruction", ""),
        snapshot_version=content.get("snapshot_version"),
        final_answer=final_answer,
    )


def reward_options_make(*, episode_id: Any, rubric_dropout: float = 0.0, seed: int | None = None) -> JudgeOptions:
    """The judgement's options for one episode: rubric dropout off at 0; its seed defaults to one from the id."""
    if not rubric_dropout:
        return JudgeOptions()
    if seed is None:
        seed = uuid.UUID(str(episode_id)).int % 2**63
    return JudgeOptions(dropout=rubric_dropout, dropout_seed=seed)


def trainer_episode_judge(
    *,
    trainer_episode: TrainerEpisode,
    final_answer: str,
    client=None,
    options: JudgeOptions | None = None,
    episode: Episode | None = None,
) -> Judgement:
    """The judgement of the episode against the row's frozen rubric; no lock held (model calls are slow).

    llm criteria go to the LLM judge (``judge_config_for_trainer``); without one they stay ``pending``.
    """
    rubric = rubric_of(release_row_criteria(trainer_episode.row))
    llm = any(c.kind == CriterionKind.LLM for c in rubric)
    return trajectory_judge(
        rubric=rubric,
        trajectory=row_trajectory(trainer_episode=trainer_episode, final_answer=final_answer, episode=episode),
        judge_config=judge_config_for_trainer() if llm else None,
        client=client,
        options=options,
    )


def _pending_note(result: Judgement) -> str:
    if result.final:
        return ""
    pending, errors = result.pending, result.errors
    parts = []
    if pending:
        parts.append(f"{pending} criteria pending (no LLM judge ruled on them)")
    if errors:
        parts.append(f"{errors} criteria could not be judged (judge errors)")
    return (
        "; ".join(parts) + ": the reward is partial; `reward` is null and `partial_reward` covers the judged "
        "criteria only"
    )


def trainer_episode_finish(
    *,
    trainer_episode: TrainerEpisode,
    final_answer: str,
    messages: list | None = None,
    client=None,
    options: JudgeOptions | None = None,
) -> TrainerEpisode:
    """Judge the episode against the row's frozen rubric, store the verdicts and reward, close the world episode.

    Serialised with the episode's tool calls: the world episode is closed first (under the engine's lock order,
    the episode's hold then its row), and only then does the judge read its log. A step appends only while the
    episode is open, so a call racing finish was either logged before the close (and is judged) or is refused
    (``EpisodeClosed``). Finishing twice with the same answer returns the first judgement (a retried request is
    safe, a closed episode is judged again if the first judging failed); with another answer, or while another
    request is finishing it with another answer, it raises ``EpisodeFinished``.
    """
    if trainer_episode.status == TrainerEpisodeStatus.FINISHED:
        return _already_finished(trainer_episode, final_answer)
    _open_episodes.drop(trainer_episode.pk)
    # The closed world stays in this process for the judge's state criteria (not rebuilt from the log for them).
    try:
        closed = episode_close(trainer_episode.episode_id, keep_world=True)
    except BaseException:
        trainer_episode._calls = None  # e.g. deferred steps lost at the close: a retry reads the log
        raise
    try:
        judgement = trainer_episode_judge(
            trainer_episode=trainer_episode, final_answer=final_answer, client=client, options=options, episode=closed
        )
    finally:
        episode_world_free(trainer_episode.episode_id)
    return _finish_store(
        trainer_episode=trainer_episode, final_answer=final_answer, messages=messages, judgement=judgement
    )


def _already_finished(trainer_episode: TrainerEpisode, final_answer: str) -> TrainerEpisode:
    if trainer_episode.final_answer == final_answer:
        return trainer_episode
    raise EpisodeFinished("the episode was already finished with another final answer")


def _finish_store(
    *, trainer_episode: TrainerEpisode, final_answer: str, messages: list | None, judgement: Judgement
) -> TrainerEpisode:
    """Store the judgement in one guarded UPDATE (autocommitted: no transaction, no lock held across round trips).

    Only an open episode is written (``status = open`` in the statement), so of two finishes racing the first
    stores its answer and the other reads it back: the same answer returns it, another is refused.
    """
    fields = {
        "final_answer": final_answer,
        "messages": messages or [],
        "verdicts": judgement.verdicts,
        "reward": judgement.final_reward,
        "partial_reward": judgement.partial_reward,
        "passed": judgement.passed,
        "final": judgement.final,
        "trajectory_hash": judgement.trajectory_hash,
        "reward_options": judgement.options,
        "status": TrainerEpisodeStatus.FINISHED,
        "finished_at": timezone.now(),
    }
    stored = TrainerEpisode.objects.filter(pk=trainer_episode.pk, status=TrainerEpisodeStatus.OPEN)
    if settings.EPISODE_LOG_ASYNC_COMMIT and not connection.in_atomic_block:
        # Its own transaction commits without waiting for the WAL flush, as the episode's close and steps do
        # (ADR 0001: a Postgres crash may lose the last moment of them; a retried finish then judges again).
        stored = stored.filter(UNHURRIED)
    stored = stored.update(**fields)
    if not stored:  # finished meanwhile (another request, maybe another process): its answer decides
        return _already_finished(
            TrainerEpisode.objects.select_related("row", "release").get(pk=trainer_episode.pk), final_answer
        )
    for name, value in fields.items():
        setattr(trainer_episode, name, value)
    return trainer_episode


def trainer_episode_result(trainer_episode: TrainerEpisode) -> dict:
    """The judgement of a finished episode as the API reports it."""
    verdicts = trainer_episode.verdicts or []
    result = judgement_fold(verdicts, trajectory_hash=trainer_episode.trajectory_hash) if verdicts else None
    pending = result.pending if result else 0
    return {
        "episode_id": trainer_episode.episode_id,
        "release": trainer_episode.release.slug,
        "row_id": trainer_episode.row_id,
        "status": trainer_episode.status,
        "reward": trainer_episode.reward,
        "partial_reward": trainer_episode.partial_reward,
        "passed": trainer_episode.passed,
        "final": trainer_episode.final,
        "pending": pending,
        "note": _pending_note(result) if result else "",
        "verdicts": verdicts,
        "trajectory_hash": trainer_episode.trajectory_hash,
        "reward_options": trainer_episode.reward_options or {},
    }


def release_get_frozen(*, slug: str) -> Release | None:
    return Release.objects.filter(slug=slug, status=ReleaseStatus.FROZEN).first()
