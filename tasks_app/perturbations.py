"""Perturbed copies of a reference solution, each with exactly one fault: the negative controls of a rubric.

A rubric that still passes a solution with a write left out, a wrong argument, a fact missing from the reply or
only the first page of a paged search read is blind to that fault. ``reference_perturbations`` makes one copy
per fault, deterministically (same solution in, same perturbations out, in the same order), in four kinds:

- ``drop_write[i]``: call ``i``, a tool of the registry's "write" group, is left out (later calls are kept, even
  when they named what it would have created: that is what an agent that forgot the write does next).
- ``change_argument[i].<name>``: one argument of call ``i`` changed in a way that matters: an entity id becomes
  the neighbouring id of the same kind ("ord-230215-001" -> "ord-230215-002", existing-looking, usually
  another real row), an integer is shifted by one, an amount scaled by 1.1 (or set to 1 when 0), an enum takes
  the next value of the tool's schema, a boolean flips, an ISO date moves 7 days later, a list of ids has its
  first id changed, a list of lines/parts loses its last entry (or, with one entry, changes that entry's id or
  quantity). Free text (notes, summaries, queries) and paging arguments (offset, limit, sort) are left alone:
  changing them is no fault, or it is the ``first_page_only`` fault. With ``replay`` (a function running a call
  list on the snapshot and returning the results) a changed *read* must change what the agent learns and so
  the answer: the copy is made only when the changed call's result differs, and every fact of the answer that
  came from the original result alone (not from the instruction, nor from any result of the changed run) is
  taken out of the answer; a changed read that changes no fact of the answer is no fault and yields no copy.
  A changed write keeps the answer (the agent believes it did the right thing).
- ``drop_fact[k]``: the ``k``-th fact of the final answer (an entity id, a money amount or a calendar date,
  compared by value: "$1,499.99" and "1499.99 USD" are one fact, "2025-09-15" and "September 15" are one) is
  removed from the answer *everywhere*: every sentence, line or ";" clause naming it goes. With ``results``
  only facts that some tool result holds and the instruction does not are dropped (the facts the agent had
  to find).
- ``first_page_only[i]``: a paged read (a call with ``offset`` > 0) and every later page of the same query are
  left out, as if the agent read only the first page; ``i`` is the first such call. With ``results`` the entity
  ids that only the later pages returned are also taken out of the answer (the agent never saw them).

A copy that ends where the reference ends is no fault: with ``world_diff`` (calls -> the diff they leave on the
snapshot) every copy whose calls leave the same world and whose answer is the reference's is not made, whatever
its kind (a flipped ``opened`` on a refund the fee rules ignore, a dropped write that changed nothing, a page the
answer owes nothing to). Calibration and the library check pass it (``SnapshotReplay.diff``).

Write tools are found through ``tool_lookup(name) -> Tool | None`` (default: the world's tool registry); a call
to an unknown tool is never treated as a write, and its enums are unknown.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from corecraft_site.canonical import sorted_json
from rubrics_app.judgement import OPEN_WORLD, Judgement, RubricCriterion, Trajectory, rubric_of, trajectory_judge
from world_app.conversation import simulated_user_bound
from world_app.episodes import episode_close, episode_create, episode_world, episode_world_diff
from world_app.routers import EPISODE_ALIAS
from world_app.tools.ids import ENTITY_ID
from world_app.tools.registry import CONVERSATION_GROUP, call_tool, get_tool, invoke_tool

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
# Every number, amount, date ("Aug 14", "2025-08-14") and entity id carries a digit.
_FACT = re.compile(r"\d")
# Sentence ends (". ", "! ", "? ") and line breaks split an answer into units; bullets stay one unit each.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[*-])|\n+")


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
                learned = facts_of(results[index])
                still = facts_in_text(instruction).union(*(facts_of(r) for r in new_results))
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


# --- drop_fact -------------------------------------------------------------------------------------------------


def _units(answer: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, line or ";" clause of the answer."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(answer):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(answer)))
    clauses = []
    for s, e in spans:
        at = s
        for piece in answer[s:e].split(";"):
            clauses.append((at, at + len(piece)))
            at += len(piece) + 1
    return [(s, e) for s, e in clauses if answer[s:e].strip()]


def is_fact(text: str) -> bool:
    """True when a piece of text names a number, an amount, a date or an entity id."""
    return bool(_FACT.search(text))


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONEY_TEXT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)|(?<![\d.,-])(\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d+\.\d{2})(?![\d-])")
_ISO_TEXT = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?!\d)")
_LONG_DATE = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?!:)", re.I
)
_MEASURE = re.compile(
    r"(?<![\w.,-])(\d+(?:\.\d+)?)\s?(mm|cm|w|watts?|gb|tb|mhz|ghz|°c|%|percent|days?|months?|years?)(?![\w])", re.I
)
_UNITS = {"watt": "w", "watts": "w", "percent": "%", "day": "days", "month": "months", "year": "years"}
_MONEY_VALUE = re.compile(r"-?\d+\.\d{2}")
_MONEY_KEYS = re.compile(r"amount|total|price|cost|fee|subtotal|refund|shipping|discount|balance|credit|paid|value")


def _money(text: str) -> str | None:
    try:
        return f"money:{Decimal(text.replace(',', '')).quantize(Decimal('0.01'))}"
    except (InvalidOperation, ValueError):
        return None


def facts_in_text(text: str) -> set[str]:
    """The facts a text names, by value: ``id:<entity id>``, ``money:<amount>``, ``date:<MM-DD>``, and measures
    ``num:<value><unit>`` (166 mm, 650 W, 15%, 30 days)."""
    found = {f"id:{i}" for i in ENTITY_ID.findall(text or "")}
    bare = ENTITY_ID.sub(" ", text or "")
    for match in _MONEY_TEXT.finditer(bare):
        fact = _money(match.group(1) or match.group(2))
        if fact:
            found.add(fact)
    for match in _ISO_TEXT.finditer(bare):
        found.add(f"date:{match.group(2)}-{match.group(3)}")
    for match in _LONG_DATE.finditer(bare):
        month = _MONTHS.index(match.group(1).lower()[:3]) + 1
        day = int(match.group(2))
        if 1 <= day <= 31:
            found.add(f"date:{month:02d}-{day:02d}")
    for match in _MEASURE.finditer(bare):
        unit = match.group(2).lower()
        found.add(f"num:{Decimal(match.group(1)).normalize():f}{_UNITS.get(unit, unit)}")
    return found


def facts_of(value: Any, key: str = "") -> set[str]:
    """The facts a tool result holds: entity ids, money amounts (2-decimal numbers, or numbers under a money-like
    key) and dates (ISO dates and datetimes; a datetime also gives the day before, the world's zone being
    behind UTC)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for name, item in value.items():
            found |= facts_of(item, str(name))
    elif isinstance(value, list):
        for item in value:
            found |= facts_of(item, key)
    elif isinstance(value, bool) or value is None:
        return found
    elif isinstance(value, int | float | Decimal):
        if isinstance(value, float | Decimal) or _MONEY_KEYS.search(key):
            fact = _money(str(value))
            if fact:
                found.add(fact)
    elif isinstance(value, str):
        found |= facts_in_text(value)
        iso = _ISO_TEXT.match(value)
        if iso:
            try:
                day = date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
            except ValueError:
                return found
            found.add(f"date:{day:%m-%d}")
            if len(value) > 10 and value[10] in "T ":
                found.add(f"date:{day - timedelta(days=1):%m-%d}")
    return found


