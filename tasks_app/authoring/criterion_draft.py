"""One criterion as the task editor shows it (``CriterionDraft``): every field as typed, turned into the dict
``rubrics_app.criteria.criteria_validate`` checks, and each problem found placed on the field it is about.

Criteria are not a Django formset: each criterion block posts its fields under a prefix (``c0-text``,
``c0-filter_field``…) and the hidden ``criterion`` inputs give the blocks' order, so moving a block is
moving its hidden input.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from corecraft_site.service_errors import error_fields
from rubrics_app.criteria import criteria_validate, criterion_text_warnings
from rubrics_app.criterion_specs import COUNT_OPS
from rubrics_app.models import CriterionCategory, CriterionKind

STATE_OPS = (
    ("eq", "equals"),
    ("ne", "does not equal"),
    ("gt", "greater than"),
    ("gte", "at least"),
    ("lt", "less than"),
    ("lte", "at most"),
    ("in", "is one of (comma-separated)"),
    ("not_in", "is none of (comma-separated)"),
    ("contains", "contains"),
    ("icontains", "contains, any case"),
    ("is_null", "is empty"),
    ("not_null", "is set"),
    ("count_eq", "number of rows equals"),
    ("count_gte", "number of rows at least"),
    ("count_lte", "number of rows at most"),
    ("only_changes", "no other changes (value: JSON list of allowed changes, [] for none)"),
)
FILTER_OPS = tuple((op, label) for op, label in STATE_OPS if op not in (*COUNT_OPS, "not_in", "only_changes"))
ARG_OPS = (
    ("eq", "equals"),
    ("contains", "contains"),
    ("regex", "matches pattern"),
    ("any", "is given (any value)"),
    ("gte", "at least"),
    ("lte", "at most"),
)
RESPONSE_OPS = (
    ("contains", "contains the text"),
    ("not_contains", "does not contain the text"),
    ("regex", "matches the pattern"),
    ("number", "states the number (anywhere)"),
    ("amount", "states the amount for the subject"),
    ("date", "states the date (ISO; for the subject, if given)"),
    ("id_set", "names exactly these ids (comma-separated, one kind)"),
    ("affirms", "makes the claim (pattern; negations don't count)"),
    ("not_affirms", "does not make the claim (pattern; negations don't count)"),
    ("prose", "is a reply written for its reader (no raw JSON or bare values)"),
)
KIND_HELP = {
    CriterionKind.LLM: "A plain-language check the LLM judge decides over the whole conversation.",
    CriterionKind.STATE: "An assertion on the world after the episode: which rows, and what must hold of them.",
    CriterionKind.TOOL_CALL: (
        "A tool the agent must (or must not) call, with arguments that match; or ids the agent must have seen in a "
        "tool result (by any paging)."
    ),
    CriterionKind.RESPONSE: "A check of the agent's final answer.",
}


def spec_text(value: Any) -> str:
    """A spec value as the text an author types."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(v if isinstance(v, str) else json.dumps(v) for v in value)
    return json.dumps(value)


def comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _state_value(text: str, op: str) -> Any:
    text = text.strip()
    if op in ("is_null", "not_null") or text == "":
        return None
    if op in ("in", "not_in"):
        return comma_list(text)
    if op in COUNT_OPS:
        return int(text) if re.fullmatch(r"\d+", text) else text
    return text


def _json_scalar(text: str) -> Any:
    """Numbers, true/false and JSON lists as typed values; anything else stays text."""
    text = text.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?|true|false|\[.*\]", text):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


