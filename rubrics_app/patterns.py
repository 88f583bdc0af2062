"""Regular expressions in criteria: refused on save when they can backtrack catastrophically, and always run
with a time limit where the judge runs.

``pattern_check`` is the save-time check: the pattern must compile and must not put a quantifier around a
group that is itself repeated with nothing required between its iterations (``(a+)+``, ``(\\w+\\s?)*``) or
around an alternation whose branches can start with the same character (``(a|ab)*``, ``(\\w|\\d)+``): both
give the matcher exponentially many ways to split a failing input. ``pattern_search`` runs a pattern with the
``regex`` package's ``timeout``: a pattern stored before the check (an old row, a frozen release row) that
takes longer raises ``PatternTimeout``, which the judge turns into an error verdict, never a hang.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

import regex

# Seconds (wall clock) one match may take in the judge. A sound pattern over a reply of a few KB takes
# microseconds; the margin is for a loaded machine, where a process may wait that long for a core.
PATTERN_TIMEOUT_S = 0.5
_PROBE = frozenset(string.printable)


class PatternTimeout(Exception):
    """A pattern ran past ``PATTERN_TIMEOUT_S`` (it backtracks catastrophically on this text)."""


def pattern_search(pattern: str, text: str, *, ignore_case: bool = True) -> regex.Match | None:
    """``regex.search`` with the judge's time limit; raises ``PatternTimeout`` past it."""
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        return regex.search(pattern, text, flags, timeout=PATTERN_TIMEOUT_S)
    except TimeoutError:
        raise PatternTimeout(f"the pattern /{pattern}/ ran past {PATTERN_TIMEOUT_S}s on this text") from None


def pattern_finditer(pattern: str, text: str, *, ignore_case: bool = True) -> list[regex.Match]:
    """Every match of ``pattern``, under the same time limit as ``pattern_search``."""
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        return list(regex.finditer(pattern, text, flags, timeout=PATTERN_TIMEOUT_S))
    except TimeoutError:
        raise PatternTimeout(f"the pattern /{pattern}/ ran past {PATTERN_TIMEOUT_S}s on this text") from None


def pattern_check(pattern: Any) -> None:
    """Raise ValueError (a message for the author) unless ``pattern`` compiles and cannot backtrack catastrophically."""
    if not isinstance(pattern, str):
        raise ValueError("a pattern must be text")
    problem = _pattern_problem(pattern)
    if problem:
        raise ValueError(problem)


@functools.lru_cache(maxsize=4096)
def _pattern_problem(pattern: str) -> str | None:
    """What is wrong with ``pattern``, once per pattern and process: a catastrophic one costs a probe's whole time
    limit, and a rubric names its patterns in every criterion, version and save that checks them."""
    try:
        parsed = _parser().parse(pattern)
    except re.error as exc:
        return f"not a valid regular expression: {exc}"
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return f"not a valid regular expression: {exc}"
    problem = _dangerous(list(parsed)) or _slow_on_probes(pattern)
    if problem:
        return (
            f"this pattern can backtrack catastrophically ({problem}); rewrite it without a repeated group that "
            "repeats itself or has alternatives starting alike, e.g. (a+)+ -> a+, (a|ab)* -> (ab?)*"
        )
    return None


def _slow_on_probes(pattern: str) -> str | None:
    """Run the pattern on long runs of its own characters (plus letters, digits, spaces) ending in a mismatch:
    the inputs on which an ambiguous repeat backtracks. Some constructs only the matcher reveals ((a|a)*)."""
    chars = [ch for ch in dict.fromkeys(pattern) if ch.isalnum() or ch in " -_.,:/"][:12]
    for ch in dict.fromkeys([*chars, "a", "1", " "]):
        probe = ch * 40 + "\x01"
        try:
            regex.search(pattern, probe, regex.IGNORECASE, timeout=PATTERN_TIMEOUT_S)
        except TimeoutError:  # a catastrophic pattern needs ~2**40 steps here: never a near miss
            return f"it takes over {PATTERN_TIMEOUT_S}s on {ch!r} x 40"
    return None


def _parser():
    try:
        from re import _parser as parser  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse as parser
    return parser


def _constants():
    try:
        from re import _constants as constants
    except ImportError:  # pragma: no cover
        import sre_constants as constants
    return constants


def _is_repeat(op) -> bool:
    c = _constants()
    return op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None))


def _unbounded(item) -> bool:
    op, av = item
    return _is_repeat(op) and (av[1] == _constants().MAXREPEAT or av[1] > 10)


