"""Rubrics that measure what they say: a task's criteria moved onto the primitives a dump, a spray, an echo or a
negation cannot meet, from its reference solution, the reference's tool results and its diff.

``criteria_harden`` is how the starter library was migrated (its YAML holds the result) and how every family
instance is built (``tasks_app.library.families.base``). Each change is checked on the reference itself and on the
valid alternatives of it (other money and date formats, a rewording): a conversion the reference or an
alternative would fail is not made, and the old criterion stays. What it does:

- a ``number`` criterion on an amount the answer states becomes ``amount`` bound to the words it is stated for
  (found in the criterion's text, else next to the amount in the reference answer);
- ``contains`` criteria on entity ids become one ``id_set`` per kind: exactly the ids of that kind the reference
  answer names (extras and misses count against);
- keyword ``regex`` / ``contains`` criteria become negation-aware ``affirms`` claims;
- "read past the first page" (an ``offset >= N`` argument) becomes "saw the rows" of the later pages, by any
  offset and limit;
- every task gets a required "no other changes" criterion (``only_changes``) built from the reference's diff:
  the rows and fields it changes and how many rows it creates (read-only tasks: no change at all); a
  ``not_called`` criterion on a write tool of a read-only task is replaced by it;
- every task gets a required reply-format criterion (``prose``) and a required "saw" criterion on the ids the
  answer names from tool results (facts the agent looked up, not echoed from the instruction);
- a ``contains`` / ``regex`` criterion on a money amount ("227.79") becomes ``amount`` bound to its subject, as a
  ``number`` one does (the amount anywhere, a dump's included, met it);
- weights: the answer's facts (the new ops) and its format carry at least ``FACT_SHARE`` of the programmatic
  weight, so an answer that only repeats the reference's calls loses that much reward; and the *guards*, the
  criteria a trajectory that does nothing meets (no other changes, a tool not called, a row that must not
  exist), carry at most ``GUARD_SHARE`` of it: they stay required, so a trajectory that breaks one fails, but
  partial reward measures progress on the task's point, and doing nothing is none.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from decimal import Decimal
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from rubrics_app import answer_facts
from rubrics_app.criterion_specs import as_number
from rubrics_app.programmatic.responses import response_verdict
from rubrics_app.programmatic.tool_calls import strings_in
from tasks_app.perturbations import answer_facts as perturbable_facts
from tasks_app.perturbations import drop_facts
from tasks_app.red_team import answer_reformatted, answer_reworded
from world_app.episodes import episode_world_diff
from world_app.episodes.world_db import PENDING_CHANGES_SQL
from world_app.models import world_models_by_name
from world_app.routers import EPISODE_ALIAS
from world_app.tools.registry import get_tool, invoke_tool

FACT_SHARE = 0.45
GUARD_SHARE = 0.2
SAW_MAX_IDS = 12
_FACT_OPS = ("amount", "date", "id_set", "affirms", "not_affirms", "prose")
_STOP = frozenset({
    "the", "a", "an", "reply", "answer", "agent", "states", "state", "stated", "says", "say", "gives", "give",
    "names", "name", "mentions", "mention", "quotes", "quote", "tells", "tell", "confirms", "confirm", "reports",
    "report", "explains", "explain", "amount", "value", "number", "figure", "correct", "exact", "exactly", "of",
    "for", "to", "and", "or", "is", "are", "its", "it", "their", "his", "her", "them", "this", "that", "with",
    "in", "on", "at", "as", "be", "by", "from", "which", "what", "how", "much", "many", "customer", "customers",
    "dollars", "usd", "about", "after", "before", "both", "also", "any", "all", "each", "per", "who", "whom",
})  # fmt: skip


def _row(criterion: dict) -> SimpleNamespace:
    return SimpleNamespace(
        key="x", content_hash="x", kind=criterion["kind"], text=criterion.get("text", ""),
        spec=criterion.get("spec") or {}, weight=criterion.get("weight", 1), required=criterion.get("required"),
    )  # fmt: skip


def _met_everywhere(criterion: dict, answers: tuple[str, ...]) -> bool:
    try:
        return all(response_verdict(_row(criterion), answer)["status"] == "met" for answer in answers)
    except Exception:  # noqa: BLE001 - a spec this module built that does not validate is simply not used
        return False


@lru_cache(maxsize=256)
def _variants(answer: str) -> tuple[str, ...]:
    """The reference answer and the valid alternatives of it that a rubric must pass."""

    return (answer, answer_reformatted(answer), answer_reworded(answer), answer_reworded(answer_reformatted(answer)))


# --- amounts -------------------------------------------------------------------------------------------------


_WORDS = re.compile(r"(?<![\w-])[A-Za-z]{3,}(?![\w-])")


def _subject_candidates(prose: str, target: answer_facts.Mention, text: str) -> list[str]:
    """Words that may name what ``target`` is stated for: the criterion's own words first, then the words just
    before the amount in its clause (nearest first)."""
    clause = next(((a, b) for a, b in answer_facts.clauses(prose) if a <= target.start < b), (0, len(prose)))
    own = [w for w in _WORDS.findall(text.lower()) if w not in _STOP and len(w) > 2]
    before = _WORDS.findall(prose[clause[0] : target.start])[::-1][:6]
    after = _WORDS.findall(prose[target.end : clause[1]])[:3]
    nearby = [w.lower() for w in [*before, *after] if w.lower() not in _STOP and len(w) > 2]
    return list(dict.fromkeys([*own, *nearby]))


def _amount_criterion(criterion: dict, answer: str) -> dict | None:
    spec = criterion["spec"]
    wanted = as_number(spec.get("value"))
    if wanted is None:
        return None
    tolerance = Decimal(str(spec.get("tolerance") or 0)) or Decimal("0.005")
    prose, _ = answer_facts.readable(answer)
    targets = [m for m in answer_facts.money_mentions(prose) if abs(m.value - wanted) <= tolerance]
    for target in targets:
        for word in _subject_candidates(prose, target, criterion.get("text", "")):
            subject = rf"\b{re.escape(word[:-1] if word.endswith('s') and len(word) > 4 else word)}"
            new = copy.deepcopy(criterion)
            new["spec"] = {"op": "amount", "value": str(spec.get("value")), "subject": subject,
                           "tolerance": float(spec.get("tolerance") or 0.01)}  # fmt: skip
            if _met_everywhere(new, _variants(answer)):
                return new
    return None


# --- ids, claims, paging -------------------------------------------------------------------------------------


def _id_kind(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    match = answer_facts.ENTITY_ID.fullmatch(value.strip())
    return match.group(1) if match else None


def _id_set_criterion(criterion: dict, kind: str, answer: str) -> dict | None:
    prose, _ = answer_facts.readable(answer)
    ids = sorted({m.value for m in answer_facts.id_mentions(prose) if m.kind == kind})
    if not ids:
        return None
    new = copy.deepcopy(criterion)
    names = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    new["text"] = f"Names exactly the {kind} ids {names} (no other {kind} id, none missing)"
    new["spec"] = {"op": "id_set", "value": ids}
    return new if _met_everywhere(new, _variants(answer)) else None


_ID_OR_NUMBER = re.compile(r"^[\s\\$\d.,%?:()|-]*$")
_MONEY_TEXT = re.compile(r"^\\?\$?\s*(\d{1,3}(?:,\d{3})+|\d+)\\?\.(\d{2})$")


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")  # fmt: skip
_NOUN = re.compile(r"[A-Za-z]{3,}")
_COUNT_FILLER = frozenset({"the", "and", "for", "more", "than", "only", "exactly", "about", "with", "its", "their"})


def _count_criterion(criterion: dict, answer: str) -> dict | None:
    """A ``number`` criterion on a count ("States the board has 2 slots") as a claim bound to what is counted: the
    number (or its word) followed, within three words, by the noun the criterion's text puts after it ("2 memory
    slots", "two slots"); met wherever the reference and its valid alternatives state it."""
    wanted = as_number(criterion["spec"].get("value"))
    if wanted is None or wanted != wanted.to_integral_value() or wanted < 0:
        return None
    count = int(wanted)
    text = criterion.get("text", "")
    found = re.search(rf"(?<![\d.,]){count}(?![\d.,])\s+(.*)", text)
    nouns = [w.lower() for w in _NOUN.findall(found.group(1))] if found else []
    nouns = [w for w in nouns if w not in _COUNT_FILLER][:1]
    if not nouns:
        return None
    noun = nouns[0].removesuffix("s") if len(nouns[0]) > 3 else nouns[0]
    spelled = f"|{_NUMBER_WORDS[count]}" if count < len(_NUMBER_WORDS) else ""
    pattern = rf"(?<![\d.,])(?:{count}{spelled})(?![\d.,])\s+(?:[\w-]+\s+){{0,3}}?{re.escape(noun)}(?:e?s)?\b"
    new = copy.deepcopy(criterion)
    new["spec"] = {"op": "affirms", "value": pattern}
    return new if _met_everywhere(new, _variants(answer)) else None


