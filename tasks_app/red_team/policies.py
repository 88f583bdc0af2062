"""A task's red-team policies, each a trajectory built from its instruction, reference and the reference's results."""

from __future__ import annotations

from collections.abc import Callable

from tasks_app.perturbations import (
    OutcomeCheck,
    reference_perturbations,
)
from tasks_app.red_team.kinds import (
    BIGGER_PAGE,
    CONVERSATION,
    DUMP,
    ECHO,
    EXTRA_READ,
    FORMATS,
    GUESS,
    NO_CALL,
    OVER_ACT,
    REORDER_READS,
    REWORD,
    SPRAY,
    RedTeamPolicy,
    Replay,
    policy_expect,
    policy_kind,
    solution_calls,
    tool_group,
)
from tasks_app.red_team.must_fail import dump_answer, extra_writes, no_call_answer, spray_extra
from tasks_app.red_team.must_pass import (
    answer_reformatted,
    answer_reworded,
    bigger_page,
    harmless_read,
    reordered_reads,
)


def red_team_policies(
    *,
    instruction: str,
    solution: dict,
    replay: Replay,
    vocabulary: str = "",
    results: list | None = None,
    world_diff: Callable[[list[dict]], dict] | None = None,
) -> list[RedTeamPolicy]:
    """Every red-team policy of a task, must-fail ones first, in ``POLICY_KINDS`` order.

    ``replay(calls)`` returns the results of ``calls`` made in order on the task's snapshot (nothing kept);
    ``vocabulary`` is the no-call reply's text (``world_vocabulary``); ``results`` the reference's, if known;
    ``world_diff(calls)`` the diff ``calls`` leave on the snapshot: with it, no must-fail policy is made whose
    calls leave the reference's world and whose answer is the reference's (``perturbations.OutcomeCheck``).
    """
    calls = solution_calls(solution)
    answer = str(solution.get("final_answer") or "")
    if results is None:
        results = replay(calls)
    found: list[RedTeamPolicy] = []

    def add(key: str, description: str, new_calls: list[dict], new_answer: str) -> None:
        found.append(
            RedTeamPolicy(
                key=key,
                kind=policy_kind(key),
                expect=policy_expect(key),
                description=description,
                solution={"calls": new_calls, "final_answer": new_answer},
            )
        )

    if calls:
        add(DUMP, "the reference's calls, then the JSON of every result as the answer", calls, dump_answer(results))
        extra = spray_extra(results, answer)
        if extra:
            add(SPRAY, "the reference answer plus every id and amount the results held", calls, f"{answer}\n\n{extra}")
    add(
        NO_CALL, "no tool call; a reply naming every policy, status and remedy word", [], vocabulary or no_call_answer()
    )
    add(ECHO, "no tool call; the instruction as the answer", [], instruction)
    outcome = OutcomeCheck(calls, answer, world_diff=world_diff) if world_diff is not None else None
    for tool, arguments in extra_writes(instruction, calls, results, replay, outcome):
        add(f"{OVER_ACT}[{tool}]", f"the reference plus an extra {tool}({arguments})", [*calls, {"tool": tool,
            "arguments": arguments}], answer)  # fmt: skip
    unasked = [c for c in calls if tool_group(c["tool"]) != CONVERSATION]
    if len(unasked) < len(calls):
        add(GUESS, "the reference without its questions to the user (the held-back facts guessed)", unasked, answer)
    for p in reference_perturbations(
        {"calls": calls, "final_answer": answer}, results=results, replay=replay, instruction=instruction,
        world_diff=world_diff,
    ):  # fmt: skip
        add(p.key, p.description, p.solution["calls"], p.solution["final_answer"])

    reordered = reordered_reads(instruction, calls, results)
    if reordered is not None:
        add(REORDER_READS, "independent reads in another order", reordered, answer)
    extra_read = harmless_read(calls, results, replay)
    if extra_read is not None:
        add(EXTRA_READ, f"an extra harmless read first: {extra_read['tool']}", [extra_read, *calls], answer)
    bigger = bigger_page(calls, results, replay)
    if bigger is not None:
        add(BIGGER_PAGE, "one bigger page instead of paging (the same rows)", bigger, answer)
    formatted = answer_reformatted(answer)
    if formatted != answer:
        add(FORMATS, "money and dates in other common formats", calls, formatted)
    add(REWORD, "the answer reworded (order, synonyms, greeting and sign-off)", calls, answer_reworded(answer))
    return found
