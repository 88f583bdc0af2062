"""One task measured: what its reference needs (``TaskShape``), by replaying it on a snapshot.

How each figure is detected is said once, in ``tasks_app.library.services.library_stats``' docstring; this module
holds the measuring (the needed calls by ablation and provenance, the entity types joined, paging at the maximum
page size, writes, the judgements and date relations a required criterion grades, the ids handed over) and the
names it measures with (``TOOL_ENTITY``, ``TASK_JUDGEMENTS``, ``DATE_TAGS``...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from corecraft_site.canonical import sorted_json
from rubrics_app.answer_facts import date_mentions
from rubrics_app.judgement import rubric_of
from tasks_app.library.services.task_library import _models_by_prefix, entity_ids_named
from world_app.contract import CONVERSATION_TOOLS
from world_app.store_rules import RULES
from world_app.tools.registry import get_tool

BRANCH_SHARE_MAX = 0.6
MANY_CALLS = 8
JOIN_TYPES = 3

# The entity type each tool is about (world model names; line items are orders' rows, and so on).
TOOL_ENTITY = {
    "search_customers": "customer",
    "search_orders": "order",
    "search_products": "product",
    "search_tickets": "supportticket",
    "search_shipments": "shipment",
    "search_payments": "payment",
    "search_employees": "employee",
    "search_knowledge_base": "knowledgebasearticle",
    "search_builds": "build",
    "get_order_details": "order",
    "get_product": "product",
    "get_customer_ticket_history": "supportticket",
    "check_warranty_status": "warrantyclaim",
    "calculate_price": "",  # a computation over the ids it is given
    "validate_build_compatibility": "compatibilityrule",
    "create_refund": "refund",
    "update_order_status": "order",
    "create_resolution": "resolution",
    "create_escalation": "escalation",
    "create_warranty_claim": "warrantyclaim",
    "update_ticket_status": "supportticket",
    "create_build": "build",
    "update_build": "build",
    "ask_user": "",  # the conversation, not a world entity
}
_CHILD_OF = {
    "orderlineitem": "order", "ticketmessage": "supportticket", "buildcomponent": "build", "bundleitem": "bundle",
}  # fmt: skip

# Judgements the tools do not make: the rulebook's agent-held rules (added at run time) and these.
TASK_JUDGEMENTS = {
    "price-match-offer": "Whether a competitor's offer qualifies for a price match (new, in stock, authorized US "
    "retailer; open-box, clearance, marketplace, bundle and coupon prices excluded): the refund tool takes any "
    "difference it is given.",
    "duplicate-charge": "Which of two identical completed payments on one order is the extra one (the later): no "
    "tool flags a double charge, the agent compares the order's payments.",
    "record-over-claim": "When a customer's account of an order conflicts with the record (what was bought, when "
    "it arrived, what was refunded), the record decides what the customer is owed, and the reply says so.",
    "return-exception": "A return past the window is refused unless it is within the team lead's exception range, "
    "which the agent must spot and route (the refund tool accepts any date).",
    "refund-scope": "Which units are still owed a refund after earlier partial refunds, and for what reason: the "
    "refund tool caps money, it does not choose the lines.",
    "recall-scope": "Which buyers a product notice concerns (delivered in the affected period, still covered): "
    "the search tools list orders, they do not decide who is affected.",
    "lateness": "Whether a delivery was late against what was promised, counted in business days: no tool counts them.",
    "refund-approval": "A refund over $500.00 is not the agent's to give: it goes, with the evidence, to the team lead "
    "of whoever holds the ticket, who approves it (the refund tool would only leave it pending).",
    "warranty-exception": "A warranty claim made after expiry is refused unless it came within the team lead's "
    "exception range (30 days past expiry), which the agent must spot and route as a policy exception: the claim "
    "tool only records it as denied.",
    "compatibility-fix": "Which builds break a compatibility rule and which part replaces the one at fault (the "
    "cheapest active, in-stock part that clears the rule without a new flag): the validator names a violation, it "
    "neither finds the builds nor chooses the fix.",
}
DATE_TAGS = frozenset({
    "time-window", "dates", "before-after", "business-days", "return-window", "date-relation", "expired",
    "price-match", "warranty-expiry",
})  # fmt: skip
SUGGESTED_JUDGEMENT_TAGS = frozenset({"policy", "contradiction", "escalation", "approval-limit", "exemption"})
CUSTOMER_KNOWN_PREFIXES = frozenset({"ord", "tkt"})
_DATE_TEXT = re.compile(
    r"\b(?:dates?|days?|business days|window|deadline|expir\w*|until|before|after|late|on time|\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)
_OUTCOME_OPS = frozenset({"affirms", "not_affirms", "amount", "date", "id_set", "number", "contains", "regex"})


def judgements() -> dict[str, str]:
    """Every judgement key a task may declare (``judgement:<key>``), with what the agent decides."""
    agent_rules = {rule.id: rule.statement for rule in RULES if rule.holder == "agent"}
    return {**agent_rules, **TASK_JUDGEMENTS}


@dataclass(frozen=True)
class TaskShape:
    """What one task's reference needs, measured on a snapshot (see the module docstring)."""

    key: str
    source: str  # "starter" or "family"
    family: str
    branch: str
    task_type: str
    expected_difficulty: str
    reference_passes: bool
    calls: int
    needed_tools: tuple[str, ...]
    entity_types: tuple[str, ...]
    needs_paging: bool
    writes: bool
    judgements: tuple[str, ...]
    judgements_declared: tuple[str, ...]
    judgement_suggested: bool
    date_relation: bool
    date_declared: bool
    instruction_ids: tuple[str, ...]
    criteria: tuple[dict, ...] = field(default=(), repr=False)
    ablation_needed_calls: int = -1  # -1: the same as ``needed_calls`` (shapes built by hand)

    @property
    def needed_calls(self) -> int:
        return len(self.needed_tools)

    @property
    def multi_turn(self) -> bool:
        """The reference asks the user for a held-back fact (``ask_user``) and the rubric fails without it."""
        return any(tool in CONVERSATION_TOOLS for tool in self.needed_tools)

    @property
    def internal_ids(self) -> tuple[str, ...]:
        return tuple(i for i in self.instruction_ids if i.split("-", 1)[0] not in CUSTOMER_KNOWN_PREFIXES)

    @property
    def structural_difficulty(self) -> str:
        points = (self.needed_calls >= 4) + (self.needed_calls >= MANY_CALLS) + self.needs_paging
        points += (len(self.entity_types) >= JOIN_TYPES) + bool(self.judgements) + self.date_relation + self.writes
        return "easy" if points <= 1 else ("medium" if points <= 3 else "hard")


