"""``state`` criteria: checks of the episode's final world (rows matching filters, counts, a field's value) and of
its diff (``only_changes``: nothing changed outside what the task allows; ``makes_changes``: what it needs
happened)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q

from corecraft_site.canonical import sorted_json
from rubrics_app.criterion_specs import COUNT_OPS, AllowedChange, StateSpec, field_value, resolve_field, spec_read
from rubrics_app.programmatic.verdicts import EVIDENCE_ROWS, MET, NOT_MET, verdict
from world_app.episodes import episode_world_diff
from world_app.models import world_models_by_name

_LOOKUPS = {"eq": "exact", "gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte", "in": "in", "contains": "contains",
            "icontains": "icontains"}  # fmt: skip


def state_verdict(criterion, *, diff: Callable[[], dict] | None = None) -> dict:
    """The verdict of one ``state`` criterion in the world bound now; ``diff`` gives the episode's diff."""
    spec = spec_read(StateSpec, criterion.spec)
    if spec.op in ("only_changes", "makes_changes"):
        if diff is None:
            diff = episode_world_diff
        if spec.op == "makes_changes":
            return _makes_changes_verdict(criterion, spec, diff())
        return _only_changes_verdict(criterion, spec, diff())
    return _rows_verdict(criterion, spec)


def _only_changes_verdict(criterion, spec: StateSpec, diff: dict) -> dict:
    rules = [AllowedChange.model_validate(rule) for rule in spec.value]
    outside: list[str] = []
    created: dict[str, int] = {}
    for entry in diff.get("created", []):
        created[entry["model"]] = created.get(entry["model"], 0) + 1
    for model, count in created.items():
        allowed = sum(rule.created for rule in rules if rule.entity_type == model)
        if count > allowed:
            outside.append(f"{count} {model} row(s) created (allowed {allowed})")
    for entry in diff.get("updated", []):
        fields = set(entry.get("fields", {}))
        fits = any(
            rule.entity_type == entry["model"]
            and rule.updates
            and (rule.id is None or rule.id == entry["pk"])
            and (rule.fields is None or fields <= set(rule.fields))
            for rule in rules
        )
        if not fits:
            outside.append(f"{entry['model']} {entry['pk']} updated ({', '.join(sorted(fields))})")
    for entry in diff.get("deleted", []):
        if not any(rule.entity_type == entry["model"] and rule.deleted for rule in rules):
            outside.append(f"{entry['model']} {entry['pk']} deleted")
    changed = sum(len(diff.get(k, [])) for k in ("created", "updated", "deleted"))
    if outside:
        why = f"{len(outside)} change(s) outside what the task allows: {'; '.join(outside[:EVIDENCE_ROWS])}"
    else:
        why = f"all {changed} change(s) are ones the task allows" if changed else "the episode changed nothing"
    return verdict(criterion, NOT_MET if outside else MET, why, {"outside": outside[:20], "changes": changed})


def _makes_changes_verdict(criterion, spec: StateSpec, diff: dict) -> dict:
    rules = [AllowedChange.model_validate(rule) for rule in spec.value]
    created = [e for e in diff.get("created", [])]
    used: set[int] = set()
    missing = []
    for rule in rules:
        if rule.created:
            fits = [
                i for i, e in enumerate(created)
                if i not in used and e["model"] == rule.entity_type and _holds_values(rule.values, e.get("row", {}))
            ]  # fmt: skip
            used.update(fits[: rule.created])
            if len(fits) < rule.created:
                wanted = f" with {_describe_values(rule.values)}" if rule.values else ""
                missing.append(f"{rule.created} new {rule.entity_type}{wanted} (made {len(fits)})")
        if rule.deleted and not any(
            e["model"] == rule.entity_type and rule.id in (None, e["pk"]) for e in diff.get("deleted", [])
        ):
            missing.append(f"{rule.entity_type} {rule.id or ''} deleted".replace("  ", " "))
        if rule.updates and not rule.deleted and not rule.created:
            done = any(
                e["model"] == rule.entity_type
                and rule.id in (None, e["pk"])
                and (rule.fields is None or set(e.get("fields", {})) & set(rule.fields))
                and _holds_values(rule.values, {k: v.get("after") for k, v in e.get("fields", {}).items()})
                for e in diff.get("updated", [])
            )
            if not done:
                what = f" ({', '.join(rule.fields)})" if rule.fields else ""
                if rule.values:
                    what = f" to {_describe_values(rule.values)}"
                missing.append(f"{rule.entity_type} {rule.id or '(any)'} updated{what}")
    why = (
        f"{len(missing)} change(s) the task needs did not happen: {'; '.join(missing[:EVIDENCE_ROWS])}"
        if missing
        else f"all {len(rules)} change(s) the task needs happened"
    )
    return verdict(criterion, NOT_MET if missing else MET, why, {"missing": missing[:20]})


