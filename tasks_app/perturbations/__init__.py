"""Perturbed copies of a reference solution, each with exactly one fault: the negative controls of a rubric.

A rubric that still passes a solution with a write left out, a wrong argument, a fact missing from the reply or
only the first page of a paged search read is blind to that fault. ``reference_perturbations`` makes one copy
per fault, deterministically (same solution in, same perturbations out, in the same order), in four kinds:

- ``drop_write[i]``: call ``i``, a tool of the registry's "write" group, is left out (later calls are kept, even
  when they named what it would have created: that is what an agent that forgot the write does next).
- ``change_argument[i].<name>``: one argument of call ``i`` changed in a way that matters: an entity id becomes
  the neighbouring id of the same kind ("ord-230215-001" -> "ord-230215-002", existing-looking, usually
  another real row), an integer is shifted by one, an amount scaled by 1.1 (or set to 1 when 0), an enum takes
  the next value of the tool's schema, a boolean flips, an ISO date moves 7 days later, a list of ids has its
  first id changed, a list of lines/parts loses its last entry (or, with one entry, changes that entry's id or
  quantity). Free text (notes, summaries, queries) and paging arguments (offset, limit, sort) are left alone:
  changing them is no fault, or it is the ``first_page_only`` fault. With ``replay`` (a function running a call
  list on the snapshot and returning the results) a changed *read* must change what the agent learns and so
  the answer: the copy is made only when the changed call's result differs, and every fact of the answer that
  came from the original result alone (not from the instruction, nor from any result of the changed run) is
  taken out of the answer; a changed read that changes no fact of the answer is no fault and yields no copy.
  A changed write keeps the answer (the agent believes it did the right thing).
- ``drop_fact[k]``: the ``k``-th fact of the final answer (an entity id, a money amount or a calendar date,
  compared by value: "$1,499.99" and "1499.99 USD" are one fact, "2025-09-15" and "September 15" are one) is
  removed from the answer *everywhere*: every sentence, line or ";" clause naming it goes. With ``results``
  only facts that some tool result holds and the instruction does not are dropped (the facts the agent had
  to find).
- ``first_page_only[i]``: a paged read (a call with ``offset`` > 0) and every later page of the same query are
  left out, as if the agent read only the first page; ``i`` is the first such call. With ``results`` the entity
  ids that only the later pages returned are also taken out of the answer (the agent never saw them).

A copy that ends where the reference ends is no fault: with ``world_diff`` (calls -> the diff they leave on the
snapshot) every copy whose calls leave the same world and whose answer is the reference's is not made, whatever
its kind (a flipped ``opened`` on a refund the fee rules ignore, a dropped write that changed nothing, a page the
answer owes nothing to). Calibration and the library check pass it (``SnapshotReplay.diff``).

Write tools are found through ``tool_lookup(name) -> Tool | None`` (default: the world's tool registry); a call
to an unknown tool is never treated as a write, and its enums are unknown.
"""

from tasks_app.perturbations.facts import answer_facts, drop_facts, facts_in_text, facts_of, is_fact
from tasks_app.perturbations.faults import (
    CHANGE_ARGUMENT,
    DROP_FACT,
    DROP_WRITE,
    FIRST_PAGE_ONLY,
    KINDS,
    OutcomeCheck,
    Perturbation,
    neighbour_id,
    reference_perturbations,
)
from tasks_app.perturbations.rubric_check import (
    RubricCheck,
    SnapshotReplay,
    rubric_check,
    shared_replay,
    shared_replay_for,
)

__all__ = [
    "CHANGE_ARGUMENT",
    "DROP_FACT",
    "DROP_WRITE",
    "FIRST_PAGE_ONLY",
    "KINDS",
    "OutcomeCheck",
    "Perturbation",
    "RubricCheck",
    "SnapshotReplay",
    "answer_facts",
    "drop_facts",
    "facts_in_text",
    "facts_of",
    "is_fact",
    "neighbour_id",
    "reference_perturbations",
    "rubric_check",
    "shared_replay",
    "shared_replay_for",
]
