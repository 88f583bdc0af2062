"""The policies a rollout can follow besides a model: the version's reference solution, and perturbed copies.

A replay runs the solution's calls in the episode in order, then gives its final answer. The trajectory is written
in the same shape a model's is (OpenAI messages with one assistant tool call per call, and the tool results), so
pages, judges and exports read every rollout alike; ``Rollout.policy`` / ``policy_label`` say who made it.
Perturbations come from ``tasks_app.perturbations.reference_perturbations``: one fault each (a write left out,
an argument changed, a fact dropped from the answer, only the first page of a search read).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from tasks_app.rollouts.agent import STOP_FINAL_ANSWER, AgentRun, ToolRunner, initial_messages


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


def perturbation_for(solution: Mapping[str, Any], key: str):
    """The perturbation ``key`` of ``solution`` (a ``tasks_app.perturbations.Perturbation``)."""
    from tasks_app.perturbations import reference_perturbations

    for perturbation in reference_perturbations(dict(solution)):
        if perturbation.key == key:
            return perturbation
    raise PerturbationNotFound(f"the reference solution has no perturbation {key!r}")


def perturbation_keys(solution: Mapping[str, Any]) -> list[str]:
    """Every perturbation key of ``solution``, in the order the perturbations module lists them."""
    from tasks_app.perturbations import reference_perturbations

    return [p.key for p in reference_perturbations(dict(solution))]
