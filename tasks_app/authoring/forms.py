"""Forms of the authoring pages: the task list filters, the task editor and its structured criterion editors.

Criteria are not a Django formset: each criterion block posts its fields under a prefix (``c0-text``,
``c0-filter_field``…) and the hidden ``criterion`` inputs give the blocks' order, so moving a block is
moving its hidden input. A ``CriterionDraft`` keeps exactly what was typed (to show it again) and turns it into
the dict ``rubrics_app.criteria.criteria_validate`` checks.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models

from corecraft_site.service_errors import error_fields
from rubrics_app.criteria import COUNT_OPS, criteria_validate, criterion_text_warnings
from rubrics_app.models import CriterionCategory, CriterionKind
from tasks_app.authoring.selectors_authoring import snapshots_for_choice, task_authors
from tasks_app.calibration.selectors import FLAG_FILTERS, SORTS
from tasks_app.models import Difficulty, TaskStatus, TaskType
from world_app.models import world_models_by_name
from world_app.tools.registry import GROUPS, all_tools, get_tool

MAX_CRITERIA = 100
PREFIX = re.compile(r"^c\d{1,4}$")


class TaskFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=200)
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *TaskStatus.choices])
    task_type = forms.ChoiceField(required=False, label="Type", choices=[("", "Any type"), *TaskType.choices])
    difficulty = forms.ChoiceField(required=False, choices=[("", "Any expected difficulty"), *Difficulty.choices])
    family = forms.CharField(required=False, max_length=100)
    author = forms.ModelChoiceField(
        required=False, queryset=task_authors(), empty_label="Anyone", to_field_name="username"
    )
    flag = forms.ChoiceField(required=False, label="Calibration", choices=list(FLAG_FILTERS.items()))
    sort = forms.ChoiceField(required=False, choices=[(k, label) for k, (label, _) in SORTS.items()])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["author"].queryset = task_authors()

    def filters(self) -> dict[str, Any]:
        """The selector's keyword arguments; an invalid filter is ignored (the form shows its error), the rest apply."""
        self.is_valid()
        data = self.cleaned_data
        author = data.get("author")
        return {
            "query": data.get("q") or "",
            "status": data.get("status") or "",
            "task_type": data.get("task_type") or "",
            "difficulty": data.get("difficulty") or "",
            "family": data.get("family") or "",
            "author_id": author.pk if author else None,
        }

    def calibration(self) -> dict[str, str]:
        """``tasks_calibrated``'s keyword arguments (flag, sort); an invalid one is ignored."""
        self.is_valid()
        return {"flag": self.cleaned_data.get("flag") or "", "sort": self.cleaned_data.get("sort") or ""}


class SnapshotChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        note = f" — {obj.note}" if obj.note else ""
        return f"World v{obj.version}{note} ({obj.created_at:%Y-%m-%d})"


class TaskForm(forms.Form):
    """The task's own fields; ``base_revision`` is the revision the editor opened (stale = conflict)."""

    base_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)
    base_version = forms.IntegerField(required=False, widget=forms.HiddenInput)
    title = forms.CharField(max_length=200)
    task_type = forms.ChoiceField(label="Type", choices=TaskType.choices)
    difficulty = forms.ChoiceField(label="Expected difficulty", choices=Difficulty.choices)
    instruction = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="What the agent receives: a customer's message, a ticket, or a supervisor's request.",
    )
    snapshot = SnapshotChoiceField(
        queryset=snapshots_for_choice(), empty_label=None, label="World snapshot", help_text="The world it runs in."
    )
    family = forms.CharField(
        required=False,
        max_length=100,
        help_text="A theme, e.g. returns, warranty.",
        widget=forms.TextInput(attrs={"list": "family-list"}),
    )
    tags = forms.CharField(required=False, max_length=500, help_text="Separated by commas.")
    reviewer_notes = forms.CharField(
        required=False, label="Notes for reviewers", widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["snapshot"].queryset = snapshots_for_choice()

    def clean_tags(self) -> list[str]:
        return [t.strip() for t in (self.cleaned_data.get("tags") or "").split(",") if t.strip()]

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            name: data[name]
            for name in (
                "title",
                "task_type",
                "difficulty",
                "instruction",
                "snapshot",
                "family",
                "tags",
                "reviewer_notes",
            )
        }

    def add_service_errors(self, exc: ValidationError) -> list[str]:
        """Put each error of a service on the field it names; return the others as "field: why" lines."""
        rest = []
        for field, whys in error_fields(exc).items():
            if field in self.fields:
                self.add_error(field, whys)
            else:
                rest += [why if field == NON_FIELD_ERRORS else f"{field}: {why}" for why in whys]
        return rest


