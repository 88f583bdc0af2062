"""One criterion moved onto a primitive that measures what it says, checked on the reference answer and its valid
alternatives (``variants``): amounts bound to their subject, ids as one ``id_set`` per kind, counts bound to what
they count, keyword patterns as negation-aware claims, ISO dates as ``date``, "read past the first page" as "saw
the later rows", and a fact of the answer as its own criterion. Each returns ``None`` when the conversion would
fail the reference or an alternative: the caller keeps the old criterion. Used by ``harden``."""

from __future__ import annotations

import copy
import re
from decimal import Decimal
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from rubrics_app import answer_facts
from rubrics_app.criterion_specs import as_number
from rubrics_app.programmatic.responses import response_verdict
from tasks_app.red_team import answer_reformatted, answer_reworded

SAW_MAX_IDS = 12
FACT_OPS = ("amount", "date", "id_set", "affirms", "not_affirms", "prose")
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


def met_everywhere(criterion: dict, answers: tuple[str, ...]) -> bool:
    try:
        return all(response_verdict(_row(criterion), answer)["status"] == "met" for answer in answers)
    except Exception:  # noqa: BLE001 - a spec this module built that does not validate is simply not used
        return False


@lru_cache(maxsize=256)
def variants(answer: str) -> tuple[str, ...]:
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


def amount_criterion(criterion: dict, answer: str) -> dict | None:
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
            if met_everywhere(new, variants(answer)):
                return new
    return None


# --- ids, claims, paging -------------------------------------------------------------------------------------


def entity_id_kind(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    match = answer_facts.ENTITY_ID.fullmatch(value.strip())
    return match.group(1) if match else None


def id_set_criterion(criterion: dict, kind: str, answer: str) -> dict | None:
    prose, _ = answer_facts.readable(answer)
    ids = sorted({m.value for m in answer_facts.id_mentions(prose) if m.kind == kind})
    if not ids:
        return None
    new = copy.deepcopy(criterion)
    names = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    new["text"] = f"Names exactly the {kind} ids {names} (no other {kind} id, none missing)"
    new["spec"] = {"op": "id_set", "value": ids}
    return new if met_everywhere(new, variants(answer)) else None


_ID_OR_NUMBER = re.compile(r"^[\s\\$\d.,%?:()|-]*$")
_MONEY_TEXT = re.compile(r"^\\?\$?\s*(\d{1,3}(?:,\d{3})+|\d+)\\?\.(\d{2})$")


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")  # fmt: skip
_NOUN = re.compile(r"[A-Za-z]{3,}")
_COUNT_FILLER = frozenset({"the", "and", "for", "more", "than", "only", "exactly", "about", "with", "its", "their"})


def count_criterion(criterion: dict, answer: str) -> dict | None:
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
    return new if met_everywhere(new, variants(answer)) else None


def money_text_criterion(criterion: dict, answer: str) -> dict | None:
    """A ``contains`` / ``regex`` on one money amount ("227.79", "\\$227\\.79") as ``amount`` bound to a subject."""
    value = criterion["spec"].get("value")
    match = _MONEY_TEXT.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    amount = f"{match.group(1).replace(',', '')}.{match.group(2)}"
    as_number = {**criterion, "spec": {"op": "number", "value": amount, "tolerance": 0.01}}
    return amount_criterion(as_number, answer)


_ISO_IN_PATTERN = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")


def date_criterion(criterion: dict, answer: str) -> dict | None:
    """A pattern or text naming one ISO date ("2025-09-16|September 16") as a ``date`` criterion, any format."""
    value = criterion["spec"].get("value")
    dates = set(_ISO_IN_PATTERN.findall(value)) if isinstance(value, str) else set()
    if len(dates) != 1:
        return None
    iso = "-".join(dates.pop())
    new = copy.deepcopy(criterion)
    new["spec"] = {"op": "date", "value": iso}
    return new if met_everywhere(new, variants(answer)) else None


def claim_criterion(criterion: dict, answer: str) -> dict | None:
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
    return new if met_everywhere(new, variants(answer)) else None


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


def paging_criterion(criterion: dict, calls: list[dict], results: list) -> dict | None:
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


def fails_without(criteria: list[dict], dropped: str) -> bool:
    for c in criteria:
        if c["kind"] == "response" and c.get("required"):
            try:
                if response_verdict(_row(c), dropped)["status"] != "met":
                    return True
            except Exception:  # noqa: BLE001, S112 - an invalid old spec covers nothing
                continue
    return False


def fact_criterion(fact: str, answer: str) -> dict | None:
    kind, _, value = fact.partition(":")
    prose, _ = answer_facts.readable(answer)
    if kind == "id":
        id_kind = entity_id_kind(value)
        return id_set_criterion({"kind": "response", "text": "", "weight": 1, "category": "correctness",
                                  "required": True}, id_kind, answer) if id_kind else None  # fmt: skip
    if kind == "money":
        base = {"kind": "response", "text": f"States ${Decimal(value):,.2f}", "weight": 1, "category": "correctness",
                "required": True, "spec": {"op": "number", "value": value, "tolerance": 0.01}}  # fmt: skip
        new = amount_criterion(base, answer)
        if new is None:
            new = {**base, "spec": {"op": "amount", "value": value, "tolerance": 0.01}}
        else:
            new["text"] = f"States ${Decimal(value):,.2f} for {new['spec']['subject'].removeprefix(chr(92) + 'b')}"
        return new if met_everywhere(new, variants(answer)) else None
    if kind == "date":
        month, day = (int(x) for x in value.split("-"))
        years = [m.value[0] for m in answer_facts.date_mentions(prose) if m.value[1:] == (month, day) and m.value[0]]
        iso = f"{years[0] if years else 2025:04d}-{month:02d}-{day:02d}"
        new = {"kind": "response", "text": f"States the date {iso}", "weight": 1, "category": "correctness",
               "required": True, "spec": {"op": "date", "value": iso}}  # fmt: skip
        return new if met_everywhere(new, variants(answer)) else None
    if kind == "num":
        number = re.match(r"[\d.]+", value)
        if not number:
            return None
        pattern = rf"(?<![\d.,]){re.escape(number.group(0))}(?![\d]|[.,]\d)"
        new = {"kind": "response", "text": f"States {value}", "weight": 1, "category": "correctness",
               "required": True, "spec": {"op": "affirms", "value": pattern}}  # fmt: skip
        return new if met_everywhere(new, variants(answer)) else None
    return None
