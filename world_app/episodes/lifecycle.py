"""An episode's start and end: ``episode_create`` (the episode row, and a caller's linked row such as the
trainer's, in one statement) and ``episode_close`` (the final diff and content checksum stored, in one guarded
UPDATE when this process's copy is the log's head, under the row lock otherwise). The steps between are
``engine``'s.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model
from django.db.models.sql import InsertQuery
from django.utils import timezone

from world_app.episodes.cache import HotEpisode, episode_cache
from world_app.episodes.diff import TouchedRows, checksum_of, diff_of, touched_rows
from world_app.episodes.engine import (
    EpisodeRef,
    _episode_id,
    _episode_lock,
    _head_of,
    _hot_episode,
    _hot_new,
    _hot_sync,
    _unhurried,
)
from world_app.episodes.images import SnapshotImage, snapshot_image, snapshot_table_digests
from world_app.episodes.step_log import step_writer
from world_app.episodes.step_sql import UNHURRIED_CTE, lease_key, lease_wait
from world_app.models import Episode, WorldSnapshot


# Not a transaction of its own: its one write is one INSERT (with ``linked``, one statement inserting every row),
# and inside a caller's transaction (a trainer's open) the savepoint an atomic block adds cost two round trips.
def episode_create(
    *,
    snapshot: WorldSnapshot | None = None,
    label: str = "",
    owner_id: int | None = None,
    credential: str = "",
    simulated_user: dict | None = None,
    linked: Callable[[Episode], Sequence[Model]] | None = None,
) -> Episode:
    """A new episode on ``snapshot`` (None: the latest), its private world ready in this process.

    ``owner_id`` and ``credential`` say who opened it (``world_app.episodes.owners``); none for internal ones.
    ``simulated_user``: who answers the agent's ``ask_user`` questions (a spec of ``world_app.conversation``,
    validated here); none: no one. ``linked``: rows of the caller's that belong to the new episode (a trainer's
    link to its release row), made from the unsaved episode and inserted with it in the same statement (one
    round trip, atomic without a transaction; no save signals are sent for them).
    """
    from world_app.conversation import simulated_user_validate

    user = simulated_user_validate(simulated_user)
    if snapshot is None:
        # world_app.snapshots imports this package; importing it at call time keeps either import order working.
        from world_app.snapshots import snapshot_latest

        snapshot = snapshot_latest()
    fields = {"snapshot": snapshot, "label": label, "owner_id": owner_id, "credential": credential}
    if linked is None:
        episode = Episode.objects.create(**fields, simulated_user=user)
    else:
        episode = Episode(**fields, simulated_user=user)
        _insert_together([episode, *linked(episode)])
    episode_cache.checkin(episode_cache.add_and_checkout(_hot_new(episode.pk, snapshot.pk)))
    return episode


def _insert_together(rows: Sequence[Model]) -> None:
    """Insert ``rows`` (unsaved, primary keys set) in one statement, in order: ``WITH a AS (INSERT ..), .. INSERT ..``.

    Each INSERT is the ORM's own (its compiler: defaults, ``auto_now_add``, each value's conversion); foreign keys
    between the rows hold because Django's Postgres constraints are checked at the end of the transaction.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    parts, params = [], []
    for row in rows:
        query = InsertQuery(type(row))
        query.insert_values([f for f in row._meta.local_concrete_fields if not f.generated], [row])
        ((sql, values),) = query.get_compiler(connection=connection).as_sql()
        parts.append(sql)
        params.extend(values)
    ctes = [f"inserted_{i} AS ({sql})" for i, sql in enumerate(parts[:-1])]
    last = parts[-1]
    if _unhurried():  # the statement's own transaction: an open's commit need not wait for the disk (as a step's)
        ctes.insert(0, UNHURRIED_CTE)
        last += " RETURNING (SELECT 1 FROM unhurried)"  # a CTE that only reads runs only where it is referenced
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(ctes)} {last}" if ctes else last, params)
    for row in rows:
        row._state.adding, row._state.db = False, DEFAULT_DB_ALIAS


def _hot_rows(hot: HotEpisode) -> TouchedRows:
    image = snapshot_image(hot.snapshot_id).image
    return touched_rows(conn=hot.conn, image=image, touched=hot.touched, now=hot.world_now)


def _state_checksum(snapshot: SnapshotImage, rows: TouchedRows, diff: dict) -> str:
    """The world's content checksum: the snapshot's when nothing differs, else its table digests updated by the
    touched rows (no scan of the world)."""
    if not any(diff.values()):
        return snapshot.content_checksum
    return checksum_of(rows, base=snapshot_table_digests(snapshot))


