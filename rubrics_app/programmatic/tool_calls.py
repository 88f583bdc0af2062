"""``tool_call`` criteria: checks of the calls the agent made (``called`` with matching arguments, in a count
range, or ``not_called``), of what their results showed it (``saw``), and of the facts its questions to the
simulated user drew out (``asked``)."""

from __future__ import annotations

import re
from typing import Any

from rubrics_app.criterion_specs import ToolCallSpec, as_number, spec_read
from rubrics_app.patterns import PatternTimeout, pattern_search
from rubrics_app.programmatic.verdicts import ERROR, MET, NOT_MET, verdict
from world_app.conversation import facts_disclosed


def tool_call_verdict(criterion, steps: list[dict], *, simulated_user: dict | None = None) -> dict:
    """The verdict of one ``tool_call`` criterion over the steps ({seq, name, arguments, result, is_error})."""
    spec = spec_read(ToolCallSpec, criterion.spec)
    try:
        if spec.expect == "asked":
            return _asked_verdict(criterion, spec, steps, simulated_user or {})
        if spec.expect == "saw":
            return _saw_verdict(criterion, spec, steps)
        return _called_verdict(criterion, spec, steps)
    except PatternTimeout as exc:
        return verdict(criterion, ERROR, str(exc))


def _asked_verdict(criterion, spec: ToolCallSpec, steps: list[dict], simulated_user: dict) -> dict:
    """Met when a successful question to the user drew out ``spec.fact`` (the user's script says which facts a
    question asks for, whatever its wording), before any successful call of the ``before`` tools."""
    tool = spec.tool or "ask_user"
    if not simulated_user:
        return verdict(criterion, NOT_MET, "the task has no simulated user: no question could draw out a fact")
    asks = [s for s in steps if s["name"] == tool and not s["is_error"]]
    drew = [
        s["seq"] for s in asks
        if spec.fact in facts_disclosed(simulated_user, str((s["arguments"] or {}).get("message", "")))
    ]  # fmt: skip
    before = set(spec.before or [])
    acted = [s["seq"] for s in steps if s["name"] in before and not s["is_error"]]
    evidence = {"asks": [s["seq"] for s in asks], "drew_fact": drew, "acted": acted[:10]}
    if not drew:
        why = f"none of the {len(asks)} question(s) to the user asked for {spec.fact!r}"
        return verdict(criterion, NOT_MET, why, evidence)
    if acted and acted[0] < drew[0]:
        why = (f"{spec.fact!r} was asked for at call {drew[0]}, after call {acted[0]} had already run "
               f"{', '.join(sorted(before))}: the agent acted on a guess")  # fmt: skip
        return verdict(criterion, NOT_MET, why, evidence)
    when = f", before any of {', '.join(sorted(before))}" if before else ""
    return verdict(criterion, MET, f"the agent asked for {spec.fact!r} at call {drew[0]}{when}", evidence)


def _saw_verdict(criterion, spec: ToolCallSpec, steps: list[dict]) -> dict:
    relevant = [
        s
        for s in steps
        if not s["is_error"]
        and (not spec.tool or s["name"] == spec.tool)
        and _arguments_match(spec, s["arguments"] or {})
    ]
    seen: set[str] = set()
    for step in relevant:
        seen |= strings_in(step.get("result"))
    wanted = [i.strip() for i in spec.ids]
    longer = "\n".join(text for text in seen if len(text) > 40)  # ids inside message texts and summaries
    missing = [i for i in wanted if i not in seen and not re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", longer)]
    where = f"results of {spec.tool}" if spec.tool else "tool results"
    if missing:
        why = f"{len(missing)} of {len(wanted)} ids never appeared in the {where}: {', '.join(missing[:10])}"
    else:
        why = f"all {len(wanted)} ids appeared in the {where} ({len(relevant)} successful call(s))"
    return verdict(
        criterion,
        NOT_MET if missing else MET,
        why,
        {"missing": missing[:20], "calls": [s["seq"] for s in relevant]},
    )


def strings_in(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            found |= strings_in(item)
    elif isinstance(value, list):
        for item in value:
            found |= strings_in(item)
    return found


def _called_verdict(criterion, spec: ToolCallSpec, steps: list[dict]) -> dict:
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
    return verdict(criterion, MET if met else NOT_MET, why, evidence)


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
        return pattern_search(expected, str(actual), ignore_case=False) is not None
    number = as_number(actual)
    if number is None:
        return False
    return number >= as_number(expected) if op == "gte" else number <= as_number(expected)
