"""What every search tool shares: the text, range and equality filters, and ``BakedSearch``, which runs a
search's page and total as baked queries.

Every search answers ``{"items", "total", "offset", "limit", "has_more"}``; an agent that reads only the first
page misses the rest, by design. Text queries are split into words; every word must appear (case-insensitive)
in one of the searched fields. Orders always end with the id, so equal keys never swap between calls.

In an episode's world whose image holds the search indexes (``world_app.episodes.search_index``), each word of
3 characters or more is first narrowed to the rows the trigram index names, then matched as everywhere else:
the same rows in the same order, without scanning the table.
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
    MIN_INDEXED_CHARS,
    SEARCH_COLUMNS,
    candidates_sql,
    rowid_candidates_sql,
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


# Marks a baked stand-in word the index must not narrow (BakedSearch to text_filter; real words hold no NUL).
_UNINDEXED = "\x00scan\x00"


def text_filter(text: str | None, fields: tuple[str, ...], model: type[Model] | None = None) -> Q:
    """Every word of ``text`` in at least one of ``fields`` (case-insensitive; the same on Postgres and SQLite).

    With ``model`` (the queryset's), words are narrowed by the search indexes first where the world has them.
    """
    condition = Q()
    if not text:
        return condition
    narrowing = model is not None and world_has_search_index()
    for word in text.split()[:MAX_QUERY_WORDS]:
        indexed = narrowing and len(word) >= MIN_INDEXED_CHARS
        if word.startswith(_UNINDEXED):
            word, indexed = word[len(_UNINDEXED) :], False
        any_field = Q()
        for name in fields:
            any_field |= Q(**{f"{name}__icontains": word})
        plan = _index_plan(model, fields) if indexed else None
        if plan is not None:
            any_field = _narrowed(plan, word) & any_field
        condition &= any_field
    return condition


def world_has_search_index() -> bool:
    """Whether queries run now on an episode's world with the search indexes."""
    if not in_episode.get():
        return False
    conn = connections[EPISODE_ALIAS].connection
    return conn is not None and world_searchable(conn)


@cache
def _index_plan(model: type[Model], fields: tuple[str, ...]) -> tuple[tuple[str, str, str | None], ...] | None:
    """Where each field's words are indexed: (the queryset's column compared, indexed table, its key column;
    None for the queryset's own table, narrowed by rowid) per table, or None when a field is in no index (the
    word is then matched by scanning alone)."""
    plan: dict[tuple[str, str, str | None], None] = {}
    for name in fields:
        parts = name.split("__")
        field = model._meta.get_field(parts[0])
        if len(parts) == 1 or (len(parts) == 2 and field.many_to_one and parts[1] == field.target_field.name):
            # The table's own column (a foreign key's target id is the key column itself).
            table, column, via = model._meta.db_table, field.column, (model._meta.pk.attname, model._meta.pk.column)
        elif len(parts) == 2 and field.many_to_one:
            related = field.related_model._meta
            target = field.target_field
            table, column, via = related.db_table, related.get_field(parts[1]).column, (field.attname, target.column)
        else:
            return None
        if column not in SEARCH_COLUMNS.get(table, ()):
            return None
        own = table == model._meta.db_table
        plan[(via[0], table, None if own else via[1])] = None
    return tuple(plan)


def _narrowed(plan: tuple[tuple[str, str, str | None], ...], word: str) -> Q:
    """The rows the indexes name for ``word``: a superset of those holding it in one of the planned fields."""
    narrowed = Q()
    for attname, table, key in plan:
        if key is None:
            # The queryset's own table (its alias is its name: searches join nothing to themselves).
            candidates = RawSQL(rowid_candidates_sql(table), [word], output_field=BooleanField())  # noqa: S611
            narrowed |= Q(candidates)
        else:
            narrowed |= Q(**{f"{attname}__in": RawSQL(candidates_sql(table, key), [word])})  # noqa: S611
    return narrowed


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
        self._rows = BakedQuery(model, self._page_queryset)
        self._totals = BakedQuery(model, self._queryset)

    def _stand_in(self, values: tuple, shape: dict) -> PageParams:
        fields = dict(zip(self.values, values[: len(self.values)], strict=True))
        indexed = shape.pop("indexed_words", ())
        if self.words is not None:
            # Stand-ins hold no white space: text_filter splits them back into one word each.
            words = values[-1]
            if words is not None:
                words = [w if i < len(indexed) and indexed[i] else _UNINDEXED + w for i, w in enumerate(words)]
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
        if self.words is not None and words is not None:
            # Which words the index narrows is part of the compiled form (short words have no trigram).
            searchable = world_has_search_index()
            shape["indexed_words"] = tuple(searchable and len(w) >= MIN_INDEXED_CHARS for w in words)
        rows = self._rows(*values, **shape)
        unpaged = {name: value for name, value in shape.items() if name not in ("offset", "limit")}
        return page_of(
            rows,
            offset=p.offset,
            limit=p.limit,
            count=lambda: self._totals.count(*values, **unpaged),
            record=record,
            prepare=prepare,
        )
