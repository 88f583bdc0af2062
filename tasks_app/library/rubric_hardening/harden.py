"""The whole rubric hardened (``criteria_harden``): each criterion converted where ``conversions`` can, the
answer's result-backed facts owed to required criteria, the no-other-changes, changes-made, prose and saw
criteria added, and the weights balanced (facts >= ``FACT_SHARE``, guards <= ``GUARD_SHARE``)."""

from __future__ import annotations

import copy

from rubrics_app import answer_facts
from rubrics_app.criterion_specs import as_number
from rubrics_app.programmatic.tool_calls import strings_in
from tasks_app.library.rubric_hardening.changes import allowed_changes, needed_changes, needed_text, only_changes_text
from tasks_app.library.rubric_hardening.conversions import (
    FACT_OPS,
    SAW_MAX_IDS,
    amount_criterion,
    claim_criterion,
    count_criterion,
    date_criterion,
    entity_id_kind,
    fact_criterion,
    fails_without,
    id_set_criterion,
    met_everywhere,
    money_text_criterion,
    paging_criterion,
    variants,
)
from tasks_app.perturbations import answer_facts as perturbable_facts
from tasks_app.perturbations import drop_facts
from world_app.tools.registry import get_tool

FACT_SHARE = 0.45
GUARD_SHARE = 0.2


def _write_tool(name: str) -> bool:
    found = get_tool(name)
    return found is not None and found.group == "write"


def _seen_ids(answer: str, instruction: str, results: list) -> list[str]:
    prose, _ = answer_facts.readable(answer)
    named = list(dict.fromkeys(m.value for m in answer_facts.id_mentions(prose)))
    seen: set[str] = set()
    for result in results:
        if not (isinstance(result, dict) and "error" in result):
            seen |= strings_in(result)
    given = {m.value for m in answer_facts.id_mentions(instruction)}
    fresh = [i for i in named if i in seen and i not in given]
    return (fresh or [i for i in named if i in seen])[:SAW_MAX_IDS]


# --- the whole rubric -----------------------------------------------------------------------------------------


def criteria_harden(*, criteria: list[dict], instruction: str, solution: dict, results: list, diff: dict) -> list[dict]:
    """``criteria`` moved onto the primitives that measure what they say (see the module's docstring)."""
    answer = solution.get("final_answer") or ""
    calls = [{"tool": c["tool"], "arguments": c.get("arguments") or {}} for c in solution.get("calls") or []]
    read_only = not any(diff.get(k) for k in ("created", "updated", "deleted"))
    out: list[dict] = []
    id_sets: dict[str, int] = {}
    has_only_changes = any(c.get("spec", {}).get("op") == "only_changes" for c in criteria)
    for criterion in criteria:
        kind, spec = criterion["kind"], criterion.get("spec") or {}
        new = None
        if kind == "response" and spec.get("op") == "number":
            new = amount_criterion(criterion, answer) or count_criterion(criterion, answer)
        elif kind == "response" and spec.get("op") == "contains" and entity_id_kind(spec.get("value")):
            id_kind = entity_id_kind(spec["value"])
            if id_kind in id_sets:  # one set per kind: this id is in it already
                merged = out[id_sets[id_kind]]
                merged["weight"] = max(merged.get("weight", 1), criterion.get("weight", 1))
                merged["required"] = bool(merged.get("required") or criterion.get("required"))
                continue
            new = id_set_criterion(criterion, id_kind, answer)
            if new is not None:
                id_sets[id_kind] = len(out)
        elif kind == "response" and spec.get("op") in ("regex", "contains"):
            new = (
                money_text_criterion(criterion, answer)
                or date_criterion(criterion, answer)
                or claim_criterion(criterion, answer)
            )
        elif kind == "tool_call" and "offset" in (spec.get("arguments") or {}):
            new = paging_criterion(criterion, calls, results)
        elif (
            kind == "tool_call" and spec.get("expect") == "not_called" and read_only and not has_only_changes
            and _write_tool(spec.get("tool", "")) and not spec.get("arguments")
        ):  # fmt: skip
            continue  # "nothing is written" is the only_changes criterion below, over every write
        out.append(new if new is not None else copy.deepcopy(criterion))
    out = _facts_covered(out, answer=answer, instruction=instruction, results=results)
    if not has_only_changes:
        rules = allowed_changes(diff)
        out.append({"kind": "state", "text": only_changes_text(rules), "spec": {"op": "only_changes", "value": rules},
                    "weight": 2, "category": "constraint", "required": True})  # fmt: skip
        if rules:
            needed = needed_changes(diff)
            out.append({"kind": "state", "text": needed_text(needed), "spec": {"op": "makes_changes",
                        "value": needed}, "weight": 2, "category": "completeness", "required": True})  # fmt: skip
    prose = {"kind": "response", "text": "The reply is prose written for its reader: no raw tool output (JSON) and "
             "no bare list of ids and amounts", "spec": {"op": "prose"}, "weight": 1, "category": "format",
             "required": True}  # fmt: skip
    if (
        answer
        and not any(c.get("spec", {}).get("op") == "prose" for c in out)
        and met_everywhere(prose, variants(answer))
    ):
        out.append(prose)
    seen = _seen_ids(answer, instruction, results)
    if seen and not any(c.get("spec", {}).get("expect") == "saw" and not c["spec"].get("tool") for c in out):
        out.append({"kind": "tool_call", "text": "The agent saw, in tool results, the records its answer names: "
                    + ", ".join(seen), "spec": {"expect": "saw", "ids": seen}, "weight": 1,
                    "category": "completeness", "required": True})  # fmt: skip
    return _guards_weighted(_weighted(out))