def drop_facts(answer: str, facts: set[str]) -> str:
    """The answer without every sentence, line or clause that names one of ``facts``."""
    answer = text = (answer or "").strip()
    for start, end in reversed(_units(answer)):
        if facts_in_text(answer[start:end]) & facts:
            text = _without(text, start, end)
    return re.sub(r"[ \t]+\n", "\n", re.sub(r"\n{3,}", "\n\n", text)).strip()


def _without(answer: str, start: int, end: int) -> str:
    text = answer[:start].rstrip(" ") + (" " if answer[:start] and not answer[:start].endswith("\n") else "")
    rest = answer[end:].lstrip(" ")
    if rest.startswith(";"):
        rest = rest[1:].lstrip(" ")
    elif text.rstrip().endswith(";"):
        text = text.rstrip()[:-1] + (". " if rest else "")
    return (text + rest).strip()


def answer_facts(answer: str, *, results: list | None = None, instruction: str = "") -> list[str]:
    """The facts of the answer a ``drop_fact`` copy can drop, in order of first appearance: with ``results``
    only those some result holds and the instruction does not."""
    ordered: list[str] = []
    for start, end in _units(answer):
        for fact in sorted(facts_in_text(answer[start:end])):
            if fact not in ordered:
                ordered.append(fact)
    if results is not None:
        seen = set().union(set(), *(facts_of(r) for r in results)) - facts_in_text(instruction)
        ordered = [f for f in ordered if f in seen]
    return ordered


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


