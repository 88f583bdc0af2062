"""Search indexes in the snapshot image: a search's words, and its commonest filters, answered without scanning.

A search tool keeps a row when every word of its query appears, case-insensitively, in one of the searched
fields (``LIKE '%word%'``, ``world_app.tools.search.base.text_filter``): a scan of the whole table, linear in
the world (``search_orders`` 2.6 ms at scale 1, 112 ms at scale 100). Each big searched table gets an FTS5 table
with the ``trigram`` tokenizer over exactly the fields its search looks in, built at publish and kept true by
triggers when an episode writes:

- an ASCII word of 3 characters or more is answered by the index alone. With ``detail=full`` the index holds
  each trigram's place, so the word as an FTS5 phrase matches the rows where it is a substring of one of the
  fields, case folded: what ``LIKE`` keeps. Counting the rows of a common word is then a walk of the index
  (0.1-0.6 ms for 1,500-17,000 orders at scale 100) instead of reading and matching each row (1.4-12 ms);
- any other word of 3 or more is narrowed by the index and then matched with ``LIKE``, as the scan does. FTS5
  folds the case of every letter and ``LIKE`` of ASCII letters only, so for such a word the index finds a
  superset (``É`` for ``é``) and ``LIKE`` decides;
- shorter words, and worlds whose image has no index (snapshots published before it), scan as before.

The rows, their order and the totals are the scan's; ``bench/search.py`` and the tests compare them byte for
byte. One difference is known and left: a field character outside ASCII whose lower case is an ASCII letter
(the Kelvin sign, the long s) matches its ASCII letter in the index and not in ``LIKE``.

A search over a related row's fields (an order's customer's name and email) has those fields in its index too:
that index keeps its own copy of the text (it cannot read a join back), and triggers on both tables keep it true.
The others read their text from the table itself (external content: no second copy).

Filters an agent uses most that the world's own indexes do not serve (a customer's tier; an order's status in
date order) get B-tree indexes here too, so a page and its total read an index range instead of the table.

Nothing here is world content: the objects are named ``_search_*``, left out of the schema fingerprint, and
never read by checksums, diffs or the step log. The indexes of images published before these (``detail=none``,
trigrams only) are not used: such worlds scan.
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from dataclasses import dataclass
from functools import cache

PREFIX = "_search_"


@dataclass(frozen=True)
class Related:
    """Fields of another table a search looks in through a foreign key (``customer__first_name``)."""

    field: str  # the foreign key's field name (``customer``)
    column: str  # its column on the searched table (``customer_id``)
    table: str  # the table it points at
    key: str  # the column it points at
    columns: tuple[str, ...]  # that table's searched columns


@dataclass(frozen=True)
class TextIndex:
    table: str
    columns: tuple[str, ...]  # the searched table's own columns (a foreign key's id is its column: ``order_id``)
    related: Related | None = None

    @property
    def name(self) -> str:
        return f"{PREFIX}text_{self.table}"

    @property
    def fields(self) -> tuple[str, ...]:
        """The index's column names: own columns as they are, a related table's as ``field__column``."""
        joined = () if self.related is None else tuple(f"{self.related.field}__{c}" for c in self.related.columns)
        return (*self.columns, *joined)


# Exactly the fields each big table's search looks in (world_app/tools/search). Small tables (products, staff,
# articles) are scanned.
TEXT_INDEXES: dict[str, TextIndex] = {
    index.table: index
    for index in (
        TextIndex("world_app_customer", ("id", "first_name", "last_name", "email", "phone", "addresses")),
        TextIndex(
            "world_app_order",
            ("id", "notes"),
            Related("customer", "customer_id", "world_app_customer", "id", ("first_name", "last_name", "email")),
        ),
        TextIndex("world_app_supportticket", ("id", "subject", "body")),
        TextIndex("world_app_shipment", ("id", "tracking_number", "order_id")),
        TextIndex("world_app_payment", ("id", "transaction_id", "card_last4", "order_id")),
        TextIndex("world_app_build", ("id", "name", "notes")),
    )
}
# B-tree indexes for filters: (name, table, columns).
FILTER_INDEXES = (
    (f"{PREFIX}customer_tier", "world_app_customer", ("loyalty_tier", "id")),
    (f"{PREFIX}order_status_created", "world_app_order", ("status", "created_at", "id")),
)
# Shorter words hold no trigram: the index cannot find them.
MIN_INDEXED_CHARS = 3
PHRASE_FUNCTION = "search_phrase"


def word_mode(word: str) -> str:
    """How a search word is found in an indexed world: ``index`` (the index alone), ``narrow`` (the index, then
    ``LIKE``) or ``scan``."""
    if len(word) < MIN_INDEXED_CHARS:
        return "scan"
    return "index" if word.isascii() else "narrow"


def phrase_query(word: str, columns: str = "") -> str:
    """The FTS5 query for rows holding ``word`` as a substring (quoted: taken literally), in ``columns`` (an
    FTS5 column list, space-separated) or in any column when empty."""
    phrase = '"' + word.replace('"', '""') + '"'
    return f"{{{columns}}} : {phrase}" if columns else phrase


def matching_sql(index: TextIndex, *, walk: bool = False) -> str:
    """A condition on the searched table: its row holds a word (two ``%s`` parameters: the word, and the
    index's columns to look in, space-separated, or '' for all). ``walk``: the rows are not looked up by rowid
    (unary ``+``), so SQLite walks an index in the query's order and tests each entry against the word's rows."""
    return (
        f'{"+" if walk else ""}"{index.table}".rowid IN '  # noqa: S608 (identifiers from TEXT_INDEXES)
        f'(SELECT rowid FROM "{index.name}" WHERE "{index.name}" MATCH {PHRASE_FUNCTION}(%s, %s))'
    )


def register_functions(conn: sqlite3.Connection) -> None:
    conn.create_function(PHRASE_FUNCTION, 2, phrase_query, deterministic=True)


def _quoted(columns: tuple[str, ...], ref: str = "") -> str:
    return ", ".join(f'{ref}"{c}"' for c in columns)


def _changed(columns: tuple[str, ...]) -> str:
    return " OR ".join(f'old."{c}" IS NOT new."{c}"' for c in columns)


def _external_sql(index: TextIndex) -> list[str]:
    """An index that reads its text from the table itself: triggers give it the old and new values."""
    table, name, columns = index.table, index.name, index.columns
    cols = _quoted(columns)
    # Identifiers from TEXT_INDEXES only.
    insert = f'INSERT INTO "{name}"(rowid, {cols}) VALUES (new.rowid, {_quoted(columns, "new.")});'  # noqa: S608
    old = _quoted(columns, "old.")
    delete = f'INSERT INTO "{name}"("{name}", rowid, {cols}) VALUES (\'delete\', old.rowid, {old});'  # noqa: S608
    return [
        f'CREATE VIRTUAL TABLE "{name}" USING fts5({cols}, content="{table}", '
        "tokenize='trigram case_sensitive 0', detail=full, columnsize=0)",
        f'CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" BEGIN {insert} END',
        f'CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}" BEGIN {delete} END',
        # Only when a searched column changed: a status update costs the index nothing.
        f'CREATE TRIGGER "{name}_upd" AFTER UPDATE OF {cols} ON "{table}" WHEN {_changed(columns)} '
        f"BEGIN {delete} {insert} END",
    ]


def _related_rows_sql(index: TextIndex) -> str:
    """INSERT of index rows from the table joined to the related one (a WHERE clause is to follow)."""
    rel = index.related
    assert rel is not None
    own, theirs = _quoted(index.columns, "t."), _quoted(rel.columns, "r.")
    join = f'LEFT JOIN "{rel.table}" r ON r."{rel.key}" = t."{rel.column}"'
    return f'INSERT INTO "{index.name}"(rowid, {_quoted(index.fields)}) SELECT t.rowid, {own}, {theirs} FROM "{index.table}" t {join}'  # noqa: E501, S608


def _related_sql(index: TextIndex) -> list[str]:
    """An index over a table's fields and a related row's (its own copy of the text, deleted by rowid)."""
    table, name, rel = index.table, index.name, index.related
    assert rel is not None
    rows = _related_rows_sql(index)
    own = (*index.columns, rel.column)
    theirs = (rel.key, *rel.columns)
    drop_own = f'DELETE FROM "{name}" WHERE rowid = old.rowid;'  # noqa: S608
    pointing = f'"{rel.column}" IN (old."{rel.key}", new."{rel.key}")'
    drop_pointing = f'DELETE FROM "{name}" WHERE rowid IN (SELECT rowid FROM "{table}" WHERE {pointing});'  # noqa: S608
    pointing_old = f'"{rel.column}" = old."{rel.key}"'
    drop_pointing_old = f'DELETE FROM "{name}" WHERE rowid IN (SELECT rowid FROM "{table}" WHERE {pointing_old});'  # noqa: S608
    pointing_new = f'"{rel.column}" = new."{rel.key}"'
    drop_pointing_new = f'DELETE FROM "{name}" WHERE rowid IN (SELECT rowid FROM "{table}" WHERE {pointing_new});'  # noqa: S608
    return [
        f"CREATE VIRTUAL TABLE \"{name}\" USING fts5({_quoted(index.fields)}, tokenize='trigram case_sensitive 0', "
        "detail=full, columnsize=0)",
        f'CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" BEGIN {rows} WHERE t.rowid = new.rowid; END',
        f'CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}" BEGIN {drop_own} END',
        f'CREATE TRIGGER "{name}_upd" AFTER UPDATE OF {_quoted(own)} ON "{table}" WHEN {_changed(own)} '
        f"BEGIN {drop_own} {rows} WHERE t.rowid = new.rowid; END",
        # The related row's fields changed, it went or it came (a rebuild from the log deletes and inserts rows):
        # every row of the table pointing at it, again.
        f'CREATE TRIGGER "{name}_rel_upd" AFTER UPDATE OF {_quoted(theirs)} ON "{rel.table}" WHEN {_changed(theirs)} '
        f"BEGIN {drop_pointing} {rows} WHERE t.{pointing}; END",
        f'CREATE TRIGGER "{name}_rel_del" AFTER DELETE ON "{rel.table}" '
        f"BEGIN {drop_pointing_old} {rows} WHERE t.{pointing_old}; END",
        f'CREATE TRIGGER "{name}_rel_ins" AFTER INSERT ON "{rel.table}" '
        f"BEGIN {drop_pointing_new} {rows} WHERE t.{pointing_new}; END",
    ]


def search_index_sql() -> list[str]:
    """The index tables, their triggers, and the filter indexes."""
    statements = []
    for index in TEXT_INDEXES.values():
        statements += _related_sql(index) if index.related else _external_sql(index)
    for name, table, columns in FILTER_INDEXES:
        statements.append(f'CREATE INDEX "{name}" ON "{table}" ({_quoted(columns)})')
    return statements


def search_index_build(conn: sqlite3.Connection) -> None:
    """Create and fill the indexes of a world whose rows are final (after any VACUUM: it may renumber rowids)."""
    conn.execute("BEGIN")
    try:
        for statement in search_index_sql():
            conn.execute(statement)
        for index in TEXT_INDEXES.values():
            name = index.name
            if index.related is None:
                conn.execute(f'INSERT INTO "{name}"("{name}") VALUES (\'rebuild\')')  # noqa: S608
            else:
                conn.execute(_related_rows_sql(index))
            conn.execute(f'INSERT INTO "{name}"("{name}") VALUES (\'optimize\')')  # noqa: S608
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def has_search_index(conn: sqlite3.Connection) -> bool:
    names = [index.name for index in TEXT_INDEXES.values()]
    found = conn.execute(
        f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ({', '.join('?' * len(names))})",  # noqa: S608
        names,
    ).fetchone()[0]
    return found == len(names)


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
        probe.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='trigram case_sensitive 0', detail=full)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()
