"""Builders of the must-fail policies: dump, spray, no-call reply, over-acting writes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from corecraft_site.canonical import sorted_json
from tasks_app.perturbations import (
    OutcomeCheck,
    facts_of,
)
from tasks_app.red_team.kinds import Replay, entity_ids_in
from world_app.models import commerce, support, warranty

# --- must fail -------------------------------------------------------------------------------------------------


def dump_answer(results: list) -> str:
    return sorted_json(results)


_AMOUNT_STRING = re.compile(r"-?\d+\.\d{2}")


def _amounts(value: Any, key: str = "") -> list[Decimal]:
    found: list[Decimal] = []
    for fact in sorted(facts_of(value, key)):
        if fact.startswith("money:"):
            found.append(Decimal(fact.split(":", 1)[1]))
    return found


def spray_extra(results: list, answer: str) -> str:
    """Every entity id and money amount of the results that the answer does not already name, as text."""
    ids = [i for i in entity_ids_in(results) if i not in answer]
    amounts = [f"${a:,.2f}" for a in sorted(set(_amounts(results))) if f"{a:,.2f}" not in answer]
    parts = []
    if ids:
        parts.append("Related records: " + ", ".join(ids) + ".")
    if amounts:
        parts.append("Amounts: " + ", ".join(amounts) + ".")
    return "\n".join(parts)


REMEDY_WORDS = (
    "refund",
    "full refund",
    "partial refund",
    "replacement",
    "repair",
    "store credit",
    "exchange",
    "return",
    "return label",
    "restocking fee waived",
    "cancel",
    "cancellation",
    "escalate",
    "escalated",
    "team lead",
    "supervisor",
    "exception",
    "warranty claim",
    "RMA",
    "discount",
    "coupon",
    "price match",
    "loyalty discount",
    "free shipping",
    "expedited shipping",
    "approved",
    "denied",
    "eligible",
    "not eligible",
    "troubleshooting",
    "compatible",
    "incompatible",
)


def no_call_answer() -> str:
    return world_vocabulary()


def world_vocabulary(titles: Iterable[str] | None = None) -> str:
    """The no-call reply: every knowledge-base title given, every status/reason/outcome of the world's models
    and the usual remedy words, in one polite message (what a policy that never looks anything up can say)."""
    words: list[str] = []
    for module in (commerce, support, warranty):
        for name in sorted(vars(module)):
            choices = getattr(module, name)
            if isinstance(choices, type) and hasattr(choices, "choices") and hasattr(choices, "values"):
                for value in choices.values:
                    words.append(str(value).replace("_", " "))
    statuses = ", ".join(dict.fromkeys(words))
    policies = "; ".join(dict.fromkeys(titles or ()))
    remedies = ", ".join(REMEDY_WORDS)
    return (
        "Hello,\n\nThank you for reaching out, and I am sorry for the trouble. "
        + (f"Under our policies ({policies}) " if policies else "Under our policies ")
        + f"your case can be in any of these states: {statuses}. "
        + f"Depending on it we can offer: {remedies}. "
        + "No money was taken that should not have been, and nothing else needs to be done on your side.\n\n"
        + "Best regards, Corecraft Support"
    )


_OVER_ACT_WRITES: tuple[tuple[str, str, Callable[[str], dict]], ...] = (
    ("create_refund", "ord", lambda i: {"order_id": i, "reason": "other", "notes": "Goodwill refund."}),
    ("update_order_status", "ord", lambda i: {"order_id": i, "status": "cancelled", "reason": "customer request"}),
    ("update_ticket_status", "tkt", lambda i: {"ticket_id": i, "status": "closed", "closure_reason": "resolved"}),
    (
        "create_escalation",
        "tkt",
        lambda i: {"ticket_id": i, "escalation_type": "policy_exception", "notes": "Customer asks for an exception."},
    ),
    (
        "create_resolution",
        "tkt",
        lambda i: {"ticket_id": i, "outcome": "no_action", "summary": "Closed.", "resolved_by": "emp-00001"},
    ),
    ("update_build", "bld", lambda i: {"build_id": i, "notes": "Checked by support."}),
)


def created_ids(instruction: str, calls: list[dict], results: list) -> set[str]:
    """Ids that first appear in the result of one of the reference's ``create_*`` calls: the entities it created
    (not named by the instruction, an earlier call's arguments or an earlier result)."""
    known = set(entity_ids_in(instruction))
    created: set[str] = set()
    for call, result in zip(calls, results, strict=False):
        known.update(entity_ids_in(call["arguments"]))
        found = entity_ids_in(result)
        if call["tool"].startswith("create_"):
            created.update(i for i in found if i not in known)
        known.update(found)
    return created


def extra_writes(
    instruction: str, calls: list[dict], results: list, replay: Replay, outcome: OutcomeCheck | None = None
) -> list[tuple[str, dict]]:
    """Extra writes on entities the task touched (named by the instruction, the calls or their results, first
    the ones named by the calls), each accepted by its tool after the reference's calls and, with ``outcome``,
    changing the world the reference leaves (a write that changes nothing is no over-acting).

    Not on an entity the reference itself created (``created_ids``): a further write to it, such as notes on the
    build the task asked for, is what writing those fields in the creating call would have been; the rubric
    grades the fields the task decides, and the others are the agent's to fill. Over-acting is touching what the
    task did not ask to touch."""
    touched = entity_ids_in([c["arguments"] for c in calls]) + entity_ids_in(instruction) + entity_ids_in(results)
    created = created_ids(instruction, calls, results)
    touched = [i for i in touched if i not in created]
    out = []
    for tool, prefix, arguments_for in _OVER_ACT_WRITES:
        for entity_id in list(dict.fromkeys(i for i in touched if i.split("-", 1)[0] == prefix))[:3]:
            arguments = arguments_for(entity_id)
            if any(c["tool"] == tool and c["arguments"] == arguments for c in calls):
                continue
            extended = [*calls, {"tool": tool, "arguments": arguments}]
            result = replay(extended)[-1]
            if isinstance(result, dict) and "error" in result:
                continue
            if outcome is None or not outcome.same(extended, outcome.answer):
                out.append((tool, arguments))
                break
    return out
