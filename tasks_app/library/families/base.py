"""What a task family is: a selector over the world, a few phrasings, and a builder of grounded instances.

A family reads the world of a snapshot (the ORM inside a scratch episode: the snapshot's rows and its clock,
never the live world, which may have moved on) and, for each entity it selects, builds one task: the
instruction (one of several phrasings filled with the entity's real facts), the rubric and the reference
solution. Values only a tool computes (a refund with its restocking fee, a price quote, a compatibility
verdict, the id a write will create) come from running the reference calls in a savepoint of that world that
is rolled back, so the reference solution is what the tools really answer and nothing is ever written.

Everything is deterministic: candidates are visited in the order of a hash of their ids (a spread over the
world rather than the oldest rows first), phrasings are chosen by a hash of the instance's key.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from corecraft_site.canonical import sorted_json
from tasks_app.library.rubric_hardening import criteria_harden, reference_trace

BRANCH_SHARE_MAX = 0.6  # no branch above this share of a family's instances

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


@dataclass(frozen=True)
class FamilyInstance:
    """One grounded task of a family; ``entity_ids`` name the world rows it is about (they make its key)."""

    family: str
    entity_ids: tuple[str, ...]
    title: str
    task_type: str
    difficulty: str
    instruction: str
    criteria: list[dict]
    reference_solution: dict
    tags: list[str] = field(default_factory=list)
    reviewer_notes: str = ""
    branch: str = ""  # the outcome a constant answer would bet on ("in warranty"): families balance on it

    @property
    def source_key(self) -> str:
        return f"family:{self.family}:{'+'.join(self.entity_ids)}"

    def as_fixture(self) -> dict:
        """The instance in the fixture-file format (``tasks_app/fixtures/starter_tasks``)."""
        return {
            "key": self.source_key.replace(":", "-").replace("+", "-"),
            "title": self.title,
            "task_type": self.task_type,
            "difficulty": self.difficulty,
            "family": self.family,
            "tags": list(self.tags),
            "instruction": self.instruction,
            "reviewer_notes": self.reviewer_notes,
            "criteria": self.criteria,
            "reference_solution": self.reference_solution,
        }


class Simulator:
    """Runs tool calls in the scratch world and rolls every write back (one savepoint per run)."""

    def __init__(self) -> None:
        self.traces: dict[str, tuple[list, dict]] = {}

    def run(self, calls: Sequence[dict]) -> list[dict]:

        results, diff = reference_trace(list(calls))
        if len(self.traces) >= 20_000:
            self.traces.clear()
        self.traces[_calls_key(calls)] = (results, diff)  # the reference's, when the build ends with its calls
        return results

    def trace(self, calls: Sequence[dict]) -> tuple[list, dict]:
        """The results and the diff of ``calls``: an earlier run's when it was these calls, else a new run."""

        return self.traces.get(_calls_key(calls)) or reference_trace(list(calls))


def _calls_key(calls: Sequence[dict]) -> str:

    return sorted_json([[c["tool"], c.get("arguments") or {}] for c in calls])