# --- Structured criterion editors ------------------------------------------------------------------------

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


def _text(value: Any) -> str:
    """A spec value as the text an author types."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(v if isinstance(v, str) else json.dumps(v) for v in value)
    return json.dumps(value)


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _state_value(text: str, op: str) -> Any:
    text = text.strip()
    if op in ("is_null", "not_null") or text == "":
        return None
    if op in ("in", "not_in"):
        return _list(text)
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
                spec["ids"] = _list(self.saw_ids)
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
                spec["value"] = _list(self.response_value)
                if self.allowed.strip():
                    spec["allowed"] = _list(self.allowed)
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
            for message in exc.messages:
                self._place(message)
            return False
        return True

    def _place(self, message: str) -> None:
        path, sep, why = message.partition(": ")
        path = path.removeprefix("criteria[0]").lstrip(".").removeprefix("spec").lstrip(".")
        name = re.sub(r"\[(\d+)\]", r".\1", path)
        if self.kind == CriterionKind.RESPONSE and name in ("op", "value"):
            name = f"response_{name}"
        if name.startswith("filters."):
            name = f"filter{name.split('.')[1]}"
        if not sep or name not in self.slot_names():
            where = name.replace("arguments.", "argument ").replace("_", " ")
            self.errors.append(f"{where}: {why}" if sep and where else (why if sep else message))
            return
        self.field_errors.setdefault(name, []).append(why)

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


def entity_type_choices() -> list[tuple[str, str]]:
    return sorted(
        ((name, model._meta.verbose_name.capitalize()) for name, model in world_models_by_name().items()),
        key=lambda c: c[1],
    )


def entity_field_paths(entity_type: str) -> list[str]:
    """The fields a state criterion can name on ``entity_type``: its own, and one hop along its references."""
    model = world_models_by_name().get(entity_type)
    if model is None:
        return []
    paths = []
    for f in model._meta.concrete_fields:
        paths.append(f.name)
        if f.is_relation and isinstance(f, models.ForeignKey):
            paths.extend(f"{f.name}__{g.name}" for g in f.related_model._meta.concrete_fields if not g.is_relation)
    return paths


def tool_argument_names(tool_name: str) -> list[str]:
    found = get_tool(tool_name) if tool_name else None
    return list(found.params.model_fields) if found else []


def tool_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """The registry's tools grouped for a <select> with <optgroup>s."""
    tools = all_tools()
    return [(group.capitalize(), [(t.name, t.name) for t in tools if t.group == group]) for group in GROUPS]


def criterion_draft_new(*, kind: str, prefix: str) -> CriterionDraft:
    if kind not in CriterionKind.values:
        kind = CriterionKind.LLM
    draft = CriterionDraft(prefix=prefix, kind=kind)
    if kind == CriterionKind.STATE:
        draft.entity_type = "order"
    return draft