def _money_text_criterion(criterion: dict, answer: str) -> dict | None:
    """A ``contains`` / ``regex`` on one money amount ("227.79", "\\$227\\.79") as ``amount`` bound to a subject."""
    value = criterion["spec"].get("value")
    match = _MONEY_TEXT.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    amount = f"{match.group(1).replace(',', '')}.{match.group(2)}"
    as_number = {**criterion, "spec": {"op": "number", "value": amount, "tolerance": 0.01}}
    return _amount_criterion(as_number, answer)


_ISO_IN_PATTERN = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")


def _date_criterion(criterion: dict, answer: str) -> dict | None:
    """A pattern or text naming one ISO date ("2025-09-16|September 16") as a ``date`` criterion, any format."""
    value = criterion["spec"].get("value")
    dates = set(_ISO_IN_PATTERN.findall(value)) if isinstance(value, str) else set()
    if len(dates) != 1:
        return None
    iso = "-".join(dates.pop())
    new = copy.deepcopy(criterion)
    new["spec"] = {"op": "date", "value": iso}
    return new if _met_everywhere(new, _variants(answer)) else None


def _claim_criterion(criterion: dict, answer: str) -> dict | None:
    spec = criterion["spec"]
    value = spec.get("value")
    if not isinstance(value, str) or _ID_OR_NUMBER.match(value) or answer_facts.ENTITY_ID.search(value):
        return None
    if _ISO_IN_PATTERN.search(value):
        return None
    pattern = value if spec["op"] == "regex" else re.escape(value)
    new = copy.deepcopy(criterion)
    new["spec"] = {"op": "affirms", "value": pattern}
    if spec.get("case_sensitive"):
        new["spec"]["case_sensitive"] = True
    return new if _met_everywhere(new, _variants(answer)) else None


