"""Episodes: a snapshot plus the append-only log of the calls made in it.

The state is derived: the snapshot's image, with each logged step's row images applied in order. A process
keeps the episodes it serves materialised (``cache``); any process can serve any episode because each step
first catches its copy up with the log, under the episode's row lock. Replaying row images (not the calls)
means a later change to tool code can never change a past episode (docs/adr/0001-episode-engine.md).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from world_app.checksum import world_content_checksum
from world_app.episodes.cache import HotEpisode, episode_cache
from world_app.episodes.diff import world_diff
from world_app.episodes.errors import EpisodeClosed, EpisodeError, EpisodeNotFound, EpisodeStepAborted
from world_app.episodes.images import SnapshotImage, snapshot_image
from world_app.episodes.world_db import changes_apply, changes_take, world_bound, world_connection_open
from world_app.models import Episode, EpisodeStep, WorldSnapshot
from world_app.routers import EPISODE_ALIAS

EpisodeRef = Episode | uuid.UUID | str


def _episode_id(episode: EpisodeRef) -> uuid.UUID:
    if isinstance(episode, Episode):
        return episode.pk
    if isinstance(episode, uuid.UUID):
        return episode
    try:
        return uuid.UUID(str(episode))
    except ValueError:
        raise EpisodeNotFound(episode) from None


def _episode_get(episode: EpisodeRef) -> Episode:
    episode_id = _episode_id(episode)
    try:
        return Episode.objects.get(pk=episode_id)
    except Episode.DoesNotExist:
        raise EpisodeNotFound(episode_id) from None


def _episode_lock(episode_id: uuid.UUID) -> Episode:
    """The episode's row, locked until the end of the transaction: one step at a time, across processes."""
    try:
        return Episode.objects.select_for_update().get(pk=episode_id)
    except Episode.DoesNotExist:
        raise EpisodeNotFound(episode_id) from None


def _hot_new(episode_id: uuid.UUID, snapshot_id: int) -> HotEpisode:
    image = snapshot_image(snapshot_id)
    return HotEpisode(
        episode_id=episode_id,
        snapshot_id=snapshot_id,
        world_now=image.world_now,
        conn=world_connection_open(image.image),
    )


@contextmanager
def _hot_episode(episode_id: uuid.UUID) -> Iterator[HotEpisode]:
    """This process's copy of the episode, held by the calling thread (not yet caught up with the log)."""
    hot = episode_cache.checkout(episode_id)
    if hot is None:
        snapshot_id = Episode.objects.filter(pk=episode_id).values_list("snapshot_id", flat=True).first()
        if snapshot_id is None:
            raise EpisodeNotFound(episode_id)
        hot = episode_cache.add_and_checkout(_hot_new(episode_id, snapshot_id))
    try:
        with hot.lock:
            yield hot
    finally:
        episode_cache.checkin(hot)


def _catch_up(hot: HotEpisode) -> None:
    """Apply the steps logged since this copy last looked; start again from the snapshot if it diverged.

    It diverges when a step it took was rolled back in Postgres after SQLite committed it (an enclosing
    transaction of the caller, a failed commit): that step's id is then no longer in the log.
    """
    steps = EpisodeStep.objects.filter(episode_id=hot.episode_id).order_by("seq")
    heads = list(steps.filter(seq__gte=max(hot.seq, 1)).values_list("id", "seq"))
    if hot.seq and (not heads or heads[0] != (hot.last_step_id, hot.seq)):
        hot.rewind(world_connection_open(snapshot_image(hot.snapshot_id).image))
        heads = list(steps.values_list("id", "seq"))
    if not heads or heads[-1][1] == hot.seq:
        return
    pending = list(steps.filter(seq__gt=hot.seq).values_list("id", "seq", "changes"))
    hot.touched |= changes_apply(hot.conn, [changes for _id, _seq, changes in pending])
    hot.last_step_id, hot.seq = pending[-1][0], pending[-1][1]