def _dangerous(items: list) -> str | None:
    """The first catastrophic construct in a parsed sequence, described; None when there is none."""
    c = _constants()
    for op, av in items:
        if _is_repeat(op) and op != getattr(c, "POSSESSIVE_REPEAT", None):
            body = list(av[2])
            if av[1] == c.MAXREPEAT or av[1] > 10:
                if _repeats_itself(body):
                    return "a quantified group repeats a quantified part with nothing required between iterations"
                if _overlapping_branches(body):
                    return "a quantified alternation has alternatives that can start with the same character"
            found = _dangerous(body)
            if found:
                return found
        elif op == c.SUBPATTERN:
            found = _dangerous(list(av[-1]))
            if found:
                return found
        elif op == c.BRANCH:
            for alternative in av[1]:
                found = _dangerous(list(alternative))
                if found:
                    return found
        elif op in (c.ASSERT, c.ASSERT_NOT):
            found = _dangerous(list(av[1]))
            if found:
                return found
    return None


def _flatten(items: list) -> list:
    """A sequence with plain groups opened up (``(?:x)y`` is ``xy`` for this purpose)."""
    c = _constants()
    out = []
    for op, av in items:
        if op == c.SUBPATTERN and len(list(av[-1])) >= 1:
            out.extend(_flatten(list(av[-1])))
        else:
            out.append((op, av))
    return out


def _repeats_itself(body: list) -> bool:
    """True when the body holds an unbounded repeat and everything else in it may match nothing."""
    c = _constants()
    flat = _flatten(body)
    repeats = [item for item in flat if _unbounded(item)]
    if repeats and all(_nullable([item]) for item in flat if item not in repeats):
        return True
    return any(op == c.BRANCH and any(_repeats_itself(list(alt)) for alt in av[1]) for op, av in flat)


def _overlapping_branches(body: list) -> bool:
    c = _constants()
    for op, av in _flatten(body):
        if op == c.BRANCH:
            firsts = [_first(list(alt)) for alt in av[1]]
            for i, left in enumerate(firsts):
                for right in firsts[i + 1 :]:
                    if left & right:
                        return True
    return False


def _nullable(items: list) -> bool:
    """True when the sequence can match the empty string."""
    c = _constants()
    for op, av in items:
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        if _is_repeat(op):
            if av[0] == 0 or _nullable(list(av[2])):
                continue
            return False
        if op == c.SUBPATTERN:
            if _nullable(list(av[-1])):
                continue
            return False
        if op == c.BRANCH:
            if any(_nullable(list(alt)) for alt in av[1]):
                continue
            return False
        return False
    return True


def _first(items: list) -> frozenset[str]:
    """The printable characters a sequence can start with (conservatively: every one when unsure)."""
    c = _constants()
    found: set[str] = set()
    for op, av in items:
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        if op == c.LITERAL:
            found |= {chr(av), chr(av).swapcase()}
            return frozenset(found)
        if op == c.NOT_LITERAL:
            return frozenset(found | (_PROBE - {chr(av)}))
        if op == c.ANY:
            return _PROBE
        if op == c.IN:
            return frozenset(found | _in_set(av))
        if _is_repeat(op):
            found |= _first(list(av[2]))
            if av[0] == 0 or _nullable(list(av[2])):
                continue
            return frozenset(found)
        if op == c.SUBPATTERN:
            found |= _first(list(av[-1]))
            if _nullable(list(av[-1])):
                continue
            return frozenset(found)
        if op == c.BRANCH:
            for alternative in av[1]:
                found |= _first(list(alternative))
            if any(_nullable(list(alt)) for alt in av[1]):
                continue
            return frozenset(found)
        return _PROBE  # backreferences, conditionals: assume the worst
    return frozenset(found)


def _in_set(items) -> frozenset[str]:
    c = _constants()
    chars: set[str] = set()
    negate = False
    for op, av in items:
        if op == c.NEGATE:
            negate = True
        elif op == c.LITERAL:
            chars |= {chr(av), chr(av).swapcase()}
        elif op == c.RANGE:
            chars |= {ch for ch in _PROBE if av[0] <= ord(ch) <= av[1]}
        elif op == c.CATEGORY:
            chars |= _category(av)
        else:
            chars |= _PROBE
    return frozenset(_PROBE - chars) if negate else frozenset(chars)


def _category(name) -> set[str]:
    c = _constants()
    table = {
        c.CATEGORY_DIGIT: set(string.digits),
        c.CATEGORY_NOT_DIGIT: set(_PROBE) - set(string.digits),
        c.CATEGORY_SPACE: set(string.whitespace),
        c.CATEGORY_NOT_SPACE: set(_PROBE) - set(string.whitespace),
        c.CATEGORY_WORD: set(string.ascii_letters + string.digits + "_"),
        c.CATEGORY_NOT_WORD: set(_PROBE) - set(string.ascii_letters + string.digits + "_"),
    }
    return table.get(name, set(_PROBE))