# --- checking a rubric against its reference and the perturbed copies ------------------------------------------


@dataclass
class RubricCheck:
    """How a rubric judges its reference solution and the single-fault copies of it.

    ``reference_passes``: every programmatic criterion is met by the reference (``llm`` criteria cannot be judged
    offline and are left out). A perturbed copy is *detected* when at least one programmatic criterion it meets
    less than the reference does goes unmet; ``blind`` means copies were made and none was detected (a task
    whose reference has no real fault to make, e.g. an answer of policy text only, is not blind).
    """

    reference_passes: bool
    unmet: list[str]
    call_errors: list[str]
    detected: list[str]
    undetected: list[str]
    reference_judgement: Judgement | None = None

    @property
    def blind(self) -> bool:
        return bool(self.undetected) and not self.detected


def _criterion_rows(criteria: list[dict]) -> list[RubricCriterion]:
    return rubric_of(criteria)


def _run_calls(snapshot, calls: list[dict], label: str, simulated_user: dict | None = None):
    """A new episode with ``calls`` made in it; the episode, the calls' errors and their results."""
    episode = episode_create(snapshot=snapshot, label=label, simulated_user=simulated_user)
    errors, results = [], []
    for index, call in enumerate(calls):
        result = call_tool(episode, call["tool"], call.get("arguments") or {})
        results.append(result)
        if isinstance(result, dict) and "error" in result:
            message = result["error"].get("message", "") if isinstance(result["error"], dict) else result["error"]
            errors.append(f"calls[{index}] {call['tool']}: {message}")
    return episode, errors, results


def _call_dicts(calls: list[dict], results: list) -> list[dict]:
    return [
        {"name": call["tool"], "arguments": call.get("arguments") or {}, "result": result,
         "is_error": isinstance(result, dict) and "error" in result}
        for call, result in zip(calls, results, strict=True)
    ]  # fmt: skip


def _unmet_of(judgement: Judgement) -> set[int]:
    return {i for i, v in enumerate(judgement.verdicts) if v["status"] == "not_met"}


def _judged(rows, episode, answer: str, *, snapshot, calls: list[dict], results: list, instruction: str) -> Judgement:
    trajectory = Trajectory.of(
        instruction=instruction,
        snapshot_version=snapshot.version,
        tool_calls=_call_dicts(calls, results),
        final_answer=answer,
        episode=episode,
        simulated_user=episode.simulated_user,
    )
    return trajectory_judge(rubric=rows, trajectory=trajectory)


