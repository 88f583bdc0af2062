"""What each kind of criterion checks: one Pydantic spec model per kind, checked against the world.

A ``state`` spec names a world table and fields that must exist on its Django model (forward relations may be
followed with ``__``, each hop checked); a ``tool_call`` spec names a registered tool and arguments its params
model takes; a ``response`` spec is a text or number check. A spec validator that finds a problem names its
field first ("value: ..."): ``rubrics_app.criteria.criteria_validate`` makes that the problem's path.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any, Literal

from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rubrics_app.answer_facts import ENTITY_ID
from rubrics_app.models import CriterionKind
from rubrics_app.patterns import pattern_check
from world_app import clock
from world_app.models import world_models_by_name
from world_app.tools.registry import CONVERSATION_GROUP, all_tools, get_tool

FilterOp = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "icontains", "is_null", "not_null"]
StateOp = Literal[
    "eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in", "contains", "icontains", "is_null", "not_null",
    "count_eq", "count_gte", "count_lte", "only_changes", "makes_changes",
]  # fmt: skip
COUNT_OPS = ("count_eq", "count_gte", "count_lte")
VALUELESS_OPS = ("is_null", "not_null")
ArgOp = Literal["eq", "contains", "regex", "any", "gte", "lte"]
ResponseOp = Literal[
    "contains", "not_contains", "regex", "number", "amount", "date", "id_set", "affirms", "not_affirms", "prose",
]  # fmt: skip


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


@cache
def resolve_field(model: type[models.Model], path: str) -> models.Field:
    """The field at ``path`` on ``model``, following forward relations on ``__``; ValueError names what is wrong."""
    parts = path.split("__")
    current = model
    for index, part in enumerate(parts):
        try:
            field = current._meta.get_field(part)
        except FieldDoesNotExist:
            names = ", ".join(sorted(f.name for f in current._meta.concrete_fields))
            raise ValueError(f"{current._meta.model_name} has no field {part!r}; its fields: {names}") from None
        if not field.concrete:
            name = f"{current._meta.model_name}.{part}"
            raise ValueError(f"{name} is a reverse relation; only forward fields are allowed")
        if index < len(parts) - 1:
            if not field.is_relation:
                raise ValueError(f"{current._meta.model_name}.{part} is not a relation, so it cannot be followed")
            current = field.related_model
    return field


def field_value(field: models.Field, value: Any) -> Any:
    """``value`` as the field's Python type (a relation takes its target's primary key); ValueError if it can't be."""
    target = field.target_field if field.is_relation else field
    try:
        converted = target.to_python(value)
    except DjangoValidationError as exc:
        raise ValueError(f"{value!r} is not a valid {target.get_internal_type()}: {'; '.join(exc.messages)}") from None
    if isinstance(converted, datetime) and converted.tzinfo is None:
        converted = converted.replace(tzinfo=clock.world_zone())  # read in the world's zone, as the tools do
    return converted


class StateFilter(StrictModel):
    field: str = Field(min_length=1)
    op: FilterOp = "eq"
    value: Any = None


class AllowedChange(StrictModel):
    """Rows of ``entity_type`` the episode may change: ``created`` new rows at most; updates of row ``id`` (any
    row when absent) to ``fields`` (any field when absent) when ``id`` or ``fields`` is given; deletes when
    ``deleted``. For ``makes_changes``, ``values`` (column name -> value, as the episode's diff encodes it) are
    what the created or updated row must hold."""

    entity_type: str
    id: str | None = None
    fields: list[str] | None = None
    created: int = Field(0, ge=0)
    deleted: bool = False
    values: dict[str, Any] | None = None

    @field_validator("entity_type")
    @classmethod
    def _known_table(cls, value: str) -> str:
        return _table_name(value)

    @model_validator(mode="after")
    def _fields_exist(self) -> AllowedChange:
        if self.fields is not None:
            model = world_models_by_name()[self.entity_type]
            names = {f.attname for f in model._meta.concrete_fields} | {f.name for f in model._meta.concrete_fields}
            unknown = [f for f in self.fields if f not in names]
            if unknown:
                raise ValueError(f"fields: {self.entity_type} has no field {unknown[0]!r}")
        if self.values is not None:
            model = world_models_by_name()[self.entity_type]
            names = {f.attname for f in model._meta.concrete_fields}
            unknown = [f for f in self.values if f not in names]
            if unknown:
                raise ValueError(f"values: {self.entity_type} has no column {unknown[0]!r}")
        return self

    @property
    def updates(self) -> bool:
        return self.id is not None or self.fields is not None


