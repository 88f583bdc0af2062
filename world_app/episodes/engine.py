"""Episodes: a snapshot plus the append-only log of the calls made in it.

The state is derived: the snapshot's image, with each logged step's row images applied in order. A process
keeps the episodes it serves materialised (``cache``); any process can serve any episode because each step
first catches its copy up with the log, under the episode's row lock. Replaying row images (not the calls)
means a later change to tool code can never change a past episode (docs/adr/0001-episode-engine.md).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import cache
from typing import Any, NamedTuple

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.utils import timezone

from world_app.episodes.cache import HotEpisode, episode_cache
from world_app.episodes.errors import EpisodeClosed, EpisodeError, EpisodeNotFound, EpisodeStepAborted
from world_app.episodes.images import snapshot_image
from world_app.episodes.shared_image import foreign_keys_pending
from world_app.episodes.step_log import step_writer
from world_app.episodes.step_sql import UNHURRIED_CTE, Lease, json_column, lease_key, lease_wait, step_log_json
from world_app.episodes.world_db import (
    changes_apply,
    changes_take,
    world_bound,
    world_connection_open,
    world_transaction,
)
from world_app.models import Episode, EpisodeStep
from world_app.routers import EPISODE_ALIAS

EpisodeRef = Episode | uuid.UUID | str
# A step's columns in the model's order: _step_made builds its row from values in this order.
_STEP_COLUMNS = (
    "id",
    "episode_id",
    "seq",
    "name",
    "arguments",
    "result",
    "is_error",
    "changes",
    "duration_ms",
    "created_at",
)
if tuple(field.attname for field in EpisodeStep._meta.concrete_fields) != _STEP_COLUMNS:
    raise ImproperlyConfigured("EpisodeStep's columns changed: update engine._STEP_COLUMNS and _step_made")
# Optimistic appends tried before a step takes the episode's row lock (only steps racing another process retry).
OPTIMISTIC_ATTEMPTS = 3


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


def episode_log_settle(episode: EpisodeRef) -> None:
    """Make the episode's log whole before reading it: write this process's deferred steps, and wait until no other
    process holds its lease (their deferred steps are written; the wait is at most one batch,
    ``EPISODE_LOG_FLUSH_MS``). Every reader of the step list calls it (pages, the API, judgements, rebuilds)."""
    episode_id = _episode_id(episode)
    step_writer.flush(episode_id)
    lease_wait(episode_id)


class LogHead(NamedTuple):
    """Where an episode's log stands: what a copy must match to be current."""

    status: str
    step_count: int
    head_step_id: int | None


def _log_head(episode_id: uuid.UUID, *, lock: bool = False) -> LogHead:
    """The episode's log head (``lock``: and its row, until the end of the transaction); discards a purged one."""
    rows = Episode.objects.filter(pk=episode_id)
    if lock:
        rows = rows.select_for_update()
    found = rows.values_list("status", "step_count", "head_step_id").first()
    if found is None:
        episode_cache.discard(episode_id)  # purged: this process may still hold its world
        raise EpisodeNotFound(episode_id)
    return LogHead(*found)


def _head_of(episode: Episode) -> LogHead:
    return LogHead(episode.status, episode.step_count, episode.head_step_id)


def _hot_sync(hot: HotEpisode, head: LogHead, *, waited: bool = False) -> None:
    """Bring the copy to ``head``: nothing to do when it is there already, else catch up or rebuild from the log.

    Under this process's lease the copy is the log's head (its deferred steps included): no one else can append.
    """
    if (hot.seq, hot.last_step_id) != (head.step_count, head.head_step_id) and not step_writer.holds(hot.episode_id):
        _catch_up(hot, waited=waited)


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
    """This process's copy of the episode, held by the calling thread.

    A copy this call builds is caught up with the log; one already held may lag (callers check its head).
    """
    hot = episode_cache.checkout(episode_id)
    cold_head = None
    if hot is None:
        episode_log_settle(episode_id)  # a rebuild reads the whole log: this process's and others' deferred steps
        found = Episode.objects.filter(pk=episode_id).values_list("snapshot_id", *LogHead._fields).first()
        if found is None:
            raise EpisodeNotFound(episode_id)
        cold_head = LogHead(*found[1:])
        hot = episode_cache.add_and_checkout(_hot_new(episode_id, found[0]))
    try:
        with hot.lock:
            if cold_head is not None:
                _hot_sync(hot, cold_head, waited=True)  # the settle above waited for any lease
            yield hot
    finally:
        episode_cache.checkin(hot)


def _catch_up(hot: HotEpisode, *, waited: bool = False) -> None:
    """Apply the steps logged since this copy last looked; start again from the snapshot if it diverged.

    It diverges when a step it took was rolled back in Postgres after SQLite committed it (an enclosing
    transaction of the caller, a failed commit): that step's id is then no longer in the log.
    """
    if not waited:
        lease_wait(hot.episode_id)  # another process's deferred steps are written first
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