@transaction.atomic
def episode_create(*, snapshot: WorldSnapshot | None = None, label: str = "") -> Episode:
    """A new episode on ``snapshot`` (None: the latest), its private world ready in this process."""
    if snapshot is None:
        # world_app.snapshots imports this package; importing it at call time keeps either import order working.
        from world_app.snapshots import snapshot_latest

        snapshot = snapshot_latest()
    episode = Episode.objects.create(snapshot=snapshot, label=label)
    episode_cache.checkin(episode_cache.add_and_checkout(_hot_new(episode.pk, snapshot.pk)))
    return episode


def episode_step(*, episode: EpisodeRef, name: str, arguments: dict, fn: Callable[[], Any]) -> EpisodeStep:
    """Run ``fn`` in the episode's private world (one SQLite transaction) and log it with the rows it wrote.

    If ``fn`` raises, its writes are rolled back, nothing is logged and the error propagates.
    """
    episode_id = _episode_id(episode)
    with _hot_episode(episode_id) as hot:
        if connections[EPISODE_ALIAS].connection is hot.conn:
            # Its writes would land in the enclosing block's transaction, which may still roll them back.
            raise EpisodeError("a step cannot run inside episode_world() or another step of the same episode")
        world_committed = closed = False
        try:
            with transaction.atomic(using=DEFAULT_DB_ALIAS):
                locked = _episode_lock(episode_id)
                if locked.status != Episode.Status.OPEN:
                    closed = True
                    raise EpisodeClosed(episode_id)
                _catch_up(hot)
                with world_bound(hot.conn, now=hot.world_now), transaction.atomic(using=EPISODE_ALIAS):
                    started = time.perf_counter()
                    result = fn()
                    duration_ms = (time.perf_counter() - started) * 1000
                    if connections[EPISODE_ALIAS].needs_rollback:
                        raise EpisodeStepAborted(f"{name}: the call marked the episode's transaction for rollback")
                    changes = changes_take(hot.conn)
                    step = EpisodeStep.objects.create(
                        episode_id=episode_id,
                        seq=locked.step_count + 1,
                        name=name,
                        arguments=arguments,
                        result=result,
                        is_error=isinstance(result, dict) and "error" in result,
                        changes=changes,
                        duration_ms=round(duration_ms, 3),
                    )
                    Episode.objects.filter(pk=episode_id).update(step_count=step.seq, last_activity_at=timezone.now())
                # SQLite commits first: a deferred foreign-key failure then still undoes the log entry.
                world_committed = True
        except BaseException:
            if world_committed or closed:
                # The world took a step the log did not (rebuild from the log next time), or it is of no more use.
                episode_cache.discard(episode_id)
            raise
        hot.seq, hot.last_step_id = step.seq, step.pk
        hot.touched.update((change["table"], change["pk"]) for change in changes)
    return step


@contextmanager
def episode_world(episode: EpisodeRef) -> Iterator[None]:
    """Run reads (selectors, diffs) in the episode's current world; logs nothing.

    Whatever the block writes is rolled back, so the world can never drift from its log.
    """
    episode_id = _episode_id(episode)
    if not Episode.objects.filter(pk=episode_id).exists():
        episode_cache.discard(episode_id)  # purged: another process may still hold its world
        raise EpisodeNotFound(episode_id)
    with _hot_episode(episode_id) as hot:
        _catch_up(hot)
        with world_bound(hot.conn, now=hot.world_now), transaction.atomic(using=EPISODE_ALIAS):
            yield
            transaction.set_rollback(True, using=EPISODE_ALIAS)


def _hot_diff(hot: HotEpisode) -> dict:
    image = snapshot_image(hot.snapshot_id).image
    return world_diff(conn=hot.conn, image=image, touched=hot.touched, now=hot.world_now)


def _state_checksum(conn: sqlite3.Connection, snapshot: SnapshotImage, diff: dict) -> str:
    """The world's content checksum; a world no different from its snapshot has the snapshot's (no scan)."""
    if not any(diff.values()):
        return snapshot.content_checksum
    with world_bound(conn, now=snapshot.world_now):
        return world_content_checksum(using=EPISODE_ALIAS)


