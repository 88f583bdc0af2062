"""What a final answer states: money amounts, dates and entity ids where they sit, bound to the words they are
stated for, claims with their negation, and whether the answer is prose for a reader at all.

A response criterion must not be met by a number that appears anywhere: a dump of tool results contains every
amount. So the readers here work on the answer's *prose*: JSON (a dump of tool output) is masked out, and a
*data run* (a spray of values: four or more ids, amounts or dates in a row with only commas between them, of
two or more kinds or all amounts; or a line that is a label and a bare list) makes the answer's facts
unreadable, and its claims too (``affirms`` / ``not_affirms``): a reply that buries what it says in a list of
values is not a reply its reader can act on, so none of its content is credited. A claim met only inside a list
of many short alternatives (``in_word_list``: "approved, denied, eligible, incompatible, ...") is not made either
(a forbidden claim named there still counts as said: ``not_affirms`` reads every mention).
An amount is *stated for* a subject when, in one clause (a sentence, a ``;`` part or a line), it is the mention
nearest to a word of the subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache

# An entity id of the world (ord-230215-001, li-230215-001-2, cus-00001, ref-w00001): the shape of
# world_app.tools.ids.ENTITY_ID, stricter at both ends (not inside a longer dashed word, not ending in a dash)
# and capturing the prefix: what an answer mentions.
ENTITY_ID = re.compile(r"(?<![\w-])([a-z]{2,3})-w?\d(?:[\d-]*\d)?(?!\w)")
_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_MONEY = re.compile(
    rf"(?P<neg>-\s?)?(?:US\s?)?\$\s?(?P<a>{_DIGITS})"
    rf"|(?:USD|EUR|GBP)\s?(?P<b>-?(?:{_DIGITS}))"
    rf"|(?P<c>-?(?:{_DIGITS}))\s?(?:USD|usd|dollars?|bucks)\b"
    rf"|(?<![\w.,/-])(?P<d>\d{{1,3}}(?:,\d{{3}})+\.\d{{2}}|\d+\.\d{{2}})(?![\w%/-]|\.\d)",
)
_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
    "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
    "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    r"(?<![\w-])(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?![\w-])"
    r"|(?<![\w/])(?P<um>\d{1,2})/(?P<ud>\d{1,2})/(?P<uy>\d{4}|\d{2})(?![\w/])"
    rf"|\b(?P<mm>{_MONTH})\.?\s+(?P<md>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<my>\d{{4}})\b)?"
    rf"|\b(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dm>{_MONTH})\b\.?(?:,?\s+(?P<dy>\d{{4}})\b)?",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[*-])|;|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_NEGATORS = frozenset({
    "no", "not", "never", "cannot", "can't", "won't", "isn't", "aren't", "wasn't", "weren't", "don't", "doesn't",
    "didn't", "hasn't", "haven't", "without", "unable", "neither", "nor", "none", "nothing", "couldn't",
    "shouldn't", "wouldn't", "mustn't", "ineligible",
})  # fmt: skip
_NEGATED_AFTER = frozenset({"not", "never", "cannot", "impossible", "unavailable"})
_JSON_KEY = re.compile(r'"[^"\n]{1,80}"\s*:')
# Between the values of a bare list: commas and spaces only ("a (b), c (d)" or "a; b" is a structured list).
_SEPARATOR = re.compile(r"[\s,]*")
DATA_RUN = 4
_TYPE_WORDS = frozenset({
    "amount", "amounts", "value", "values", "id", "ids", "record", "records", "related", "number", "numbers",
    "figure", "figures", "data", "other", "also", "more", "items", "entities", "references", "see", "and",
})  # fmt: skip


@dataclass(frozen=True)
class Mention:
    """A value the answer states, with where it is."""

    kind: str  # "money", "date" or an id prefix ("ord")
    value: object  # Decimal, (year | None, month, day), or the id
    start: int
    end: int


@lru_cache(maxsize=1024)
def masked(text: str) -> str:
    """``text`` with every JSON object or array that holds ``"key":`` pairs blanked out (same length)."""
    chars = list(text)
    stack: list[int] = []
    regions: list[tuple[int, int]] = []
    in_string = False
    for index, ch in enumerate(text):
        if ch == '"' and (index == 0 or text[index - 1] != "\\"):
            in_string = not in_string
        if in_string:
            continue
        if ch in "{[":
            stack.append(index)
        elif ch in "}]" and stack:
            start = stack.pop()
            if not stack:
                regions.append((start, index + 1))
    for start, end in regions:
        if _JSON_KEY.search(text, start, end):
            chars[start:end] = " " * (end - start)
    out = "".join(chars)
    if len(_JSON_KEY.findall(out)) >= 2:  # loose "key": value pairs (a dump without its braces)
        out = _JSON_KEY.sub(lambda m: " " * len(m.group(0)), out)
        out = re.sub(r'(?<=\s)"[^"\n]*"(?=\s*[,\n}])', lambda m: " " * len(m.group(0)), out)
    return out


def as_decimal(value: object) -> Decimal | None:
    if isinstance(value, bool):
        return None
    text = str(value).replace(",", "").replace("$", "").replace("USD", "").strip()
    try:
        return Decimal(text)
    except (InvalidOperation, ValueError):
        return None


@lru_cache(maxsize=1024)
def id_mentions(text: str) -> list[Mention]:
    return [Mention(m.group(1), m.group(0), m.start(), m.end()) for m in ENTITY_ID.finditer(text)]


@lru_cache(maxsize=1024)
def date_mentions(text: str) -> list[Mention]:
    found = []
    for m in _DATE.finditer(text):
        g = m.groupdict()
        try:
            if g["iy"]:
                year, month, day = int(g["iy"]), int(g["im"]), int(g["id"])
            elif g["uy"]:
                year = int(g["uy"]) if len(g["uy"]) == 4 else 2000 + int(g["uy"])
                month, day = int(g["um"]), int(g["ud"])
            elif g["mm"]:
                year = int(g["my"]) if g["my"] else None
                month, day = _MONTHS[g["mm"].lower()], int(g["md"])
            else:
                year = int(g["dy"]) if g["dy"] else None
                month, day = _MONTHS[g["dm"].lower()], int(g["dd"])
            date(year or 2000, month, day)
        except (KeyError, ValueError):
            continue
        found.append(Mention("date", (year, month, day), m.start(), m.end()))
    return found


@lru_cache(maxsize=1024)
def money_mentions(text: str) -> list[Mention]:
    """Amounts, in "$1,234.50", "-$94.35", "1234.50 USD", "USD 1,234.50", "1,234.50 dollars" or "1234.50" form;
    never a part of an id or a date."""
    taken = [(m.start, m.end) for m in id_mentions(text) + date_mentions(text)]
    found = []
    for m in _MONEY.finditer(text):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        raw = m.group("a") or m.group("b") or m.group("c") or m.group("d")
        value = as_decimal(raw)
        if value is None:
            continue
        if m.group("neg"):
            value = -value
        found.append(Mention("money", value, m.start(), m.end()))
    return found


@lru_cache(maxsize=1024)
def mentions(text: str) -> list[Mention]:
    """Every id, date and amount of ``text`` in order of position."""
    return sorted(id_mentions(text) + date_mentions(text) + money_mentions(text), key=lambda m: m.start)


@lru_cache(maxsize=1024)
def data_runs(text: str) -> list[list[Mention]]:
    """Runs of ``DATA_RUN`` or more values with only commas and spaces between them, of two kinds or more (ids
    of several kinds, ids and amounts) or all amounts: values listed without saying what they are. A list of
    ids of one kind ("ord-1, ord-2, ord-3, ord-4") is an answer, not a spray."""
    found = mentions(text)
    runs, current = [], []
    for mention in found:
        if current and not _SEPARATOR.fullmatch(text[current[-1].end : mention.start]):
            runs.append(current)
            current = []
        current.append(mention)
    runs.append(current)
    spans = clauses_of_lines(text)
    found_runs = []
    for run in runs:
        if len(run) >= DATA_RUN and (len({m.kind for m in run}) >= 2 or all(m.kind == "money" for m in run)):
            found_runs.append(run)
            continue
        if len(run) >= 2 and (len({m.kind for m in run}) >= 2 or all(m.kind == "money" for m in run)):
            # A label and a bare list ("Related records: ord-1, li-2."): the values' line says nothing else.
            start, end = next(((a, b) for a, b in spans if a <= run[0].start < b), (0, len(text)))
            rest = text[start : run[0].start] + text[run[-1].end : end]
            if len([w for w in _WORD.findall(rest) if len(w) > 1]) <= 2:
                found_runs.append(run)
                continue
        if run:  # "Amounts: $5.00": a line whose only words name the values' type, not what they are for
            start, end = next(((a, b) for a, b in spans if a <= run[0].start < b), (0, len(text)))
            rest = text[start : run[0].start] + text[run[-1].end : end]
            words = {w.lower() for w in _WORD.findall(rest)}
            if words and words <= _TYPE_WORDS:
                found_runs.append(run)
    return found_runs


@lru_cache(maxsize=1024)
def clauses_of_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line (``;`` does not split here)."""
    spans, start = [], 0
    for match in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\"'(\[*-])|\n+", text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def prose_problems(text: str) -> list[str]:
    """Why ``text`` is not a reply written for its reader (empty when it is)."""
    problems = []
    stripped = text.strip()
    if not stripped:
        return ["the answer is empty"]
    if stripped[0] in "{[" or len(_JSON_KEY.findall(text)) >= 2:
        problems.append("it holds raw JSON (tool output)")
    prose = masked(text)
    words = [w for w in _WORD.findall(prose) if len(w) > 1]
    if len(words) < 6:
        problems.append(f"it has {len(words)} word(s) of prose")
    runs = data_runs(prose)
    if runs:
        problems.append(f"it lists {len(runs[0])} ids/amounts/dates in a row without saying what they are")
    return problems