class SnapshotReplay:
    """Replays call lists in one scratch episode of a snapshot, each in a savepoint rolled back afterwards.

    The tools run exactly as in an episode (the snapshot's rows and clock) but nothing is logged: each trajectory
    is judged by ``trajectory_judge`` in the world the calls left (``OPEN_WORLD``), its calls as the steps. Hundreds of
    perturbed copies cost milliseconds each instead of an episode (and its logged steps) each. Use it as a
    context manager.
    """

    def __init__(self, snapshot):
        self.snapshot = snapshot
        # Who answers ``ask_user`` in the calls replayed now (the task's simulated user; {}: no one).
        self.simulated_user: dict = {}

    @contextmanager
    def user_bound(self, simulated_user: dict | None) -> Iterator[None]:
        """Inside the block, replayed calls are answered (``ask_user``) and judged as the task of that simulated
        user's: one replay serves many tasks, each with its own user."""
        before = self.simulated_user
        self.simulated_user = dict(simulated_user or {})
        try:
            yield
        finally:
            self.simulated_user = before

    def __enter__(self) -> SnapshotReplay:
        self.episode = episode_create(snapshot=self.snapshot, label="rubric check (replay)")
        self._world = episode_world(self.episode)
        self._world.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._world.__exit__(*exc)
        finally:
            episode_close(self.episode)

    def results(self, calls: list[dict]) -> list:
        """The results of ``calls`` made in order on the snapshot (rolled back afterwards)."""
        return self._play(calls)[0]

    def diff(self, calls: list[dict]) -> dict:
        """The diff (``episode_diff``'s shape) that ``calls`` made in order leave on the snapshot (rolled back)."""
        found: list[dict] = []
        self._play(calls, lambda results: found.append(episode_world_diff()))
        return found[0]

    def judgements(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[Judgement], list, list[str]]:
        """For each answer, ``trajectory_judge``'s judgement after ``calls``, made in the replayed world
        (``OPEN_WORLD``) before it is rolled back: the same judgement, hash and verdict cache as a logged episode
        of the same calls. Also the calls' results and errors."""
        judgements: list[Judgement] = []

        def judge(results: list) -> None:
            tool_calls = _call_dicts(calls, results)
            for answer in answers:
                trajectory = Trajectory.of(
                    instruction=instruction,
                    snapshot_version=self.snapshot.version,
                    tool_calls=tool_calls,
                    final_answer=answer or "",
                    episode=OPEN_WORLD,
                    simulated_user=self.simulated_user,
                )
                judgements.append(trajectory_judge(rubric=rows, trajectory=trajectory))

        results, errors = self._play(calls, judge)
        return judgements, results, errors

    def verdicts(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[list[dict]], list, list[str]]:
        """For each answer, the verdict of every criterion after ``calls`` (``llm`` ones pending); the calls'
        results and errors."""
        judgements, results, errors = self.judgements(rows, calls, answers, instruction=instruction)
        return [j.verdicts for j in judgements], results, errors

    def _play(self, calls: list[dict], then=None) -> tuple[list, list[str]]:
        """Make ``calls`` in a savepoint, run ``then(results)`` in the world they left, and roll it all back."""
        from django.db import transaction

        memo = self.__dict__.setdefault("_reads", {})
        with transaction.atomic(using=EPISODE_ALIAS), simulated_user_bound(self.simulated_user):
            errors, results = [], []
            pristine = True  # no write yet: a read returns what it returns on the snapshot (memoised)
            for index, call in enumerate(calls):
                found = get_tool(call["tool"])
                if found is None or found.group == "write":
                    pristine = False
                # A question's reply is the task's user's, not the snapshot's: never shared between tasks.
                shared = pristine and found is not None and found.group != CONVERSATION_GROUP
                key = sorted_json([call["tool"], call.get("arguments") or {}])
                if shared and key in memo:
                    result = memo[key]
                else:
                    result = invoke_tool(call["tool"], call.get("arguments") or {})
                    if shared and len(memo) < 20_000:
                        memo[key] = result
                results.append(result)
                if isinstance(result, dict) and "error" in result:
                    message = result["error"].get("message", "") if isinstance(result["error"], dict) else result
                    errors.append(f"calls[{index}] {call['tool']}: {message}")
            if then is not None:
                then(results)
            transaction.set_rollback(True, using=EPISODE_ALIAS)
        return results, errors

    def unmet(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[set[int]], list[str]]:
        """For each answer, the indexes of the criteria not met after ``calls``; and the calls' errors."""
        judgements, results, errors = self.judgements(rows, calls, answers, instruction=instruction)
        self.last_results = results
        self.last_judgements = judgements
        return [_unmet_of(j) for j in judgements], errors