def episode_diff(episode: EpisodeRef) -> dict:
    """Field-level diff of the episode's world against its snapshot (created, updated, deleted rows)."""
    found = _episode_get(episode)
    if found.status == Episode.Status.CLOSED and found.final_diff is not None:
        episode_cache.discard(found.pk)  # closed by another process: drop this process's copy
        return found.final_diff
    with _hot_episode(found.pk) as hot:
        _catch_up(hot)
        return _hot_diff(hot)


def episode_state_checksum(episode: EpisodeRef) -> str:
    """The world content checksum of the episode's current world."""
    found = _episode_get(episode)
    if found.status == Episode.Status.CLOSED and found.final_checksum:
        episode_cache.discard(found.pk)
        return found.final_checksum
    with _hot_episode(found.pk) as hot:
        _catch_up(hot)
        return _state_checksum(hot.conn, snapshot_image(hot.snapshot_id), _hot_diff(hot))


def _episode_close(episode_id: uuid.UUID, *, idle_before: datetime | None = None) -> tuple[Episode, bool]:
    """Close one episode (with ``idle_before``: only if idle since then); returns it and whether this closed it."""
    with _hot_episode(episode_id) as hot, transaction.atomic():
        # Lock order everywhere: this process's hold on the episode, then its row.
        episode = _episode_lock(episode_id)
        closing = episode.status == Episode.Status.OPEN and (
            idle_before is None or episode.last_activity_at < idle_before
        )
        if closing:
            _catch_up(hot)
            episode.final_diff = _hot_diff(hot)
            episode.final_checksum = _state_checksum(hot.conn, snapshot_image(hot.snapshot_id), episode.final_diff)
            episode.status = Episode.Status.CLOSED
            episode.closed_at = timezone.now()
            episode.save(update_fields=["final_diff", "final_checksum", "status", "closed_at"])
    if episode.status == Episode.Status.CLOSED:
        episode_cache.discard(episode_id)
    return episode, closing


def episode_close(episode: EpisodeRef) -> Episode:
    """Store the final diff and checksum, close the episode and free its world in this process."""
    episode_id = _episode_id(episode)
    closed = Episode.objects.filter(pk=episode_id, status=Episode.Status.CLOSED).first()
    return closed or _episode_close(episode_id)[0]


def episodes_close_idle(*, idle_seconds: int | None = None) -> int:
    """Close the open episodes idle longer than ``idle_seconds`` (default: settings); returns how many."""
    idle = settings.EPISODE_IDLE_TIMEOUT_S if idle_seconds is None else idle_seconds
    cutoff = timezone.now() - timedelta(seconds=idle)
    idle_ids = Episode.objects.filter(status=Episode.Status.OPEN, last_activity_at__lt=cutoff).values_list(
        "id", flat=True
    )
    closed = 0
    for episode_id in list(idle_ids):
        try:
            closed += _episode_close(episode_id, idle_before=cutoff)[1]
        except EpisodeNotFound:
            continue  # purged meanwhile
    return closed


@transaction.atomic
def episodes_purge_closed(*, closed_before_days: int) -> int:
    """Delete closed episodes (and their steps) closed more than ``closed_before_days`` days ago."""
    cutoff = timezone.now() - timedelta(days=closed_before_days)
    doomed = Episode.objects.filter(status=Episode.Status.CLOSED, closed_at__lt=cutoff)
    ids = list(doomed.values_list("id", flat=True))
    doomed.delete()
    for episode_id in ids:
        episode_cache.discard(episode_id)
    return len(ids)


def episode_state_from_log(episode: EpisodeRef) -> dict:
    """Rebuild the episode from storage alone (snapshot image + logged row images) in a throwaway world."""
    found = _episode_get(episode)
    image = snapshot_image(found.snapshot_id)
    steps = list(EpisodeStep.objects.filter(episode_id=found.pk).order_by("seq").values_list("changes", flat=True))
    conn = world_connection_open(image.image)
    try:
        touched = changes_apply(conn, steps)
        diff = world_diff(conn=conn, image=image.image, touched=touched, now=image.world_now)
        checksum = _state_checksum(conn, image, diff)
    finally:
        conn.close()
    return {
        "episode": str(found.pk),
        "snapshot_version": image.version,
        "status": found.status,
        "step_count": len(steps),
        "state_checksum": checksum,
        "diff": diff,
    }
