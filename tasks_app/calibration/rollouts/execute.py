"""Rollouts: create one, run its policy in a fresh episode of the version's snapshot, store and judge it."""

from __future__ import annotations

import logging
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from rubrics_app.endpoints import endpoint_client, request_sampling
from rubrics_app.judgement import Judgement, Trajectory, rubric_of_version, trajectory_judge
from rubrics_app.models import ModelEndpoint
from tasks_app.calibration.rollouts.agent import (
    STOP_ENDPOINT_ERROR,
    AgentLimits,
    AgentRun,
    agent_loop,
    endpoint_tools,
)
from tasks_app.calibration.rollouts.replays import perturbation_for, red_team_policy_for, replay_solution
from tasks_app.models import Rollout, RolloutPolicy, RolloutStatus, TaskVersion
from world_app.contract import agent_contract
from world_app.episodes import episode_close, episode_create, steps_appended_now
from world_app.models import WorldSnapshot
from world_app.tools.steps import call_tool_step, storable

logger = logging.getLogger(__name__)

DONE_STATUSES = (RolloutStatus.FINISHED, RolloutStatus.FAILED, RolloutStatus.CANCELLED)


def policy_label(*, policy: str, endpoint: ModelEndpoint | None = None, perturbation_key: str = "") -> str:
    """``model:<endpoint name>``, ``reference``, ``perturbed_reference:<key>`` or ``red_team:<key>``: who made a
    trajectory."""
    if policy == RolloutPolicy.MODEL:
        if endpoint is None:
            raise ValueError("a model rollout needs an endpoint")
        return f"model:{endpoint.name}"
    if policy == RolloutPolicy.PERTURBED_REFERENCE:
        if not perturbation_key:
            raise ValueError("a perturbed_reference rollout needs a perturbation key")
        return f"perturbed_reference:{perturbation_key}"
    if policy == RolloutPolicy.RED_TEAM:
        if not perturbation_key:
            raise ValueError("a red_team rollout needs a policy key")
        return f"red_team:{perturbation_key}"
    if policy == RolloutPolicy.REFERENCE:
        return "reference"
    raise ValueError(f"unknown policy {policy!r}")


@transaction.atomic
def rollout_create(
    *,
    version: TaskVersion,
    policy: str,
    endpoint: ModelEndpoint | None = None,
    perturbation_key: str = "",
    sample: int = 0,
    run=None,
    item=None,
) -> Rollout:
    """A queued rollout of ``policy`` on ``version`` (run it with :func:`rollout_execute`)."""
    return Rollout.objects.create(
        version=version,
        contract_version=agent_contract().version,
        policy=policy,
        endpoint=endpoint if policy == RolloutPolicy.MODEL else None,
        policy_label=policy_label(policy=policy, endpoint=endpoint, perturbation_key=perturbation_key),
        perturbation={"key": perturbation_key} if perturbation_key else {},
        sample=sample,
        run=run,
        item=item,
    )


def version_snapshot_number(version: TaskVersion) -> int:
    """The version number of the version's snapshot, without loading its image when it is not loaded yet."""
    if "snapshot" in version._state.fields_cache:
        return version.snapshot.version
    return WorldSnapshot.objects.filter(pk=version.snapshot_id).values_list("version", flat=True).get()


def rollout_trajectory(rollout: Rollout) -> Trajectory:
    """The rollout's trajectory as the judgement reads it (its stored calls, answer and closed episode)."""
    version = rollout.version
    return Trajectory.of(
        instruction=version.instruction,
        snapshot_version=version_snapshot_number(version),
        tool_calls=rollout.tool_calls or [],
        final_answer=rollout.final_answer,
        episode=rollout.episode_id,
        simulated_user=version.simulated_user,
    )


def _storable(value: Any) -> Any:
    return storable(value)