def _unhurried() -> bool:
    """Whether a statement about to run on Django's connection is its own transaction and may commit without
    waiting for the WAL flush (``EPISODE_LOG_ASYNC_COMMIT``; never inside a caller's transaction)."""
    return settings.EPISODE_LOG_ASYNC_COMMIT and not connections[DEFAULT_DB_ALIAS].in_atomic_block


class _Overtaken(Exception):
    """The log is no longer where the copy was when the call ran: the call is undone and nothing was logged."""


@cache
def _append_sql(*, unhurried: bool) -> str:
    """One statement: append a step if the log is still where the copy was, and move the episode's head.

    ``unhurried``: the statement's own (autocommit) transaction commits without waiting for the WAL flush.
    """
    episode, step = Episode._meta.db_table, EpisodeStep._meta.db_table
    # set_config(..., true) lasts for this transaction only: the connection's later commits wait as usual.
    unhurried_cte = f"{UNHURRIED_CTE}, " if unhurried else ""
    return f"""
        WITH {unhurried_cte}head AS (
            SELECT id FROM {episode}{", unhurried" if unhurried else ""}
            WHERE id = %(episode)s AND status = %(open)s AND step_count = %(after_seq)s
                AND head_step_id IS NOT DISTINCT FROM %(after_head)s
                AND pg_try_advisory_xact_lock_shared(%(lease_namespace)s, %(lease_id)s)
            FOR UPDATE OF {episode}
        ), appended AS (
            INSERT INTO {step} (episode_id, seq, name, arguments, result, is_error, changes, duration_ms, created_at)
            SELECT id, %(seq)s, %(name)s, %(arguments)s::jsonb, %(result)s::jsonb, %(is_error)s,
                %(changes)s::jsonb, %(duration_ms)s, %(now)s
            FROM head
            RETURNING id, seq
        )
        UPDATE {episode} SET step_count = appended.seq, head_step_id = appended.id, last_activity_at = %(now)s
        FROM appended WHERE {episode}.id = %(episode)s
        RETURNING appended.id
    """  # noqa: S608  (table names from model metadata; every value is a bound parameter)


def _step_append(step: EpisodeStep, *, after_head: int | None, savepoint: bool) -> int | None:
    """Log ``step`` in one statement if the log head is still (``step.seq - 1``, ``after_head``); its id, or None.

    Outside a transaction that is one autocommitted round trip; the row lock lasts only for the statement.
    """
    lease_namespace, lease_id = lease_key(step.episode_id)
    params = {
        "episode": step.episode_id,
        "lease_namespace": lease_namespace,  # refused while another session holds the episode's lease
        "lease_id": lease_id,
        "open": Episode.Status.OPEN,
        "after_seq": step.seq - 1,
        "after_head": after_head,
        "seq": step.seq,
        "name": step.name,
        "arguments": json_column(step.arguments),
        "result": json_column(step.result),
        "is_error": step.is_error,
        "changes": json.dumps(step.changes),
        "duration_ms": step.duration_ms,
        "now": step.created_at,
    }
    connection = connections[DEFAULT_DB_ALIAS]
    # Inside the caller's transaction a failed append must not abort it: a savepoint, as a nested atomic block.
    block = transaction.atomic(using=DEFAULT_DB_ALIAS) if savepoint and connection.in_atomic_block else nullcontext()
    # Never for a transaction that is not the step's own: the caller's writes keep the durability they asked for.
    unhurried = settings.EPISODE_LOG_ASYNC_COMMIT and not connection.in_atomic_block
    with block, connection.cursor() as cursor:
        cursor.execute(_append_sql(unhurried=unhurried), params)
        row = cursor.fetchone()
    return None if row is None else row[0]


def _step_try(
    hot: HotEpisode,
    *,
    name: str,
    arguments: dict,
    fn: Callable[[], Any],
    after: tuple[int, int | None],
    savepoint: bool,
) -> EpisodeStep | None:
    """Run ``fn`` on the copy in a SQLite transaction and append it to the log if the log head is still ``after``
    (step count, head step id).

    SQLite commits only once the step is logged; when the log moved on (None), the call is rolled back.
    """
    logged = False
    try:
        with world_bound(hot.conn, now=hot.world_now), world_transaction(hot.conn):
            step = _step_made(hot, name=name, arguments=arguments, fn=fn, seq=after[0] + 1)
            step.pk = _step_append(step, after_head=after[1], savepoint=savepoint)
            if step.pk is None:
                raise _Overtaken
            logged = True
    except _Overtaken:
        return None
    except BaseException:
        if logged:
            # Logged, but SQLite could not commit: the copy is behind its log; it is rebuilt on the next touch.
            episode_cache.discard(hot.episode_id)
        raise
    hot.seq, hot.last_step_id = step.seq, step.pk
    step._state.adding, step._state.db = False, DEFAULT_DB_ALIAS
    hot.touched.update((change["table"], change["pk"]) for change in step.changes)
    return step