def _table_name(value: str) -> str:
    name = value.lower().replace("_", "")
    if name not in world_models_by_name():
        raise ValueError(f"unknown entity type {value!r}; one of: {', '.join(sorted(world_models_by_name()))}")
    return name


class StateSpec(StrictModel):
    """An assertion over the episode's final world: rows of ``entity_type`` matching ``filters`` satisfy ``op``.

    Count operators compare the number of matching rows with ``value``; the others need ``field`` and hold
    when at least one row matches and ``quantifier`` ("all" or "any") of them satisfy it. ``only_changes``
    ("no other changes") reads the episode's diff instead: ``value`` lists the ``AllowedChange`` rules, and every
    created, updated or deleted row must fall under one (an empty list: the episode changes nothing).
    ``makes_changes`` reads the same rules the other way: each must happen (``created`` rows at least, row ``id``
    updated in one of ``fields``, or deleted).
    """

    entity_type: str | None = None
    filters: list[StateFilter] = Field(default_factory=list)
    field: str | None = None
    op: StateOp
    value: Any = None
    quantifier: Literal["all", "any"] = "all"

    @field_validator("entity_type")
    @classmethod
    def _known_table(cls, value: str | None) -> str | None:
        return None if value is None else _table_name(value)

    @model_validator(mode="after")
    def _fields_exist(self) -> StateSpec:
        if self.op in ("only_changes", "makes_changes"):
            if self.filters or self.field:
                raise ValueError(f"field: {self.op} reads the whole diff and takes no field or filters")
            if not isinstance(self.value, list) or (self.op == "makes_changes" and not self.value):
                raise ValueError(f"value: {self.op} needs a list of changes ([] for none, only_changes only)")
            self.value = [AllowedChange.model_validate(rule).model_dump(exclude_defaults=True) for rule in self.value]
            return self
        if self.entity_type is None:
            raise ValueError("entity_type: required")
        model = world_models_by_name()[self.entity_type]
        for index, item in enumerate(self.filters):
            _check_operand(model, item.field, item.op, item.value, where=f"filters[{index}]")
        if self.op in COUNT_OPS:
            if self.field:
                raise ValueError(f"field: {self.op} counts rows and takes no field")
            if not isinstance(self.value, int) or isinstance(self.value, bool) or self.value < 0:
                raise ValueError(f"value: {self.op} needs a whole number of rows >= 0")
        else:
            if not self.field:
                raise ValueError(f"field: required for {self.op}")
            _check_operand(model, self.field, self.op, self.value, where="")
        return self


def _check_operand(model: type[models.Model], path: str, op: str, value: Any, *, where: str) -> None:
    prefix = f"{where}." if where else ""
    try:
        field = resolve_field(model, path)
    except ValueError as exc:
        raise ValueError(f"{prefix}field: {exc}") from None
    if op in VALUELESS_OPS:
        return
    if value is None:
        raise ValueError(f"{prefix}value: required for {op}")
    try:
        if op in ("in", "not_in"):
            if not isinstance(value, list) or not value:
                raise ValueError(f"{op} needs a non-empty list")
            for item in value:
                field_value(field, item)
        elif op in ("contains", "icontains"):
            if not isinstance(value, str):
                raise ValueError(f"{op} needs a text value")
        else:
            field_value(field, value)
    except ValueError as exc:
        raise ValueError(f"{prefix}value: {exc}") from None


class ArgumentMatcher(StrictModel):
    op: ArgOp = "eq"
    value: Any = None

    @model_validator(mode="after")
    def _value_fits(self, info: ValidationInfo) -> ArgumentMatcher:
        if self.op == "any":
            return self
        if self.value is None:
            raise ValueError(f"value: required for {self.op}")
        if self.op == "regex":
            _pattern(self.value, info)
        if self.op in ("gte", "lte") and as_number(self.value) is None:
            raise ValueError(f"value: {self.op} needs a number")
        return self


