"""What every search tool shares: the text, range and equality filters, and ``BakedSearch``, which runs a
search's page and total as baked queries.

Every search answers ``{"items", "total", "offset", "limit", "has_more"}``; an agent that reads only the first
page misses the rest, by design. Text queries are split into words; every word must appear (case-insensitive)
in one of the searched fields. Orders always end with the id, so equal keys never swap between calls.

In an episode's world whose image holds the search indexes (``world_app.episodes.search_index``), an ASCII word
of 3 characters or more is found by the index alone, and any other word of 3 or more is narrowed by it and then
matched as everywhere else: the same rows in the same order, without scanning the table.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime
from functools import cache

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import BooleanField, Model, Q, QuerySet
from django.db.models.expressions import RawSQL

from world_app.episodes.search_index import (
    TEXT_INDEXES,
    TextIndex,
    matching_sql,
    phrase_query,
    word_mode,
    world_searchable,
)
from world_app.routers import EPISODE_ALIAS, in_episode
from world_app.tools.baked import BakedQuery
from world_app.tools.params import PageParams
from world_app.tools.results import page, page_of

MAX_QUERY_WORDS = 8
# Deeper pages go through the ORM: every offset is a compiled form of its own.
BAKED_MAX_OFFSET = 200


def choice_values(text_choices) -> tuple:
    return tuple(text_choices.values)


# Marks a baked stand-in word with the way ``text_filter`` must find it (BakedSearch to text_filter; real words
# hold no NUL): a stand-in is ASCII and long, so its own length and letters cannot tell.
_MODE_MARKS = {mode: f"\x00{mode}\x00" for mode in ("index", "walk", "narrow", "scan")}
# Orders that an index of every world table gives without sorting (created_at is indexed on each; id is the key).
WALKED_ORDERS = {("-created_at", "-id"), ("created_at", "id"), ("id",)}
# A common word's page walks that index (testing each entry against the word's rows) instead of reading and sorting
# all of its rows: when rows ** 2 * WALK_GAIN > table rows * (offset + limit). Measured at scale 100 (205,701
# orders): reading and sorting costs about 1.3 us a row, walking about 0.06 us an index entry.
WALK_GAIN = 20


def text_filter(text: str | None, fields: tuple[str, ...], model: type[Model] | None = None) -> Q:
    """Every word of ``text`` in at least one of ``fields`` (case-insensitive; the same on Postgres and SQLite).

    With ``model`` (the queryset's), words are found by the search indexes where the world has them
    (``world_app.episodes.search_index``: by the index alone, or narrowed by it and then matched).
    """
    condition = Q()
    if not text:
        return condition
    index = _text_index(model, fields) if model is not None and world_has_search_index() else None
    for word in text.split()[:MAX_QUERY_WORDS]:
        mode = word_mode(word)
        for marked, mark in _MODE_MARKS.items():
            if word.startswith(mark):
                word, mode = word[len(mark) :], marked
        if index is None:
            mode = "scan"
        matched = Q()
        if mode in ("narrow", "scan"):
            for name in fields:
                matched |= Q(**{f"{name}__icontains": word})
        if mode != "scan":
            assert index is not None
            table_index, columns = index
            sql = matching_sql(table_index, walk=mode == "walk")
            matched = Q(RawSQL(sql, [word, columns], output_field=BooleanField())) & matched  # noqa: S611
        condition &= matched
    return condition


def world_has_search_index() -> bool:
    """Whether queries run now on an episode's world with the search indexes."""
    if not in_episode.get():
        return False
    conn = connections[EPISODE_ALIAS].connection
    return conn is not None and world_searchable(conn)


@cache
def _text_index(model: type[Model], fields: tuple[str, ...]) -> tuple[TextIndex, str] | None:
    """The index holding every one of ``fields`` and the FTS5 column list to look in ('' for all of them), or
    None when a field is in no index of the queryset's table (its words are then matched by scanning alone)."""
    index = TEXT_INDEXES.get(model._meta.db_table)
    if index is None:
        return None
    columns = []
    for name in fields:
        parts = name.split("__")
        field = model._meta.get_field(parts[0])
        if len(parts) == 1 or (len(parts) == 2 and field.many_to_one and parts[1] == field.target_field.name):
            column = field.column  # the table's own column (a foreign key's target id is the key column itself)
        elif len(parts) == 2 and field.many_to_one:
            column = name
        else:
            return None
        if column not in index.fields:
            return None
        columns.append(column)
    return index, "" if sorted(columns) == sorted(index.fields) else " ".join(columns)


def range_filter(name: str, after: datetime | None, before: datetime | None, *, dates: bool = False) -> Q:
    condition = Q()
    if after is not None:
        condition &= Q(**{f"{name}__gte": after.date() if dates else after})
    if before is not None:
        condition &= Q(**{f"{name}__lt": before.date() if dates else before})
    return condition


def exact_filters(**pairs) -> Q:
    """Equality on every pair whose value was given."""
    condition = Q()
    for name, value in pairs.items():
        if value is not None:
            condition &= Q(**{name: value})
    return condition


def paged(queryset: QuerySet, params: PageParams, record, prepare=None) -> dict:
    return page(queryset, offset=params.offset, limit=params.limit, record=record, prepare=prepare)


class BakedSearch:
    """A search whose page and total run as baked queries (``baked.py``) when its arguments allow it.

    ``queryset(p)`` is the search's filtered, ordered queryset. ``values``: id arguments it compares with
    ``exact`` or ``in``, run as query values. ``words``: the text argument ``text_filter`` splits, its words run
    as ``icontains`` values (a baked query rewrites them as Django does). ``unbaked``: arguments whose SQL
    depends on the value (times, money, spec dicts, exact case-insensitive matches): when one is given, the ORM
    runs the search. Every other argument (choices, booleans, sort, paging) picks a compiled form.

    ``text_fields`` (the fields ``queryset`` gives ``text_filter``) and ``sorts`` (each sort's order): in a world
    with the search indexes, a search by words alone has its total counted in the index, and its page walks the
    sort's index when the words are common (``WALK_GAIN``). So ``queryset`` filters by its params and nothing else.
    """

    def __init__(
        self,
        model: type[Model],
        params: type[PageParams],
        queryset: Callable[[PageParams], QuerySet],
        *,
        values: tuple[str, ...] = (),
        words: str | None = "query",
        unbaked: tuple[str, ...] = (),
        text_fields: tuple[str, ...] = (),
        sorts: dict[str, tuple] | None = None,
    ) -> None:
        unknown = (set(values) | {words} | set(unbaked)) - set(params.model_fields) - {None}
        if unknown:
            raise ImproperlyConfigured(f"{params.__name__} has no fields {sorted(unknown)}")
        self.params = params
        self.queryset = queryset
        self.values = values
        self.words = words
        self.unbaked = unbaked
        self.shape = tuple(name for name in params.model_fields if name not in (*values, words, *unbaked))
        self.model = model
        self.text_fields = text_fields
        self.walked = {name for name, order in (sorts or {}).items() if tuple(order) in WALKED_ORDERS}
        self.filters = tuple(n for n in params.model_fields if n not in (words, "sort", "offset", "limit"))
        self._rows = BakedQuery(model, self._page_queryset)
        self._totals = BakedQuery(model, self._queryset)

    def _stand_in(self, values: tuple, shape: dict) -> PageParams:
        fields = dict(zip(self.values, values[: len(self.values)], strict=True))
        modes = shape.pop("word_modes", ())
        if self.words is not None:
            # Stand-ins hold no white space: text_filter splits them back into one word each.
            words = values[-1]
            if words is not None:
                # A baked list is padded by repeating its last item: the last mode goes with it.
                words = [_MODE_MARKS[modes[min(i, len(modes) - 1)]] + w for i, w in enumerate(words)]
            fields[self.words] = None if words is None else " ".join(words)
        # Stand-in values are not ids: build the params without validating them.
        return self.params.model_construct(**fields, **shape)

    def _queryset(self, *values, **shape) -> QuerySet:
        return self.queryset(self._stand_in(values, shape))

    def _page_queryset(self, *values, **shape) -> QuerySet:
        p = self._stand_in(values, shape)
        return self.queryset(p)[p.offset : p.offset + p.limit]

    def page(self, p: PageParams, record: Callable, prepare: Callable[[list], None] | None = None) -> dict:
        if p.offset > BAKED_MAX_OFFSET or any(getattr(p, name) is not None for name in self.unbaked):
            return paged(self.queryset(p), p, record, prepare)
        values: list = [getattr(p, name) for name in self.values]
        if self.words is not None:
            text = getattr(p, self.words)
            words = None if text is None else text.split()[:MAX_QUERY_WORDS]
            if words == []:
                return paged(self.queryset(p), p, record, prepare)  # blank text: leave the ORM its own answer
            values.append(words)
        shape: dict[str, Hashable] = {name: getattr(p, name) for name in self.shape}
        total = None
        if self.words is not None and words is not None:
            # How each word is found is part of the compiled form (short words have no trigram...).
            searchable = world_has_search_index()
            modes = tuple(word_mode(w) if searchable else "scan" for w in words)
            if set(modes) == {"index"} and all(getattr(p, name) is None for name in self.filters):
                total = self._index_total(words)
                if getattr(p, "sort", None) in self.walked and self._common(total, p.offset + p.limit):
                    modes = ("walk",) * len(modes)
            shape["word_modes"] = modes
        rows = self._rows(*values, **shape)
        unpaged = {name: value for name, value in shape.items() if name not in ("offset", "limit")}
        return page_of(
            rows,
            offset=p.offset,
            limit=p.limit,
            count=(lambda: total) if total is not None else lambda: self._totals.count(*values, **unpaged),
            record=record,
            prepare=prepare,
        )

    def _index_total(self, words: list[str]) -> int | None:
        """How many rows hold every word, counted in the index (a search by words alone)."""
        found = _text_index(self.model, self.text_fields) if self.text_fields else None
        if found is None:
            return None
        index, columns = found
        query = " AND ".join(phrase_query(w, columns) for w in words)
        conn = connections[EPISODE_ALIAS].connection
        return conn.execute(f'SELECT count(*) FROM "{index.name}" WHERE "{index.name}" MATCH ?', [query]).fetchone()[0]  # noqa: S608

    def _common(self, total: int | None, rows_needed: int) -> bool:
        if total is None:
            return False
        table = self.model._meta.db_table
        conn = connections[EPISODE_ALIAS].connection
        size = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0] or 0  # noqa: S608 (about its rows)
        return total * total * WALK_GAIN > size * rows_needed
