"""Deterministic judgement of ``state``, ``tool_call`` and ``response`` criteria over one episode.

State criteria read the episode's final world (``only_changes``: its diff), tool-call criteria the calls with
their results (``saw``: what the results showed), response criteria the final answer. Every pattern runs with
``rubrics_app.patterns``' time limit: a pattern that runs past it is an ``error`` verdict, never a hang.

A verdict is ``{key, kind, status: met|not_met|pending, met, rationale, evidence, weight, required}``; ``llm``
criteria stay ``pending`` until the LLM judge rules on them. ``reward`` folds verdicts into the
rollout's reward: the weighted fraction met, and pass = every required criterion met.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import Q

from corecraft_site.canonical import sorted_json
from rubrics_app import answer_facts
from rubrics_app.criteria import (
    COUNT_OPS,
    AllowedChange,
    ResponseSpec,
    StateSpec,
    ToolCallSpec,
    as_number,
    field_value,
    resolve_field,
    spec_read,
)
from rubrics_app.models import CriterionKind
from rubrics_app.patterns import PatternTimeout, pattern_finditer, pattern_search
from world_app.conversation import facts_disclosed
from world_app.episodes import episode_world, episode_world_diff
from world_app.models import Episode, EpisodeStep, world_models_by_name

MET, NOT_MET, PENDING = "met", "not_met", "pending"
# The LLM judge's status for a criterion it could not decide (invalid output, endpoint down): neither met nor not.
ERROR = "error"
EVIDENCE_ROWS = 5
_LOOKUPS = {"eq": "exact", "gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte", "in": "in", "contains": "contains",
            "icontains": "icontains"}  # fmt: skip
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+")


def _verdict(criterion, status: str, rationale: str, evidence: Any = None) -> dict:
    return {
        "key": str(criterion.key),
        "kind": criterion.kind,
        "content_hash": criterion.content_hash,
        "status": status,
        "met": None if status == PENDING else status == MET,
        "rationale": rationale,
        "evidence": evidence,
        "weight": criterion.weight,
        "required": criterion.required,
    }


def criteria_evaluate(
    *,
    criteria: Iterable,
    episode,
    final_answer: str,
    tool_calls: Sequence[dict] | None = None,
    diff: dict | None = None,
    simulated_user: dict | None = None,
) -> list[dict]:
    """A verdict per criterion (in the order given), from the episode's final world, the calls and the answer.

    ``criteria`` are ``Criterion`` rows (or anything with key, kind, spec, weight, required, content_hash).
    ``tool_calls`` ([{name, arguments, result, is_error}], in order) are the trajectory's calls with their
    results; None reads them from the episode's logged steps. With ``episode=None`` state criteria read the
    world the caller has open (``episode_world`` or a scratch replay). ``diff`` (as
    ``world_app.episodes.episode_diff`` gives it) is the episode's diff; None computes it when an
    ``only_changes`` or ``makes_changes`` criterion needs it. ``simulated_user`` (the task's spec) says which
    held-back facts the agent's questions drew out (``asked`` criteria).
    """
    criteria = list(criteria)
    if tool_calls is not None or episode is None:
        steps = calls_as_steps(list(tool_calls or []))
    else:
        steps = list(
            EpisodeStep.objects.filter(episode=episode)
            .order_by("seq")
            .values("seq", "name", "arguments", "result", "is_error")
        )
    if simulated_user is None and episode is not None:
        simulated_user = (
            Episode.objects.filter(pk=getattr(episode, "pk", episode)).values_list("simulated_user", flat=True).first()
        )
    verdicts: dict[int, dict] = {}
    state = [(i, c) for i, c in enumerate(criteria) if c.kind == CriterionKind.STATE]
    if state:
        # One pass over the episode's world for every state criterion.
        with contextlib.nullcontext() if episode is None else episode_world(episode):
            cached: list[dict] = [] if diff is None else [diff]

            def current_diff() -> dict:
                if not cached:
                    cached.append(episode_world_diff())
                return cached[0]

            for index, criterion in state:
                verdicts[index] = state_verdict(criterion, diff=current_diff)
    for index, criterion in enumerate(criteria):
        if criterion.kind == CriterionKind.TOOL_CALL:
            verdicts[index] = tool_call_verdict(criterion, steps, simulated_user=simulated_user)
        elif criterion.kind == CriterionKind.RESPONSE:
            verdicts[index] = response_verdict(criterion, final_answer or "")
        elif criterion.kind == CriterionKind.LLM:
            verdicts[index] = _verdict(criterion, PENDING, "judged by the LLM judge (not run yet)")
    return [verdicts[i] for i in range(len(criteria))]


def calls_as_steps(tool_calls: list[dict]) -> list[dict]:
    """Trajectory calls ({name or tool, arguments, result, is_error}) as the step dicts the verdicts read."""
    steps = []
    for index, call in enumerate(tool_calls):
        result = call.get("result")
        is_error = call.get("is_error")
        if is_error is None:
            is_error = isinstance(result, dict) and "error" in result
        steps.append({
            "seq": index + 1,
            "name": call.get("name") or call.get("tool") or "",
            "arguments": call.get("arguments") or {},
            "result": result,
            "is_error": bool(is_error),
        })  # fmt: skip
    return steps


def state_verdict(criterion, *, diff: Callable[[], dict] | None = None) -> dict:
    """The verdict of one ``state`` criterion in the world bound now; ``diff`` gives the episode's diff."""
    spec = spec_read(StateSpec, criterion.spec)
    if spec.op in ("only_changes", "makes_changes"):
        if diff is None:
            diff = episode_world_diff
        if spec.op == "makes_changes":
            return _makes_changes_verdict(criterion, spec, diff())
        return _only_changes_verdict(criterion, spec, diff())
    return _rows_verdict(criterion, spec)


def _only_changes_verdict(criterion, spec: StateSpec, diff: dict) -> dict:
    rules = [AllowedChange.model_validate(rule) for rule in spec.value]
    outside: list[str] = []
    created: dict[str, int] = {}
    for entry in diff.get("created", []):
        created[entry["model"]] = created.get(entry["model"], 0) + 1
    for model, count in created.items():
        allowed = sum(rule.created for rule in rules if rule.entity_type == model)
        if count > allowed:
            outside.append(f"{count} {model} row(s) created (allowed {allowed})")
    for entry in diff.get("updated", []):
        fields = set(entry.get("fields", {}))
        fits = any(
            rule.entity_type == entry["model"]
            and rule.updates
            and (rule.id is None or rule.id == entry["pk"])
            and (rule.fields is None or fields <= set(rule.fields))
            for rule in rules
        )
        if not fits:
            outside.append(f"{entry['model']} {entry['pk']} updated ({', '.join(sorted(fields))})")
    for entry in diff.get("deleted", []):
        if not any(rule.entity_type == entry["model"] and rule.deleted for rule in rules):
            outside.append(f"{entry['model']} {entry['pk']} deleted")
    changed = sum(len(diff.get(k, [])) for k in ("created", "updated", "deleted"))
    if outside:
        why = f"{len(outside)} change(s) outside what the task allows: {'; '.join(outside[:EVIDENCE_ROWS])}"
    else:
        why = f"all {changed} change(s) are ones the task allows" if changed else "the episode changed nothing"
    return _verdict(criterion, NOT_MET if outside else MET, why, {"outside": outside[:20], "changes": changed})


def _makes_changes_verdict(criterion, spec: StateSpec, diff: dict) -> dict:
    rules = [AllowedChange.model_validate(rule) for rule in spec.value]
    created = [e for e in diff.get("created", [])]
    used: set[int] = set()
    missing = []
    for rule in rules:
        if rule.created:
            fits = [
                i for i, e in enumerate(created)
                if i not in used and e["model"] == rule.entity_type and _holds_values(rule.values, e.get("row", {}))
            ]  # fmt: skip
            used.update(fits[: rule.created])
            if len(fits) < rule.created:
                wanted = f" with {_describe_values(rule.values)}" if rule.values else ""
                missing.append(f"{rule.created} new {rule.entity_type}{wanted} (made {len(fits)})")
        if rule.deleted and not any(
            e["model"] == rule.entity_type and rule.id in (None, e["pk"]) for e in diff.get("deleted", [])
        ):
            missing.append(f"{rule.entity_type} {rule.id or ''} deleted".replace("  ", " "))
        if rule.updates and not rule.deleted and not rule.created:
            done = any(
                e["model"] == rule.entity_type
                and rule.id in (None, e["pk"])
                and (rule.fields is None or set(e.get("fields", {})) & set(rule.fields))
                and _holds_values(rule.values, {k: v.get("after") for k, v in e.get("fields", {}).items()})
                for e in diff.get("updated", [])
            )
            if not done:
                what = f" ({', '.join(rule.fields)})" if rule.fields else ""
                if rule.values:
                    what = f" to {_describe_values(rule.values)}"
                missing.append(f"{rule.entity_type} {rule.id or '(any)'} updated{what}")
    why = (
        f"{len(missing)} change(s) the task needs did not happen: {'; '.join(missing[:EVIDENCE_ROWS])}"
        if missing
        else f"all {len(rules)} change(s) the task needs happened"
    )
    return _verdict(criterion, NOT_MET if missing else MET, why, {"missing": missing[:20]})


def _holds_values(values: dict | None, row: dict) -> bool:

    def encoded(value: Any) -> str:
        return sorted_json(value)

    return not values or all(name in row and encoded(row[name]) == encoded(v) for name, v in values.items())


def _describe_values(values: dict | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (values or {}).items())


def _rows_verdict(criterion, spec: StateSpec) -> dict:
    model = world_models_by_name()[spec.entity_type]
    rows = model.objects.all()
    for item in spec.filters:
        rows = rows.filter(_condition(item.field, item.op, _operand(model, item.field, item.op, item.value)))
    rows = rows.order_by("pk")
    described = f"{spec.entity_type} rows matching {_describe_filters(spec)}"
    if spec.op in COUNT_OPS:
        count = rows.count()
        met = {"count_eq": count == spec.value, "count_gte": count >= spec.value, "count_lte": count <= spec.value}
        wanted = {"count_eq": "exactly", "count_gte": "at least", "count_lte": "at most"}[spec.op]
        return _verdict(
            criterion,
            MET if met[spec.op] else NOT_MET,
            f"{count} {described}; wanted {wanted} {spec.value}",
            {"count": count, "ids": list(rows.values_list("pk", flat=True)[:EVIDENCE_ROWS])},
        )
    values = list(rows.values_list("pk", spec.field))
    if not values:
        return _verdict(criterion, NOT_MET, f"no {described}", {"rows": []})
    field = resolve_field(model, spec.field)
    results = [(pk, value, _holds(field, value, spec.op, spec.value)) for pk, value in values]
    held = sum(1 for *_, ok in results if ok)
    met = held == len(results) if spec.quantifier == "all" else held > 0
    evidence = {
        "rows": [{"id": pk, spec.field: _jsonable(value), "holds": ok} for pk, value, ok in results[:EVIDENCE_ROWS]],
        "matched": len(results),
        "held": held,
    }
    target = "" if spec.op in ("is_null", "not_null") else f" {spec.value!r}"
    return _verdict(
        criterion,
        MET if met else NOT_MET,
        f"{held} of {len(results)} {described} have {spec.field} {spec.op}{target} (needed {spec.quantifier})",
        evidence,
    )


def _operand(model, path: str, op: str, value: Any) -> Any:
    """A filter's value as the field's type (aware datetimes, Decimals); texts for contains stay texts."""
    if op in ("is_null", "not_null", "contains", "icontains"):
        return value
    field = resolve_field(model, path)
    if op == "in":
        return [field_value(field, item) for item in value]
    return field_value(field, value)


def _condition(path: str, op: str, value: Any) -> Q:
    if op == "is_null":
        return Q(**{f"{path}__isnull": True})
    if op == "not_null":
        return Q(**{f"{path}__isnull": False})
    if op == "ne":
        return ~Q(**{f"{path}__exact": value})
    return Q(**{f"{path}__{_LOOKUPS[op]}": value})


def _describe_filters(spec: StateSpec) -> str:
    if not spec.filters:
        return "(no filter)"
    return " and ".join(f"{f.field} {f.op} {f.value!r}" for f in spec.filters)


def _holds(field, actual: Any, op: str, expected: Any) -> bool:
    if op == "is_null":
        return actual is None
    if op == "not_null":
        return actual is not None
    if op in ("contains", "icontains"):
        if actual is None:
            return False
        text = str(actual)
        return expected.lower() in text.lower() if op == "icontains" else expected in text
    if op in ("in", "not_in"):
        inside = actual in [field_value(field, item) for item in expected]
        return inside if op == "in" else not inside
    wanted = field_value(field, expected)
    if op == "eq":
        return actual == wanted
    if op == "ne":
        return actual != wanted
    if actual is None:
        return False
    return {"gt": actual > wanted, "gte": actual >= wanted, "lt": actual < wanted, "lte": actual <= wanted}[op]


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str | list | dict):
        return value
    return str(value)