def rollout_execute(*, rollout: Rollout, judge: bool = True, judge_config=None, client=None) -> Rollout:
    """Run ``rollout``'s policy in a fresh episode, store the trajectory, close the episode, and judge it.

    A rubric with programmatic criteria only is judged once, from the open episode: its judgement is final, and
    ``judged_at`` is set with it.

    A rollout already finished, failed or cancelled is returned as it is (a redelivered task does no work
    twice). A rollout left running by a dead worker starts again in a new episode. Endpoint failures (after the
    client's retries) and unexpected errors fail the rollout with their reason; nothing raises for them.
    ``judge=False`` stores the programmatic verdicts only (llm ones pending) and leaves the judge to the caller.
    """
    rollout = (
        Rollout.objects.select_related("version__snapshot", "endpoint", "run__judge_config")
        .defer("version__snapshot__image")  # the snapshot's image (megabytes) is loaded by its cache, by id
        .get(pk=rollout.pk)
    )
    if rollout.status in DONE_STATUSES:
        return rollout
    version = rollout.version
    episode = _rollout_begin(rollout)

    def run_tool(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        step = call_tool_step(episode, name, arguments)
        return step.result, step.seq

    run: AgentRun | None = None
    judgement: Judgement | None = None
    crash = ""
    try:
        run = _policy_run(rollout, run_tool=run_tool, client=client)
        if run.stop_reason != STOP_ENDPOINT_ERROR:
            # Programmatic verdicts now, from the open episode (llm ones pending): the judge below reuses them.
            trajectory = Trajectory.of(
                instruction=version.instruction,
                snapshot_version=version_snapshot_number(version),
                tool_calls=_storable(run.tool_calls),
                final_answer=run.final_answer.replace("\x00", ""),
                episode=episode,
                simulated_user=version.simulated_user,
            )
            judgement = trajectory_judge(rubric=rubric_of_version(version), trajectory=trajectory)
    except Exception as exc:
        logger.exception("rollout %s crashed", rollout.pk)
        crash = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            episode_close(episode)
        except Exception:
            logger.exception("rollout %s: its episode %s did not close", rollout.pk, episode.pk)
    rollout = _rollout_store(rollout=rollout, run=run, judgement=judgement, crash=crash)
    if judge and rollout.status == RolloutStatus.FINISHED and rollout.judged_at is None:
        config = judge_config if judge_config is not None else (rollout.run.judge_config if rollout.run else None)
        rollout = rollout_judge_store(rollout=rollout, judge_config=config)
    return rollout


def _rollout_begin(rollout: Rollout):
    """Mark the rollout running in a new episode (a leftover one from a dead attempt is closed first)."""
    if rollout.episode_id is not None:
        try:
            episode_close(rollout.episode_id)
        except Exception:
            logger.exception("rollout %s: could not close the episode of its last attempt", rollout.pk)
    episode = episode_create(
        snapshot=rollout.version.snapshot,
        label=f"rollout {rollout.pk}: {rollout.policy_label}"[:200],
        simulated_user=rollout.version.simulated_user,
    )
    rollout.episode = episode
    rollout.status = RolloutStatus.RUNNING
    rollout.started_at = timezone.now()
    rollout.failure_reason = ""
    rollout.save(update_fields=["episode", "status", "started_at", "failure_reason"])
    return episode


def _policy_run(rollout: Rollout, *, run_tool, client) -> AgentRun:
    version = rollout.version
    if rollout.policy == RolloutPolicy.REFERENCE:
        return replay_solution(solution=version.reference_solution, instruction=version.instruction, run_tool=run_tool)
    if rollout.policy == RolloutPolicy.PERTURBED_REFERENCE:
        perturbation = perturbation_for(version, rollout.perturbation.get("key", ""))
        rollout.perturbation = {"key": perturbation.key, "description": perturbation.description}
        return replay_solution(solution=perturbation.solution, instruction=version.instruction, run_tool=run_tool)
    if rollout.policy == RolloutPolicy.RED_TEAM:
        policy = red_team_policy_for(version, rollout.perturbation.get("key", ""))
        rollout.perturbation = {"key": policy.key, "description": policy.description, "expect": policy.expect}
        return replay_solution(solution=policy.solution, instruction=version.instruction, run_tool=run_tool)
    if rollout.policy == RolloutPolicy.MODEL:
        endpoint = rollout.endpoint
        if endpoint is None:
            raise ValueError("a model rollout needs an endpoint")
        # One step per model turn: each is appended at once on this thread's connection. Deferred, it would cost
        # two round trips through the process's one step writer, where concurrent rollouts queue behind each other.
        with steps_appended_now():
            return agent_loop(
                client=client or endpoint_client(endpoint),
                instruction=version.instruction,
                run_tool=run_tool,
                tools=endpoint_tools(endpoint.sampling or {}),
                sampling=request_sampling(endpoint.sampling),
                limits=AgentLimits.from_sampling(endpoint.sampling),
                before_model_call=_connection_release,
            )
    raise ValueError(f"unknown policy {rollout.policy!r}")


def _connection_release() -> None:
    """Give this thread's database connection back to the pool while the model thinks (never mid-transaction)."""
    if "pool" in connection.settings_dict.get("OPTIONS", {}) and not connection.in_atomic_block:
        connection.close()


@transaction.atomic
def _rollout_store(*, rollout: Rollout, run: AgentRun | None, judgement: Judgement | None, crash: str) -> Rollout:
    now = timezone.now()
    if run is not None:
        rollout.messages = _storable(run.messages)
        rollout.tool_calls = _storable(run.tool_calls)
        rollout.final_answer = run.final_answer.replace("\x00", "")
        rollout.turns = run.turns
        rollout.prompt_tokens = run.prompt_tokens
        rollout.completion_tokens = run.completion_tokens
        rollout.malformed_tool_calls = run.malformed_tool_calls
        rollout.endpoint_retries = run.endpoint_retries
        rollout.latency_ms = round(run.latency_ms, 3)
    failed = bool(crash) or run is None or run.stop_reason == STOP_ENDPOINT_ERROR
    rollout.status = RolloutStatus.FAILED if failed else RolloutStatus.FINISHED
    # A limit reached is a finished rollout without a final answer (judged: the agent did not finish the job).
    rollout.failure_reason = crash or (run.failure_reason if run is not None else "")
    rollout.finished_at = now
    rollout.verdicts = judgement.verdicts if judgement else []
    rollout.trajectory_hash = judgement.trajectory_hash if judgement else ""
    rollout.reward = judgement.final_reward if judgement else None
    rollout.passed = judgement.passed if judgement else None
    if judgement is not None and judgement.final:
        # Every verdict decided (no llm criterion, no error): this is the judgement the judge would store again
        # (the same rubric, trajectory and cache), so the rollout is judged now and the judge step is skipped.
        rollout.judge_errors = judgement.errors
        rollout.judged_at = now
    rollout.save()
    return rollout


def rollout_judged_without_judge(rollout: Rollout) -> Rollout:
    """Mark a finished rollout judged with no judge configured: its stored verdicts are what the judgement
    would store again (programmatic ones from the cache, llm ones pending), so only the stamp is written."""
    rollout.judge_errors = sum(1 for v in rollout.verdicts if v.get("status") == "error")
    rollout.judged_at = timezone.now()
    rollout.save(update_fields=["judge_errors", "judged_at"])
    return rollout


def rollout_needs_llm_judge(rollout: Rollout) -> bool:
    """Whether any verdict of the rollout still waits for the LLM judge."""
    return any(v.get("status") == "pending" for v in rollout.verdicts)


def rollout_judge(*, rollout: Rollout, judge_config=None, client=None) -> Judgement:
    """Judge a finished rollout through the one judgement and store verdicts, reward, pass and judge errors.

    Programmatic verdicts come from the cache (made when its episode closed); llm ones from ``judge_config``
    (pending without one). The reward stays None until every verdict is decided.
    """
    judgement = trajectory_judge(
        rubric=rubric_of_version(rollout.version),
        trajectory=rollout_trajectory(rollout),
        judge_config=judge_config,
        client=client,
    )
    _rollout_judgement_store(rollout=rollout, judgement=judgement)
    return judgement


def rollout_judge_store(*, rollout: Rollout, judge_config=None, client=None) -> Rollout:
    """Judge a finished rollout (see :func:`rollout_judge`) and return it with its judgement stored."""
    rollout_judge(rollout=rollout, judge_config=judge_config, client=client)
    return rollout


@transaction.atomic
def _rollout_judgement_store(*, rollout: Rollout, judgement: Judgement) -> Rollout:
    rollout.trajectory_hash = judgement.trajectory_hash
    rollout.verdicts = judgement.verdicts
    rollout.reward = judgement.final_reward
    rollout.passed = judgement.passed
    rollout.judge_errors = judgement.errors
    rollout.judged_at = timezone.now()
    rollout.save(update_fields=["trajectory_hash", "verdicts", "reward", "passed", "judge_errors", "judged_at"])
    return rollout
