"""Replayed rollouts: the rollout policies besides a model (the version's reference solution, its perturbed and
red-team copies), replayed call by call.

A replay runs the solution's calls in the episode in order, then gives its final answer. The trajectory is written
in the same shape a model's is (OpenAI messages with one assistant tool call per call, and the tool results), so
pages, judges and exports read every rollout alike; ``Rollout.policy`` / ``policy_label`` say who made it.
Perturbations and the red team come from ``tasks_app.red_team`` (one implementation, shared with the library
check): one fault each (a write left out, an argument changed, a fact dropped from the answer, only the first
page of a search read), and the must-fail / must-pass policies of the red team.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from tasks_app.calibration.rollouts.agent import STOP_FINAL_ANSWER, AgentRun, ToolRunner, initial_messages
from tasks_app.red_team import version_perturbations, version_red_team


class PerturbationNotFound(LookupError):
    """The version's reference solution has no perturbation with that key (it changed, or the key is wrong)."""


def replay_solution(*, solution: Mapping[str, Any], instruction: str, run_tool: ToolRunner) -> AgentRun:
    """Play ``solution`` ({"calls": [{"tool", "arguments"}], "final_answer"}) through ``run_tool``."""
    started = time.monotonic()
    run = AgentRun(messages=initial_messages(instruction))
    for index, call in enumerate(solution.get("calls") or ()):
        name, arguments = call["tool"], dict(call.get("arguments") or {})
        call_id = f"ref_{index}"
        run.turns += 1
        run.messages.append({
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        })  # fmt: skip
        began = time.monotonic()
        result, seq = run_tool(name, arguments)
        run.messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result, sort_keys=True)})
        run.tool_calls.append({
            "turn": run.turns,
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "result": result,
            "is_error": isinstance(result, dict) and "error" in result,
            "malformed": "",
            "latency_ms": round((time.monotonic() - began) * 1000, 3),
            "step": seq,
        })  # fmt: skip
    run.turns += 1
    run.final_answer = str(solution.get("final_answer") or "")
    run.messages.append({"role": "assistant", "content": run.final_answer})
    run.stop_reason = STOP_FINAL_ANSWER
    run.latency_ms = (time.monotonic() - started) * 1000
    return run


def perturbation_for(version, key: str):
    """The perturbation ``key`` of a task version (a ``tasks_app.red_team.RedTeamPolicy``)."""

    for perturbation in version_perturbations(version):
        if perturbation.key == key:
            return perturbation
    raise PerturbationNotFound(f"the reference solution has no perturbation {key!r}")


def perturbation_keys(version) -> list[str]:
    """Every perturbation key of a task version, in the order the red team lists them (built with the
    reference's results on the version's snapshot, as calibration and the library check both build them)."""

    return [p.key for p in version_perturbations(version)]


def red_team_policy_for(version, key: str):
    """The red-team policy ``key`` (``reference``, ``dump``, ``drop_fact[0]``...) of a task version."""

    for policy in version_red_team(version):
        if policy.key == key:
            return policy
    raise PerturbationNotFound(f"the task version has no red-team policy {key!r}")


def red_team_keys(version) -> list[str]:
    """Every red-team policy key of a task version, ``reference`` first."""

    return [p.key for p in version_red_team(version)]