# --- measuring one task -----------------------------------------------------------------------------------------


def _id_type(entity_id: str) -> str:

    model = _models_by_prefix().get(entity_id.split("-", 1)[0])
    if model is None:
        return ""
    name = model._meta.model_name
    return _CHILD_OF.get(name, name)


def _call_types(call: dict) -> set[str]:

    types = {TOOL_ENTITY.get(call["tool"], "")} | {_id_type(i) for i in entity_ids_named(call.get("arguments") or {})}
    return {t for t in types if t}


def _tool_group(name: str) -> str:
    found = get_tool(name)
    return found.group if found is not None else ""


def _max_limit(name: str) -> int | None:
    found = get_tool(name)
    if found is None:
        return None
    limit = found.input_schema().get("properties", {}).get("limit", {})
    return int(limit["maximum"]) if "maximum" in limit else None


def _query(call: dict) -> tuple:
    rest = {k: v for k, v in (call.get("arguments") or {}).items() if k not in ("offset", "limit")}
    return call["tool"], sorted_json(rest)


def _first_max_pages(calls: list[dict]) -> list[list[dict]]:
    """For each paged query of ``calls``: the calls with its pages replaced by one first page at the tool's maximum."""
    groups: dict[tuple, list[int]] = {}
    for index, call in enumerate(calls):
        groups.setdefault(_query(call), []).append(index)
    copies = []
    for indexes in groups.values():
        if not any(int((calls[i].get("arguments") or {}).get("offset") or 0) > 0 for i in indexes):
            continue
        maximum = _max_limit(calls[indexes[0]]["tool"])
        if maximum is None:
            continue
        arguments = {k: v for k, v in (calls[indexes[0]].get("arguments") or {}).items() if k != "offset"}
        arguments["limit"] = maximum
        copy = [c for i, c in enumerate(calls) if i not in indexes[1:]]
        copy[indexes[0]] = {"tool": calls[indexes[0]]["tool"], "arguments": arguments}
        copies.append(copy)
    return copies