def _holds_values(values: dict | None, row: dict) -> bool:

    def encoded(value: Any) -> str:
        return sorted_json(value)

    return not values or all(name in row and encoded(row[name]) == encoded(v) for name, v in values.items())


def _describe_values(values: dict | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (values or {}).items())


def _rows_verdict(criterion, spec: StateSpec) -> dict:
    model = world_models_by_name()[spec.entity_type]
    rows = model.objects.all()
    for item in spec.filters:
        rows = rows.filter(_condition(item.field, item.op, _operand(model, item.field, item.op, item.value)))
    rows = rows.order_by("pk")
    described = f"{spec.entity_type} rows matching {_describe_filters(spec)}"
    if spec.op in COUNT_OPS:
        count = rows.count()
        met = {"count_eq": count == spec.value, "count_gte": count >= spec.value, "count_lte": count <= spec.value}
        wanted = {"count_eq": "exactly", "count_gte": "at least", "count_lte": "at most"}[spec.op]
        return verdict(
            criterion,
            MET if met[spec.op] else NOT_MET,
            f"{count} {described}; wanted {wanted} {spec.value}",
            {"count": count, "ids": list(rows.values_list("pk", flat=True)[:EVIDENCE_ROWS])},
        )
    values = list(rows.values_list("pk", spec.field))
    if not values:
        return verdict(criterion, NOT_MET, f"no {described}", {"rows": []})
    field = resolve_field(model, spec.field)
    results = [(pk, value, _holds(field, value, spec.op, spec.value)) for pk, value in values]
    held = sum(1 for *_, ok in results if ok)
    met = held == len(results) if spec.quantifier == "all" else held > 0
    evidence = {
        "rows": [{"id": pk, spec.field: _jsonable(value), "holds": ok} for pk, value, ok in results[:EVIDENCE_ROWS]],
        "matched": len(results),
        "held": held,
    }
    target = "" if spec.op in ("is_null", "not_null") else f" {spec.value!r}"
    return verdict(
        criterion,
        MET if met else NOT_MET,
        f"{held} of {len(results)} {described} have {spec.field} {spec.op}{target} (needed {spec.quantifier})",
        evidence,
    )


def _operand(model, path: str, op: str, value: Any) -> Any:
    """A filter's value as the field's type (aware datetimes, Decimals); texts for contains stay texts."""
    if op in ("is_null", "not_null", "contains", "icontains"):
        return value
    field = resolve_field(model, path)
    if op == "in":
        return [field_value(field, item) for item in value]
    return field_value(field, value)


def _condition(path: str, op: str, value: Any) -> Q:
    if op == "is_null":
        return Q(**{f"{path}__isnull": True})
    if op == "not_null":
        return Q(**{f"{path}__isnull": False})
    if op == "ne":
        return ~Q(**{f"{path}__exact": value})
    return Q(**{f"{path}__{_LOOKUPS[op]}": value})


def _describe_filters(spec: StateSpec) -> str:
    if not spec.filters:
        return "(no filter)"
    return " and ".join(f"{f.field} {f.op} {f.value!r}" for f in spec.filters)


def _holds(field, actual: Any, op: str, expected: Any) -> bool:
    if op == "is_null":
        return actual is None
    if op == "not_null":
        return actual is not None
    if op in ("contains", "icontains"):
        if actual is None:
            return False
        text = str(actual)
        return expected.lower() in text.lower() if op == "icontains" else expected in text
    if op in ("in", "not_in"):
        inside = actual in [field_value(field, item) for item in expected]
        return inside if op == "in" else not inside
    wanted = field_value(field, expected)
    if op == "eq":
        return actual == wanted
    if op == "ne":
        return actual != wanted
    if actual is None:
        return False
    return {"gt": actual > wanted, "gte": actual >= wanted, "lt": actual < wanted, "lte": actual <= wanted}[op]


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str | list | dict):
        return value
    return str(value)