def tool_call_verdict(criterion, steps: list[dict], *, simulated_user: dict | None = None) -> dict:
    """The verdict of one ``tool_call`` criterion over the steps ({seq, name, arguments, result, is_error})."""
    spec = spec_read(ToolCallSpec, criterion.spec)
    try:
        if spec.expect == "asked":
            return _asked_verdict(criterion, spec, steps, simulated_user or {})
        if spec.expect == "saw":
            return _saw_verdict(criterion, spec, steps)
        return _called_verdict(criterion, spec, steps)
    except PatternTimeout as exc:
        return _verdict(criterion, ERROR, str(exc))


def _asked_verdict(criterion, spec: ToolCallSpec, steps: list[dict], simulated_user: dict) -> dict:
    """Met when a successful question to the user drew out ``spec.fact`` (the user's script says which facts a
    question asks for, whatever its wording), before any successful call of the ``before`` tools."""
    tool = spec.tool or "ask_user"
    if not simulated_user:
        return _verdict(criterion, NOT_MET, "the task has no simulated user: no question could draw out a fact")
    asks = [s for s in steps if s["name"] == tool and not s["is_error"]]
    drew = [
        s["seq"] for s in asks
        if spec.fact in facts_disclosed(simulated_user, str((s["arguments"] or {}).get("message", "")))
    ]  # fmt: skip
    before = set(spec.before or [])
    acted = [s["seq"] for s in steps if s["name"] in before and not s["is_error"]]
    evidence = {"asks": [s["seq"] for s in asks], "drew_fact": drew, "acted": acted[:10]}
    if not drew:
        why = f"none of the {len(asks)} question(s) to the user asked for {spec.fact!r}"
        return _verdict(criterion, NOT_MET, why, evidence)
    if acted and acted[0] < drew[0]:
        why = (f"{spec.fact!r} was asked for at call {drew[0]}, after call {acted[0]} had already run "
               f"{', '.join(sorted(before))}: the agent acted on a guess")  # fmt: skip
        return _verdict(criterion, NOT_MET, why, evidence)
    when = f", before any of {', '.join(sorted(before))}" if before else ""
    return _verdict(criterion, MET, f"the agent asked for {spec.fact!r} at call {drew[0]}{when}", evidence)


