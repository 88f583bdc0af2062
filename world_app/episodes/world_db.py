"""A private copy of the world in an in-memory SQLite database.

Opened from a snapshot image, bound to the ORM through the ``episode`` alias, and able to say which rows a
call wrote (change-capture triggers) and to apply such row images again (what a rebuild replays).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import DatabaseError, connections, transaction

from world_app.clock import episode_now
from world_app.episodes import search_index
from world_app.episodes.shared_image import SharedImage, WorldConnection, image_load
from world_app.routers import EPISODE_ALIAS, in_episode

CHANGES_TABLE = "_episode_changes"
# SQLite's page cache per connection (KiB). The image is in memory already (and read in place where it is
# mapped), so a big cache would only duplicate it: a small one keeps thousands of open episodes affordable.
PAGE_CACHE_KIB = 256

# The parts of Django's connection wrapper that describe one raw connection's transaction state.
_WRAPPER_STATE = (
    "connection",
    "autocommit",
    "in_atomic_block",
    "savepoint_state",
    "savepoint_ids",
    "atomic_blocks",
    "commit_on_exit",
    "needs_rollback",
    "rollback_exc",
    "closed_in_transaction",
    "errors_occurred",
    "run_on_commit",
    "run_commit_hooks_on_set_autocommit_on",
)

Row = dict[str, Any]
Change = dict[str, Any]


@cache
def world_tables() -> dict[str, tuple[str, list[str]]]:
    """db_table -> (primary key column, columns), for every world table in dependency order."""
    from world_app.models import WORLD_MODELS

    return {
        model._meta.db_table: (model._meta.pk.column, [f.column for f in model._meta.concrete_fields])
        for model in WORLD_MODELS
    }


def table_order(table: str) -> int:
    """The table's place in dependency order (``ValueError`` for anything that is not a world table)."""
    try:
        return _table_positions()[table]
    except KeyError:
        raise ValueError(f"{table!r} is not a world table") from None


@cache
def _table_positions() -> dict[str, int]:
    return {table: position for position, table in enumerate(world_tables())}


def world_connection_open(image: SharedImage | None = None) -> WorldConnection:
    """A new in-memory SQLite connection with Django's functions, holding ``image`` when given."""
    wrapper = connections[EPISODE_ALIAS]
    params = wrapper.get_connection_params()
    # Never the test runner's shared-cache name for the alias: every world must be private.
    params["database"] = ":memory:"
    params["factory"] = WorldConnection
    conn = wrapper.get_new_connection(params)
    conn.isolation_level = None
    search_index.register_functions(conn)
    if image is not None:
        image_load(conn, image)
    conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
    return conn


def world_schema_create(conn: sqlite3.Connection) -> None:
    """Every world table as Django's SQLite schema editor makes it (call with ``conn`` bound)."""
    from world_app.models import WORLD_MODELS

    with connections[EPISODE_ALIAS].schema_editor() as editor:
        for model in WORLD_MODELS:
            editor.create_model(model)


def schema_fingerprint(conn: sqlite3.Connection) -> str:
    """The world's schema (its tables and change capture; not the search indexes, which are not world content)."""
    schema = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE ? ESCAPE '\\' "
        "ORDER BY type, name",
        [search_index.PREFIX.replace("_", "\\_") + "%"],
    )
    return hashlib.sha256("\n".join(f"{kind} {name}: {sql}" for kind, name, sql in schema).encode()).hexdigest()


@cache
def current_schema_fingerprint() -> str:
    """The fingerprint an image built by this code has: a snapshot with another one needs other models."""
    conn = world_connection_open()
    try:
        with world_bound(conn, now=None):
            world_schema_create(conn)
        conn.executescript(change_capture_sql())
        return schema_fingerprint(conn)
    finally:
        conn.close()