class _SharedReplay:
    """A ``SnapshotReplay`` opened on first use (a block that never needs it opens no scratch world)."""

    def __init__(self, snapshot):
        self.snapshot = snapshot
        self.replay: SnapshotReplay | None = None

    def get(self) -> SnapshotReplay:
        if self.replay is None:
            self.replay = SnapshotReplay(self.snapshot).__enter__()
        return self.replay

    def close(self, *exc) -> None:
        if self.replay is not None:
            self.replay.__exit__(*exc)
            self.replay = None


_SHARED_REPLAY: ContextVar[_SharedReplay | None] = ContextVar("shared_snapshot_replay", default=None)


@contextmanager
def shared_replay(snapshot) -> Iterator[None]:
    """Inside the block ``shared_replay_for`` hands out one ``SnapshotReplay`` of ``snapshot``, opened on first use:
    checking many task versions of one snapshot (planning a red-team run, loading a library) opens one scratch
    world, not one each, and none when nothing needs one."""
    shared = _SharedReplay(snapshot)
    token = _SHARED_REPLAY.set(shared)
    try:
        yield
    finally:
        _SHARED_REPLAY.reset(token)
        shared.close(None, None, None)


def shared_replay_for(snapshot_id: int) -> SnapshotReplay | None:
    """The shared replay of the enclosing ``shared_replay`` block when it is of that snapshot."""
    shared = _SHARED_REPLAY.get()
    return shared.get() if shared is not None and shared.snapshot.pk == snapshot_id else None


def rubric_check(
    *, criteria: list[dict], solution: dict, snapshot=None, replay: SnapshotReplay | None = None,
    exhaustive: bool = False, instruction: str = "", simulated_user: dict | None = None,
) -> RubricCheck:  # fmt: skip
    """Judge ``solution`` and its perturbed copies by the programmatic criteria on ``snapshot``, the task's
    ``simulated_user`` answering its questions (``ask_user``).

    With ``replay`` (a ``SnapshotReplay`` of the snapshot), calls are replayed in its scratch world (fast, for
    checking many tasks); otherwise each call list runs in a real episode, logged, as a reference run does.
    The perturbations get the reference's results (see ``reference_perturbations``). Copies that only change the
    final answer reuse the reference's calls. Without ``exhaustive`` the copies stop at the first one detected
    (what "the rubric is not blind" needs); with it every copy is judged.
    """
    rows = _criterion_rows(criteria)
    calls = [{"tool": c["tool"], "arguments": c.get("arguments") or {}} for c in solution.get("calls") or []]
    answer = solution.get("final_answer") or ""
    if replay is not None:
        with replay.user_bound(simulated_user):
            return _rubric_check(rows, calls, answer, replay=replay, snapshot=snapshot, exhaustive=exhaustive,
                                 instruction=instruction, simulated_user=simulated_user)  # fmt: skip
    return _rubric_check(rows, calls, answer, replay=None, snapshot=snapshot, exhaustive=exhaustive,
                         instruction=instruction, simulated_user=simulated_user)  # fmt: skip


