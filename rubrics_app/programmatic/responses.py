"""``response`` criteria: checks of the final answer (text, pattern and number ops; the amounts, dates, id sets and
claims it states, read with ``rubrics_app.answer_facts``)."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal

from rubrics_app import answer_facts
from rubrics_app.criterion_specs import ResponseSpec, as_number, spec_read
from rubrics_app.patterns import PatternTimeout, pattern_finditer, pattern_search
from rubrics_app.programmatic.verdicts import ERROR, MET, NOT_MET, verdict

_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+")


def response_verdict(criterion, answer: str) -> dict:
    """The verdict of one ``response`` criterion on the final answer."""
    spec = spec_read(ResponseSpec, criterion.spec)
    try:
        if spec.op in _FACT_OPS:
            return _FACT_OPS[spec.op](criterion, spec, answer)
        return _text_verdict(criterion, spec, answer)
    except PatternTimeout as exc:
        return verdict(criterion, ERROR, str(exc))


def _subject_spans(spec: ResponseSpec, prose: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern_finditer(spec.subject, prose, ignore_case=not spec.case_sensitive)]


def _amount_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    wanted, tolerance = as_number(spec.value), Decimal(str(spec.tolerance))
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return verdict(criterion, NOT_MET, unreadable, {"stated": []})
    if spec.subject:
        spans = _subject_spans(spec, prose)
        stated = answer_facts.bound(prose, spans, answer_facts.money_mentions(prose))
    else:
        spans, stated = [(0, 0)], answer_facts.money_mentions(prose)
    values = [m.value for m in stated]
    close = [v for v in values if abs(v - wanted) <= tolerance]
    if not spans:
        why = f"the answer never names the subject /{spec.subject}/"
    else:
        amounts = _join(values) or "no amount"
        target = f" for /{spec.subject}/" if spec.subject else ""
        why = f"the answer states {amounts}{target}; wanted {wanted} +/- {tolerance}"
    return verdict(criterion, MET if close else NOT_MET, why, {"stated": [str(v) for v in values]})


def _date_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    wanted = date.fromisoformat(spec.value)
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return verdict(criterion, NOT_MET, unreadable, {"stated": []})
    found = answer_facts.date_mentions(prose)
    if spec.subject:
        found = answer_facts.bound(prose, _subject_spans(spec, prose), found)
    met = any(answer_facts.same_date(m, wanted) for m in found)
    shown = [prose[m.start : m.end] for m in found][:10]
    target = f" for /{spec.subject}/" if spec.subject else ""
    why = f"the answer states {', '.join(shown) or 'no date'}{target}; wanted {wanted.isoformat()}"
    return verdict(criterion, MET if met else NOT_MET, why, {"stated": shown})


def _id_set_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return verdict(criterion, NOT_MET, unreadable, {"named": []})
    named = {m.value for m in answer_facts.id_mentions(prose) if m.kind == spec.id_kind}
    wanted = set(spec.value)
    missing = sorted(wanted - named)
    extra = sorted(named - wanted - set(spec.allowed or []))
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing[:10])}")
    if extra:
        parts.append(f"extra {', '.join(extra[:10])}")
    why = f"the answer names {len(named)} {spec.id_kind} id(s); " + ("; ".join(parts) if parts else "exactly the set")
    return verdict(criterion, NOT_MET if parts else MET, why, {"missing": missing[:20], "extra": extra[:20]})


def _claim_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:  # a reply that sprays values commits to none of its statements: no claim is read, either way
        return verdict(criterion, NOT_MET, unreadable, {"affirmed": [], "negated": 0})
    matches = pattern_finditer(spec.value, prose, ignore_case=not spec.case_sensitive)
    # Naming every option never earns a claim, nor escapes a forbidden one: a list of alternatives counts for
    # not_affirms (the reply does say it) and not for affirms (it commits to none of them).
    stated = (
        matches
        if spec.op == "not_affirms"
        else [m for m in matches if not answer_facts.in_word_list(prose, m.start(), m.end())]
    )
    affirmed = [m for m in stated if not answer_facts.negated(prose, m.start(), m.end())]
    negated = len(stated) - len(affirmed)
    claim = f"/{spec.value}/"
    if affirmed:
        why = f"the answer claims {claim}: {affirmed[0].group(0)!r}"
    elif negated:
        why = f"the answer only mentions {claim} negated ({negated} time(s)), which is not the claim"
    else:
        why = f"the answer does not claim {claim}"
    met = bool(affirmed) if spec.op == "affirms" else not affirmed
    evidence = {"affirmed": [m.group(0) for m in affirmed[:5]], "negated": negated}
    return verdict(criterion, MET if met else NOT_MET, why, evidence)


def _prose_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    problems = answer_facts.prose_problems(answer)
    why = "the answer is written for its reader" if not problems else "not a reply for a reader: " + "; ".join(problems)
    return verdict(criterion, NOT_MET if problems else MET, why, {"problems": problems})


_FACT_OPS = {
    "amount": _amount_verdict,
    "date": _date_verdict,
    "id_set": _id_set_verdict,
    "affirms": _claim_verdict,
    "not_affirms": _claim_verdict,
    "prose": _prose_verdict,
}


def _text_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    if spec.op == "number":
        wanted, tolerance = as_number(spec.value), Decimal(str(spec.tolerance))
        stated = [n for n in (as_number(m) for m in _NUMBER.findall(answer)) if n is not None]
        close = [n for n in stated if abs(n - wanted) <= tolerance]
        return verdict(
            criterion,
            MET if close else NOT_MET,
            f"the answer states {_join(stated) or 'no number'}; wanted {wanted} +/- {tolerance}",
            {"numbers": [str(n) for n in stated]},
        )
    if spec.op == "regex":
        match = pattern_search(spec.value, answer, ignore_case=not spec.case_sensitive)
        return verdict(
            criterion,
            MET if match else NOT_MET,
            f"the answer {'matches' if match else 'does not match'} /{spec.value}/",
            {"match": match.group(0) if match else None},
        )
    haystack, needle = (answer, spec.value) if spec.case_sensitive else (answer.casefold(), spec.value.casefold())
    found = needle in haystack
    met = found if spec.op == "contains" else not found
    return verdict(
        criterion,
        MET if met else NOT_MET,
        f"the answer {'contains' if found else 'does not contain'} {spec.value!r}",
        {"found": found},
    )


# The names the library check used before the public ones.


def _join(numbers: list[Decimal]) -> str:
    return ", ".join(str(n) for n in numbers[:10])
