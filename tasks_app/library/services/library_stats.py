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
issue's targets next to the measured values. It reports; it never adjusts a figure. One task's measuring lives in
``library_shape`` (``TaskShape``, ``task_shape``); the figures over many, here.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tasks_app.library.families import FAMILIES, family_instantiate
from tasks_app.library.services.library_files import starter_tasks_read
from tasks_app.library.services.library_shape import (
    BRANCH_SHARE_MAX,
    JOIN_TYPES,
    MANY_CALLS,
    TaskShape,
    _grades_outcome,
    task_shape,
)
from tasks_app.library.services.task_library import library_snapshot
from tasks_app.perturbations import SnapshotReplay

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