def _row_ids(result: Any) -> list[str]:
    """The ids of the rows a result lists (its list items' ``id``)."""
    found: list[str] = []
    if isinstance(result, dict):
        for value in result.values():
            if isinstance(value, list):
                found += [item["id"] for item in value if isinstance(item, dict) and isinstance(item.get("id"), str)]
            elif isinstance(value, dict):
                found += _row_ids(value)
    return found


def _paging_criterion(criterion: dict, calls: list[dict], results: list) -> dict | None:
    spec = criterion["spec"]
    offset = (spec.get("arguments") or {}).get("offset")
    if spec.get("expect", "called") != "called" or not offset or offset.get("op") not in ("gte", "eq"):
        return None
    tool = spec["tool"]
    first = {
        i for c, r in zip(calls, results, strict=False) if c["tool"] == tool and not _offset(c) for i in _row_ids(r)
    }
    later: list[str] = []
    for call, result in zip(calls, results, strict=False):
        if call["tool"] == tool and _offset(call) > 0:
            later += [i for i in _row_ids(result) if i not in first and i not in later]
    if not later:
        return None
    chosen = later[:: max(1, len(later) // SAW_MAX_IDS)][:SAW_MAX_IDS]
    new = copy.deepcopy(criterion)
    new["text"] = f"The agent saw the rows past the first page of {tool} results (by any offset and limit)"
    new["spec"] = {"tool": tool, "expect": "saw", "ids": chosen}
    return new


def _offset(call: dict) -> int:
    value = (call.get("arguments") or {}).get("offset")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- added criteria -------------------------------------------------------------------------------------------


def allowed_changes(diff: dict) -> list[dict]:
    """The ``only_changes`` rules that allow exactly the changes of ``diff`` (created counts per table)."""
    rules: list[dict] = []
    for model, count in sorted(Counter(e["model"] for e in diff.get("created", [])).items()):
        rules.append({"entity_type": model, "created": count})
    for entry in diff.get("updated", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "fields": sorted(entry.get("fields", {}))})
    for entry in diff.get("deleted", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "deleted": True})
    return rules