@dataclass
class CriterionDraft:
    """One criterion as the editor shows it: every field as typed, plus the problems found in it."""

    prefix: str
    kind: str
    key: str = ""
    text: str = ""
    weight: str = "1"
    category: str = CriterionCategory.CORRECTNESS
    required: bool = False
    # state
    entity_type: str = ""
    field: str = ""
    op: str = "eq"
    value: str = ""
    quantifier: str = "all"
    filters: list[dict[str, str]] = dataclasses.field(default_factory=list)
    # tool_call
    tool: str = ""
    expect: str = "called"
    args: list[dict[str, str]] = dataclasses.field(default_factory=list)
    min_count: str = "1"
    max_count: str = ""
    saw_ids: str = ""
    # response
    response_op: str = "contains"
    response_value: str = ""
    tolerance: str = "0"
    case_sensitive: bool = False
    subject: str = ""
    allowed: str = ""
    # what validation found
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    field_errors: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    checked: bool = False

    @property
    def kind_label(self) -> str:
        return CriterionKind(self.kind).label

    @property
    def kind_help(self) -> str:
        return KIND_HELP[self.kind]

    def spec(self) -> dict[str, Any]:
        if self.kind == CriterionKind.STATE and self.op == "only_changes":
            try:
                allowed = json.loads(self.value) if self.value.strip() else []
            except ValueError:
                allowed = self.value
            return {"op": "only_changes", "value": allowed}
        if self.kind == CriterionKind.STATE:
            spec: dict[str, Any] = {"entity_type": self.entity_type, "op": self.op, "quantifier": self.quantifier}
            spec["filters"] = [
                {"field": row["field"].strip(), "op": row["op"] or "eq", "value": _state_value(row["value"], row["op"])}
                for row in self.filters
                if row["field"].strip() or row["value"].strip()
            ]
            if self.field.strip():
                spec["field"] = self.field.strip()
            value = _state_value(self.value, self.op)
            if value is not None:
                spec["value"] = value
            return spec
        if self.kind == CriterionKind.TOOL_CALL:
            spec = {"tool": self.tool, "expect": self.expect}
            arguments = {}
            for row in self.args:
                name = row["name"].strip()
                if not name and not row["value"].strip():
                    continue
                matcher: dict[str, Any] = {"op": row["op"] or "eq"}
                if matcher["op"] != "any":
                    raw = row["value"]
                    matcher["value"] = raw if matcher["op"] in ("contains", "regex") else _json_scalar(raw)
                    if raw.strip() == "":
                        matcher["value"] = None
                arguments[name or "?"] = matcher
            spec["arguments"] = arguments
            if self.expect == "saw":
                spec["ids"] = comma_list(self.saw_ids)
                if not spec["tool"]:
                    spec.pop("tool")
            if self.expect == "called":
                spec["min_count"] = self.min_count.strip() or 1
                if self.max_count.strip():
                    spec["max_count"] = self.max_count.strip()
            return spec
        if self.kind == CriterionKind.RESPONSE:
            spec = {
                "op": self.response_op,
                "value": self.response_value,
                "tolerance": self.tolerance.strip() or 0,
                "case_sensitive": self.case_sensitive,
            }
            if self.response_op == "id_set":
                spec["value"] = comma_list(self.response_value)
                if self.allowed.strip():
                    spec["allowed"] = comma_list(self.allowed)
            elif self.response_op == "prose":
                spec.pop("value")
            if self.subject.strip():
                spec["subject"] = self.subject.strip()
            return spec
        return {}

    def as_input(self) -> dict[str, Any]:
        """The criterion as ``criteria_validate`` and the services take it."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "text": self.text,
            "spec": self.spec(),
            "weight": self.weight.strip() or 1,
            "category": self.category,
            "required": self.required,
        }
        if self.key:
            data["key"] = self.key
        return data

    def check(self) -> bool:
        """Validate against the world models and the tool registry; problems land on the fields they are about."""
        self.errors, self.field_errors, self.checked = [], {}, True
        self.warnings = criterion_text_warnings(self.text)
        try:
            criteria_validate([self.as_input()])
        except ValidationError as exc:
            for path, whys in error_fields(exc).items():
                self._place(path, whys)
            return False
        return True

    def _place(self, path: str, whys: list[str]) -> None:
        """Put the problems of ``path`` (``criteria[0].spec.filters[1].field``) on the field that shows it, or list
        them at the top of the criterion."""
        if path == NON_FIELD_ERRORS:
            self.errors.extend(whys)
            return
        path = path.removeprefix("criteria[0]").lstrip(".").removeprefix("spec").lstrip(".")
        name = re.sub(r"\[(\d+)\]", r".\1", path)
        if self.kind == CriterionKind.RESPONSE and name in ("op", "value"):
            name = f"response_{name}"
        if name.startswith("filters."):
            name = f"filter{name.split('.')[1]}"
        if name not in self.slot_names():
            where = name.replace("arguments.", "argument ").replace("_", " ")
            self.errors.extend(f"{where}: {why}" if where else why for why in whys)
            return
        self.field_errors.setdefault(name, []).extend(whys)

    def slot_names(self) -> list[str]:
        """The fields that show their own errors (the rest are listed at the top of the criterion)."""
        names = ["text", "weight", "category"]
        if self.kind == CriterionKind.STATE:
            names += ["entity_type", "op", "field", "value"]
            # Only rows the page has: a row typed into the blank one is not a new row there yet (an out-of-band
            # swap without its target is htmx's oobErrorNoTarget in the console).
            names += [f"filter{i}" for i in range(max(1, len(self.filters)))]
        elif self.kind == CriterionKind.TOOL_CALL:
            names += ["tool", "min_count", "max_count", "ids"]
        elif self.kind == CriterionKind.RESPONSE:
            names += ["response_value", "tolerance", "subject", "allowed"]
        return names

    def error_slots(self) -> list[tuple[str, list[str]]]:
        return [(name, self.field_errors.get(name, [])) for name in self.slot_names()]

    # Choices the editor offers --------------------------------------------------------------------------
    def filter_rows(self) -> list[dict[str, Any]]:
        """The filter rows with their errors, and one empty row to type a new filter into."""
        rows = list(self.filters)
        if not rows or rows[-1]["field"] or rows[-1]["value"]:
            rows.append({"field": "", "op": "eq", "value": ""})
        return [
            {**row, "index": i, "slot": f"filter{i}", "errors": self.field_errors.get(f"filter{i}", [])}
            for i, row in enumerate(rows)
        ]

    def arg_rows(self) -> list[dict[str, Any]]:
        rows = list(self.args)
        if not rows or rows[-1]["name"] or rows[-1]["value"]:
            rows.append({"name": "", "op": "eq", "value": ""})
        return [{**row, "index": i} for i, row in enumerate(rows)]
