"""Trigram indexes in the snapshot image: a search's words found without scanning the table.

A search tool keeps a row when every word of its query appears, case-insensitively, in one of the searched
columns (``LIKE '%word%'``, ``world_app.tools.search.base.text_filter``): a scan of the whole table, linear in
the world (``search_orders`` 2.6 ms at scale 1, 112 ms at scale 100). Each big searched table gets an FTS5 table
with the ``trigram`` tokenizer over the columns searched in it (external content: the index only, no second
copy of the text), built at publish and kept true by triggers when an episode writes.

The index only narrows: a word of 3 characters or more can only be in a row whose text holds each of the word's
trigrams (case folded), so the search takes the rows the index names for those trigrams and then applies the
same ``LIKE`` as before. The rows kept, their order and the totals are the same as the scan's; the index is
never trusted alone (``detail=none``: it records which rows hold a trigram, not where, which keeps it small).
Shorter words, and worlds whose image has no index (snapshots published before it), scan as before.

Nothing here is world content: the objects are named ``_search_*``, left out of the schema fingerprint, and
never read by checksums, diffs or the step log.
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from functools import cache

PREFIX = "_search_"
# The searched columns of each table big enough to need it (every column text_filter looks in, directly or
# from another table's search through a foreign key). Small tables (products, staff, articles) are scanned.
SEARCH_COLUMNS: dict[str, tuple[str, ...]] = {
    "world_app_customer": ("id", "first_name", "last_name", "email", "phone", "addresses"),
    "world_app_order": ("id", "notes"),
    "world_app_supportticket": ("id", "subject", "body"),
    "world_app_shipment": ("id", "tracking_number", "order_id"),
    "world_app_payment": ("id", "transaction_id", "card_last4", "order_id"),
    "world_app_build": ("id", "name", "notes"),
}
# Shorter words hold no trigram: the index cannot narrow them.
MIN_INDEXED_CHARS = 3
QUERY_FUNCTION = "search_trigrams"


def index_table(table: str) -> str:
    return f"{PREFIX}{table}"


def trigram_query(word: str) -> str:
    """The FTS5 query for rows holding every trigram of ``word`` (each quoted: taken literally)."""
    grams = dict.fromkeys(word[i : i + 3] for i in range(len(word) - 2))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


def candidates_sql(table: str, pk: str = "id") -> str:
    """SQL selecting the primary keys of ``table``'s rows that may hold a word (one ``%s`` parameter: the word)."""
    index = index_table(table)
    return (
        f'SELECT "{pk}" FROM "{table}" WHERE rowid IN '  # noqa: S608 (identifiers from SEARCH_COLUMNS)
        f'(SELECT rowid FROM "{index}" WHERE "{index}" MATCH {QUERY_FUNCTION}(%s))'
    )


def rowid_candidates_sql(table: str) -> str:
    """A condition on ``table`` itself: its row may hold a word (one ``%s`` parameter: the word); one rowid
    look-up per candidate where ``candidates_sql`` takes two."""
    index = index_table(table)
    return (
        f'"{table}".rowid IN '  # noqa: S608 (identifiers from SEARCH_COLUMNS)
        f'(SELECT rowid FROM "{index}" WHERE "{index}" MATCH {QUERY_FUNCTION}(%s))'
    )


def register_functions(conn: sqlite3.Connection) -> None:
    conn.create_function(QUERY_FUNCTION, 1, trigram_query, deterministic=True)


def _quoted(columns: tuple[str, ...], ref: str = "") -> str:
    return ", ".join(f'{ref}"{c}"' for c in columns)


def search_index_sql() -> list[str]:
    """The index tables and the triggers that keep them true under inserts, updates and deletes."""
    statements = []
    for table, columns in SEARCH_COLUMNS.items():
        index = index_table(table)
        cols = _quoted(columns)
        # Identifiers from SEARCH_COLUMNS only.
        insert = f'INSERT INTO "{index}"(rowid, {cols}) VALUES (new.rowid, {_quoted(columns, "new.")});'  # noqa: S608
        delete = (
            f'INSERT INTO "{index}"("{index}", rowid, {cols}) '  # noqa: S608
            f"VALUES ('delete', old.rowid, {_quoted(columns, 'old.')});"
        )
        changed = " OR ".join(f'old."{c}" IS NOT new."{c}"' for c in columns)
        statements += [
            f'CREATE VIRTUAL TABLE "{index}" USING fts5({cols}, content="{table}", '
            "tokenize='trigram case_sensitive 0', detail=none, columnsize=0)",
            f'CREATE TRIGGER "{index}_ins" AFTER INSERT ON "{table}" BEGIN {insert} END',
            f'CREATE TRIGGER "{index}_del" AFTER DELETE ON "{table}" BEGIN {delete} END',
            # Only when a searched column changed: a status update costs the index nothing.
            f'CREATE TRIGGER "{index}_upd" AFTER UPDATE OF {cols} ON "{table}" WHEN {changed} '
            f"BEGIN {delete} {insert} END",
        ]
    return statements


def search_index_build(conn: sqlite3.Connection) -> None:
    """Create and fill the indexes of a world whose rows are final (after any VACUUM: it may renumber rowids)."""
    conn.execute("BEGIN")
    try:
        for statement in search_index_sql():
            conn.execute(statement)
        for table in SEARCH_COLUMNS:
            index = index_table(table)
            conn.execute(f'INSERT INTO "{index}"("{index}") VALUES (\'rebuild\')')  # noqa: S608
            conn.execute(f'INSERT INTO "{index}"("{index}") VALUES (\'optimize\')')  # noqa: S608
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def has_search_index(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ({', '.join('?' * len(SEARCH_COLUMNS))})",  # noqa: S608
        [index_table(t) for t in SEARCH_COLUMNS],
    ).fetchone()[0]
    return found == len(SEARCH_COLUMNS)


def world_searchable(conn: sqlite3.Connection) -> bool:
    """Whether ``conn``'s world has the indexes (asked once per connection: an image has them or not)."""
    found = getattr(conn, "searchable", None)
    if found is None:
        found = fts5_available() and has_search_index(conn)
        with suppress(AttributeError):  # not a WorldConnection: asked again next time
            conn.searchable = found
    return found


@cache
def fts5_available() -> bool:
    """Whether this process's SQLite has FTS5 and its trigram tokenizer."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='trigram case_sensitive 0', detail=none)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()