def criteria_reharden(*, criteria: list[dict], instruction: str, solution: dict) -> list[dict]:
    """``criteria_harden`` again on a rubric already hardened (the starter files): the conversions and weights
    that need only the reference answer (what needs the results and the diff was added the first time)."""
    return criteria_harden(criteria=criteria, instruction=instruction, solution=solution, results=[], diff={})


def is_guard(criterion: dict) -> bool:
    """A criterion that a trajectory doing nothing meets: no other changes, a tool not called, a row that must
    not exist (a count of at most 0)."""
    spec = criterion.get("spec") or {}
    if criterion["kind"] == "state":
        if spec.get("op") == "only_changes":
            return True
        return spec.get("op") in ("count_eq", "count_lte") and as_number(spec.get("value")) == 0
    return criterion["kind"] == "tool_call" and spec.get("expect") == "not_called"


def _guards_weighted(criteria: list[dict]) -> list[dict]:
    """Scale the guards' weights down until they carry at most ``GUARD_SHARE`` of the programmatic weight."""
    guards = [c for c in criteria if is_guard(c)]
    rest = sum(c.get("weight", 1) for c in criteria if c["kind"] != "llm" and not is_guard(c))
    held = sum(c.get("weight", 1) for c in guards)
    if not guards or not rest or held <= GUARD_SHARE * (held + rest) + 1e-9:
        return criteria
    factor = GUARD_SHARE * rest / ((1 - GUARD_SHARE) * held)
    for c in guards:
        c["weight"] = max(0.1, int(c.get("weight", 1) * factor * 10) / 10)
    return criteria


def _facts_covered(criteria: list[dict], *, answer: str, instruction: str, results: list) -> list[dict]:
    """Every fact of the answer that a result backs (what ``drop_fact`` drops) is owed to a required criterion:
    one that fails when every mention of the fact is gone. A fact no criterion owes gets its own."""

    out = list(criteria)
    for fact in perturbable_facts(answer, results=results, instruction=instruction):
        dropped = drop_facts(answer, {fact})
        if dropped == answer.strip() or fails_without(out, dropped):
            continue
        optional = [c for c in out if c["kind"] == "response" and not c.get("required")]
        for c in optional:  # an optional criterion that sees the fault carries it from now on
            if fails_without([{**c, "required": True}], dropped):
                c["required"] = True
                break
        else:
            new = fact_criterion(fact, answer)
            if new is not None and fails_without([new], dropped):
                same = [c for c in out if c.get("spec") == new["spec"]]
                if same:
                    same[0]["required"] = True
                else:
                    out.append(new)
    return out


def _weighted(criteria: list[dict]) -> list[dict]:
    """Scale the facts' and the format's weights up until they carry ``FACT_SHARE`` of the programmatic weight."""
    facts = [c for c in criteria if c["kind"] == "response" and (c.get("spec") or {}).get("op") in FACT_OPS]
    rest = sum(c.get("weight", 1) for c in criteria if c["kind"] != "llm" and c not in facts)
    held = sum(c.get("weight", 1) for c in facts)
    if not facts or held >= FACT_SHARE * (held + rest):
        return criteria
    factor = FACT_SHARE * rest / ((1 - FACT_SHARE) * held)
    for c in facts:
        c["weight"] = min(100.0, round(c.get("weight", 1) * factor + 0.05, 1))
    return criteria