def readable(text: str) -> tuple[str, str | None]:
    """The answer's prose (JSON blanked) and, when a data run makes its facts unreadable, why."""
    prose = masked(text)
    runs = data_runs(prose)
    if runs:
        return prose, f"the answer lists {len(runs[0])} values in a row without saying what they are"
    return prose, None


@lru_cache(maxsize=1024)
def clauses(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _CLAUSE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def bound(text: str, subject_spans: list[tuple[int, int]], found: list[Mention]) -> list[Mention]:
    """For each subject occurrence, the mention nearest to it in its clause (ties go to the one after)."""
    out = []
    spans = clauses(text)
    for s_start, s_end in subject_spans:
        clause = next(((a, b) for a, b in spans if a <= s_start < b), None)
        if clause is None:
            continue
        near = [m for m in found if clause[0] <= m.start and m.end <= clause[1]]
        if not near:
            continue

        def gap(m: Mention, s_start=s_start, s_end=s_end) -> tuple[int, int]:
            distance = m.start - s_end if m.start >= s_end else s_start - m.end
            return (max(distance, 0), 0 if m.start >= s_end else 1)

        best = min(near, key=gap)
        if best not in out:
            out.append(best)
    return out


def negated(text: str, start: int, end: int) -> bool:
    """True when the words just before ``start`` (same clause, up to five) or just after ``end`` (up to three)
    negate what lies between: "no exception is possible", "an exception is not possible", "can't offer"."""
    clause = next(((a, b) for a, b in clauses(text) if a <= start < b), (0, len(text)))
    before = [w.lower() for w in _WORD.findall(text[clause[0] : start])][-5:]
    if any(w in _NEGATORS or w.endswith("n't") for w in before):
        return True
    after = [w.lower() for w in _WORD.findall(text[end : clause[1]])][:3]
    return any(w in _NEGATED_AFTER or w.endswith("n't") for w in after)


WORD_LIST = 6
_LIST_ITEM_WORDS = 4


def in_word_list(text: str, start: int, end: int) -> bool:
    """True when ``start:end`` sits in a list of alternatives rather than a statement: one item of a sentence (or
    ``;`` part, or line) made of ``WORD_LIST`` or more comma-separated items of at most ``_LIST_ITEM_WORDS`` words
    each ("approved, denied, eligible, not eligible, incompatible, compatible, ..."). Naming every option commits to
    none of them, so a claim met there is not made."""
    clause = next(((a, b) for a, b in clauses(text) if a <= start < b), (0, len(text)))
    items = [item for item in re.split(r",|\bor\b|\band\b", text[clause[0] : clause[1]]) if item.strip()]
    if len(items) < WORD_LIST:
        return False
    short = [item for item in items if len(_WORD.findall(item)) <= _LIST_ITEM_WORDS]
    return len(short) >= WORD_LIST and len(short) >= 0.8 * len(items)


def same_date(mention: Mention, wanted: date) -> bool:
    year, month, day = mention.value
    return (month, day) == (wanted.month, wanted.day) and (year is None or year == wanted.year)