def _grades_outcome(criterion: dict) -> bool:
    """A required criterion that grades what was decided: the world's state, or a claim/amount/date/id the reply
    must state (not the reply's format, nor that the agent saw or called something)."""
    if not criterion.get("required"):
        return False
    spec = criterion.get("spec") or {}
    if criterion["kind"] == "state":
        return True
    return criterion["kind"] == "response" and spec.get("op") in _OUTCOME_OPS


def _grades_date(criterion: dict) -> bool:
    if not criterion.get("required") or criterion["kind"] not in ("response", "state"):
        return False
    spec = criterion.get("spec") or {}
    return spec.get("op") == "date" or bool(_DATE_TEXT.search(criterion.get("text") or ""))


def task_shape(*, replay, simulated_user: dict | None = None, **fields: Any) -> TaskShape:
    """Measure one task on ``replay``'s snapshot (a ``tasks_app.perturbations.SnapshotReplay``), its questions
    (``ask_user``) answered by the task's ``simulated_user``."""
    with replay.user_bound(simulated_user):
        return _task_shape(replay=replay, **fields)


def _task_shape(
    *,
    key: str,
    criteria: Sequence[dict],
    instruction: str,
    solution: dict,
    replay,
    tags: Iterable[str] = (),
    task_type: str = "",
    difficulty: str = "",
    source: str = "starter",
    family: str = "",
    branch: str = "",
) -> TaskShape:
    """Measure one task on ``replay``'s snapshot (a ``tasks_app.perturbations.SnapshotReplay``)."""

    criteria = [dict(c) for c in criteria]
    rows = rubric_of(criteria)
    required = {i for i, c in enumerate(criteria) if c.get("required")}
    calls = [{"tool": c["tool"], "arguments": c.get("arguments") or {}} for c in solution.get("calls") or []]
    answer = solution.get("final_answer") or ""
    (base_unmet,), _ = replay.unmet(rows, calls, [answer], instruction=instruction)

    def fails(some_calls: list[dict]) -> bool:
        (unmet,), _ = replay.unmet(rows, some_calls, [answer], instruction=instruction)
        return bool((unmet - base_unmet) & required)

    results = list(getattr(replay, "last_results", None) or [None] * len(calls))
    ablation = {i for i in range(len(calls)) if fails(calls[:i] + calls[i + 1 :])}
    graded = [c.get("spec") or {} for c in criteria if c.get("required") and c["kind"] == "response"]
    demanded = entity_ids_named(answer) & entity_ids_named(graded)
    indexes = provenance_closure(
        calls, results, ablation, given=entity_ids_named(instruction), demanded=demanded,
        facts=graded_facts(graded, answer=answer, instruction=instruction),
    )  # fmt: skip
    needed = [calls[i] for i in sorted(indexes)]
    types: set[str] = set()
    for call in needed:
        types |= _call_types(call)
    paging = any(fails(copy) for copy in _first_max_pages(calls))
    tags = [str(t) for t in tags]
    known = judgements()
    declared = tuple(sorted({t.split(":", 1)[1] for t in tags if t.startswith("judgement:")}))
    graded = any(_grades_outcome(c) for c in criteria)
    date_declared = bool(DATE_TAGS & set(tags))
    return TaskShape(
        key=key,
        source=source,
        family=family,
        branch=branch,
        task_type=task_type,
        expected_difficulty=difficulty,
        reference_passes=not (base_unmet & required),
        calls=len(calls),
        needed_tools=tuple(c["tool"] for c in needed),
        entity_types=tuple(sorted(types)),
        needs_paging=paging,
        writes=any(_tool_group(c["tool"]) == "write" for c in needed),
        judgements=tuple(k for k in declared if k in known) if graded else (),
        judgements_declared=declared,
        judgement_suggested=bool(SUGGESTED_JUDGEMENT_TAGS & set(tags)),
        date_relation=date_declared and any(_grades_date(c) for c in criteria),
        date_declared=date_declared,
        instruction_ids=tuple(sorted(entity_ids_named(instruction))),
        criteria=tuple(criteria),
        ablation_needed_calls=len(ablation),
    )


