"""The task library measured by what a reference solution really needs, not what it lists.

Each task (a starter fixture file or a family instance) is replayed on a snapshot (``SnapshotReplay``: a scratch
episode, every replay rolled back) and measured into a ``TaskShape``. The figures, and how each is detected:

- **needed calls**: a reference call counts only when dropping it makes the reference fail its rubric. Two ways:
  - *ablation*: dropped, the other calls and the final answer kept, a required programmatic criterion the full
    reference meets goes unmet. A harmless extra read does not count; a read a required ``called``/``saw``
    criterion owes does.
  - *provenance*: the ablation keeps the later calls' arguments as written, so it cannot see that they name ids
    the agent only knows from an earlier result: dropping ``search_customers`` leaves ``get_order_details`` with
    an order id no one gave. A call also counts when it is the first whose result names a world id that a needed
    call passes (or that the final answer states and a required response criterion grades), and neither the
    instruction nor an earlier result gave it; and so on back through the chain. A read whose result feeds
    nothing needed still counts for nothing.
  The same for a fact the graded answer states (a required response criterion's literal amount, number, date or
  text, at least four characters, not in the instruction): the first call whose result contains it counts.
  The figures use both (``needed_calls``); ``ablation_needed_calls`` is the first alone, reported beside them.
- **entity types joined**: over the needed calls, the entity type each tool is about (``TOOL_ENTITY``) plus the
  types of the world ids in its arguments (by id prefix; line items count as orders, messages as tickets, build
  parts as builds). ``get_order_details`` answering an order with its payments in one call is one type: the
  tool made that join, not the agent.
- **paging**: the reference reads rows beyond the first page *at the maximum page size*: for each query it pages
  (some call with ``offset > 0``), its pages are replaced by one call at offset 0 and ``limit`` = the tool's
  maximum; when that copy fails the rubric, the task needs paging. Paging at the default page size through rows
  one bigger page would hold does not count.
- **write**: a needed call is a write tool.
- **policy judgement the tools do not make**: declared by a tag ``judgement:<key>`` with ``key`` in
  ``JUDGEMENTS`` (the rulebook's rules held by the agent, ``world_app.store_rules.RULES`` with holder "agent", plus
  the task-level judgements listed here), and checked against the rubric: it counts only when a required
  criterion grades the decision's outcome (a ``state`` criterion on the world, or a claim, amount or date the
  reply must state). A tag alone, or a rubric alone, does not count; the figure is what the tasks declare and
  grade, nothing inferred from their text. Tasks whose older tags only suggest a judgement (``policy``,
  ``contradiction``...) are counted apart as ``judgement_suggested_share``, unverified.
- **date relation** (a window, before/after, business days): declared by a tag in ``DATE_TAGS`` and checked
  against the rubric: a required criterion grades a date (``date`` op) or states a day count, window, deadline or
  date in its text.
- **ids handed over**: world ids in the instruction, by prefix. ``internal`` ones are those a customer writing in
  does not have: everything except order numbers (``ord-``, on every confirmation email) and ticket numbers
  (``tkt-``, on every support email). ``employee`` ones are the acting employee's kind (``emp-``).
- **communication criteria** (communication tasks): criteria by category and how many are required; the tone and
  format criteria's texts, how many are distinct and the share of the five most common texts (boilerplate).
- **structural difficulty** (compared with the author's expected difficulty): points for needed calls (>= 4: 1,
  >= 8: 2), paging, three or more entity types, a judgement, a date relation and a write; 0-1 easy, 2-3 medium,
  4 and more hard.
- **multi-turn** (``multi_turn_tasks``): tasks whose reference asks the user for a held-back fact (``ask_user``,
  answered by the task's simulated user during the replay) and whose rubric fails without the question (the
  question is a needed call).
- **family branch balance**: per family, the instances per branch (``FamilyInstance.branch``: the outcome a
  constant answer would bet on) and the largest branch's share, against ``BRANCH_SHARE_MAX``.

``library_stats`` returns one dict (``manage.py task_stats --json`` prints it under ``library``), with the
issue's targets next to the measured values. It reports; it never adjusts a figure.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from corecraft_site.canonical import sorted_json
from rubrics_app.judgement import rubric_of
from tasks_app.library.families import FAMILIES, family_instantiate
from tasks_app.library.services.library_files import starter_tasks_read
from tasks_app.library.services.task_library import _models_by_prefix, entity_ids_named, library_snapshot
from tasks_app.perturbations import SnapshotReplay
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
}
_CHILD_OF = {
    "orderlineitem": "order", "ticketmessage": "supportticket", "buildcomponent": "build", "bundleitem": "bundle",
}  # fmt: skip

# Judgements the tools do not make: the rulebook's agent-held rules (added at run time) and these.
TASK_JUDGEMENTS = {
    "record-over-claim": "When a customer's account of an order conflicts with the record (what was bought, when "
    "it arrived, what was refunded), the record decides what the customer is owed, and the reply says so.",
    "return-exception": "A return past the window is refused unless it is within the team lead's exception range, "
    "which the agent must spot and route (the refund tool accepts any date).",
    "refund-scope": "Which units are still owed a refund after earlier partial refunds, and for what reason: the "
    "refund tool caps money, it does not choose the lines.",
    "recall-scope": "Which buyers a product notice concerns (delivered in the affected period, still covered): "
    "the search tools list orders, they do not decide who is affected.",
    "lateness": "Whether a delivery was late against what was promised, counted in business days: no tool counts them.",
    "warranty-exception": "A warranty claim made after expiry is refused unless it came within the team lead's "
    "exception range (30 days past expiry), which the agent must spot and route as a policy exception: the claim "
    "tool only records it as denied.",
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


def graded_facts(specs: Sequence[dict], *, answer: str, instruction: str) -> list[str]:
    """The literal values required response criteria grade (an amount, a number, a date, a text the reply must
    contain) that the reference's answer states and the instruction does not: the agent can only have them from a
    result. Amounts as the tools write them (two decimals). Patterns (``regex``, ``affirms``) are not literal."""
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
            stated = value in said.replace(",", "")
        else:
            value = value.lower()
            stated = value in said
        if len(value) >= _FACT_MIN_LENGTH and stated and value not in asked and value not in out:
            out.append(value)
    return out


def _is_error(result: Any) -> bool:
    return result is None or (isinstance(result, dict) and "error" in result)


# --- the figures ------------------------------------------------------------------------------------------------


def _share(count: int, total: int) -> float:
    return round(count / total, 3) if total else 0.0


def _communication(shapes: Sequence[TaskShape]) -> dict:
    tasks = [s for s in shapes if s.task_type == "communication"]
    by_category: dict[str, dict[str, int]] = {}
    texts: Counter = Counter()
    for shape in tasks:
        for c in shape.criteria:
            row = by_category.setdefault(str(c.get("category") or ""), {"criteria": 0, "required": 0})
            row["criteria"] += 1
            row["required"] += bool(c.get("required"))
            if c.get("category") in ("tone", "format") and c["kind"] == "llm":
                texts[" ".join(str(c.get("text") or "").split()).lower()] += 1
    tone_format = sum(texts.values())
    return {
        "tasks": len(tasks),
        "criteria_by_category": dict(sorted(by_category.items())),
        "required_criteria": sum(r["required"] for r in by_category.values()),
        "tone_format_llm_criteria": tone_format,
        "tone_format_llm_required": sum(
            1
            for s in tasks
            for c in s.criteria
            if c.get("category") in ("tone", "format") and c["kind"] == "llm" and c.get("required")
        ),
        "tone_format_distinct_texts": len(texts),
        "tone_format_top5_text_share": _share(sum(n for _, n in texts.most_common(5)), tone_format),
        "tasks_with_required_fact_and_format": sum(
            1
            for s in tasks
            if any(_grades_outcome(c) for c in s.criteria)
            and any(c.get("required") and c.get("category") == "format" for c in s.criteria)
        ),
    }


def _branches(shapes: Sequence[TaskShape]) -> dict:
    out = {}
    for family in sorted({s.family for s in shapes if s.family}):
        counts = Counter(s.branch or "(none)" for s in shapes if s.family == family)
        total = sum(counts.values())
        branch, largest = counts.most_common(1)[0]
        out[family] = {
            "instances": total,
            "branches": dict(sorted(counts.items())),
            "largest_branch": branch,
            "largest_branch_share": _share(largest, total),
            "within_bound": largest <= BRANCH_SHARE_MAX * total,
        }
    return out


TARGETS = {
    "needed_calls_mean": (">=", 6),
    "needed_calls_share_ge_8": (">=", 0.35),
    "joins_3plus_share": (">=", 0.5),
    "paging_share": (">=", 0.3),
    "write_share": (">=", 0.6),
    "judgement_share": (">=", 0.4),
    "date_relation_share": (">=", 0.25),
    "internal_ids_share": ("<=", 0.0),
}


def shapes_figures(shapes: Sequence[TaskShape]) -> dict:
    """The figures over ``shapes`` (one source), with the issue's targets beside them."""
    n = len(shapes)
    needed = [s.needed_calls for s in shapes]
    ablation = [s.needed_calls if s.ablation_needed_calls < 0 else s.ablation_needed_calls for s in shapes]
    difficulty_matrix: dict[str, dict[str, int]] = {}
    for s in shapes:
        row = difficulty_matrix.setdefault(s.expected_difficulty or "(none)", {})
        row[s.structural_difficulty] = row.get(s.structural_difficulty, 0) + 1
    prefixes = Counter(p for s in shapes for p in {i.split("-", 1)[0] for i in s.instruction_ids})
    figures = {
        "tasks": n,
        "by_type": dict(sorted(Counter(s.task_type for s in shapes).items())),
        "by_expected_difficulty": dict(sorted(Counter(s.expected_difficulty for s in shapes).items())),
        "reference_fails": sorted(s.key for s in shapes if not s.reference_passes),
        "listed_calls_mean": round(statistics.fmean([s.calls for s in shapes]), 2) if n else 0.0,
        "needed_calls_mean": round(statistics.fmean(needed), 2) if n else 0.0,
        "needed_calls_median": statistics.median(needed) if n else 0,
        "needed_calls_max": max(needed, default=0),
        "needed_calls_share_ge_8": _share(sum(c >= MANY_CALLS for c in needed), n),
        "needed_calls_share_le_2": _share(sum(c <= 2 for c in needed), n),
        "needed_calls_histogram": {str(k): v for k, v in sorted(Counter(needed).items())},
        "ablation_needed_calls_mean": round(statistics.fmean(ablation), 2) if n else 0.0,
        "ablation_needed_calls_share_ge_8": _share(sum(c >= MANY_CALLS for c in ablation), n),
        "entity_types_mean": round(statistics.fmean([len(s.entity_types) for s in shapes]), 2) if n else 0.0,
        "joins_3plus_share": _share(sum(len(s.entity_types) >= JOIN_TYPES for s in shapes), n),
        "paging_share": _share(sum(s.needs_paging for s in shapes), n),
        "write_share": _share(sum(s.writes for s in shapes), n),
        "judgement_share": _share(sum(bool(s.judgements) for s in shapes), n),
        "judgement_declared_share": _share(sum(bool(s.judgements_declared) for s in shapes), n),
        "judgement_suggested_share": _share(sum(s.judgement_suggested for s in shapes), n),
        "judgements": dict(sorted(Counter(j for s in shapes for j in s.judgements).items())),
        "date_relation_share": _share(sum(s.date_relation for s in shapes), n),
        "date_declared_share": _share(sum(s.date_declared for s in shapes), n),
        "multi_turn_tasks": sum(s.multi_turn for s in shapes),
        "ids_in_instruction": {
            "any_share": _share(sum(bool(s.instruction_ids) for s in shapes), n),
            "internal_share": _share(sum(bool(s.internal_ids) for s in shapes), n),
            "employee_share": _share(sum(any(i.startswith("emp-") for i in s.instruction_ids) for s in shapes), n),
            "tasks_by_prefix": dict(sorted(prefixes.items())),
        },
        "communication": _communication(shapes),
        "difficulty": {
            "agreement_share": _share(sum(s.expected_difficulty == s.structural_difficulty for s in shapes), n),
            "expected_vs_structural": {k: dict(sorted(v.items())) for k, v in sorted(difficulty_matrix.items())},
        },
    }
    measured = {**figures, "internal_ids_share": figures["ids_in_instruction"]["internal_share"]}
    figures["targets"] = {
        name: {
            "target": f"{op} {value}",
            "value": measured[name],
            "met": measured[name] >= value if op == ">=" else measured[name] <= value,
        }
        for name, (op, value) in TARGETS.items()
    }
    if any(s.family for s in shapes):
        branches = _branches(shapes)
        figures["families"] = branches
        figures["branch_bound"] = BRANCH_SHARE_MAX
        figures["families_within_bound"] = sum(1 for b in branches.values() if b["within_bound"])
    return figures


