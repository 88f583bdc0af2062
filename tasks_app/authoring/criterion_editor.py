"""The task editor's criteria: the choices its selects offer (entity types, their fields, tools and their
arguments), drafts made from a stored criterion or from what was posted, and the editor's actions (add,
remove, move a criterion; add a filter or an argument row)."""

from __future__ import annotations

import json
import re

from django.db import models

from rubrics_app.criteria import criterion_text_warnings
from rubrics_app.models import CriterionCategory, CriterionKind
from tasks_app.authoring.criterion_draft import CriterionDraft, spec_text
from world_app.models import world_models_by_name
from world_app.tools.registry import GROUPS, all_tools, get_tool

MAX_CRITERIA = 100
PREFIX = re.compile(r"^c\d{1,4}$")


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
        draft.value = json.dumps(spec.get("value")) if draft.op == "only_changes" else spec_text(spec.get("value"))
        draft.quantifier = spec.get("quantifier", "all")
        draft.filters = [
            {"field": f.get("field", ""), "op": f.get("op", "eq"), "value": spec_text(f.get("value"))}
            for f in spec.get("filters", [])
        ]
    elif criterion.kind == CriterionKind.TOOL_CALL:
        draft.tool = spec.get("tool", "")
        draft.expect = spec.get("expect", "called")
        draft.args = [
            {"name": name, "op": m.get("op", "eq"), "value": spec_text(m.get("value"))}
            for name, m in (spec.get("arguments") or {}).items()
        ]
        draft.min_count = str(spec.get("min_count", 1))
        draft.max_count = spec_text(spec.get("max_count"))
        draft.saw_ids = spec_text(spec.get("ids"))
    elif criterion.kind == CriterionKind.RESPONSE:
        draft.response_op = spec.get("op", "contains")
        draft.response_value = spec_text(spec.get("value"))
        draft.tolerance = f"{spec.get('tolerance', 0):g}"
        draft.case_sensitive = bool(spec.get("case_sensitive"))
        draft.subject = spec.get("subject") or ""
        draft.allowed = spec_text(spec.get("allowed"))
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
