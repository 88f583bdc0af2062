"""Deterministic judgement of ``state``, ``tool_call`` and ``response`` criteria over one episode.

A verdict is ``{key, kind, status: met|not_met|pending, met, rationale, evidence, weight, required}``; ``llm``
criteria stay ``pending`` until the LLM judge (issue 5) rules on them. ``reward`` folds verdicts into the
rollout's reward: the weighted fraction met, and pass = every required criterion met.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import Q

from rubrics_app.criteria import (
    COUNT_OPS,
    ResponseSpec,
    StateSpec,
    ToolCallSpec,
    as_number,
    field_value,
    resolve_field,
    world_tables,
)
from rubrics_app.models import CriterionKind

MET, NOT_MET, PENDING = "met", "not_met", "pending"
# The LLM judge's status for a criterion it could not decide (invalid output, endpoint down): neither met nor not.
ERROR = "error"
EVIDENCE_ROWS = 5
_LOOKUPS = {"eq": "exact", "gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte", "in": "in", "contains": "contains",
            "icontains": "icontains"}  # fmt: skip
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+")


def _verdict(criterion, status: str, rationale: str, evidence: Any = None) -> dict:
    return {
        "key": str(criterion.key),
        "kind": criterion.kind,
        "content_hash": criterion.content_hash,
        "status": status,
        "met": None if status == PENDING else status == MET,
        "rationale": rationale,
        "evidence": evidence,
        "weight": criterion.weight,
        "required": criterion.required,
    }


def criteria_evaluate(
    *, criteria: Iterable, episode, final_answer: str, tool_calls: Sequence[dict] | None = None
) -> list[dict]:
    """A verdict per criterion (in the order given), from the episode's final world, its logged steps and the answer.

    ``criteria`` are ``Criterion`` rows (or anything with key, kind, spec, weight, required, content_hash).
    ``tool_calls`` are the trajectory's calls with their results (name, arguments, result, is_error). With an
    ``episode`` the steps are read from its log; with ``episode=None`` the calls are the steps and state criteria
    read the world the caller has open (``episode_world`` or a scratch replay).
    """
    from world_app.episodes import episode_world
    from world_app.models import EpisodeStep

    criteria = list(criteria)
    if episode is None:
        steps = [
            {
                "seq": i,
                "name": c.get("name"),
                "arguments": c.get("arguments") or {},
                "is_error": bool(c.get("is_error")),
            }
            for i, c in enumerate(tool_calls or [], start=1)
        ]
    else:
        steps = list(
            EpisodeStep.objects.filter(episode=episode).order_by("seq").values("seq", "name", "arguments", "is_error")
        )
    verdicts: dict[int, dict] = {}
    state = [(i, c) for i, c in enumerate(criteria) if c.kind == CriterionKind.STATE]
    if state:
        # One pass over the episode's world for every state criterion.
        with contextlib.nullcontext() if episode is None else episode_world(episode):
            for index, criterion in state:
                verdicts[index] = _state_verdict(criterion)
    for index, criterion in enumerate(criteria):
        if criterion.kind == CriterionKind.TOOL_CALL:
            verdicts[index] = _tool_call_verdict(criterion, steps)
        elif criterion.kind == CriterionKind.RESPONSE:
            verdicts[index] = _response_verdict(criterion, final_answer or "")
        elif criterion.kind == CriterionKind.LLM:
            verdicts[index] = _verdict(criterion, PENDING, "judged by the LLM judge (not run yet)")
    return [verdicts[i] for i in range(len(criteria))]


def _state_verdict(criterion) -> dict:
    spec = StateSpec.model_validate(criterion.spec)
    model = world_tables()[spec.entity_type]
    rows = model.objects.all()
    for item in spec.filters:
        rows = rows.filter(_condition(item.field, item.op, _operand(model, item.field, item.op, item.value)))
    rows = rows.order_by("pk")
    described = f"{spec.entity_type} rows matching {_describe_filters(spec)}"
    if spec.op in COUNT_OPS:
        count = rows.count()
        met = {"count_eq": count == spec.value, "count_gte": count >= spec.value, "count_lte": count <= spec.value}
        wanted = {"count_eq": "exactly", "count_gte": "at least", "count_lte": "at most"}[spec.op]
        return _verdict(
            criterion,
            MET if met[spec.op] else NOT_MET,
            f"{count} {described}; wanted {wanted} {spec.value}",
            {"count": count, "ids": list(rows.values_list("pk", flat=True)[:EVIDENCE_ROWS])},
        )
    values = list(rows.values_list("pk", spec.field))
    if not values:
        return _verdict(criterion, NOT_MET, f"no {described}", {"rows": []})
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
    return _verdict(
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


def _tool_call_verdict(criterion, steps: list[dict]) -> dict:
    spec = ToolCallSpec.model_validate(criterion.spec)
    named = [s for s in steps if s["name"] == spec.tool]
    succeeded = [s for s in named if not s["is_error"]]
    matching = [s for s in succeeded if _arguments_match(spec, s["arguments"] or {})]
    count = len(matching)
    evidence = {
        "matching_steps": [s["seq"] for s in matching],
        "calls_of_tool": len(named),
        "errors": len(named) - len(succeeded),
    }
    matchers = f" with {_describe_matchers(spec)}" if spec.arguments else ""
    if spec.expect == "not_called":
        met = count == 0
        why = f"{spec.tool}{matchers} was called {count} time(s) successfully; it must not be"
    else:
        met = count >= spec.min_count and (spec.max_count is None or count <= spec.max_count)
        limit = f"{spec.min_count}-{spec.max_count}" if spec.max_count else f"at least {spec.min_count}"
        why = f"{spec.tool}{matchers} was called {count} time(s) successfully; wanted {limit}"
    return _verdict(criterion, MET if met else NOT_MET, why, evidence)


def _describe_matchers(spec: ToolCallSpec) -> str:
    return ", ".join(
        f"{name} present" if m.op == "any" else f"{name} {m.op} {m.value!r}" for name, m in spec.arguments.items()
    )


def _arguments_match(spec: ToolCallSpec, arguments: dict) -> bool:
    return all(_argument_matches(m.op, m.value, name, arguments) for name, m in spec.arguments.items())


def _argument_matches(op: str, expected: Any, name: str, arguments: dict) -> bool:
    if name not in arguments:
        return False
    actual = arguments[name]
    if op == "any":
        return True
    if op == "eq":
        left, right = as_number(actual), as_number(expected)
        if left is not None and right is not None:
            return left == right  # "12.50" and 12.5 are the same amount
        if isinstance(actual, str) and isinstance(expected, str):
            return actual.strip().casefold() == expected.strip().casefold()
        return actual == expected
    if op == "contains":
        if isinstance(actual, list):
            return expected in actual
        return str(expected).casefold() in str(actual).casefold()
    if op == "regex":
        return re.search(expected, str(actual)) is not None
    number = as_number(actual)
    if number is None:
        return False
    return number >= as_number(expected) if op == "gte" else number <= as_number(expected)


def _response_verdict(criterion, answer: str) -> dict:
    spec = ResponseSpec.model_validate(criterion.spec)
    if spec.op == "number":
        wanted, tolerance = as_number(spec.value), Decimal(str(spec.tolerance))
        stated = [n for n in (as_number(m) for m in _NUMBER.findall(answer)) if n is not None]
        close = [n for n in stated if abs(n - wanted) <= tolerance]
        return _verdict(
            criterion,
            MET if close else NOT_MET,
            f"the answer states {_join(stated) or 'no number'}; wanted {wanted} +/- {tolerance}",
            {"numbers": [str(n) for n in stated]},
        )
    if spec.op == "regex":
        match = re.search(spec.value, answer, 0 if spec.case_sensitive else re.IGNORECASE)
        return _verdict(
            criterion,
            MET if match else NOT_MET,
            f"the answer {'matches' if match else 'does not match'} /{spec.value}/",
            {"match": match.group(0) if match else None},
        )
    haystack, needle = (answer, spec.value) if spec.case_sensitive else (answer.casefold(), spec.value.casefold())
    found = needle in haystack
    met = found if spec.op == "contains" else not found
    return _verdict(
        criterion,
        MET if met else NOT_MET,
        f"the answer {'contains' if found else 'does not contain'} {spec.value!r}",
        {"found": found},
    )


def _join(numbers: list[Decimal]) -> str:
    return ", ".join(str(n) for n in numbers[:10])


def reward(verdicts: list[dict]) -> dict:
    """The rollout's reward from its verdicts.

    ``final`` is False while any criterion is pending or a judge error: ``reward`` is then None and
    ``partial_reward`` is the weighted fraction over the decided criteria. An ``error`` verdict is neither met
    nor unmet (it is counted in ``errors``). ``passed`` is known early when a required criterion failed.
    """
    judged = [v for v in verdicts if v["status"] in (MET, NOT_MET)]
    pending = sum(1 for v in verdicts if v["status"] == PENDING)
    errors = sum(1 for v in verdicts if v["status"] == ERROR)
    total = sum(v["weight"] for v in verdicts)
    judged_weight = sum(v["weight"] for v in judged)
    earned = sum(v["weight"] for v in judged if v["status"] == MET)
    required_failed = any(v["required"] and v["status"] == NOT_MET for v in verdicts)
    required_undecided = any(v["required"] and v["status"] in (PENDING, ERROR) for v in verdicts)
    if required_failed:
        passed = False
    elif required_undecided:
        passed = None
    else:
        passed = True
    final = pending == 0 and errors == 0
    return {
        "final": final,
        "reward": (earned / total if total else 0.0) if final else None,
        "passed": passed,
        "partial_reward": earned / judged_weight if judged_weight else None,
        "met": sum(1 for v in judged if v["status"] == MET),
        "not_met": sum(1 for v in judged if v["status"] == NOT_MET),
        "pending": pending,
        "errors": errors,
    }