def library_shapes(
    *, snapshot=None, starter: bool = True, families: bool = True, per_family: int | None = None, path=None
) -> list[TaskShape]:
    """Every starter file's and family instance's shape on ``snapshot`` (default: the latest published)."""

    snapshot = library_snapshot(snapshot)
    items: list[dict] = []
    if starter:
        for task in starter_tasks_read(path)[0]:
            fields = task.fields
            items.append({
                "key": task.source_key, "criteria": task.criteria, "instruction": fields["instruction"],
                "solution": fields["reference_solution"], "tags": fields["tags"], "task_type": fields["task_type"],
                "difficulty": fields["difficulty"], "source": "starter",
                "simulated_user": fields.get("simulated_user") or {},
            })  # fmt: skip
    if families:
        for name in FAMILIES:
            for instance in family_instantiate(name, snapshot=snapshot, limit=per_family):
                items.append({
                    "key": instance.source_key, "criteria": instance.criteria, "instruction": instance.instruction,
                    "solution": instance.reference_solution, "tags": instance.tags, "task_type": instance.task_type,
                    "difficulty": instance.difficulty, "source": "family", "family": name,
                    "branch": instance.branch,
                })  # fmt: skip
    with SnapshotReplay(snapshot) as replay:
        return [task_shape(replay=replay, **item) for item in items]


def library_stats(
    *, snapshot=None, starter: bool = True, families: bool = True, per_family: int | None = None, path=None
) -> dict:
    """The figures of the starter files and of the family instances, separately (see the module docstring)."""

    snapshot = library_snapshot(snapshot)
    shapes = library_shapes(snapshot=snapshot, starter=starter, families=families, per_family=per_family, path=path)
    out: dict[str, Any] = {
        "snapshot": snapshot.version,
        "definitions": "tasks_app/library/services/library_stats.py (module docstring)",
    }
    if starter:
        out["starter"] = shapes_figures([s for s in shapes if s.source == "starter"])
    if families:
        out["families"] = shapes_figures([s for s in shapes if s.source == "family"])
        out["families"]["per_family_limit"] = per_family
    return out
