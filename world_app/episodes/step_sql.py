"""The step log's statements and leases: the advisory lock a process holds while it has an episode's steps waiting
to be written (``Lease``, ``lease_key``, ``lease_wait``), the JSON columns as the log stores them, and the two
statements the step writer runs: the batch insert of pending steps with the episode's head moved in the same
round trip, and the take-over of an episode's lease.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from world_app.models import Episode, EpisodeStep

# The first key of pg_advisory_lock(int, int) for episode leases ("eplg" in ASCII); the second is from the id.
LEASE_NAMESPACE = 0x65706C67
# A CTE that lets its statement's own transaction commit without waiting for the WAL flush (set_config(..., true)
# lasts for that transaction only). It runs only where the statement references it.
UNHURRIED_CTE = "unhurried AS (SELECT set_config('synchronous_commit', 'off', true))"


def lease_key(episode_id: uuid.UUID) -> tuple[int, int]:
    """The advisory lock key of an episode's lease: the namespace and 32 bits of its id (a collision between two
    episodes only makes one wait for the other's batch, or take the synchronous append)."""
    return LEASE_NAMESPACE, (episode_id.int & 0x7FFFFFFF)


def lease_wait(episode_id: uuid.UUID) -> None:
    """Wait, on Django's connection, until no session holds the episode's lease (its deferred steps are written).

    Outside a transaction the shared lock lasts for the statement only; inside one it lasts until the
    transaction ends, which keeps any lease off the episode until then.
    """
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", lease_key(episode_id))


@dataclass(eq=False)
class Lease:
    """This process's hold on an episode's log, and the steps it has answered but not yet written."""

    episode_id: uuid.UUID
    # The log head when the lease was taken: the flush writes only if the log is still there.
    base: tuple[int, int | None]
    ids: list[int]  # step ids reserved from the table's sequence, one per step of the batch
    pending: list[EpisodeStep] = field(default_factory=list)
    head: tuple[int, int | None] = (0, None)  # the copy's head: base, or the last pending step
    busy: int = 0  # steps running on the copy under this lease: never released under them
    deadline: float | None = None  # monotonic time by which the pending steps are written

    def __post_init__(self) -> None:
        self.head = self.base


def json_column(value: Any) -> str | None:
    """What the model's JSONField would store: None is SQL NULL; anything json.dumps refuses raises TypeError."""
    return None if value is None else json.dumps(value)


def step_log_json(step: EpisodeStep) -> None:
    """Serialise the step's arguments, result and row images for its log row, once (``TypeError`` if refused)."""
    step._log_json = (json_column(step.arguments), json_column(step.result), json.dumps(step.changes))


@cache
def _flush_sql(*, unhurried: bool) -> str:
    # The text arrays (the JSON of arguments, results and row images) go in binary (%b): in text form psycopg
    # quotes every element with a regex, 0.3 ms of CPU per step of a get_order_details batch.
    episode, step = Episode._meta.db_table, EpisodeStep._meta.db_table
    unhurried_cte = f"{UNHURRIED_CTE}, " if unhurried else ""
    return f"""
        WITH {unhurried_cte}head AS (
            SELECT id FROM {episode}{", unhurried" if unhurried else ""}
            WHERE id = %(episode)s AND status = %(open)s AND step_count = %(after_seq)s
                AND head_step_id IS NOT DISTINCT FROM %(after_head)s
            FOR UPDATE OF {episode}
        ), appended AS (
            INSERT INTO {step} (id, episode_id, seq, name, arguments, result, is_error, changes, duration_ms,
                created_at)
            SELECT s.id, head.id, s.seq, s.name, s.arguments::jsonb, s.result::jsonb, s.is_error, s.changes::jsonb,
                s.duration_ms, s.created_at
            FROM head, unnest(%(ids)s::bigint[], %(seqs)s::int[], %(names)b::text[], %(arguments)b::text[],
                %(results)b::text[], %(errors)s::bool[], %(changes)b::text[], %(durations)s::float8[],
                %(created)s::timestamptz[])
                AS s(id, seq, name, arguments, result, is_error, changes, duration_ms, created_at)
            RETURNING 1
        )
        UPDATE {episode} SET step_count = %(last_seq)s, head_step_id = %(last_id)s, last_activity_at = %(last_at)s
        FROM head WHERE {episode}.id = head.id AND (SELECT count(*) FROM appended) = %(count)s
        RETURNING {episode}.id
    """  # noqa: S608  (table names from model metadata; every value is a bound parameter)


@cache
def _take_sql() -> str:
    """One statement: take the lease, and read the log head and reserve the batch's step ids if it was taken.

    The head is read by a locking read (``FOR SHARE``): in READ COMMITTED that returns the row's newest committed
    version, not the one in the statement's snapshot, which may predate the lock (an append committed between the
    two would otherwise be missed).
    """
    episode, step = Episode._meta.db_table, EpisodeStep._meta.db_table
    return f"""
        SELECT status, step_count, head_step_id,
            ARRAY(SELECT nextval(pg_get_serial_sequence('{step}', 'id')) FROM generate_series(1, %(n)s))
        FROM {episode} WHERE id = %(episode)s AND pg_try_advisory_lock(%(namespace)s, %(key)s)
        FOR SHARE OF {episode}
    """  # noqa: S608