def _only_changes_text(rules: list[dict]) -> str:
    if not rules:
        return "No other changes: the task only needs an answer, so nothing in the world changes"
    parts = []
    for rule in rules:
        if rule.get("created"):
            parts.append(f"{rule['created']} new {rule['entity_type']}")
        elif rule.get("deleted"):
            parts.append(f"{rule['entity_type']} {rule['id']} deleted")
        else:
            parts.append(f"{rule['entity_type']} {rule['id']} ({', '.join(rule['fields'])})")
    return "No other changes: only " + "; ".join(parts)


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
            new = _amount_criterion(criterion, answer) or _count_criterion(criterion, answer)
        elif kind == "response" and spec.get("op") == "contains" and _id_kind(spec.get("value")):
            id_kind = _id_kind(spec["value"])
            if id_kind in id_sets:  # one set per kind: this id is in it already
                merged = out[id_sets[id_kind]]
                merged["weight"] = max(merged.get("weight", 1), criterion.get("weight", 1))
                merged["required"] = bool(merged.get("required") or criterion.get("required"))
                continue
            new = _id_set_criterion(criterion, id_kind, answer)
            if new is not None:
                id_sets[id_kind] = len(out)
        elif kind == "response" and spec.get("op") in ("regex", "contains"):
            new = (
                _money_text_criterion(criterion, answer)
                or _date_criterion(criterion, answer)
                or _claim_criterion(criterion, answer)
            )
        elif kind == "tool_call" and "offset" in (spec.get("arguments") or {}):
            new = _paging_criterion(criterion, calls, results)
        elif (
            kind == "tool_call" and spec.get("expect") == "not_called" and read_only and not has_only_changes
            and _write_tool(spec.get("tool", "")) and not spec.get("arguments")
        ):  # fmt: skip
            continue  # "nothing is written" is the only_changes criterion below, over every write
        out.append(new if new is not None else copy.deepcopy(criterion))
    out = _facts_covered(out, answer=answer, instruction=instruction, results=results)
    if not has_only_changes:
        rules = allowed_changes(diff)
        out.append({"kind": "state", "text": _only_changes_text(rules), "spec": {"op": "only_changes", "value": rules},
                    "weight": 2, "category": "constraint", "required": True})  # fmt: skip
        if rules:
            needed = needed_changes(diff)
            out.append({"kind": "state", "text": _needed_text(needed), "spec": {"op": "makes_changes",
                        "value": needed}, "weight": 2, "category": "completeness", "required": True})  # fmt: skip
    prose = {"kind": "response", "text": "The reply is prose written for its reader: no raw tool output (JSON) and "
             "no bare list of ids and amounts", "spec": {"op": "prose"}, "weight": 1, "category": "format",
             "required": True}  # fmt: skip
    if (
        answer
        and not any(c.get("spec", {}).get("op") == "prose" for c in out)
        and _met_everywhere(prose, _variants(answer))
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


def _decided_columns(model_name: str) -> set[str]:
    """The columns whose value is the agent's decision (references, choices, flags, amounts, lists), not free
    text or a time stamp the tools set."""
    from django.db import models

    model = world_models_by_name()[model_name]
    out = set()
    for f in model._meta.concrete_fields:
        if f.primary_key or isinstance(f, models.DateField | models.TextField):
            continue
        if isinstance(f, models.CharField) and not f.choices and not f.is_relation:
            continue
        out.add(f.attname)
    return out


def needed_changes(diff: dict) -> list[dict]:
    """The ``makes_changes`` rules of ``diff``: each created row (with its decided values) and each updated row
    with the decided values it ends with (time stamps are no evidence that the agent made a change)."""
    rules: list[dict] = []
    for entry in diff.get("created", []):
        decided = _decided_columns(entry["model"])
        values = {k: v for k, v in sorted(entry.get("row", {}).items()) if k in decided and v not in (None, "")}
        rules.append({"entity_type": entry["model"], "created": 1, **({"values": values} if values else {})})
    for entry in diff.get("updated", []):
        changed = sorted(entry.get("fields", {}))
        fields = [f for f in changed if f not in ("updated_at", "created_at")] or changed
        decided = _decided_columns(entry["model"])
        values = {f: entry["fields"][f].get("after") for f in fields if f in decided}
        rule = {"entity_type": entry["model"], "id": entry["pk"], "fields": fields}
        rules.append({**rule, "values": values} if values else rule)
    for entry in diff.get("deleted", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "deleted": True})
    return rules


def _needed_text(rules: list[dict]) -> str:
    parts = []
    for rule in rules:
        values = ", ".join(f"{k.removesuffix('_id')} {v}" for k, v in (rule.get("values") or {}).items())
        if rule.get("created"):
            parts.append(f"a new {rule['entity_type']}" + (f" ({values})" if values else ""))
        elif rule.get("deleted"):
            parts.append(f"{rule['entity_type']} {rule['id']} deleted")
        else:
            parts.append(f"{rule['entity_type']} {rule['id']} " + (f"set to {values}" if values else "updated"))
    return "The task's changes are made: " + "; ".join(parts)


def _fails_without(criteria: list[dict], dropped: str) -> bool:
    for c in criteria:
        if c["kind"] == "response" and c.get("required"):
            try:
                if response_verdict(_row(c), dropped)["status"] != "met":
                    return True
            except Exception:  # noqa: BLE001, S112 - an invalid old spec covers nothing
                continue
    return False