def _step_made(hot: HotEpisode, *, name: str, arguments: dict, fn: Callable[[], Any], seq: int) -> EpisodeStep:
    """Run ``fn`` on the copy, inside the caller's SQLite transaction, and make its step row (not yet written):
    its result, the rows it wrote and how long it took. Raises, undoing the call, what SQLite's commit would
    refuse: it must refuse before the step is logged, not after."""
    started = time.perf_counter()
    result = fn()
    duration_ms = (time.perf_counter() - started) * 1000
    if connections[EPISODE_ALIAS].needs_rollback:
        raise EpisodeStepAborted(f"{name}: the call marked the episode's transaction for rollback")
    changes = changes_take(hot.conn)
    if changes and foreign_keys_pending(hot.conn):
        raise IntegrityError("FOREIGN KEY constraint failed")
    is_error = isinstance(result, dict) and "error" in result
    # By position, in _STEP_COLUMNS' order (checked against the model): __init__'s fast path, no keyword look-ups.
    return EpisodeStep(
        None, hot.episode_id, seq, name, arguments, result, is_error, changes, round(duration_ms, 3), timezone.now()
    )


def episode_step(*, episode: EpisodeRef, name: str, arguments: dict, fn: Callable[[], Any]) -> EpisodeStep:
    """Run ``fn`` in the episode's private world (one SQLite transaction) and log it with the rows it wrote.

    If ``fn`` raises, its writes are rolled back, nothing is logged and the error propagates. The call runs on
    this process's copy first and is logged in one statement if the log has not moved meanwhile; if it has
    (another process took a step), the call is undone, the copy caught up and the call run again, so ``fn``
    must touch nothing but the episode's world. After a few lost races the step takes the episode's row lock.
    """
    episode_id = _episode_id(episode)
    with _hot_episode(episode_id) as hot:
        if connections[EPISODE_ALIAS].connection is hot.conn:
            # Its writes would land in the enclosing block's transaction, which may still roll them back.
            raise EpisodeError("a step cannot run inside episode_world() or another step of the same episode")
        if step_writer.defers():
            step = _step_deferred(hot, name=name, arguments=arguments, fn=fn)
            if step is not None:
                return step
        else:
            step_writer.flush(episode_id)  # this process's deferred steps come first in the log
        for attempt in range(OPTIMISTIC_ATTEMPTS):
            if attempt:
                head = _log_head(episode_id)
                if head.status != Episode.Status.OPEN:
                    episode_cache.discard(episode_id)
                    raise EpisodeClosed(episode_id)
                _hot_sync(hot, head)
            # A current copy needs no query before the call: the append itself checks it is current.
            after = (hot.seq, hot.last_step_id)
            step = _step_try(hot, name=name, arguments=arguments, fn=fn, after=after, savepoint=True)
            if step is not None:
                return step
        return _step_locked(hot, name=name, arguments=arguments, fn=fn)


def _step_deferred(hot: HotEpisode, *, name: str, arguments: dict, fn: Callable[[], Any]) -> EpisodeStep | None:
    """The step under this process's lease: run on the copy, committed in SQLite, its log row written with the
    batch (``step_log``). None: no lease now (another session holds or waits for it): append synchronously."""
    lease: Lease | None = step_writer.begin(hot.episode_id, (hot.seq, hot.last_step_id))
    if lease is None:
        return None
    step = None
    try:
        with world_bound(hot.conn, now=hot.world_now), world_transaction(hot.conn):
            step = _step_made(hot, name=name, arguments=arguments, fn=fn, seq=hot.seq + 1)
            # The log row's JSON, made now: what json.dumps refuses undoes the call, as the synchronous append does.
            step_log_json(step)
    except BaseException:
        step_writer.end(lease, None)
        raise
    # The copy took the step: it joins the lease's batch (its id from the lease), and the copy's head moves.
    hot.seq = step.seq
    hot.touched.update((change["table"], change["pk"]) for change in step.changes)
    step_writer.end(lease, step)  # may write the batch; raises EpisodeStepsLost if that failed
    hot.last_step_id = step.pk
    step._state.adding, step._state.db = False, DEFAULT_DB_ALIAS
    return step


def _step_locked(hot: HotEpisode, *, name: str, arguments: dict, fn: Callable[[], Any]) -> EpisodeStep:
    """The step under the episode's row lock (no other process can move the log): it cannot be overtaken."""
    step = None
    try:
        with transaction.atomic(using=DEFAULT_DB_ALIAS):
            lease_wait(hot.episode_id)  # before the row lock: a lease holder's flush takes the row lock
            head = _log_head(hot.episode_id, lock=True)
            if head.status != Episode.Status.OPEN:
                raise EpisodeClosed(hot.episode_id)
            _hot_sync(hot, head)
            after = (head.step_count, head.head_step_id)
            step = _step_try(hot, name=name, arguments=arguments, fn=fn, after=after, savepoint=False)
            if step is None:
                raise EpisodeError(f"episode {hot.episode_id}: its log moved while its row was locked")
        # SQLite commits before Postgres here: a failed Postgres commit leaves the copy ahead of the log (below).
    except EpisodeClosed:
        episode_cache.discard(hot.episode_id)
        raise
    except BaseException:
        if step is not None:
            episode_cache.discard(hot.episode_id)  # the world took a step the log lost: rebuild it next time
        raise
    return step