class Family:
    """Subclasses set the class attributes and implement ``candidates`` and ``build``."""

    name: str = ""
    title: str = ""
    description: str = ""
    task_type: str = ""

    def candidates(self) -> Iterable[Any]:
        """World rows (queried inside the snapshot's world) this family can make a task of."""
        raise NotImplementedError

    def entity_ids(self, candidate: Any) -> tuple[str, ...]:
        return (candidate.pk,)

    def build(self, candidate: Any, sim: Simulator) -> FamilyInstance | None:
        """The task about ``candidate``, or None when the world gives no clean task for it."""
        raise NotImplementedError

    def instance(self, *, calls: list[dict], answer: str, **fields: Any) -> FamilyInstance:
        """An instance of this family (its name and task type) whose reference makes ``calls`` and answers
        ``answer``; ``fields`` are the rest of ``FamilyInstance``'s (entity ids, title, branch, criteria...)."""
        return FamilyInstance(
            family=self.name,
            task_type=self.task_type,
            reference_solution={"calls": calls, "final_answer": answer},
            **fields,
        )

    def distinct_key(self, candidate: Any) -> Any:
        """Candidates sharing this key would make look-alike tasks (one customer's two orders of one product):
        only the first, in hash order, is used. Default: every candidate is distinct."""
        return self.entity_ids(candidate)

    def branch_of(self, candidate: Any) -> str | None:
        """The branch ``build`` will give ``candidate``, when it is cheap to tell beforehand (None: unknown). Lets
        the balancing skip building instances of a large branch that it would drop anyway."""
        return None

    def instances(self, *, limit: int | None = None) -> Iterator[FamilyInstance]:
        """Up to ``limit`` instances (default: all), branches balanced (``branches_balanced``), hardened."""
        sim = Simulator()
        for instance in branches_balanced(self._built(sim, limit=limit), limit=limit):
            yield instance_hardened(instance, sim)

    def _built(self, sim: Simulator, *, limit: int | None = None) -> Iterator[FamilyInstance]:
        """The built instances, candidates in hash order (one per ``distinct_key``). When every candidate's branch is
        known beforehand, candidates ``branches_balanced`` would drop are not built: with a limit, those of a branch
        already at its cap; without, those of the largest branch past what the other branches' instances allow."""
        ordered = sorted(self.candidates(), key=lambda c: stable_hash(self.name, *self.entity_ids(c)))
        seen, distinct = set(), []
        for candidate in ordered:
            key = self.distinct_key(candidate)
            if key not in seen:
                seen.add(key)
                distinct.append(candidate)
        branches = [self.branch_of(c) for c in distinct]
        if any(b is None for b in branches):
            for candidate in distinct:
                instance = self.build(candidate, sim)
                if instance is not None:
                    yield instance
            return
        if limit is not None:
            cap, made = branch_cap(limit), Counter()
            for candidate, branch in zip(distinct, branches, strict=True):
                if made[branch] >= cap:
                    continue
                instance = self.build(candidate, sim)
                if instance is not None:
                    made[instance.branch] += 1
                    yield instance
            return
        sizes = Counter(branches)
        largest = max(sizes, key=lambda b: (sizes[b], b), default=None)
        rest = 0
        for candidate, branch in zip(distinct, branches, strict=True):
            if branch != largest:
                instance = self.build(candidate, sim)
                if instance is not None:
                    rest += instance.branch != largest
                    yield instance
        allowed, made = max(1, math.floor(BRANCH_SHARE_MAX / (1 - BRANCH_SHARE_MAX) * rest + 1e-9)), 0
        for candidate, branch in zip(distinct, branches, strict=True):
            if branch == largest and made < allowed:
                instance = self.build(candidate, sim)
                if instance is not None:
                    made += instance.branch == largest
                    yield instance


def branch_cap(limit: int) -> int:
    """The most instances one branch may have among ``limit`` (``BRANCH_SHARE_MAX`` of them, at least one)."""
    return max(1, math.floor(BRANCH_SHARE_MAX * limit + 1e-9))


def branches_balanced(built: Iterable[FamilyInstance], *, limit: int | None = None) -> list[FamilyInstance]:
    """The instances to keep so that no branch holds more than ``BRANCH_SHARE_MAX`` of them (a constant answer,
    "in warranty" for every claim, must not pass most of a family), in an order whose every prefix keeps the
    shares (the first N a loader takes are balanced too).

    With ``limit``: the first instances in hash order, each branch capped at ``branch_cap(limit)``; building stops
    once ``limit`` are kept. Then (with a limit or without) the largest branch keeps only as many as hold it at the
    bound, the first in hash order; every instance of the other branches stays. Instances without a branch are not
    balanced. A family whose instances all fall in one branch cannot be balanced: it keeps one, and
    ``manage.py task_stats`` shows it.
    """
    by_branch: dict[str, list[FamilyInstance]] = {}
    cap, kept = (branch_cap(limit), 0) if limit is not None else (None, 0)
    for instance in built:
        bucket = by_branch.setdefault(instance.branch, [])
        if cap is not None and instance.branch and len(bucket) >= cap:
            continue
        bucket.append(instance)
        kept += 1
        if limit is not None and kept >= limit:
            break
    largest = max(by_branch, key=lambda b: len(by_branch[b]), default="")
    if largest:  # capping the largest at the bound leaves every other branch below it
        rest = sum(len(v) for b, v in by_branch.items() if b != largest)
        allowed = max(1, math.floor(BRANCH_SHARE_MAX / (1 - BRANCH_SHARE_MAX) * rest + 1e-9))
        by_branch[largest] = by_branch[largest][:allowed]
    # Interleave: each instance ranked by its position within its branch over the branch's size.
    ranked = [
        ((index + 0.5) / len(bucket), order, instance)
        for order, bucket in enumerate(by_branch.values())
        for index, instance in enumerate(bucket)
    ]
    return [instance for _, _, instance in sorted(ranked, key=lambda r: (r[0], r[1]))]


def instance_hardened(instance: FamilyInstance, sim: Simulator | None = None) -> FamilyInstance:
    """The instance with its rubric on the primitives that measure what they say
    (``tasks_app.library.rubric_hardening``): facts bound to subjects, id sets, "no other changes" and the task's
    changes from the reference's diff, the
    reply format, what the agent saw. Runs the reference once more in a savepoint that is rolled back."""
    import dataclasses

    calls = [{"tool": c["tool"], "arguments": c.get("arguments") or {}} for c in instance.reference_solution["calls"]]
    results, diff = (sim or Simulator()).trace(calls)
    criteria = criteria_harden(
        criteria=instance.criteria,
        instruction=instance.instruction,
        solution=instance.reference_solution,
        results=results,
        diff=diff,
    )
    return dataclasses.replace(instance, criteria=criteria)