def criterion_draft_from_row(criterion, *, prefix: str) -> CriterionDraft:
    """The editor's view of a stored criterion (a ``Criterion`` row)."""
    spec = criterion.spec or {}
    draft = CriterionDraft(
        prefix=prefix,
        kind=criterion.kind,
        key=str(criterion.key),
        text=criterion.text,
        weight=f"{criterion.weight:g}",
        category=criterion.category,
        required=criterion.required,
    )
    if criterion.kind == CriterionKind.STATE:
        draft.entity_type = spec.get("entity_type", "")
        draft.field = spec.get("field") or ""
        draft.op = spec.get("op", "eq")
        draft.value = json.dumps(spec.get("value")) if draft.op == "only_changes" else _text(spec.get("value"))
        draft.quantifier = spec.get("quantifier", "all")
        draft.filters = [
            {"field": f.get("field", ""), "op": f.get("op", "eq"), "value": _text(f.get("value"))}
            for f in spec.get("filters", [])
        ]
    elif criterion.kind == CriterionKind.TOOL_CALL:
        draft.tool = spec.get("tool", "")
        draft.expect = spec.get("expect", "called")
        draft.args = [
            {"name": name, "op": m.get("op", "eq"), "value": _text(m.get("value"))}
            for name, m in (spec.get("arguments") or {}).items()
        ]
        draft.min_count = str(spec.get("min_count", 1))
        draft.max_count = _text(spec.get("max_count"))
        draft.saw_ids = _text(spec.get("ids"))
    elif criterion.kind == CriterionKind.RESPONSE:
        draft.response_op = spec.get("op", "contains")
        draft.response_value = _text(spec.get("value"))
        draft.tolerance = f"{spec.get('tolerance', 0):g}"
        draft.case_sensitive = bool(spec.get("case_sensitive"))
        draft.subject = spec.get("subject") or ""
        draft.allowed = _text(spec.get("allowed"))
    draft.warnings = criterion_text_warnings(draft.text)
    return draft


def _rows(data, prefix: str, names: tuple[str, ...]) -> list[dict[str, str]]:
    columns = [data.getlist(f"{prefix}-{name}") for name in names]
    count = max((len(c) for c in columns), default=0)
    return [
        {name: (column[i] if i < len(column) else "") for name, column in zip(names, columns, strict=True)}
        for i in range(min(count, 50))
    ]


def criterion_draft_from_post(data, prefix: str) -> CriterionDraft:
    """One criterion block of a POST, exactly as typed."""

    def get(name: str, default: str = "") -> str:
        return data.get(f"{prefix}-{name}", default)

    kind = get("kind")
    draft = CriterionDraft(prefix=prefix, kind=kind if kind in CriterionKind.values else CriterionKind.LLM)
    draft.key = get("key")
    draft.text = get("text")
    draft.weight = get("weight", "1")
    draft.category = get("category", CriterionCategory.CORRECTNESS)
    draft.required = bool(get("required"))
    draft.entity_type = get("entity_type")
    draft.field = get("field")
    draft.op = get("op", "eq")
    draft.value = get("value")
    draft.quantifier = get("quantifier", "all")
    draft.filters = [
        r
        for r in _rows(data, prefix, ("filter_field", "filter_op", "filter_value"))
        if r["filter_field"] or r["filter_value"]
    ]
    draft.filters = [
        {"field": r["filter_field"], "op": r["filter_op"], "value": r["filter_value"]} for r in draft.filters
    ]
    draft.tool = get("tool")
    draft.expect = get("expect", "called")
    draft.args = [
        {"name": r["arg_name"], "op": r["arg_op"], "value": r["arg_value"]}
        for r in _rows(data, prefix, ("arg_name", "arg_op", "arg_value"))
        if r["arg_name"] or r["arg_value"]
    ]
    draft.min_count = get("min_count", "1")
    draft.max_count = get("max_count")
    draft.saw_ids = get("saw_ids")
    draft.response_op = get("response_op", "contains")
    draft.response_value = get("response_value")
    draft.tolerance = get("tolerance", "0")
    draft.case_sensitive = bool(get("case_sensitive"))
    draft.subject = get("subject")
    draft.allowed = get("allowed")
    draft.warnings = criterion_text_warnings(draft.text)
    return draft


def criteria_from_post(data) -> list[CriterionDraft]:
    """Every criterion block of the editor's POST, in the order the blocks are on the page."""
    prefixes = []
    for prefix in data.getlist("criterion"):
        if PREFIX.match(prefix) and prefix not in prefixes:
            prefixes.append(prefix)
    return [criterion_draft_from_post(data, prefix) for prefix in prefixes[:MAX_CRITERIA]]


def next_prefix(drafts: list[CriterionDraft]) -> str:
    used = [int(d.prefix[1:]) for d in drafts]
    return f"c{max(used) + 1 if used else 0}"