def _saw_verdict(criterion, spec: ToolCallSpec, steps: list[dict]) -> dict:
    relevant = [
        s
        for s in steps
        if not s["is_error"]
        and (not spec.tool or s["name"] == spec.tool)
        and _arguments_match(spec, s["arguments"] or {})
    ]
    seen: set[str] = set()
    for step in relevant:
        seen |= _strings_in(step.get("result"))
    wanted = [i.strip() for i in spec.ids]
    longer = "\n".join(text for text in seen if len(text) > 40)  # ids inside message texts and summaries
    missing = [i for i in wanted if i not in seen and not re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", longer)]
    where = f"results of {spec.tool}" if spec.tool else "tool results"
    if missing:
        why = f"{len(missing)} of {len(wanted)} ids never appeared in the {where}: {', '.join(missing[:10])}"
    else:
        why = f"all {len(wanted)} ids appeared in the {where} ({len(relevant)} successful call(s))"
    return _verdict(
        criterion,
        NOT_MET if missing else MET,
        why,
        {"missing": missing[:20], "calls": [s["seq"] for s in relevant]},
    )


def _strings_in(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            found |= _strings_in(item)
    elif isinstance(value, list):
        for item in value:
            found |= _strings_in(item)
    return found


def _called_verdict(criterion, spec: ToolCallSpec, steps: list[dict]) -> dict:
    named = [s for s in steps if s["name"] == spec.tool]
    succeeded = [s for s in named if not s["is_error"]]
    matching = [s for s in succeeded if _arguments_match(spec, s["arguments"] or {})]
    count = len(matching)
    evidence = {
        "matching_steps": [s["seq"] for s in matching],
        "calls_of_tool": len(named),
        "errors": len(named) - len(succeeded),
    }
    matchers = f" with {_describe_matchers(spec)}" if spec.arguments else ""
    if spec.expect == "not_called":
        met = count == 0
        why = f"{spec.tool}{matchers} was called {count} time(s) successfully; it must not be"
    else:
        met = count >= spec.min_count and (spec.max_count is None or count <= spec.max_count)
        limit = f"{spec.min_count}-{spec.max_count}" if spec.max_count else f"at least {spec.min_count}"
        why = f"{spec.tool}{matchers} was called {count} time(s) successfully; wanted {limit}"
    return _verdict(criterion, MET if met else NOT_MET, why, evidence)


def _describe_matchers(spec: ToolCallSpec) -> str:
    return ", ".join(
        f"{name} present" if m.op == "any" else f"{name} {m.op} {m.value!r}" for name, m in spec.arguments.items()
    )


def _arguments_match(spec: ToolCallSpec, arguments: dict) -> bool:
    return all(_argument_matches(m.op, m.value, name, arguments) for name, m in spec.arguments.items())


def _argument_matches(op: str, expected: Any, name: str, arguments: dict) -> bool:
    if name not in arguments:
        return False
    actual = arguments[name]
    if op == "any":
        return True
    if op == "eq":
        left, right = as_number(actual), as_number(expected)
        if left is not None and right is not None:
            return left == right  # "12.50" and 12.5 are the same amount
        if isinstance(actual, str) and isinstance(expected, str):
            return actual.strip().casefold() == expected.strip().casefold()
        return actual == expected
    if op == "contains":
        if isinstance(actual, list):
            return expected in actual
        return str(expected).casefold() in str(actual).casefold()
    if op == "regex":
        return pattern_search(expected, str(actual), ignore_case=False) is not None
    number = as_number(actual)
    if number is None:
        return False
    return number >= as_number(expected) if op == "gte" else number <= as_number(expected)


def response_verdict(criterion, answer: str) -> dict:
    """The verdict of one ``response`` criterion on the final answer."""
    spec = spec_read(ResponseSpec, criterion.spec)
    try:
        if spec.op in _FACT_OPS:
            return _FACT_OPS[spec.op](criterion, spec, answer)
        return _text_verdict(criterion, spec, answer)
    except PatternTimeout as exc:
        return _verdict(criterion, ERROR, str(exc))


def _subject_spans(spec: ResponseSpec, prose: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern_finditer(spec.subject, prose, ignore_case=not spec.case_sensitive)]


def _amount_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    wanted, tolerance = as_number(spec.value), Decimal(str(spec.tolerance))
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return _verdict(criterion, NOT_MET, unreadable, {"stated": []})
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
    return _verdict(criterion, MET if close else NOT_MET, why, {"stated": [str(v) for v in values]})


def _date_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    wanted = date.fromisoformat(spec.value)
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return _verdict(criterion, NOT_MET, unreadable, {"stated": []})
    found = answer_facts.date_mentions(prose)
    if spec.subject:
        found = answer_facts.bound(prose, _subject_spans(spec, prose), found)
    met = any(answer_facts.same_date(m, wanted) for m in found)
    shown = [prose[m.start : m.end] for m in found][:10]
    target = f" for /{spec.subject}/" if spec.subject else ""
    why = f"the answer states {', '.join(shown) or 'no date'}{target}; wanted {wanted.isoformat()}"
    return _verdict(criterion, MET if met else NOT_MET, why, {"stated": shown})


def _id_set_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:
        return _verdict(criterion, NOT_MET, unreadable, {"named": []})
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
    return _verdict(criterion, NOT_MET if parts else MET, why, {"missing": missing[:20], "extra": extra[:20]})


def _claim_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    prose, unreadable = answer_facts.readable(answer)
    if unreadable:  # a reply that sprays values commits to none of its statements: no claim is read, either way
        return _verdict(criterion, NOT_MET, unreadable, {"affirmed": [], "negated": 0})
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
    return _verdict(criterion, MET if met else NOT_MET, why, evidence)


def _prose_verdict(criterion, spec: ResponseSpec, answer: str) -> dict:
    problems = answer_facts.prose_problems(answer)
    why = "the answer is written for its reader" if not problems else "not a reply for a reader: " + "; ".join(problems)
    return _verdict(criterion, NOT_MET if problems else MET, why, {"problems": problems})


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
        return _verdict(
            criterion,
            MET if close else NOT_MET,
            f"the answer states {_join(stated) or 'no number'}; wanted {wanted} +/- {tolerance}",
            {"numbers": [str(n) for n in stated]},
        )
    if spec.op == "regex":
        match = pattern_search(spec.value, answer, ignore_case=not spec.case_sensitive)
        return _verdict(
            criterion,
            MET if match else NOT_MET,
            f"the answer {'matches' if match else 'does not match'} /{spec.value}/",
            {"match": match.group(0) if match else None},
        )
    haystack, needle = (answer, spec.value) if spec.case_sensitive else (answer.casefold(), spec.value.casefold())
    found = needle in haystack
    met = found if spec.op == "contains" else not found
    return _verdict(
        criterion,
        MET if met else NOT_MET,
        f"the answer {'contains' if found else 'does not contain'} {spec.value!r}",
        {"found": found},
    )


# The names the library check used before the public ones.
_response_verdict = response_verdict
_state_verdict = state_verdict
_tool_call_verdict = tool_call_verdict


def _join(numbers: list[Decimal]) -> str:
    return ", ".join(str(n) for n in numbers[:10])


def reward(verdicts: list[dict]) -> dict:
    """The rollout's reward from its verdicts.

    ``final`` is False while any criterion is pending or a judge error: ``reward`` is then None and
    ``partial_reward`` is the weighted fraction over the decided criteria. An ``error`` verdict is neither met
    nor unmet (it is counted in ``errors``). ``passed`` is known early when a required criterion failed.
    """
    judged = [v for v in verdicts if v["status"] in (MET, NOT_MET)]
    pending = sum(1 for v in verdicts if v["status"] == PENDING)
    errors = sum(1 for v in verdicts if v["status"] == ERROR)
    total = sum(v["weight"] for v in verdicts)
    judged_weight = sum(v["weight"] for v in judged)
    earned = sum(v["weight"] for v in judged if v["status"] == MET)
    required_failed = any(v["required"] and v["status"] == NOT_MET for v in verdicts)
    required_undecided = any(v["required"] and v["status"] in (PENDING, ERROR) for v in verdicts)
    if required_failed:
        passed = False
    elif required_undecided:
        passed = None
    else:
        passed = True
    final = pending == 0 and errors == 0
    return {
        "final": final,
        "reward": (earned / total if total else 0.0) if final else None,
        "passed": passed,
        "partial_reward": earned / judged_weight if judged_weight else None,
        "met": sum(1 for v in judged if v["status"] == MET),
        "not_met": sum(1 for v in judged if v["status"] == NOT_MET),
        "pending": pending,
        "errors": errors,
    }
