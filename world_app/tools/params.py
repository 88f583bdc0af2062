"""Parameter types shared by the tools. Each Field's description becomes the JSON Schema the model reads."""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal
from functools import cache
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from world_app import clock

DEFAULT_LIMIT = 10
MAX_LIMIT = 50


class ToolParams(BaseModel):
    """Arguments of one tool: unknown arguments are refused, so a misspelt filter is never silently ignored.

    ``null`` for an optional argument means the argument was not given (OpenAI's strict function calling sends
    every argument, the unused ones as null), and a map argument (``specs``) may also come as a list of
    ``{"name", "value"}`` entries, the form strict schemas allow (see :mod:`world_app.tools.strict`).
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @model_validator(mode="before")
    @classmethod
    def _strict_form(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        optional, maps = _argument_kinds(cls)
        out = {}
        for name, value in data.items():
            if value is None and name in optional:
                continue  # null = not given
            if name in maps and isinstance(value, list):
                value = _entries_as_map(name, value)
            out[name] = value
        return out


@cache
def _argument_kinds(params: type[ToolParams]) -> tuple[frozenset[str], frozenset[str]]:
    """The optional arguments of ``params`` and those that are maps (dict-typed)."""
    optional = {name for name, info in params.model_fields.items() if not info.is_required()}
    maps = set()
    for name, info in params.model_fields.items():
        annotation = info.annotation
        options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
        if any(get_origin(option) is dict or option is dict for option in options):
            maps.add(name)
    return frozenset(optional), frozenset(maps)


def _entries_as_map(name: str, entries: list) -> Any:
    """``[{"name": k, "value": v}, ...]`` as ``{k: v}``; anything else is left for the field to refuse."""
    mapping: dict[str, Any] = {}
    for entry in entries:
        if not (isinstance(entry, dict) and set(entry) == {"name", "value"} and isinstance(entry["name"], str)):
            raise PydanticCustomError(
                "map_entries",
                "{field}: give an object, or a list of {form} entries",
                {"field": name, "form": "{name, value}"},
            )
        if entry["name"] in mapping:
            raise PydanticCustomError(
                "map_entries", "{field}: {key!r} is given twice", {"field": name, "key": entry["name"]}
            )
        mapping[entry["name"]] = entry["value"]
    return mapping


class PageParams(ToolParams):
    offset: int = Field(
        0,
        ge=0,
        description="How many matching results to skip. Start at 0; while has_more is true, "
        "call again with offset + limit to get the next page.",
    )
    limit: int = Field(
        DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=f"Results per page, 1-{MAX_LIMIT} (default {DEFAULT_LIMIT})."
    )


def _world_time(value: object) -> datetime:
    """A date ("2025-08-01", start of that day) or a time; without an offset it is read in the world's zone."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time.min)
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = (
                datetime.combine(date.fromisoformat(text), time.min)
                if len(text) == 10
                else datetime.fromisoformat(text)
            )
        except ValueError:
            raise ValueError("not an ISO 8601 date or time (e.g. 2025-08-01 or 2025-08-01T09:30:00-05:00)") from None
    else:
        raise ValueError("must be an ISO 8601 date or time string")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=clock.world_zone())
    return moment


WorldTime = Annotated[
    datetime,
    PlainValidator(_world_time),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
EntityId = Annotated[str, Field(min_length=1, max_length=40)]
Money = Annotated[Decimal, Field(ge=0, max_digits=12, decimal_places=2), WithJsonSchema({"type": "number"})]
SearchText = Annotated[str, Field(min_length=1, max_length=200)]


# An example the schema's own format (date-time, RFC 3339) accepts: midnight in the world's zone (EST, -05:00).
# The tools also take a bare date, read as the start of that day in the world's zone.
def after_field(what: str) -> object:
    return Field(None, description=f"Only {what} at or after this time (ISO 8601, e.g. 2025-08-01T00:00:00-05:00).")


def before_field(what: str) -> object:
    return Field(None, description=f"Only {what} strictly before this time (ISO 8601, e.g. 2025-09-01T00:00:00-05:00).")


class ProductQuantity(ToolParams):
    product_id: EntityId = Field(description="Product id, e.g. prd-0042.")
    quantity: int = Field(1, ge=1, le=100, description="How many units (default 1).")


class LineQuantity(ToolParams):
    line_item_id: EntityId = Field(description="Order line item id (see get_order_details), e.g. li-00017.")
    quantity: int = Field(ge=1, le=1000, description="How many units of that line.")


class LineRefParams(ToolParams):
    line_item_id: EntityId | None = Field(
        None, description="Order line item id (from get_order_details). Or give order_id and product_id."
    )
    order_id: EntityId | None = Field(None, description="Order id, with product_id, when the line id is unknown.")
    product_id: EntityId | None = Field(None, description="Product id on that order, with order_id.")

    @model_validator(mode="after")
    def _line_named(self) -> LineRefParams:
        if not self.line_item_id and not (self.order_id and self.product_id):
            raise ValueError("give line_item_id, or both order_id and product_id")
        return self
