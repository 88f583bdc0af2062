"""The facts of an answer, by value: entity ids, money amounts, calendar dates and measures ("$1,499.99" and
"1499.99 USD" are one fact), read from text and from tool results, and an answer with a fact dropped everywhere."""

from __future__ import annotations

import re
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from world_app.tools.ids import ENTITY_ID

# Every number, amount, date ("Aug 14", "2025-08-14") and entity id carries a digit.
_FACT = re.compile(r"\d")
# Sentence ends (". ", "! ", "? ") and line breaks split an answer into units; bullets stay one unit each.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[*-])|\n+")


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