@contextmanager
def world_bound(conn: sqlite3.Connection, *, now: datetime | None) -> Iterator[None]:
    """Point the ORM's world models (``episode`` alias) and the world clock at ``conn`` in this thread."""
    wrapper = connections[EPISODE_ALIAS]
    rebind = wrapper.connection is not conn
    saved = {name: getattr(wrapper, name) for name in _WRAPPER_STATE} if rebind else {}
    if rebind:
        if not hasattr(wrapper, "transaction_mode"):
            # A wrapper that never connected in this thread has not read its OPTIONS yet.
            wrapper.get_connection_params()
        wrapper.connection = conn
        wrapper.autocommit = True
        wrapper.in_atomic_block = False
        wrapper.savepoint_state = 0
        wrapper.savepoint_ids = []
        wrapper.atomic_blocks = []
        wrapper.commit_on_exit = True
        wrapper.needs_rollback = False
        wrapper.rollback_exc = None
        wrapper.closed_in_transaction = False
        wrapper.errors_occurred = False
        wrapper.run_on_commit = []
        wrapper.run_commit_hooks_on_set_autocommit_on = False
    episode_token = in_episode.set(True)
    now_token = episode_now.set(now)
    try:
        yield
    finally:
        episode_now.reset(now_token)
        in_episode.reset(episode_token)
        if rebind:
            if conn.in_transaction and not wrapper.in_atomic_block:
                # Raw statements outside any atomic block must not leave a transaction open behind us.
                conn.rollback()
            for name, value in saved.items():
                setattr(wrapper, name, value)


@contextmanager
def world_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A step's SQLite transaction on ``conn`` (bound by ``world_bound``), as ``transaction.atomic(using=
    EPISODE_ALIAS)`` makes it, without Django's bookkeeping (most of a no-op step's engine time): BEGIN on the
    sqlite3 connection, the wrapper marked inside an atomic block (the ORM's own blocks inside nest savepoints),
    COMMIT unless the body raised or marked the transaction for rollback (then ROLLBACK; a failed COMMIT rolls
    back and raises Django's error, as the block's exit does; ``on_commit`` callbacks run after a commit and are
    dropped with a rollback). Django's block wherever it is not the outermost one of a bound, idle connection, or
    something listens to Django's cursor."""
    wrapper = connections[EPISODE_ALIAS]
    if (
        wrapper.connection is not conn
        or wrapper.in_atomic_block
        or not wrapper.autocommit
        or conn.in_transaction
        or wrapper.execute_wrappers
        or wrapper.queries_logged
    ):
        with transaction.atomic(using=EPISODE_ALIAS):
            yield
        return
    mode = wrapper.transaction_mode
    with wrapper.wrap_database_errors:
        conn.execute(f"BEGIN {mode}" if mode else "BEGIN")
    wrapper.autocommit, wrapper.in_atomic_block, wrapper.needs_rollback = False, True, False
    wrapper.commit_on_exit = True
    done = False
    try:
        yield
        done = not wrapper.needs_rollback
    finally:
        wrapper.in_atomic_block = wrapper.needs_rollback = False
        try:
            if done:
                try:
                    with wrapper.wrap_database_errors:
                        conn.commit()
                except DatabaseError:
                    conn.rollback()
                    wrapper.run_on_commit = []
                    raise
            else:
                conn.rollback()
                wrapper.run_on_commit = []
        finally:
            wrapper.autocommit = True
    if wrapper.run_on_commit:  # committed: on_commit callbacks run now, as when Django's block turns autocommit on
        wrapper.run_and_clear_commit_hooks()


@dataclass(frozen=True)
class TableSql:
    """The statements the engine runs on one world table; identifiers come from model metadata only."""

    columns: list[str]
    select_row: str
    delete_row: str
    insert_row: str


@cache
def table_sql(table: str) -> TableSql:
    pk, columns = world_tables()[table]  # KeyError for anything that is not a world table
    quoted = ", ".join(f'"{c}"' for c in columns)
    raw = ", ".join(f'+"{c}"' for c in columns)  # unary + drops the declared type: no converter runs
    return TableSql(
        columns=columns,
        select_row=f'SELECT {raw} FROM "{table}" WHERE "{pk}" = ?',  # noqa: S608
        delete_row=f'DELETE FROM "{table}" WHERE "{pk}" = ?',  # noqa: S608
        insert_row=f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join("?" * len(columns))})',  # noqa: S608
    )


def _record_change(table: str, pk: str, ref: str, op: str) -> str:
    return f"INSERT INTO \"{CHANGES_TABLE}\" VALUES ('{table}', {ref}.\"{pk}\", '{op}');"  # noqa: S608