def criteria_apply(drafts: list[CriterionDraft], action: str, data) -> tuple[list[CriterionDraft], str | None]:
    """Apply an editor action without saving: add, remove or move a criterion.

    Returns the drafts and the prefix of a new criterion, whose text gets the focus.
    """
    verb, _, prefix = action.partition(":")
    by_prefix = {d.prefix: i for i, d in enumerate(drafts)}
    if verb == "add":
        if len(drafts) >= MAX_CRITERIA:
            return drafts, None
        draft = criterion_draft_new(kind=data.get("new_kind", CriterionKind.LLM), prefix=next_prefix(drafts))
        return [*drafts, draft], draft.prefix
    if prefix not in by_prefix:
        return drafts, None
    index = by_prefix[prefix]
    if verb == "remove":
        return drafts[:index] + drafts[index + 1 :], None
    if verb in ("addfilter", "addarg"):
        return drafts, None  # the page comes back with the filled rows and a new empty one to type in
    if verb in ("up", "down"):
        other = index - 1 if verb == "up" else index + 1
        if 0 <= other < len(drafts):
            drafts[index], drafts[other] = drafts[other], drafts[index]
        return drafts, None  # the moved criterion's button keeps the focus
    return drafts, None


# --- Tool playground: a form per tool, generated from its JSON schema ------------------------------------------


@dataclass
class ToolArgumentField:
    """One input of a tool's form: ``widget`` is text, number, integer, boolean, choice, list or json."""

    name: str
    widget: str
    required: bool
    description: str = ""
    choices: list[str] = dataclasses.field(default_factory=list)
    schema: str = ""  # the property's JSON schema, shown next to a JSON input
    value: str = ""
    error: str = ""


def tool_argument_fields(tool, typed: dict[str, str] | None = None, errors: dict[str, str] | None = None) -> list:
    """The inputs of ``tool``'s form from its params schema; nested arguments get a JSON input with the schema."""
    schema = tool.input_schema()
    required = set(schema.get("required") or [])
    typed, errors = typed or {}, errors or {}
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type")
        if "enum" in prop:
            widget = "choice"
        elif kind in ("string", "number", "integer", "boolean"):
            widget = {"string": "text"}.get(kind, kind)
        elif kind == "array" and (prop.get("items") or {}).get("type") in ("string", "integer", "number"):
            widget = "list"
        else:
            widget = "json"
        fields.append(
            ToolArgumentField(
                name=name,
                widget=widget,
                required=name in required,
                description=prop.get("description", ""),
                choices=[str(c) for c in prop.get("enum", [])],
                schema=json.dumps(prop, indent=2) if widget == "json" else "",
                value=typed.get(name, ""),
                error=errors.get(name, ""),
            )
        )
    return fields


def tool_arguments_from_post(tool, data) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """(arguments, errors by argument, what was typed) from the playground form.

    An empty input leaves the argument out. The "all arguments as JSON" box, when filled, is used instead of the
    single inputs. The tool itself checks the values (its error comes back as a result); only what cannot be
    read at all (a number that is not one, broken JSON) is an error here.
    """
    inputs = tool_argument_fields(tool)
    typed = {f.name: data.get(f"arg-{f.name}", "") for f in inputs}
    raw_json = (data.get("arguments_json") or "").strip()
    if raw_json:
        try:
            arguments = json.loads(raw_json)
        except ValueError as exc:
            return {}, {"arguments_json": f"not valid JSON: {exc}"}, typed
        if not isinstance(arguments, dict):
            return {}, {"arguments_json": "must be a JSON object of named arguments"}, typed
        return arguments, {}, typed
    arguments, errors = {}, {}
    for f in inputs:
        text = typed.get(f.name, "").strip()
        if text == "":
            continue
        try:
            if f.widget == "integer":
                arguments[f.name] = int(text)
            elif f.widget == "number":
                arguments[f.name] = float(text) if any(c in text for c in ".eE") else int(text)
            elif f.widget == "boolean":
                if text not in ("true", "false"):
                    raise ValueError("choose yes or no")
                arguments[f.name] = text == "true"
            elif f.widget == "list":
                arguments[f.name] = _list(text)
            elif f.widget == "json":
                arguments[f.name] = json.loads(text)
            else:
                arguments[f.name] = text
        except ValueError as exc:
            errors[f.name] = {
                "integer": "a whole number",
                "number": "a number",
                "json": f"not valid JSON: {exc}",
            }.get(f.widget, str(exc))
    return arguments, errors, typed