@cache
def _close_sql(*, unhurried: bool, leased: bool = False) -> str:
    """One statement: close the episode if its log is still at the copy's head and no session holds its lease
    (``leased``: run by the session that holds it, right after writing its batch, so no lease check)."""
    episode = Episode._meta.db_table
    columns = ", ".join(f'{episode}."{f.column}"' for f in Episode._meta.concrete_fields)
    return f"""
        {f"WITH {UNHURRIED_CTE}" if unhurried else ""}
        UPDATE {episode} SET status = %(closed)s, closed_at = %(now)s, final_diff = %(diff)s::jsonb,
            final_checksum = %(checksum)s
        {"FROM unhurried" if unhurried else ""}
        WHERE id = %(episode)s AND status = %(open)s AND step_count = %(seq)s
            AND head_step_id IS NOT DISTINCT FROM %(head)s
            {"" if leased else "AND pg_try_advisory_xact_lock_shared(%(lease_namespace)s, %(lease_id)s)"}
        RETURNING {columns}
    """  # noqa: S608  (table and column names from model metadata; every value is a bound parameter)


def _close_at_head(hot: HotEpisode) -> Episode | None:
    """Close the episode in one statement when this process's copy is at the log's head (its own deferred steps just
    written, as on a trainer's finish); the closed row, or None when the log moved, a lease is held elsewhere or
    it is closed already (the caller then takes the locked path, which says which)."""
    rows = _hot_rows(hot)  # under this process's lease the copy is the log's head, its deferred steps included
    diff = diff_of(rows)
    lease_namespace, lease_id = lease_key(hot.episode_id)
    params = {
        "closed": Episode.Status.CLOSED.value,
        "open": Episode.Status.OPEN.value,
        "now": timezone.now(),
        "diff": json.dumps(diff),
        "checksum": _state_checksum(snapshot_image(hot.snapshot_id), rows, diff),
        "episode": hot.episode_id,
        "seq": hot.seq,
        "head": hot.last_step_id,
        "lease_namespace": lease_namespace,
        "lease_id": lease_id,
    }
    # This process's deferred steps are written and the episode closed in one round trip (the step writer's
    # pipeline, under its lease); with none pending, or inside a caller's transaction (whose fate the close then
    # shares), the close is one statement on Django's connection.
    fields = [f.attname for f in Episode._meta.concrete_fields]
    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        step_writer.flush(hot.episode_id)
        pipelined, row = False, None
    else:
        leased_sql = _close_sql(unhurried=settings.EPISODE_LOG_ASYNC_COMMIT, leased=True)
        pipelined, row = step_writer.flush_then(hot.episode_id, leased_sql, params)
    if pipelined:
        closed = None if row is None else Episode.from_db(DEFAULT_DB_ALIAS, fields, row)
    else:
        closed = next(iter(Episode.objects.raw(_close_sql(unhurried=_unhurried()), params)), None)
    if closed is not None:
        closed.final_diff = diff  # as the locked path leaves it: the dict, not jsonb's reordering of its keys
    return closed


def _episode_close(
    episode_id: uuid.UUID, *, idle_before: datetime | None = None, keep_world: bool = False
) -> tuple[Episode, bool]:
    """Close one episode (with ``idle_before``: only if idle since then); returns it and whether this closed it.

    A close that does not depend on idleness tries one guarded statement first (``_close_at_head``: no
    transaction, no lock wait); when the log is not where this process's copy is, it takes the locked path.
    """
    if idle_before is None:
        with _hot_episode(episode_id) as hot:
            closed = _close_at_head(hot)
        if closed is not None:
            if not keep_world:
                episode_cache.discard(episode_id)
            return closed, True
    with _hot_episode(episode_id) as hot, transaction.atomic():
        # Lock order everywhere: this process's hold on the episode, its lease (no deferred steps anywhere), its row.
        step_writer.flush(episode_id)  # a step this process deferred since the settle above
        lease_wait(episode_id)
        episode = _episode_lock(episode_id)
        closing = episode.status == Episode.Status.OPEN and (
            idle_before is None or episode.last_activity_at < idle_before
        )
        if closing:
            _hot_sync(hot, _head_of(episode))
            rows = _hot_rows(hot)
            episode.final_diff = diff_of(rows)
            episode.final_checksum = _state_checksum(snapshot_image(hot.snapshot_id), rows, episode.final_diff)
            episode.status = Episode.Status.CLOSED
            episode.closed_at = timezone.now()
            episode.save(update_fields=["final_diff", "final_checksum", "status", "closed_at"])
    if episode.status == Episode.Status.CLOSED and not (keep_world and closing):
        episode_cache.discard(episode_id)
    return episode, closing


def episode_close(episode: EpisodeRef, *, keep_world: bool = False) -> Episode:
    """Store the final diff and checksum, close the episode and free its world in this process.

    ``keep_world``: when this call closes it, this process keeps the closed world for reads (a judgement's
    ``episode_world``) until ``episode_world_free``, instead of rebuilding it from the log for them.
    """
    episode_id = _episode_id(episode)
    # The look for a closed one spares building a world just to find it closed; a world this process holds
    # needs no building, and the close itself reads the row (one statement less on a trainer's finish).
    closed = None
    if episode_id not in episode_cache:
        closed = Episode.objects.filter(pk=episode_id, status=Episode.Status.CLOSED).first()
    return closed or _episode_close(episode_id, keep_world=keep_world)[0]
