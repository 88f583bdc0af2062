"""Deterministic judgement of ``state``, ``tool_call`` and ``response`` criteria over one episode.

State criteria read the episode's final world (``only_changes``: its diff; ``state.py``), tool-call criteria the
calls with their results (``saw``: what the results showed; ``tool_calls.py``), response criteria the final answer
(``responses.py``); ``verdicts.py`` holds the statuses and the verdict they all return. Every pattern runs with
``rubrics_app.patterns``' time limit: a pattern that runs past it is an ``error`` verdict, never a hang.

A verdict is ``{key, kind, status: met|not_met|pending, met, rationale, evidence, weight, required}``; ``llm``
criteria stay ``pending`` until the LLM judge rules on them. ``reward`` folds verdicts into the
rollout's reward: the weighted fraction met, and pass = every required criterion met.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

from rubrics_app.models import CriterionKind
from rubrics_app.programmatic.responses import response_verdict
from rubrics_app.programmatic.state import state_verdict
from rubrics_app.programmatic.tool_calls import tool_call_verdict
from rubrics_app.programmatic.verdicts import ERROR, MET, NOT_MET, PENDING, verdict
from world_app.episodes import episode_log_settle, episode_world, episode_world_diff
from world_app.models import Episode, EpisodeStep


def criteria_evaluate(
    *,
    criteria: Iterable,
    episode,
    final_answer: str,
    tool_calls: Sequence[dict] | None = None,
    diff: dict | None = None,
    simulated_user: dict | None = None,
) -> list[dict]:
    """A verdict per criterion (in the order given), from the episode's final world, the calls and the answer.

    ``criteria`` are ``Criterion`` rows (or anything with key, kind, spec, weight, required, content_hash).
    ``tool_calls`` ([{name, arguments, result, is_error}], in order) are the trajectory's calls with their
    results; None reads them from the episode's logged steps. With ``episode=None`` state criteria read the
    world the caller has open (``episode_world`` or a scratch replay). ``diff`` (as
    ``world_app.episodes.episode_diff`` gives it) is the episode's diff; None computes it when an
    ``only_changes`` or ``makes_changes`` criterion needs it. ``simulated_user`` (the task's spec) says which
    held-back facts the agent's questions drew out (``asked`` criteria).
    """
    criteria = list(criteria)
    if tool_calls is not None or episode is None:
        steps = calls_as_steps(list(tool_calls or []))
    else:
        episode_log_settle(episode)  # every step the agent saw answered is in the log before it is judged
        steps = list(
            EpisodeStep.objects.filter(episode=episode)
            .order_by("seq")
            .values("seq", "name", "arguments", "result", "is_error")
        )
    if simulated_user is None and episode is not None:
        simulated_user = (
            Episode.objects.filter(pk=getattr(episode, "pk", episode)).values_list("simulated_user", flat=True).first()
        )
    verdicts: dict[int, dict] = {}
    state = [(i, c) for i, c in enumerate(criteria) if c.kind == CriterionKind.STATE]
    if state:
        # One pass over the episode's world for every state criterion.
        with contextlib.nullcontext() if episode is None else episode_world(episode):
            cached: list[dict] = [] if diff is None else [diff]

            def current_diff() -> dict:
                if not cached:
                    cached.append(episode_world_diff())
                return cached[0]

            for index, criterion in state:
                verdicts[index] = state_verdict(criterion, diff=current_diff)
    for index, criterion in enumerate(criteria):
        if criterion.kind == CriterionKind.TOOL_CALL:
            verdicts[index] = tool_call_verdict(criterion, steps, simulated_user=simulated_user)
        elif criterion.kind == CriterionKind.RESPONSE:
            verdicts[index] = response_verdict(criterion, final_answer or "")
        elif criterion.kind == CriterionKind.LLM:
            verdicts[index] = verdict(criterion, PENDING, "judged by the LLM judge (not run yet)")
    return [verdicts[i] for i in range(len(criteria))]


def calls_as_steps(tool_calls: list[dict]) -> list[dict]:
    """Trajectory calls ({name or tool, arguments, result, is_error}) as the step dicts the verdicts read."""
    steps = []
    for index, call in enumerate(tool_calls):
        result = call.get("result")
        is_error = call.get("is_error")
        if is_error is None:
            is_error = isinstance(result, dict) and "error" in result
        steps.append({
            "seq": index + 1,
            "name": call.get("name") or call.get("tool") or "",
            "arguments": call.get("arguments") or {},
            "result": result,
            "is_error": bool(is_error),
        })  # fmt: skip
    return steps


def reward(verdicts: list[dict]) -> dict:
    """The rollout's reward from its verdicts.

    ``final`` is False while any criterion is pending or a judge error: ``reward`` is then None and
    ``partial_reward`` is the weighted fraction over the decided criteria. An ``error`` verdict is neither met
    nor unmet (it is counted in ``errors``). ``passed`` is known early when a required criterion failed.
    """
    judged = [v for v in verdicts if v["status"] in (MET, NOT_MET)]
    pending = sum(1 for v in verdicts if v["status"] == PENDING)
    errors = sum(1 for v in verdicts if v["status"] == ERROR)
    total = sum(v["weight"] for v in verdicts)
    judged_weight = sum(v["weight"] for v in judged)
    earned = sum(v["weight"] for v in judged if v["status"] == MET)
    required_failed = any(v["required"] and v["status"] == NOT_MET for v in verdicts)
    required_undecided = any(v["required"] and v["status"] in (PENDING, ERROR) for v in verdicts)
    if required_failed:
        passed = False
    elif required_undecided:
        passed = None
    else:
        passed = True
    final = pending == 0 and errors == 0
    return {
        "final": final,
        "reward": (earned / total if total else 0.0) if final else None,
        "passed": passed,
        "partial_reward": earned / judged_weight if judged_weight else None,
        "met": sum(1 for v in judged if v["status"] == MET),
        "not_met": sum(1 for v in judged if v["status"] == NOT_MET),
        "pending": pending,
        "errors": errors,
    }


__all__ = ["ERROR", "MET", "NOT_MET", "PENDING", "calls_as_steps", "criteria_evaluate", "reward"]
