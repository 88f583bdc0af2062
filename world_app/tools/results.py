"""The shapes every tool answers with: pages, errors, money, times.

A tool's answer is plain JSON (str, int, bool, None, lists, dicts with sorted keys where the data is free-form),
the same for the same world state on Postgres and on SQLite: money is a string with two decimals, a time is
ISO 8601 in the world's zone, a date is ISO 8601.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from world_app import clock
from world_app.money import to_cent


class ErrorCode:
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    NOT_FOUND = "not_found"
    POLICY_VIOLATION = "policy_violation"
    INVALID_TRANSITION = "invalid_transition"
    CONFLICT = "conflict"
    INTERNAL_ERROR = "internal_error"


class ToolError(Exception):
    """Raised inside a tool to refuse: the call's writes are rolled back and the agent gets ``result``."""

    def __init__(self, code: str, message: str, *, field: str | None = None, details: list[dict] | None = None) -> None:
        super().__init__(message)
        self.result = error_result(code, message, field=field, details=details)


def error_result(code: str, message: str, *, field: str | None = None, details: list[dict] | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    if details:
        error["details"] = details
    return {"error": error}


def not_found(entity: str, entity_id: str, *, field: str) -> ToolError:
    return ToolError(ErrorCode.NOT_FOUND, f"no {entity} with id {entity_id!r}", field=field)


def money(value: Decimal | None) -> str | None:
    if value is None:
        return None
    return str(to_cent(value))


def when(value: datetime | None) -> str | None:
    """A time in the world's zone."""
    if value is None:
        return None
    return value.astimezone(clock.world_zone()).isoformat()


def day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def world_today() -> date:
    return clock.world_now().astimezone(clock.world_zone()).date()


def local_date(value: datetime) -> date:
    return value.astimezone(clock.world_zone()).date()


def canonical(value: Any) -> Any:
    """Free-form JSON with sorted keys: Postgres jsonb and SQLite keep keys in different orders."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def page(
    queryset: QuerySet,
    *,
    offset: int,
    limit: int,
    record: Callable[[Any], dict],
    prepare: Callable[[list], None] | None = None,
) -> dict:
    """One page of an ordered queryset, as ``{"items", "total", "offset", "limit", "has_more"}``."""
    rows = list(queryset[offset : offset + limit])
    return page_of(rows, offset=offset, limit=limit, count=queryset.count, record=record, prepare=prepare)


def page_of(
    rows: list,
    *,
    offset: int,
    limit: int,
    count: Callable[[], int],
    record: Callable[[Any], dict],
    prepare: Callable[[list], None] | None = None,
) -> dict:
    """The page answer for ``rows`` (at most ``limit`` of them, from ``offset``); ``count()`` gives the total."""
    # A short page is the last one, so it tells the total without a COUNT query.
    last_page = (rows and len(rows) < limit) or (not rows and offset == 0)
    total = offset + len(rows) if last_page else count()
    if prepare is not None and rows:
        prepare(rows)
    return {
        "items": [record(row) for row in rows],
        "total": total,
        "offset": offset,
        "limit": limit,
        "has_more": offset + len(rows) < total,
    }