def _rubric_check(
    rows, calls: list[dict], answer: str, *, replay: SnapshotReplay | None, snapshot, exhaustive: bool,
    instruction: str, simulated_user: dict | None,
) -> RubricCheck:  # fmt: skip
    detected, undetected = [], []
    if replay is not None:
        replayer, differ = replay.results, replay.diff
    else:

        def replayer(some_calls: list[dict]) -> list:
            with SnapshotReplay(snapshot) as scratch, scratch.user_bound(simulated_user):
                return scratch.results(some_calls)

        def differ(some_calls: list[dict]) -> dict:
            with SnapshotReplay(snapshot) as scratch, scratch.user_bound(simulated_user):
                return scratch.diff(some_calls)

    def judge(perturbation: Perturbation, unmet: set[int], base: set[int]) -> None:
        (detected if unmet - base else undetected).append(perturbation.key)

    def ordered(results: list) -> tuple[list[Perturbation], list[Perturbation]]:
        found = reference_perturbations(
            {"calls": calls, "final_answer": answer}, results=results, replay=replayer, instruction=instruction,
            world_diff=differ,
        )  # fmt: skip
        # Answer-only faults first: they need no replay of the calls.
        found.sort(key=lambda p: p.kind != DROP_FACT)
        return [p for p in found if p.solution["calls"] == calls], [p for p in found if p.solution["calls"] != calls]

    if replay is not None:
        (base_unmet,), call_errors = replay.unmet(rows, calls, [answer], instruction=instruction)
        reference_judgement = replay.last_judgements[0]
        same_calls, other = ordered(replay.last_results)
        answers = [p.solution["final_answer"] for p in same_calls]
        unmet_sets, _ = replay.unmet(rows, calls, answers, instruction=instruction)
        for perturbation, unmet in zip(same_calls, unmet_sets, strict=True):
            judge(perturbation, unmet, base_unmet)
        for perturbation in other:
            if detected and not exhaustive:
                break
            copy_calls, copy_answer = perturbation.solution["calls"], perturbation.solution["final_answer"]
            (unmet,), _ = replay.unmet(rows, copy_calls, [copy_answer], instruction=instruction)
            judge(perturbation, unmet, base_unmet)
    else:
        episode, call_errors, results = _run_calls(snapshot, calls, "rubric check: reference", simulated_user)
        try:
            reference_judgement = _judged(
                rows, episode, answer, snapshot=snapshot, calls=calls, results=results, instruction=instruction
            )
            base_unmet = _unmet_of(reference_judgement)
            same_calls, other = ordered(results)
            for perturbation in same_calls:
                copy_answer = perturbation.solution["final_answer"]
                unmet = _unmet_of(
                    _judged(
                        rows, episode, copy_answer, snapshot=snapshot, calls=calls, results=results,
                        instruction=instruction,
                    )
                )  # fmt: skip
                judge(perturbation, unmet, base_unmet)
        finally:
            episode_close(episode)
        for perturbation in other:
            if detected and not exhaustive:
                break
            label = f"rubric check: {perturbation.key}"
            copy_calls, copy_answer = perturbation.solution["calls"], perturbation.solution["final_answer"]
            copy_episode, _, copy_results = _run_calls(snapshot, copy_calls, label, simulated_user)
            try:
                unmet = _unmet_of(
                    _judged(
                        rows, copy_episode, copy_answer, snapshot=snapshot, calls=copy_calls, results=copy_results,
                        instruction=instruction,
                    )
                )  # fmt: skip
                judge(perturbation, unmet, base_unmet)
            finally:
                episode_close(copy_episode)
    if not exhaustive and detected:
        undetected = [k for k in undetected if k not in detected]
    return RubricCheck(
        reference_passes=not base_unmet,
        unmet=[rows[i].text for i in sorted(base_unmet)],
        call_errors=call_errors,
        detected=detected,
        undetected=undetected,
        reference_judgement=reference_judgement,
    )
