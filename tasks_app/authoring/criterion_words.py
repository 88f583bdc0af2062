"""A criterion in words: what its spec checks, and what changed between two versions of it, as a support lead reads
them (never a raw dict)."""

from __future__ import annotations

from typing import Any

from rubrics_app.models import CriterionKind


def criterion_spec_summary(criterion: Any) -> str:
    """What a criterion's spec checks, in a sentence a support lead reads without knowing the JSON."""
    spec = criterion.spec or {}
    if criterion.kind == CriterionKind.LLM:
        return "Judged by the LLM judge from the text above, over the whole conversation."
    if criterion.kind == CriterionKind.RESPONSE:
        value = spec.get("value")
        case = " (case-sensitive)" if spec.get("case_sensitive") else ""
        return {
            "contains": f"The final answer contains “{value}”{case}.",
            "not_contains": f"The final answer does not contain “{value}”{case}.",
            "regex": f"The final answer matches the pattern {value}{case}.",
            "number": f"The final answer states the number {value}"
            + (f" (± {spec.get('tolerance')})." if spec.get("tolerance") else ", exactly."),
        }.get(spec.get("op"), "A check of the final answer.")
    if criterion.kind == CriterionKind.TOOL_CALL:
        tool = spec.get("tool", "?")
        if spec.get("expect") == "not_called":
            head = f"The agent must not call {tool}"
        else:
            low, high = spec.get("min_count", 1), spec.get("max_count")
            times = f" at least {low} times" if low and low > 1 else ""
            times += f" at most {high} times" if high else ""
            head = f"The agent calls {tool}{times}"
        matchers = [_matcher(name, m) for name, m in (spec.get("arguments") or {}).items()]
        return head + (" with " + ", ".join(matchers) if matchers else "") + "."
    if criterion.kind == CriterionKind.STATE:
        entity = spec.get("entity_type", "?")
        where = " and ".join(
            _condition(f.get("field"), f.get("op", "eq"), f.get("value")) for f in spec.get("filters", [])
        )
        rows = f"{entity} rows" + (f" where {where}" if where else "")
        op = spec.get("op")
        if op in ("count_eq", "count_gte", "count_lte"):
            word = {"count_eq": "exactly", "count_gte": "at least", "count_lte": "at most"}[op]
            return f"In the final world there are {word} {spec.get('value')} {rows}."
        quantifier = "every one of the" if spec.get("quantifier", "all") == "all" else "at least one of the"
        return f"In the final world, {quantifier} {rows} has {_condition(spec.get('field'), op, spec.get('value'))}."
    return "—"


OPERATORS = {
    "eq": "=",
    "ne": "≠",
    "gt": ">",
    "gte": "≥",
    "lt": "<",
    "lte": "≤",
    "in": "one of",
    "not_in": "none of",
    "contains": "containing",
    "icontains": "containing (any case)",
}


def _condition(field: Any, op: str, value: Any) -> str:
    if op == "is_null":
        return f"{field} empty"
    if op == "not_null":
        return f"{field} set"
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return f"{field} {OPERATORS.get(op, op)} {value}"


def _matcher(name: str, matcher: dict) -> str:
    op = matcher.get("op", "eq")
    if op == "any":
        return f"any {name}"
    word = {"eq": "=", "contains": "containing", "regex": "matching", "gte": "≥", "lte": "≤"}.get(op, op)
    return f"{name} {word} {matcher.get('value')}"


def _flat(spec: Any, prefix: str = "") -> dict[str, Any]:
    """A spec's leaves by dotted path ("arguments.order_id.value")."""
    if isinstance(spec, dict):
        found: dict[str, Any] = {}
        for key, value in spec.items():
            found.update(_flat(value, f"{prefix}{key}."))
        return found
    if isinstance(spec, list) and spec and all(isinstance(item, dict) for item in spec):
        found = {}
        for index, item in enumerate(spec):
            found.update(_flat(item, f"{prefix}{index + 1}."))
        return found
    return {prefix.rstrip("."): spec}


def _shown(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "nothing"
    return str(value)


def criterion_change_words(field: str, before: Any, after: Any, *, kind_before: str = "", kind_after: str = "") -> dict:
    """One changed field of a criterion as ``{field, before, after, details}`` in words: a spec as the sentence
    it checks plus each leaf that changed ("tolerance: 0.01 → 0"); required as required/optional."""
    if field == "spec":

        class _Shaped:
            def __init__(self, kind: str, spec: Any) -> None:
                self.kind, self.spec = kind, spec

        old, new = _flat(before or {}), _flat(after or {})
        details = [
            f"{path.replace('.', ' ')}: {_shown(old.get(path))} → {_shown(new.get(path))}"
            for path in sorted(old.keys() | new.keys())
            if old.get(path) != new.get(path)
        ]
        return {
            "field": "check",
            "before": criterion_spec_summary(_Shaped(kind_before, before)),
            "after": criterion_spec_summary(_Shaped(kind_after, after)),
            "details": details,
        }
    if field == "required":
        return {"field": field, "before": "required" if before else "optional",
                "after": "required" if after else "optional", "details": []}  # fmt: skip
    return {"field": field, "before": _shown(before), "after": _shown(after), "details": []}