def _fact_criterion(fact: str, answer: str) -> dict | None:
    kind, _, value = fact.partition(":")
    prose, _ = answer_facts.readable(answer)
    if kind == "id":
        id_kind = _id_kind(value)
        return _id_set_criterion({"kind": "response", "text": "", "weight": 1, "category": "correctness",
                                  "required": True}, id_kind, answer) if id_kind else None  # fmt: skip
    if kind == "money":
        base = {"kind": "response", "text": f"States ${Decimal(value):,.2f}", "weight": 1, "category": "correctness",
                "required": True, "spec": {"op": "number", "value": value, "tolerance": 0.01}}  # fmt: skip
        new = _amount_criterion(base, answer)
        if new is None:
            new = {**base, "spec": {"op": "amount", "value": value, "tolerance": 0.01}}
        else:
            new["text"] = f"States ${Decimal(value):,.2f} for {new['spec']['subject'].removeprefix(chr(92) + 'b')}"
        return new if _met_everywhere(new, _variants(answer)) else None
    if kind == "date":
        month, day = (int(x) for x in value.split("-"))
        years = [m.value[0] for m in answer_facts.date_mentions(prose) if m.value[1:] == (month, day) and m.value[0]]
        iso = f"{years[0] if years else 2025:04d}-{month:02d}-{day:02d}"
        new = {"kind": "response", "text": f"States the date {iso}", "weight": 1, "category": "correctness",
               "required": True, "spec": {"op": "date", "value": iso}}  # fmt: skip
        return new if _met_everywhere(new, _variants(answer)) else None
    if kind == "num":
        number = re.match(r"[\d.]+", value)
        if not number:
            return None
        pattern = rf"(?<![\d.,]){re.escape(number.group(0))}(?![\d]|[.,]\d)"
        new = {"kind": "response", "text": f"States {value}", "weight": 1, "category": "correctness",
               "required": True, "spec": {"op": "affirms", "value": pattern}}  # fmt: skip
        return new if _met_everywhere(new, _variants(answer)) else None
    return None


def _facts_covered(criteria: list[dict], *, answer: str, instruction: str, results: list) -> list[dict]:
    """Every fact of the answer that a result backs (what ``drop_fact`` drops) is owed to a required criterion:
    one that fails when every mention of the fact is gone. A fact no criterion owes gets its own."""

    out = list(criteria)
    for fact in perturbable_facts(answer, results=results, instruction=instruction):
        dropped = drop_facts(answer, {fact})
        if dropped == answer.strip() or _fails_without(out, dropped):
            continue
        optional = [c for c in out if c["kind"] == "response" and not c.get("required")]
        for c in optional:  # an optional criterion that sees the fault carries it from now on
            if _fails_without([{**c, "required": True}], dropped):
                c["required"] = True
                break
        else:
            new = _fact_criterion(fact, answer)
            if new is not None and _fails_without([new], dropped):
                same = [c for c in out if c.get("spec") == new["spec"]]
                if same:
                    same[0]["required"] = True
                else:
                    out.append(new)
    return out


def _weighted(criteria: list[dict]) -> list[dict]:
    """Scale the facts' and the format's weights up until they carry ``FACT_SHARE`` of the programmatic weight."""
    facts = [c for c in criteria if c["kind"] == "response" and (c.get("spec") or {}).get("op") in _FACT_OPS]
    rest = sum(c.get("weight", 1) for c in criteria if c["kind"] != "llm" and c not in facts)
    held = sum(c.get("weight", 1) for c in facts)
    if not facts or held >= FACT_SHARE * (held + rest):
        return criteria
    factor = FACT_SHARE * rest / ((1 - FACT_SHARE) * held)
    for c in facts:
        c["weight"] = min(100.0, round(c.get("weight", 1) * factor + 0.05, 1))
    return criteria


def reference_trace(calls: list[dict]) -> tuple[list, dict]:
    """Inside ``episode_world()``: the results and the diff of ``calls`` made in order (rolled back after)."""
    from django.db import connections, transaction

    with transaction.atomic(using=EPISODE_ALIAS):
        results = [invoke_tool(c["tool"], c.get("arguments") or {}) for c in calls]
        written = connections[EPISODE_ALIAS].connection.execute(PENDING_CHANGES_SQL).fetchone()
        diff = episode_world_diff() if written else {"created": [], "updated": [], "deleted": []}
        transaction.set_rollback(True, using=EPISODE_ALIAS)
    return results, diff
