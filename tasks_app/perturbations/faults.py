"""The faults: each kind of single-fault copy of a reference solution, and ``reference_perturbations``, which
makes them all (see ``tasks_app.perturbations``)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from corecraft_site.canonical import sorted_json
from tasks_app.perturbations.facts import answer_facts, drop_facts, facts_in_text, facts_of
from world_app.tools.ids import ENTITY_ID
from world_app.tools.registry import get_tool

DROP_WRITE, CHANGE_ARGUMENT, DROP_FACT, FIRST_PAGE_ONLY = (
    "drop_write",
    "change_argument",
    "drop_fact",
    "first_page_only",
)
KINDS = (DROP_WRITE, CHANGE_ARGUMENT, DROP_FACT, FIRST_PAGE_ONLY)

# Arguments whose change is no fault of content: paging and ordering (their fault is ``first_page_only``).
PAGING_ARGUMENTS = frozenset({"offset", "limit", "sort", "page", "page_size"})
# An entity id of the world: a short lowercase prefix, a dash, then digits (and dashes), e.g. ord-230215-001,
# li-230215-001-2, cus-00001, ref-w00001.
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Perturbation:
    """A copy of a reference solution with one fault; ``solution`` has the shape of ``reference_solution``."""

    key: str
    kind: str
    description: str
    solution: dict


def _default_lookup(name: str):
    return get_tool(name)


def reference_perturbations(
    solution: dict,
    *,
    tool_lookup: Callable[[str], Any] | None = None,
    results: list | None = None,
    replay: Callable[[list[dict]], list] | None = None,
    instruction: str = "",
    world_diff: Callable[[list[dict]], dict] | None = None,
) -> list[Perturbation]:
    """Every single-fault copy of ``solution`` ({"calls": [{"tool", "arguments"}], "final_answer"}), in the order
    drop_write, change_argument, drop_fact, first_page_only, each by call (or fact) position.

    ``results`` (the reference calls' results in order) and ``replay`` (calls -> their results on the snapshot)
    make the copies real faults (see the module's docstring); calibration and the library check both pass them
    (``tasks_app.red_team.red_team_policies``). ``replay`` without ``results`` replays the reference first.
    ``world_diff`` (calls -> the diff they leave on the snapshot) drops every copy whose calls leave the same
    world as the reference's and whose answer is the reference's (``same_outcome``): such a copy is no fault.
    """
    lookup = tool_lookup or _default_lookup
    calls = [
        {"tool": c.get("tool", ""), "arguments": dict(c.get("arguments") or {})} for c in solution.get("calls") or []
    ]
    answer = solution.get("final_answer") or ""
    tools = {c["tool"]: lookup(c["tool"]) for c in calls}
    if results is None and replay is not None:
        results = replay(calls)
    found: list[Perturbation] = []
    found += _drop_writes(calls, answer, tools)
    found += _changed_arguments(calls, answer, tools, results=results, replay=replay, instruction=instruction)
    found += _dropped_facts(calls, answer, results=results, instruction=instruction)
    found += _first_pages_only(calls, answer, results)
    if world_diff is not None:
        outcome = OutcomeCheck(calls, answer, tools=tools, lookup=lookup, world_diff=world_diff)
        found = [p for p in found if not outcome.same(p.solution["calls"], p.solution["final_answer"])]
    return found


class OutcomeCheck:
    """Whether a trajectory (calls + answer) ends where the reference does: the same answer and the same world.

    A must-fail copy of the reference that leaves the world as the reference leaves it and answers the same words
    is not a fault (``opened: true -> false`` on a refund for a defective item charges no fee either way and
    stores nothing else; a page never read whose rows the answer does not name): a rubric is right to pass it.
    Call lists without any write leave the world untouched, so only those with a write are replayed
    (``world_diff``), and the reference's diff once."""

    def __init__(self, calls: list[dict], answer: str, *, tools: dict | None = None, lookup=None, world_diff):
        self.calls = calls
        self.answer = (answer or "").strip()
        self.lookup = lookup or _default_lookup
        self.tools = dict(tools or {})
        self.world_diff = world_diff
        self._reference: str | None = None

    def _writes(self, calls: list[dict]) -> bool:
        for call in calls:
            if call["tool"] not in self.tools:
                self.tools[call["tool"]] = self.lookup(call["tool"])
            found = self.tools[call["tool"]]
            if found is not None and found.group == "write":
                return True
        return False

    def same(self, calls: list[dict], answer: str) -> bool:
        if (answer or "").strip() != self.answer:
            return False
        if calls == self.calls:
            return True
        if not self._writes(calls) and not self._writes(self.calls):
            return True  # neither changes the world
        if self._reference is None:
            self._reference = _canonical(self.world_diff(self.calls))
        return _canonical(self.world_diff(calls)) == self._reference


def _solution(calls: list[dict], answer: str) -> dict:
    return {"calls": copy.deepcopy(calls), "final_answer": answer}


# --- drop_write ------------------------------------------------------------------------------------------------


def _drop_writes(calls: list[dict], answer: str, tools: dict) -> list[Perturbation]:
    out = []
    for index, call in enumerate(calls):
        found = tools.get(call["tool"])
        if found is None or found.group != "write":
            continue
        out.append(
            Perturbation(
                key=f"{DROP_WRITE}[{index}]",
                kind=DROP_WRITE,
                description=f"call {index} ({call['tool']}) left out",
                solution=_solution(calls[:index] + calls[index + 1 :], answer),
            )
        )
    return out


# --- change_argument -------------------------------------------------------------------------------------------


def _enum_values(tool, name: str) -> list | None:
    if tool is None:
        return None
    schema = tool.input_schema().get("properties", {}).get(name, {})
    if "enum" in schema:
        return list(schema["enum"])
    for option in schema.get("anyOf", []):
        if "enum" in option:
            return list(option["enum"])
    return None


def neighbour_id(entity_id: str) -> str:
    """The next id of the same kind: the last number of the id plus one, keeping its width."""
    match = _LAST_NUMBER.search(entity_id)
    if match is None:
        return entity_id + "-x"
    digits = match.group(1)
    bumped = str(int(digits) + 1).zfill(len(digits))
    return entity_id[: match.start(1)] + bumped + entity_id[match.end(1) :]


def _changed_value(value: Any, enum: list | None) -> tuple[Any, str] | None:
    """A meaningfully different value and how it changed, or None when changing it would be no fault."""
    if isinstance(value, bool):
        return (not value), f"{value} -> {not value}"
    if enum and value in enum and len(enum) > 1:
        other = enum[(enum.index(value) + 1) % len(enum)]
        return other, f"{value!r} -> {other!r}"
    if isinstance(value, int):
        return value + 1, f"{value} -> {value + 1}"
    if isinstance(value, float):
        other = round(value * 1.1, 2) if value else 1.0
        return other, f"{value} -> {other}"
    if isinstance(value, str):
        if ENTITY_ID.fullmatch(value):
            other = neighbour_id(value)
            return other, f"{value} -> {other}"
        if _ISO_DATE.match(value):
            try:
                day = date.fromisoformat(value[:10])
            except ValueError:
                return None
            other = (day + timedelta(days=7)).isoformat() + value[10:]
            return other, f"{value} -> {other}"
        return None  # free text: rewording it is no fault a rubric should catch
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            first = _changed_value(value[0], None)
            if first is None:
                return None
            return [first[0], *value[1:]], f"first entry {first[1]}"
        if all(isinstance(v, dict) for v in value):
            if len(value) > 1:
                return value[:-1], f"last of {len(value)} entries left out"
            entry = dict(value[0])
            for name in sorted(entry):
                changed = _changed_value(entry[name], None) if name not in PAGING_ARGUMENTS else None
                if changed is not None and not isinstance(entry[name], bool):
                    entry[name] = changed[0]
                    return [entry], f"{name} {changed[1]}"
    return None


def _changed_arguments(
    calls: list[dict], answer: str, tools: dict, *, results=None, replay=None, instruction: str = ""
) -> list[Perturbation]:
    out = []
    known = results is not None and len(results) == len(calls) and replay is not None
    # The replay hands back the same object for a read it made before (its memo): its facts are read once.
    facts_seen: dict[int, tuple[Any, set[str]]] = {}

    def facts_once(result: Any) -> set[str]:
        seen = facts_seen.get(id(result))
        if seen is None or seen[0] is not result:
            seen = facts_seen[id(result)] = (result, facts_of(result))  # the result kept: its id stays its own
        return seen[1]

    for index, call in enumerate(calls):
        tool = tools.get(call["tool"])
        is_write = tool is not None and tool.group == "write"
        for name in sorted(call["arguments"]):
            if name in PAGING_ARGUMENTS:
                continue
            changed = _changed_value(call["arguments"][name], _enum_values(tool, name))
            if changed is None:
                continue
            value, how = changed
            new_calls = copy.deepcopy(calls)
            new_calls[index]["arguments"][name] = value
            text, note = answer, ""
            if known and not is_write:
                new_results = replay(new_calls)
                if _canonical(new_results[index]) == _canonical(results[index]):
                    continue  # the changed read returns what the reference read: no fault
                learned = facts_once(results[index])
                still = facts_in_text(instruction).union(*(facts_once(r) for r in new_results))
                lost = (learned - still) & facts_in_text(answer)
                if not lost:
                    continue  # the answer owes nothing to this read: changing it is no fault of the answer
                text = drop_facts(answer, lost)
                note = f"; {len(lost)} fact(s) it gave taken out of the answer"
            out.append(
                Perturbation(
                    key=f"{CHANGE_ARGUMENT}[{index}].{name}",
                    kind=CHANGE_ARGUMENT,
                    description=f"call {index} ({call['tool']}): {name} {how}{note}",
                    solution=_solution(new_calls, text),
                )
            )
    return out


def _canonical(value: Any) -> str:
    return sorted_json(value)


def _dropped_facts(calls: list[dict], answer: str, *, results=None, instruction: str = "") -> list[Perturbation]:
    out: list[Perturbation] = []
    for fact in answer_facts(answer, results=results, instruction=instruction):
        text = drop_facts(answer, {fact})
        if text == answer.strip():
            continue
        out.append(
            Perturbation(
                key=f"{DROP_FACT}[{len(out)}]",
                kind=DROP_FACT,
                description=f"every mention of {fact.split(':', 1)[1]} dropped from the answer",
                solution=_solution(calls, text),
            )
        )
    return out


# --- first_page_only -------------------------------------------------------------------------------------------


def _query_of(call: dict) -> tuple:
    rest = {k: v for k, v in call["arguments"].items() if k not in ("offset", "limit")}
    return call["tool"], repr(sorted(rest.items()))


def _offset(call: dict) -> int:
    value = call["arguments"].get("offset")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ids_in(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, str):
        found.update(ENTITY_ID.findall(value))
    elif isinstance(value, dict):
        for item in value.values():
            found |= _ids_in(item)
    elif isinstance(value, list):
        for item in value:
            found |= _ids_in(item)
    return found


def _without_ids(answer: str, ids: set[str]) -> str:
    """The answer with each id (and the list separator next to it) taken out."""
    for entity_id in sorted(ids, key=len, reverse=True):
        answer = re.sub(rf",\s*{re.escape(entity_id)}\b|\b{re.escape(entity_id)}\b,?\s*", "", answer)
    return answer


def _first_pages_only(calls: list[dict], answer: str, results: list | None = None) -> list[Perturbation]:
    out, seen = [], set()
    known = results is not None and len(results) == len(calls)
    for index, call in enumerate(calls):
        if _offset(call) <= 0 or _query_of(call) in seen:
            continue
        query = _query_of(call)
        seen.add(query)
        dropped_at = {i for i, c in enumerate(calls) if _query_of(c) == query and _offset(c) > 0}
        kept = [c for i, c in enumerate(calls) if i not in dropped_at]
        text = answer
        unseen: set[str] = set()
        if known:
            seen_ids = set().union(set(), *(_ids_in(r) for i, r in enumerate(results) if i not in dropped_at))
            unseen = set().union(set(), *(_ids_in(results[i]) for i in dropped_at)) - seen_ids
            text = _without_ids(answer, unseen & set(ENTITY_ID.findall(answer)))
        removed = f"; {len(unseen & set(ENTITY_ID.findall(answer)))} id(s) only they returned left out of the answer"
        out.append(
            Perturbation(
                key=f"{FIRST_PAGE_ONLY}[{index}]",
                kind=FIRST_PAGE_ONLY,
                description=f"only the first page of {call['tool']} read ({len(dropped_at)} later page call(s) left "
                f"out{removed if known else ''})",
                solution=_solution(kept, text),
            )
        )
    return out