def change_capture_sql() -> str:
    """The changes table and, per world table, triggers recording every row an insert/update/delete touched."""
    statements = [f'CREATE TABLE "{CHANGES_TABLE}" (tbl TEXT NOT NULL, pk TEXT NOT NULL, op TEXT NOT NULL)']
    for t, (pk, _columns) in world_tables().items():
        inserted = _record_change(t, pk, "NEW", "insert")
        updated = _record_change(t, pk, "OLD", "update") + " " + _record_change(t, pk, "NEW", "update")
        deleted = _record_change(t, pk, "OLD", "delete")
        statements += [
            f'CREATE TRIGGER "_ec_{t}_ins" AFTER INSERT ON "{t}" BEGIN {inserted} END',
            f'CREATE TRIGGER "_ec_{t}_upd" AFTER UPDATE ON "{t}" BEGIN {updated} END',
            f'CREATE TRIGGER "_ec_{t}_del" AFTER DELETE ON "{t}" BEGIN {deleted} END',
        ]
    return ";\n".join(statements) + ";"


def row_read(conn: sqlite3.Connection, table: str, pk: str) -> Row | None:
    """One row as stored, every value raw (what a replay inserts again)."""
    sql = table_sql(table)
    found = conn.execute(sql.select_row, (pk,)).fetchone()
    return None if found is None else dict(zip(sql.columns, found, strict=True))


# Primary keys per batched read: far below SQLite's limit on bound parameters.
_ROWS_PER_READ = 250


def _rows_read(conn: sqlite3.Connection, table: str, pks: list[str]) -> dict[Any, Row]:
    """The rows of ``table`` with these primary keys, as ``row_read`` reads them, by their stored key: one
    statement per batch of keys instead of one per row (a write tool touches several rows of a table)."""
    sql = table_sql(table)
    pk = world_tables()[table][0]
    key = sql.columns.index(pk)
    rows: dict[Any, Row] = {}
    for start in range(0, len(pks), _ROWS_PER_READ):
        batch = pks[start : start + _ROWS_PER_READ]
        select = sql.select_row.removesuffix(" = ?") + f" IN ({', '.join('?' * len(batch))})"
        for found in conn.execute(select, batch).fetchall():
            rows[found[key]] = dict(zip(sql.columns, found, strict=True))
    return rows


_TAKE_CHANGES = f'SELECT DISTINCT tbl, pk FROM "{CHANGES_TABLE}"'  # noqa: S608
_FORGET_CHANGES = f'DELETE FROM "{CHANGES_TABLE}"'  # noqa: S608
# The (table, pk) written since the last ``changes_take``, read without forgetting them.
PENDING_CHANGES_SQL = _TAKE_CHANGES


def changes_take(conn: sqlite3.Connection) -> list[Change]:
    """The row images of every row written since the last call, then forget them (same transaction)."""
    touched = conn.execute(_TAKE_CHANGES).fetchall()
    if not touched:
        return []
    conn.execute(_FORGET_CHANGES)
    found: dict[str, dict[Any, Row]] = {}
    for table in {table for table, _pk in touched}:
        found[table] = _rows_read(conn, table, [pk for t, pk in touched if t == table])
    changes = []
    for table, pk in sorted(touched, key=lambda t: (table_order(t[0]), t[1])):
        # A row the batched read did not find by this key is read alone, as always (gone: deleted).
        row = found[table].get(pk) or row_read(conn, table, pk)
        if row is None:
            changes.append({"table": table, "pk": pk, "op": "delete"})
        else:
            changes.append({"table": table, "pk": pk, "op": "upsert", "row": row})
    return changes


def changes_apply(conn: sqlite3.Connection, steps: Iterable[list[Change]]) -> set[tuple[str, str]]:
    """Apply the row images of each step in order, in one transaction; returns the (table, pk) touched.

    Within a step every touched row is first removed, then the final images inserted: unique columns swapped
    between rows of one step can then never collide, and foreign keys (deferred) are checked at commit.
    """
    touched: set[tuple[str, str]] = set()
    conn.execute("BEGIN")
    try:
        for changes in steps:
            for change in changes:
                conn.execute(table_sql(change["table"]).delete_row, (change["pk"],))
                touched.add((change["table"], change["pk"]))
            for change in changes:
                if change["op"] == "upsert":
                    sql = table_sql(change["table"])
                    conn.execute(sql.insert_row, [change["row"][c] for c in sql.columns])
        conn.execute(_FORGET_CHANGES)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return touched