def provenance_closure(
    calls: Sequence[dict],
    results: Sequence[Any],
    needed: set[int],
    *,
    given: set[str],
    demanded: set[str] = frozenset(),
    facts: Sequence[str] = (),
) -> set[int]:
    """``needed`` (indexes into ``calls``) and every call it depends on for an id (see the module docstring).

    An id in a needed call's arguments (or in ``demanded``: ids the graded answer must state) that is not in
    ``given`` (the instruction's) comes from the first earlier call whose result names it (an error result names
    nothing); that call is needed too, and its own arguments are traced the same way. An id no earlier result
    names is left alone: the reference had it some other way (a create's own id, a guessed one). Each of
    ``facts`` (texts the graded answer states, lower case) comes from the first call whose result contains it.
    """
    named = [set() if _is_error(r) else entity_ids_named(r) for r in results]
    texts = ["" if _is_error(r) else sorted_json(r).lower() for r in results]
    for fact in facts:
        j = next((j for j, text in enumerate(texts) if fact in text), None)
        if j is not None and j not in needed:
            needed = {*needed, j}

    def source(entity_id: str, before: int) -> int | None:
        return next((j for j in range(before) if entity_id in named[j]), None)

    closed = set(needed)
    queue = sorted(closed)
    for entity_id in sorted(demanded - given):
        j = source(entity_id, len(calls))
        if j is not None and j not in closed:
            closed.add(j)
            queue.append(j)
    while queue:
        i = queue.pop()
        for entity_id in sorted(entity_ids_named(calls[i].get("arguments") or {}) - given):
            j = source(entity_id, i)
            if j is not None and j not in closed:
                closed.add(j)
                queue.append(j)
    return closed


_FACT_OPS = frozenset({"amount", "number", "date", "contains"})
_FACT_MIN_LENGTH = 4  # "2" or "50" is in every result; "12.99", "2025-09-14" and a product name are not


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def graded_facts(specs: Sequence[dict], *, answer: str, instruction: str) -> list[str]:
    """The literal values required response criteria grade (an amount, a number, a date, a text the reply must
    contain) that the reference's answer states and the instruction does not: the agent can only have them from a
    result. Amounts and dates as the tools write them (two decimals; ISO dates, which the answer may state in any
    common format). Patterns (``regex``, ``affirms``) are not literal."""
    out: list[str] = []
    said, asked = answer.lower(), instruction.lower()
    for spec in specs:
        if spec.get("op") not in _FACT_OPS or spec.get("value") in (None, ""):
            continue
        value = str(spec["value"]).strip()
        if spec["op"] == "amount":
            try:
                value = f"{float(value):.2f}"
            except ValueError:
                continue
            stated, given = value in said.replace(",", ""), value in asked
        elif spec["op"] == "date" and _ISO_DATE.fullmatch(value):
            year, month, day = (int(part) for part in value.split("-"))
            stated = any(m.value[1:] == (month, day) and m.value[0] in (None, year) for m in date_mentions(answer))
            given = any(m.value[1:] == (month, day) for m in date_mentions(instruction))
        else:
            value = value.lower()
            stated, given = value in said, value in asked
        if len(value) >= _FACT_MIN_LENGTH and stated and not given and value not in out:
            out.append(value)
    return out


def _is_error(result: Any) -> bool:
    return result is None or (isinstance(result, dict) and "error" in result)
