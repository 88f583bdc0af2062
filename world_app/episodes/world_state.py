"""Looking into an episode's world: run code inside it (``episode_world``; ``scratch_world`` for a throwaway episode of
a snapshot), what it changed against its snapshot (``episode_diff``, ``episode_world_diff``), its content checksum,
and its state rebuilt from the log alone (``episode_state_from_log``, the check that a restart loses nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import transaction

from world_app.episodes.cache import HotEpisode, episode_cache
from world_app.episodes.diff import diff_of, touched_rows
from world_app.episodes.engine import (
    EpisodeRef,
    _episode_get,
    _episode_id,
    _head_of,
    _hot_episode,
    _hot_sync,
    _log_head,
    episode_log_settle,
)
from world_app.episodes.errors import EpisodeError
from world_app.episodes.images import snapshot_image
from world_app.episodes.lifecycle import _hot_rows, _state_checksum, episode_close, episode_create
from world_app.episodes.world_db import (
    PENDING_CHANGES_SQL,
    changes_apply,
    world_bound,
    world_connection_open,
)
from world_app.models import Episode, EpisodeStep, WorldSnapshot
from world_app.routers import EPISODE_ALIAS

_bound_hot: ContextVar[HotEpisode | None] = ContextVar("episode_world_hot", default=None)


@contextmanager
def episode_world(episode: EpisodeRef) -> Iterator[None]:
    """Run reads (selectors, diffs) in the episode's current world; logs nothing.

    Whatever the block writes is rolled back, so the world can never drift from its log.
    """
    episode_id = _episode_id(episode)
    with _hot_episode(episode_id) as hot:
        _hot_sync(hot, _log_head(episode_id))
        token = _bound_hot.set(hot)
        try:
            with world_bound(hot.conn, now=hot.world_now), transaction.atomic(using=EPISODE_ALIAS):
                yield
                transaction.set_rollback(True, using=EPISODE_ALIAS)
        finally:
            _bound_hot.reset(token)


@contextmanager
def scratch_world(snapshot: WorldSnapshot, *, label: str) -> Iterator[Episode]:
    """A new episode of ``snapshot`` whose world the block reads (``episode_world``), closed afterwards: the way to
    look at a snapshot's world (families, the library's entity check, the world rules) without keeping an episode."""
    episode = episode_create(snapshot=snapshot, label=label)
    try:
        with episode_world(episode):
            yield episode
    finally:
        episode_close(episode)


def episode_world_diff() -> dict:
    """Inside ``episode_world()``: the diff of the world as it is now against its snapshot, the block's own
    (not yet rolled back) writes included; the shape of ``episode_diff``."""
    hot = _bound_hot.get()
    if hot is None:
        raise EpisodeError("episode_world_diff() runs inside an episode_world() block")
    pending = {(table, pk) for table, pk in hot.conn.execute(PENDING_CHANGES_SQL).fetchall()}
    image = snapshot_image(hot.snapshot_id).image
    return diff_of(touched_rows(conn=hot.conn, image=image, touched=set(hot.touched) | pending, now=hot.world_now))


def _hot_diff(hot: HotEpisode) -> dict:
    return diff_of(_hot_rows(hot))


def episode_diff(episode: EpisodeRef) -> dict:
    """Field-level diff of the episode's world against its snapshot (created, updated, deleted rows)."""
    found = _episode_get(episode)
    if found.status == Episode.Status.CLOSED and found.final_diff is not None:
        episode_cache.discard(found.pk)  # closed by another process: drop this process's copy
        return found.final_diff
    with _hot_episode(found.pk) as hot:
        _hot_sync(hot, _head_of(found))
        return _hot_diff(hot)


def episode_state_checksum(episode: EpisodeRef) -> str:
    """The world content checksum of the episode's current world."""
    found = _episode_get(episode)
    if found.status == Episode.Status.CLOSED and found.final_checksum:
        episode_cache.discard(found.pk)
        return found.final_checksum
    with _hot_episode(found.pk) as hot:
        _hot_sync(hot, _head_of(found))
        rows = _hot_rows(hot)
        return _state_checksum(snapshot_image(hot.snapshot_id), rows, diff_of(rows))


def episode_state_from_log(episode: EpisodeRef) -> dict:
    """Rebuild the episode from storage alone (snapshot image + logged row images) in a throwaway world."""
    episode_log_settle(_episode_id(episode))
    found = _episode_get(episode)
    image = snapshot_image(found.snapshot_id)
    steps = list(EpisodeStep.objects.filter(episode_id=found.pk).order_by("seq").values_list("changes", flat=True))
    conn = world_connection_open(image.image)
    try:
        touched = changes_apply(conn, steps)
        rows = touched_rows(conn=conn, image=image.image, touched=touched, now=image.world_now)
        diff = diff_of(rows)
        checksum = _state_checksum(image, rows, diff)
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