class ToolCallSpec(StrictModel):
    """A tool must (or must not) be called, with arguments that match; errors returned by the tool don't count.

    ``expect: saw`` is about what the agent saw, not how it asked: every id of ``ids`` appears in the result of
    some successful call (of ``tool`` when given, with ``arguments`` matching when given), by any offset, limit
    or argument spelling.

    ``expect: asked`` is about the conversation: the agent asked the user (``ask_user``, the default ``tool``) a
    question that drew out the held-back fact ``fact`` (a key of the task's simulated user: a question mentioning
    one of its topics, in any wording), and, with ``before``, did so before its first successful call of any of
    those tools (it did not act on a guess).
    """

    tool: str | None = None
    expect: Literal["called", "not_called", "saw", "asked"] = "called"
    arguments: dict[str, ArgumentMatcher] = Field(default_factory=dict)
    min_count: int = Field(1, ge=1)
    max_count: int | None = Field(None, ge=1)
    ids: list[str] | None = None
    fact: str | None = None
    before: list[str] | None = None

    @model_validator(mode="after")
    def _tool_and_args_exist(self) -> ToolCallSpec:
        if self.expect == "asked":
            if not self.fact or not str(self.fact).strip():
                raise ValueError("fact: asked needs the key of the held-back fact the agent must ask for")
            if self.ids or self.arguments:
                raise ValueError("asked takes fact and before, not ids or arguments")
            tool = self.tool or "ask_user"
            found = get_tool(tool)
            if found is None or found.group != CONVERSATION_GROUP:
                raise ValueError(f"tool: {tool!r} is no conversation tool")
            for name in self.before or []:
                if get_tool(name) is None:
                    raise ValueError(f"before: no tool named {name!r}")
            return self
        if self.fact or self.before:
            raise ValueError(f"fact, before: only expect=asked takes them (expect is {self.expect})")
        if self.expect == "saw":
            if not self.ids or not all(isinstance(i, str) and i.strip() for i in self.ids):
                raise ValueError("ids: saw needs the ids that must appear in a tool result")
            if not self.tool:
                if self.arguments:
                    raise ValueError("arguments: name the tool whose arguments must match")
                return self
        elif self.ids:
            raise ValueError(f"ids: only expect=saw takes ids (expect is {self.expect})")
        if not self.tool:
            raise ValueError("tool: required")
        found = get_tool(self.tool)
        if found is None:
            raise ValueError(f"tool: no tool named {self.tool!r}; one of: {', '.join(t.name for t in all_tools())}")
        known = found.params.model_fields
        for name in self.arguments:
            if name not in known:
                raise ValueError(f"arguments.{name}: {self.tool} takes no such argument; it takes: {', '.join(known)}")
        if self.max_count is not None and self.max_count < self.min_count:
            raise ValueError("max_count: must be >= min_count")
        return self


