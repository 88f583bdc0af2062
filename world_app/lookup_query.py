"""What a person types into a look-up, read the way they mean it.

"nyra 4060 mid august" is two words and a date window; "$1,299.00 jane" is an amount and a word;
"250806" is the day an order id starts with; "40 days ago" is a window around a day. Pure functions: the
world's clock comes in as ``today``, so the same text means the same thing on every run.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation

MONTHS: dict[str, int] = {}
for _number in range(1, 13):
    MONTHS[calendar.month_name[_number].lower()] = _number
    MONTHS[calendar.month_abbr[_number].lower()] = _number
MONTHS["sept"] = 9

PARTS_OF_MONTH = {"early": (1, 10, 5), "mid": (11, 20, 15), "middle": (11, 20, 15), "late": (21, 31, 25)}
FILLER = {"of", "in", "on", "around", "about", "approx", "approximately", "the", "ago", "days", "day", "weeks", "week"}
RELATIVE_DAYS = {"today": 0, "yesterday": 1}
MAX_TERMS = 6
_AMOUNT = re.compile(r"^\$?(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?$")
_ISO_DAY = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_ISO_MONTH = re.compile(r"^(\d{4})-(\d{1,2})$")
_SLASH_DAY = re.compile(r"^(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?$")
_YYMMDD = re.compile(r"^(\d{2})(\d{2})(\d{2})$")
_AGO = re.compile(r"^(\d{1,3})\s*(d|day|days|w|wk|week|weeks|m|mo|month|months)$")
_WORD_PIECES = re.compile(r"[0-9a-z]+")


@dataclass(frozen=True)
class DateWindow:
    """The days a remembered date may mean (inclusive), and the day it most likely means."""

    start: date
    end: date
    center: date

    def widened(self, days: int) -> DateWindow:
        return DateWindow(self.start - timedelta(days=days), self.end + timedelta(days=days), self.center)


@dataclass
class LookupQuery:
    text: str
    terms: list[str] = field(default_factory=list)  # lower-case words, each matched as a prefix
    window: DateWindow | None = None
    amounts: list[Decimal] = field(default_factory=list)
    understood: list[str] = field(default_factory=list)  # what was read as a date or an amount, to show back

    def tsquery(self) -> str:
        """The terms as a Postgres ``to_tsquery`` text: every piece a quoted prefix, all required."""
        return " & ".join(f"'{piece}':*" for piece in self.pieces())

    def pieces(self) -> list[str]:
        """The terms split where Postgres' text parser would split them (letters and digits only)."""
        found: list[str] = []
        for term in self.terms:
            found.extend(_WORD_PIECES.findall(term))
        return found


def _year(token: str | None) -> int | None:
    """A token that names a year of this century, or None."""
    if token and token.isdigit() and len(token) == 4 and 2000 <= int(token) <= 2099:
        return int(token)
    return None


def _year_for(month: int, today: date, year: int | None) -> int:
    """The year a month without one means: the latest one not after today."""
    if year is not None:
        return year
    return today.year if month <= today.month else today.year - 1


def _month_window(year: int, month: int, part: str | None) -> DateWindow:
    last = calendar.monthrange(year, month)[1]
    if part is None:
        return DateWindow(date(year, month, 1), date(year, month, last), date(year, month, min(15, last)))
    first, end, center = PARTS_OF_MONTH[part]
    return DateWindow(date(year, month, first), date(year, month, min(end, last)), date(year, month, center))


def _day_window(day: date, slack: int = 3) -> DateWindow:
    return DateWindow(day - timedelta(days=slack), day + timedelta(days=slack), day)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _amount(token: str) -> Decimal | None:
    """``$1,299``, ``1299.00`` or ``1,299.5`` are amounts; a bare ``4060`` is a word (a model number)."""
    match = _AMOUNT.match(token)
    if not match or not (token.startswith("$") or match.group(2) or "," in token):
        return None
    try:
        return Decimal(match.group(1).replace(",", "") + (match.group(2) or ""))
    except InvalidOperation:
        return None