# --- deterministic choices and wording ------------------------------------------------------------------------


def stable_hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")


def pick(options: Sequence, *key: str):
    """One of ``options``, always the same for the same key."""
    return options[stable_hash(*key) % len(options)]


def long_date(value: date) -> str:
    return f"{MONTHS[value.month - 1]} {value.day}, {value.year}"


def date_pattern(value: date) -> str:
    """A regex for a date written as 2025-08-14, Aug 14, 2025, August 14th 2025 or 14 August 2025."""
    full = MONTHS[value.month - 1]
    month = f"(?:{full}|{full[:3]}\\.?)"
    day = f"0?{value.day}(?:st|nd|rd|th)?"
    return f"(?:{value.isoformat()}|{month} {day},? {value.year}|{day} {month},? {value.year})"


def dollars(value: Decimal | str | float) -> str:
    return f"${Decimal(str(value)):,.2f}"


def first_name(full_name: str) -> str:
    return full_name.split()[0] if full_name else "there"


def tidy(text: str) -> str:
    """One paragraph per blank line, single spaces inside."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(p for p in paragraphs if p)


# --- criteria (the spec shapes of rubrics_app.criteria) -------------------------------------------------------


def criterion(kind: str, text: str, spec: dict, *, weight: float = 1, category: str, required: bool = False) -> dict:
    return {"kind": kind, "text": text, "spec": spec, "weight": weight, "category": category, "required": required}


def state(text: str, entity: str, filters: dict, op: str, *, field: str | None = None, value: Any = None, **kw):
    spec: dict[str, Any] = {
        "entity_type": entity,
        "filters": [{"field": k, "op": "eq", "value": v} for k, v in filters.items()],
        "op": op,
    }
    if field is not None:
        spec["field"] = field
    if value is not None:
        spec["value"] = value
    return criterion("state", text, spec, **{"category": "correctness", "weight": 2, "required": True, **kw})


def called(text: str, tool: str, arguments: dict | None = None, *, expect: str = "called", **kw) -> dict:
    spec: dict[str, Any] = {"tool": tool}
    if expect != "called":
        spec["expect"] = expect
    if arguments:
        spec["arguments"] = {k: {"op": "eq", "value": v} for k, v in arguments.items()}
    return criterion("tool_call", text, spec, **{"category": "completeness", **kw})


def says(text: str, value: str, **kw) -> dict:
    return criterion("response", text, {"op": "contains", "value": value}, **{"category": "correctness", **kw})


def says_pattern(text: str, pattern: str, **kw) -> dict:
    return criterion("response", text, {"op": "regex", "value": pattern}, **{"category": "correctness", **kw})


def remorse_refund_state(order_id: str, amount: Decimal, fee: Decimal, *, item: str = "") -> list[dict]:
    """The two state criteria of a change-of-mind return's refund: a customer_remorse refund of ``amount`` on the
    order (required), and its restocking fee (not required). ``item`` names the product in the first text."""
    on = f" for the {item}" if item else ""
    return [
        state(
            f"A customer_remorse refund of {dollars(amount)}{on} exists on order {order_id}.",
            "refund",
            {"payment__order": order_id, "reason": "customer_remorse"},
            "eq",
            field="amount",
            value=str(amount),
        ),
        state(
            f"The refund's restocking fee is {dollars(fee)}.",
            "refund",
            {"payment__order": order_id},
            "eq",
            field="restocking_fee",
            value=str(fee),
            weight=1,
            required=False,
        ),
    ]


def says_number(text: str, value: Decimal | float | str, **kw) -> dict:
    spec = {"op": "number", "value": str(value), "tolerance": 0.01}
    return criterion("response", text, spec, **{"category": "correctness", "weight": 2, **kw})


def restocking_fee_said(fee: Decimal, *, opened: bool, charged: str) -> tuple[str, dict]:
    """The reply's sentence on a return's restocking fee and the criterion that checks it: ``charged`` when there
    is a fee (its amount stated), else why there is none (unopened, or an exempt category)."""
    if fee > 0:
        return charged, says_number(f"The reply states the restocking fee ({dollars(fee)}).", fee, weight=1)
    why = "it is unopened" if not opened else "this category is exempt"
    return f"No restocking fee applies, since {why}.", says_pattern(
        "The reply says no restocking fee applies.",
        r"no restocking fee|restocking fee (?:does not|doesn't)",
    )


def judged(text: str, *, category: str = "tone", **kw) -> dict:
    return criterion("llm", text, {}, category=category, **kw)


def reply_tone(name: str) -> dict:
    return judged(
        f"The reply is addressed to {name}, is polite and plain, and ends with what happens next or what the "
        "customer should do.",
        category="tone",
    )