class ResponseSpec(StrictModel):
    """A check of the final answer.

    Text ops (as they were): ``contains`` / ``not_contains`` a text, ``regex`` matches, ``number`` states a number
    anywhere. Ops a dump, a spray or a negation cannot meet (they read the answer's prose, JSON masked out, and a
    spray of values makes its facts unreadable, see ``rubrics_app.answer_facts``):
    - ``amount``: the money amount stated for ``subject`` (a pattern: "refund", "restocking fee") is ``value``
      (+/- ``tolerance``), in any common format ("$1,234.50", "1234.50 USD", "USD 1,234.50", "1,234.50 dollars");
      without a subject, the amount is stated somewhere in the answer's prose;
    - ``date``: the answer states the date ``value`` (ISO), for ``subject`` when given, in any common format;
    - ``id_set``: the ids of one kind (``id_kind``, e.g. "ord", or the prefix of ``value``'s ids) that the answer
      names are exactly ``value`` (``allowed`` ids may also appear): extras and misses count against;
    - ``affirms`` / ``not_affirms``: the answer does (does not) make the claim ``value`` (a pattern), negated
      occurrences ("no exception is possible") not counting as the claim;
    - ``prose``: the answer is a reply written for its reader, not raw tool JSON or a list of bare values.
    """

    op: ResponseOp
    value: Any = None
    subject: str | None = None
    tolerance: float = Field(0.0, ge=0)
    case_sensitive: bool = False
    id_kind: str | None = None
    allowed: list[str] | None = None

    @model_validator(mode="after")
    def _value_fits(self, info: ValidationInfo) -> ResponseSpec:
        if self.op != "id_set" and (self.id_kind or self.allowed):
            raise ValueError("id_kind: only id_set takes id_kind and allowed")
        if self.subject is not None and self.op not in ("amount", "date"):
            raise ValueError(f"subject: only amount and date take a subject (op is {self.op})")
        if self.subject is not None and not _judging(info):
            try:
                pattern_check(self.subject)
            except ValueError as exc:
                raise ValueError(f"subject: {exc}") from None
        if self.op in ("number", "amount"):
            if as_number(self.value) is None:
                raise ValueError(f"value: {self.op} needs a number")
        elif self.op == "date":
            try:
                date.fromisoformat(str(self.value))
            except ValueError:
                raise ValueError("value: date needs an ISO date (2025-09-15)") from None
            self.value = str(self.value)
        elif self.op == "id_set":
            self._id_set_fits()
        elif self.op == "prose":
            if self.value not in (None, ""):
                raise ValueError("value: prose takes no value")
            self.value = None
        elif not isinstance(self.value, str) or not self.value:
            raise ValueError(f"value: {self.op} needs a non-empty text")
        elif self.op in ("regex", "affirms", "not_affirms"):
            _pattern(self.value, info)
        return self

    def _id_set_fits(self) -> None:
        if not isinstance(self.value, list) or not all(isinstance(v, str) for v in self.value):
            raise ValueError("value: id_set needs a list of ids")
        kinds = set()
        for item in [*self.value, *(self.allowed or [])]:
            match = ENTITY_ID.fullmatch(item.strip())
            if match is None:
                raise ValueError(f"value: {item!r} is not an id (like ord-250906-001)")
            kinds.add(match.group(1))
        if self.id_kind:
            kinds.add(self.id_kind)
        if len(kinds) != 1:
            raise ValueError(f"value: id_set takes ids of one kind; these are of {', '.join(sorted(kinds)) or 'none'}")
        self.id_kind = kinds.pop()
        self.value = sorted({v.strip() for v in self.value})


class LlmSpec(StrictModel):
    """The check is the criterion's text; the LLM judge (``rubrics_app.judge``) decides it."""


SPEC_MODELS: dict[str, type[BaseModel]] = {
    CriterionKind.LLM: LlmSpec,
    CriterionKind.STATE: StateSpec,
    CriterionKind.TOOL_CALL: ToolCallSpec,
    CriterionKind.RESPONSE: ResponseSpec,
}


# Pass as ``context`` when reading a stored spec to judge it: a stored pattern is not re-checked (an old row
# or a frozen release row may predate the check); the judge runs it under the time limit instead.
JUDGING = {"judging": True}


def _judging(info: ValidationInfo | None) -> bool:
    return bool(info is not None and info.context and info.context.get("judging"))


def spec_read(model: type[BaseModel], spec: dict) -> Any:
    """A stored spec, parsed for judging (see ``JUDGING``)."""
    return model.model_validate(spec, context=JUDGING)


def _pattern(pattern: Any, info: ValidationInfo | None = None) -> None:
    """Refuse a pattern that does not compile or can backtrack catastrophically (``rubrics_app.patterns``)."""
    if _judging(info):
        if not isinstance(pattern, str):
            raise ValueError("value: a pattern must be text")
        return
    try:
        pattern_check(pattern)
    except ValueError as exc:
        raise ValueError(f"value: {exc}") from None


def as_number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    try:
        return Decimal(str(value).replace(",", "").replace("$", "").strip())  # "$1,200.50", "-$94.35"
    except (InvalidOperation, ValueError):
        return None