def lookup_query_parse(text: str, *, today: date) -> LookupQuery:
    """Split ``text`` into words, at most one date window and amounts. Anything not read as a date or an
    amount stays a word, so nothing typed is silently dropped."""
    query = LookupQuery(text=text)
    # commas inside "$1,299" belong to the amount; one after "aug 14," does not
    tokens = [t.rstrip(",") for t in text.lower().split() if t.rstrip(",")]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        after = tokens[i + 2] if i + 2 < len(tokens) else None
        consumed = 0
        if query.window is None:
            consumed = _read_date(query, token, nxt, after, today)
        if consumed:
            i += consumed
            continue
        amount = _amount(token)
        if amount is not None:
            query.amounts.append(amount)
            query.understood.append(f"amount ${amount:,.2f}")
        elif (token not in FILLER or not query.window) and len(query.terms) < MAX_TERMS and _WORD_PIECES.search(token):
            query.terms.append(token)
        i += 1
    return query


def _read_date(query: LookupQuery, token: str, nxt: str | None, after: str | None, today: date) -> int:
    """Read a date starting at ``token``; return how many tokens it used (0: none)."""
    window: DateWindow | None = None
    used = 0
    if token in PARTS_OF_MONTH and nxt in MONTHS:
        year = _year(after)
        month = MONTHS[nxt]
        window = _month_window(_year_for(month, today, year), month, token)
        used = 3 if year else 2
    elif token in MONTHS:
        month = MONTHS[token]
        day = int(nxt.rstrip("stndrh")) if nxt and nxt.rstrip("stndrh").isdigit() else None
        if day is not None and 1 <= day <= 31:
            year = _year(after)
            found = _safe_date(_year_for(month, today, year), month, day)
            if found:
                window, used = _day_window(found), 3 if year else 2
        if window is None:
            year = _year(nxt)
            window, used = _month_window(_year_for(month, today, year), month, None), 2 if year else 1
    elif nxt in MONTHS and token.rstrip("stndrh").isdigit() and 1 <= int(token.rstrip("stndrh")) <= 31:
        month = MONTHS[nxt]
        year = _year(after)
        found = _safe_date(_year_for(month, today, year), month, int(token.rstrip("stndrh")))
        if found:
            window, used = _day_window(found), 3 if year else 2
    elif token in RELATIVE_DAYS:
        window, used = _day_window(today - timedelta(days=RELATIVE_DAYS[token]), RELATIVE_DAYS[token]), 1
    elif (m := _ISO_DAY.match(token)) and (found := _safe_date(int(m[1]), int(m[2]), int(m[3]))):
        window, used = _day_window(found, 1), 1
    elif (m := _ISO_MONTH.match(token)) and 1 <= int(m[2]) <= 12:
        window, used = _month_window(int(m[1]), int(m[2]), None), 1
    elif m := _SLASH_DAY.match(token):
        year = int(m[3]) if m[3] else None
        if year is not None and year < 100:
            year += 2000
        month, day = int(m[1]), int(m[2])
        found = _safe_date(_year_for(month, today, year), month, day) if 1 <= month <= 12 else None
        if found:
            window, used = _day_window(found, 1), 1
    elif (
        (m := _YYMMDD.match(token)) and (found := _safe_date(2000 + int(m[1]), int(m[2]), int(m[3]))) and found <= today
    ):
        window, used = _day_window(found, 0), 1
    if window is None:
        window, used = _ago(token, nxt, after, today)
    if window is None:
        return 0
    query.window = window
    query.understood.append(
        f"dates {window.start:%b %-d} to {window.end:%b %-d, %Y}"
        if window.start != window.end
        else f"date {window.start:%b %-d, %Y}"
    )
    return used


def _ago(token: str, nxt: str | None, after: str | None, today: date) -> tuple[DateWindow | None, int]:
    """ "40 days ago", "6 weeks ago", "2 months ago", "40d": a window that grows with the distance."""
    joined, used = token, 1
    if token.isdigit() and nxt:
        joined, used = f"{token} {nxt}", 2
    match = _AGO.match(joined)
    if not match:
        return None, 0
    if (nxt if used == 1 else after) == "ago":
        used += 1
    count, unit = int(match[1]), match[2]
    days = count * (7 if unit.startswith("w") else 30 if unit.startswith("m") else 1)
    if days > 3660:
        return None, 0
    center = today - timedelta(days=days)
    return _day_window(center, max(3, days // 6)), used
