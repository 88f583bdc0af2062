"""A task's reference solution: validated on save, replayed in a fresh episode on demand."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from rubrics_app.judgement import Judgement, Trajectory, rubric_of_version, trajectory_judge
from tasks_app.models import ReferenceRun, TaskVersion
from tasks_app.permissions import task_discuss_check
from world_app.episodes import episode_close, episode_create
from world_app.tools.registry import all_tools, get_tool
from world_app.tools.steps import call_tool


class ReferenceCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ReferenceSolution(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[ReferenceCall] = Field(default_factory=list)
    final_answer: str = ""


def _loc(loc: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def reference_solution_validate(data: Any) -> dict:
    """The solution as stored; refused with ``ValidationError({"reference_solution.calls[i].arguments.x": [why]})``
    naming every problem."""
    try:
        solution = ReferenceSolution.model_validate(data)
    except PydanticValidationError as exc:
        problems: dict[str, list[str]] = {}
        for e in exc.errors(include_url=False):
            problems.setdefault(f"reference_solution{_loc(e['loc'])}", []).append(e["msg"])
        raise ValidationError(problems) from None
    problems = {}
    for index, call in enumerate(solution.calls):
        where = f"reference_solution.calls[{index}]"
        found = get_tool(call.tool)
        if found is None:
            names = ", ".join(t.name for t in all_tools())
            problems.setdefault(f"{where}.tool", []).append(f"no tool named {call.tool!r}; one of: {names}")
            continue
        try:
            found.params.model_validate(call.arguments)
        except PydanticValidationError as exc:
            for err in exc.errors(include_url=False):
                reason = "required" if err["type"] == "missing" else err["msg"].removeprefix("Value error, ")
                if err["type"] == "extra_forbidden":
                    reason = f"{call.tool} takes no such argument"
                problems.setdefault(f"{where}.arguments{_loc(err['loc'])}", []).append(reason)
    if problems:
        raise ValidationError(problems)
    return solution.model_dump(mode="json")


def reference_solution_run(*, version: TaskVersion, user) -> ReferenceRun:
    """Replay ``version``'s reference solution in a new episode on its pinned snapshot and judge it.

    Not one transaction: the episode logs each call as it runs (its own transactions), as any rollout does.
    """
    task_discuss_check(user, version.task)
    solution = ReferenceSolution.model_validate(version.reference_solution or {})
    if not solution.calls and not solution.final_answer:
        raise ValidationError({"reference_solution": ["record the calls and final answer first"]})
    episode = episode_create(
        snapshot=version.snapshot,
        label=f"task {version.task_id} v{version.number} reference solution",
        simulated_user=version.simulated_user,
    )
    try:
        call_results = []
        for call in solution.calls:
            result = call_tool(episode, call.tool, call.arguments)
            is_error = isinstance(result, dict) and "error" in result
            call_results.append(
                {"tool": call.tool, "arguments": call.arguments, "is_error": is_error, "result": result}
            )
        trajectory = Trajectory.of(
            instruction=version.instruction,
            snapshot_version=version.snapshot.version,
            tool_calls=call_results,
            final_answer=solution.final_answer,
            episode=episode,
            simulated_user=version.simulated_user,
        )
        judgement = trajectory_judge(rubric=rubric_of_version(version), trajectory=trajectory)
    finally:
        episode_close(episode)
    return _reference_run_store(
        version=version, episode=episode, user=user, call_results=call_results, judgement=judgement
    )


@transaction.atomic
def _reference_run_store(*, version, episode, user, call_results, judgement: Judgement) -> ReferenceRun:
    return ReferenceRun.objects.create(
        version=version,
        episode=episode,
        call_results=call_results,
        verdicts=judgement.verdicts,
        reward=judgement.final_reward,
        passed=judgement.passed,
        outcome={**judgement.outcome(), "trajectory_hash": judgement.trajectory_hash},
        created_by=user,
    )
