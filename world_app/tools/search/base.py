"""What every search tool shares: the text, range and equality filters, and ``BakedSearch``, which runs a
search's page and total as baked queries.

Every search answers ``{"items", "total", "offset", "limit", "has_more"}``; an agent that reads only the first
page misses the rest, by design. Text queries are split into words; every word must appear (case-insensitive)
in one of the searched fields. Orders always end with the id, so equal keys never swap between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, Q, QuerySet

from world_app.tools.baked import BakedQuery
from world_app.tools.params import PageParams
from world_app.tools.results import page, page_of

MAX_QUERY_WORDS = 8
# Deeper pages go through the ORM: every offset is a compiled form of its own.
BAKED_MAX_OFFSET = 200


def choice_values(text_choices) -> tuple:
    return tuple(text_choices.values)


def text_filter(text: str | None, fields: tuple[str, ...]) -> Q:
    """Every word of ``text`` in at least one of ``fields`` (case-insensitive; the same on Postgres and SQLite)."""
    condition = Q()
    if not text:
        return condition
    for word in text.split()[:MAX_QUERY_WORDS]:
        any_field = Q()
        for name in fields:
            any_field |= Q(**{f"{name}__icontains": word})
        condition &= any_field
    return condition


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
        if self.words is not None:
            # Stand-ins hold no white space: text_filter splits them back into one word each.
            words = values[-1]
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
