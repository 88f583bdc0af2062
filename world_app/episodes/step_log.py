"""Deferred step appends: a process holds an episode's lease and writes its steps to Postgres in batches.

A step taken outside any transaction of the caller is logged here instead of by the one-statement append of
``engine._step_append``: the call runs on this process's copy, SQLite commits, and the step waits in the
episode's lease until ``EPISODE_LOG_BATCH`` steps are pending or ``EPISODE_LOG_FLUSH_MS`` have passed since the
first of them; then one statement writes them all and moves the episode's head. A hot step makes no round trip.

The lease is a session-level advisory lock on the episode, held by this process's writer connection (its own,
not Django's: Django's goes back to the pool between requests and a lock left on it would outlive the work).
While it is held no other session can append to, catch up with, rebuild, close or read the episode's log: they
wait for it (``lease_wait``), and the writer releases it at every write, so they wait at most one batch; the next
step takes it again (two round trips per batch: the lease with the head and the ids, the write with the release).
A lease that cannot be taken at once (another session appending or waiting) is not waited for: that step takes
the synchronous append. A process that dies loses its lease with its connection, and with it the steps it had not
written (at most a batch, at most ``EPISODE_LOG_FLUSH_MS`` of them); the log it leaves is a prefix of what the
agent saw and any process rebuilds exactly that state (docs/adr/0001-episode-engine.md, "Deferred steps").
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from corecraft_site.dedicated_connection import dedicated_connection, dedicated_connection_key
from world_app.episodes.errors import EpisodeError
from world_app.episodes.step_sql import Lease, _flush_sql, _take_sql, lease_key
from world_app.models import Episode, EpisodeStep

logger = logging.getLogger(__name__)


class EpisodeStepsLost(EpisodeError):
    """Steps this process had answered but not yet written could not be written (the log moved, the database
    went away): the episode's log ends before them, and this process's copy of it was dropped."""


# Set by steps_appended_now: steps taken in this context (this thread) are appended at once, not deferred.
_appended_now: ContextVar[bool] = ContextVar("episode_steps_appended_now", default=False)


@contextmanager
def steps_appended_now() -> Iterator[None]:
    """Steps taken inside (in this thread) are appended at once, one statement on Django's connection each.

    For a driver that takes one step per model turn (a model rollout): a batch would hold one step and cost it
    three statements in two round trips through the process's one step writer, where the append is one statement
    on the thread's own connection; with many such drivers in a process (a worker's concurrent rollouts answered
    at once) every lease and every write queued behind each other's on that one connection.
    """
    token = _appended_now.set(True)
    try:
        yield
    finally:
        _appended_now.reset(token)


class StepWriter:
    """This process's leases and the connection that holds them; one per process (``step_writer``)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()  # the connection and the leases
        # Woken only when someone sleeps on them (a notify hands the GIL over: 0.5 ms a step when done every time).
        self._not_busy = threading.Condition(self._mutex)  # a barrier waits for a step running under a lease
        self._barriers_waiting = 0
        self._timer_wake = threading.Condition(self._mutex)  # the timer sleeps past a deadline just set
        self._timer_until: float | None = None  # when the sleeping timer wakes (None: not sleeping)
        self._conn: psycopg.Connection | None = None
        self._conn_key: tuple | None = None
        self._leases: dict[uuid.UUID, Lease] = {}
        self._lost: dict[uuid.UUID, str] = {}
        self._thread: threading.Thread | None = None
        # Counted for the benchmarks: statements this writer sent (they count against the steps they logged).
        self.statements = 0

    # --- who defers --------------------------------------------------------------------------------------------

    @staticmethod
    def defers() -> bool:
        """Whether a step taken now may be deferred: the setting, not inside ``steps_appended_now``, and no
        transaction of the caller's on Django's connection (a step inside one is logged in it, so it shares the
        transaction's fate)."""
        return (
            settings.EPISODE_LOG_DEFER and not _appended_now.get() and not connections[DEFAULT_DB_ALIAS].in_atomic_block
        )

    def holds(self, episode_id: uuid.UUID) -> bool:
        """This process holds the episode's lease: no one else can have moved its log, the copy is current."""
        return episode_id in self._leases

    # --- the driving thread ------------------------------------------------------------------------------------

    def begin(self, episode_id: uuid.UUID, copy_head: tuple[int, int | None]) -> Lease | None:
        """The lease for a step on a copy at ``copy_head`` (taken now if not held), marked busy; None: take the
        synchronous append (another session holds or waits for the lease, or the copy is not at the log's head).
        """
        with self._mutex:
            self._raise_lost(episode_id)
            lease = self._leases.get(episode_id)
            if lease is not None and (lease.head != copy_head or not lease.ids):
                self._flush_locked(lease)
                lease = None
            if lease is None:
                lease = self._take_locked(episode_id, copy_head)
                if lease is None:
                    return None
            lease.busy += 1
            return lease

    def end(self, lease: Lease, step: EpisodeStep | None) -> None:
        """The busy step is over: ``step`` (committed on the copy) joins the batch, which is written if full or due."""
        with self._mutex:
            lease.busy -= 1
            if step is not None:
                step.pk = lease.ids.pop(0)
                lease.pending.append(step)
                lease.head = (step.seq, step.pk)
                if lease.deadline is None:
                    lease.deadline = time.monotonic() + settings.EPISODE_LOG_FLUSH_MS / 1000
                    self._ensure_thread_locked()
                    if self._timer_until is not None and self._timer_until > lease.deadline:
                        self._timer_wake.notify()
            if lease.busy == 0:
                if self._barriers_waiting:
                    self._not_busy.notify_all()
                if not lease.ids or (lease.deadline is not None and time.monotonic() >= lease.deadline):
                    self._flush_locked(lease)
                    self._raise_lost(lease.episode_id)

    # --- barriers ------------------------------------------------------------------------------------------------

    def _idle_lease_locked(self, episode_id: uuid.UUID) -> Lease | None:
        """The episode's lease once no step runs under it (None: this process holds none); call with the mutex."""
        lease = self._leases.get(episode_id)
        while lease is not None and lease.busy:
            self._barriers_waiting += 1
            try:
                self._not_busy.wait()
            finally:
                self._barriers_waiting -= 1
            lease = self._leases.get(episode_id)
        return lease

    def flush(self, episode_id: uuid.UUID) -> None:
        """Write the episode's deferred steps and release its lease (waits for a step running under it)."""
        with self._mutex:
            lease = self._idle_lease_locked(episode_id)
            if lease is not None:
                self._flush_locked(lease)
            self._raise_lost(episode_id)

    def flush_then(self, episode_id: uuid.UUID, sql: str, params: dict) -> tuple[bool, tuple | None]:
        """Write the episode's deferred steps and run ``sql`` right after the write, in the same round trip (a
        pipeline: the write, ``sql``, the release; each its own transaction, in that order). ``(True, its first
        row)`` when there was a batch to write; ``(False, None)`` when there was none (``sql`` not run: the caller
        runs it on its own connection). ``sql`` runs while the lease is still held (no session can append between
        the write and it) and must check for itself that the write moved the log (a guard on the new head)."""
        with self._mutex:
            lease = self._idle_lease_locked(episode_id)
            if lease is None or not lease.pending:
                if lease is not None:
                    self._flush_locked(lease)
                self._raise_lost(episode_id)
                return False, None
            then: list = []
            self._flush_locked(lease, then=(sql, params, then))
            self._raise_lost(episode_id)
            return True, then[0] if then else None

    def flush_all(self) -> None:
        with self._mutex:
            for lease in list(self._leases.values()):
                if not lease.busy:
                    self._flush_locked(lease)
            self._lost.clear()

    def close(self) -> None:
        """Write every deferred step and close the writer's connection (tests: before their database goes)."""
        self.flush_all()
        with self._mutex:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()
            self._conn = None
            self._leases.clear()

    # --- inside the mutex --------------------------------------------------------------------------------------

    def _raise_lost(self, episode_id: uuid.UUID) -> None:
        reason = self._lost.pop(episode_id, None)
        if reason is not None:
            raise EpisodeStepsLost(f"episode {episode_id}: {reason}")

    def _connection(self) -> psycopg.Connection:
        key = dedicated_connection_key()
        if self._conn is None or self._conn.closed or self._conn.broken or self._conn_key != key:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()
            self._leases.clear()  # a lease lives no longer than its connection
            self._conn = dedicated_connection("corecraft episode step writer")
            self._conn_key = key
        return self._conn

    def _take_locked(self, episode_id: uuid.UUID, copy_head: tuple[int, int | None]) -> Lease | None:
        namespace, key = lease_key(episode_id)
        params = {"episode": episode_id, "namespace": namespace, "key": key, "n": settings.EPISODE_LOG_BATCH}
        try:
            self.statements += 1
            row = self._connection().execute(_take_sql(), params).fetchone()
        except psycopg.Error:
            logger.exception("episode %s: taking the step log lease failed; appending synchronously", episode_id)
            self._drop_connection()
            return None
        if row is None:
            return None  # not taken (another session holds or waits for it), or no such episode
        if row[0] != Episode.Status.OPEN or (row[1], row[2]) != copy_head:
            # Closed, or the copy is not at the head: the synchronous path says which and catches up.
            self._unlock(episode_id)
            return None
        lease = self._leases[episode_id] = Lease(episode_id=episode_id, base=(row[1], row[2]), ids=list(row[3]))
        return lease

    def _unlock(self, episode_id: uuid.UUID) -> None:
        try:
            self.statements += 1
            self._connection().execute("SELECT pg_advisory_unlock(%s, %s)", lease_key(episode_id))
        except psycopg.Error:
            logger.exception("episode %s: releasing the step log lease failed", episode_id)
            self._drop_connection()

    def _drop_connection(self) -> None:
        # Closing the session releases every lease it held; their unwritten steps are lost.
        for lease in self._leases.values():
            if lease.pending:
                self._lose(lease, "the step writer's connection failed before its deferred steps were written")
        self._leases.clear()
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def _lose(self, lease: Lease, reason: str) -> None:
        from world_app.episodes.cache import episode_cache

        logger.error("episode %s: %d deferred step(s) lost: %s", lease.episode_id, len(lease.pending), reason)
        self._lost[lease.episode_id] = f"{len(lease.pending)} deferred step(s) lost: {reason}"
        lease.pending = []
        episode_cache.discard(lease.episode_id)  # the copy is ahead of its log: rebuilt on the next touch

    def _flush_locked(self, lease: Lease, then: tuple[str, dict, list] | None = None) -> None:
        """Write the lease's batch and release the lease (every write does: a waiter waits at most one batch).

        ``then``: a statement run between the write and the release, in the same pipeline; its first row (if any)
        is appended to the list it carries."""
        steps = lease.pending
        if steps:
            last = steps[-1]
            params = {
                "episode": lease.episode_id,
                "open": Episode.Status.OPEN,
                "after_seq": lease.base[0],
                "after_head": lease.base[1],
                "ids": [step.pk for step in steps],
                "seqs": [step.seq for step in steps],
                "names": [step.name for step in steps],
                "arguments": [step._log_json[0] for step in steps],
                "results": [step._log_json[1] for step in steps],
                "errors": [step.is_error for step in steps],
                "changes": [step._log_json[2] for step in steps],
                "durations": [step.duration_ms for step in steps],
                "created": [step.created_at for step in steps],
                "count": len(steps),
                "last_seq": last.seq,
                "last_id": last.pk,
                "last_at": last.created_at,
            }
            try:
                conn = self._connection()
                self.statements += 2 + (then is not None)
                # One round trip: the write, then (in its own transaction, after the write's commit, so a waiter
                # reads the new head) the release.
                with conn.pipeline():
                    written = conn.execute(_flush_sql(unhurried=settings.EPISODE_LOG_ASYNC_COMMIT), params)
                    after = conn.cursor().execute(then[0], then[1]) if then is not None else None
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", lease_key(lease.episode_id))
                moved = written.fetchone() is not None
                if after is not None:
                    row = after.fetchone()
                    if row is not None:
                        then[2].append(row)
            except psycopg.Error as error:
                logger.exception("episode %s: writing deferred steps failed", lease.episode_id)
                self._lose(lease, f"writing them failed ({type(error).__name__})")
                self._leases.pop(lease.episode_id, None)
                self._drop_connection()
                return
            if not moved:
                # Under the lease nothing else appends: only a closed, purged or externally edited episode gets here.
                self._lose(lease, "the episode was closed, purged or its log moved while they were pending")
            else:
                lease.base = lease.head = (last.seq, last.pk)
                lease.pending = []
        else:
            self._unlock(lease.episode_id)
        lease.deadline = None
        self._leases.pop(lease.episode_id, None)

    # --- the timer ------------------------------------------------------------------------------------------------

    def _ensure_thread_locked(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="episode-step-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        """Write the batches whose time is up while their driver is away (waiting on a model, say)."""
        with self._mutex:
            while True:
                now = time.monotonic()
                deadlines = [lease.deadline for lease in self._leases.values() if lease.deadline is not None]
                for lease in list(self._leases.values()):
                    if lease.deadline is not None and lease.deadline <= now and not lease.busy:
                        self._flush_locked(lease)
                wait = min((d for d in deadlines if d > now), default=None)
                # No deadline ahead: sleep until a batch sets one (a busy batch past its time is written by its
                # driver when its step ends).
                self._timer_until = float("inf") if wait is None else wait
                self._timer_wake.wait(timeout=None if wait is None else max(wait - now, 0.001))
                self._timer_until = None

    def forget_after_fork(self) -> None:
        # A forked child starts with no leases: its parent's connection, locks and pending steps are the parent's.
        self._mutex = threading.Lock()
        self._not_busy = threading.Condition(self._mutex)
        self._barriers_waiting = 0
        self._timer_wake = threading.Condition(self._mutex)
        self._timer_until = None
        self._conn = None
        self._conn_key = None
        self._leases = {}
        self._lost = {}
        self._thread = None


step_writer = StepWriter()
os.register_at_fork(after_in_child=step_writer.forget_after_fork)


@atexit.register
def _flush_at_exit() -> None:
    try:
        step_writer.flush_all()
    except Exception:  # at exit there is no one left to tell but the log
        logger.exception("writing deferred steps at exit failed")
