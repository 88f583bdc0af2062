"""Calibration runs: task versions x policies x samples, planned as rows, started, cancelled and resumed.

The plan is frozen when the run is created: one ``CalibrationItem`` per (version, policy, endpoint,
perturbation, sample), unique in Postgres, so planning twice adds nothing. Starting a run enqueues its queued
items after the transaction commits (queue ``rollouts``). Progress is always computed from the item rows.
Cancel turns queued items into cancelled ones (running ones finish); resume re-enqueues whatever is unfinished.
Executing the items, the sweeper and the end of a run are ``calibration_items``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from rubrics_app.models import ModelEndpoint
from tasks_app.calibration.rollouts.replays import perturbation_keys, red_team_keys
from tasks_app.calibration.services.calibration_items import UNFINISHED, calibration_run_finish_check, items_enqueue
from tasks_app.calibration.services.gates import rubric_gate_current
from tasks_app.models import (
    CalibrationItem,
    CalibrationItemStatus,
    CalibrationRun,
    CalibrationRunStatus,
    RolloutPolicy,
    TaskVersion,
)
from tasks_app.perturbations import shared_replay

# Replays of a reference (perturbed or not) are deterministic: one sample of each is planned.
DETERMINISTIC_POLICIES = (RolloutPolicy.REFERENCE, RolloutPolicy.PERTURBED_REFERENCE, RolloutPolicy.RED_TEAM)


# --- planning ----------------------------------------------------------------------------------------------


def calibration_policies_clean(policies: Iterable[Any]) -> list[dict[str, Any]]:
    """``[{"policy": ..., "endpoint": id|None}]`` checked: known policies, an active endpoint for each model.

    Refused with ``ValidationError({"policies[i].policy": [why], ...})``."""
    cleaned: list[dict[str, Any]] = []
    problems: dict[str, list[str]] = {}
    for index, entry in enumerate(policies):
        if isinstance(entry, str):
            entry = {"policy": entry}
        policy = (entry or {}).get("policy")
        endpoint = (entry or {}).get("endpoint")
        if policy not in RolloutPolicy.values:
            problems[f"policies[{index}].policy"] = [f"one of {', '.join(RolloutPolicy.values)}"]
            continue
        if policy == RolloutPolicy.MODEL:
            endpoint_id = endpoint.pk if isinstance(endpoint, ModelEndpoint) else endpoint
            if endpoint_id is None or not ModelEndpoint.objects.filter(pk=endpoint_id, is_active=True).exists():
                problems[f"policies[{index}].endpoint"] = ["an active model endpoint is required"]
                continue
            entry = {"policy": policy, "endpoint": int(endpoint_id)}
        else:
            entry = {"policy": policy, "endpoint": None}
        if entry not in cleaned:
            cleaned.append(entry)
    if not cleaned and not problems:
        problems["policies"] = ["choose at least one policy"]
    if problems:
        raise ValidationError(problems)
    return cleaned


def _plan_items(*, run: CalibrationRun, versions: Sequence[TaskVersion]) -> list[CalibrationItem]:

    replayed = {p["policy"] for p in run.policies} & {RolloutPolicy.PERTURBED_REFERENCE, RolloutPolicy.RED_TEAM}
    gate_keys = {v.pk: _gate_red_team_keys(v) for v in versions} if RolloutPolicy.RED_TEAM in replayed else {}
    if not replayed or (replayed == {RolloutPolicy.RED_TEAM} and all(gate_keys.values())):
        # Nothing to replay, or every version's current gate names its red-team policies: no replay to plan.
        return _plan_version_items(run=run, versions=versions, gate_keys=gate_keys)
    items: list[CalibrationItem] = []
    by_snapshot: dict[int, list[TaskVersion]] = {}
    for version in versions:
        by_snapshot.setdefault(version.snapshot_id, []).append(version)
    # The policies' keys come from replaying each reference on its snapshot: one scratch world per snapshot.
    for group in by_snapshot.values():
        with shared_replay(group[0].snapshot):
            items += _plan_version_items(run=run, versions=group, gate_keys=gate_keys)
    return items


def _gate_red_team_keys(version: TaskVersion) -> list[str]:
    """The version's red-team policy keys (``reference`` first) as its current stored gate lists them, or [] when
    it has none. The gate was computed from the same policies (``tasks_app.red_team.version_red_team``) under the
    version's current gate key, so the keys and their order are the ones a worker builds; planning a red-team run
    of the library from them skips replaying every reference (most of the planning time)."""
    gate = rubric_gate_current(version)
    return ["reference", *(p["key"] for p in gate.policies)] if gate is not None and gate.policies else []


def _plan_version_items(
    *, run: CalibrationRun, versions: Sequence[TaskVersion], gate_keys: dict[int, list[str]]
) -> list[CalibrationItem]:

    items = []
    for version in versions:
        for entry in run.policies:
            policy, endpoint_id = entry["policy"], entry.get("endpoint")
            if policy == RolloutPolicy.MODEL:
                cells = [("", sample) for sample in range(run.samples)]
            elif policy == RolloutPolicy.PERTURBED_REFERENCE:
                cells = [(key, 0) for key in perturbation_keys(version)]
            elif policy == RolloutPolicy.RED_TEAM:
                cells = [(key, 0) for key in (gate_keys.get(version.pk) or red_team_keys(version))]
            else:
                cells = [("", 0)]
            items += [
                CalibrationItem(
                    run=run, version=version, policy=policy, endpoint_id=endpoint_id, perturbation=key, sample=sample
                )
                for key, sample in cells
            ]
    return items


@transaction.atomic
def calibration_run_plan(*, run: CalibrationRun, versions: Iterable[TaskVersion]) -> int:
    """Add the items of ``versions`` to the run's plan; items already planned are left as they are.

    Returns how many items the run has. Idempotent: the unique constraint drops repeats.
    """
    versions = list(versions)
    CalibrationItem.objects.bulk_create(_plan_items(run=run, versions=versions), ignore_conflicts=True, batch_size=500)
    return run.items.count()


@transaction.atomic
def calibration_run_create(
    *,
    name: str,
    versions: Iterable[TaskVersion],
    policies: Iterable[Any],
    samples: int = 1,
    judge_config=None,
    user=None,
) -> CalibrationRun:
    """A planned run: its items (version x policy x sample, perturbed references once per perturbation) frozen.

    Refused with ``ValidationError({argument: [why], ...})`` naming every problem."""
    versions = list(versions)
    problems: dict[str, list[str]] = {}
    if not (name or "").strip():
        problems["name"] = ["required"]
    if not versions:
        problems["versions"] = ["choose at least one task version"]
    if not isinstance(samples, int) or samples < 1 or samples > 256:
        problems["samples"] = ["a whole number from 1 to 256"]
    try:
        cleaned = calibration_policies_clean(policies)
    except ValidationError as exc:
        problems.update(exc.message_dict)
    if problems:
        raise ValidationError(problems)
    run = CalibrationRun.objects.create(
        name=name.strip()[:200],
        created_by=user if user is not None and user.is_authenticated else None,
        policies=cleaned,
        samples=samples,
        judge_config=judge_config,
    )
    calibration_run_plan(run=run, versions=versions)
    return run


# --- starting, cancelling, resuming ------------------------------------------------------------------------


@transaction.atomic
def calibration_run_start(*, run: CalibrationRun) -> CalibrationRun:
    """Mark the run running and enqueue its queued items once the transaction commits."""
    run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in (CalibrationRunStatus.PLANNED, CalibrationRunStatus.RUNNING):
        raise ValidationError(f"a {run.status} run cannot be started; resume it instead")
    run.status = CalibrationRunStatus.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.save(update_fields=["status", "started_at"])
    item_ids = list(run.items.filter(status=CalibrationItemStatus.QUEUED).order_by("pk").values_list("pk", flat=True))
    transaction.on_commit(lambda: items_enqueue(item_ids))
    if not item_ids:
        transaction.on_commit(lambda: calibration_run_finish_check(run_id=run.pk))
    return run


@transaction.atomic
def calibration_run_cancel(*, run: CalibrationRun) -> int:
    """Cancel the queued items (running ones finish); returns how many were cancelled."""
    run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
    if run.status in (CalibrationRunStatus.FINISHED, CalibrationRunStatus.FAILED):
        raise ValidationError(f"the run is already {run.status}")
    cancelled = run.items.filter(status=CalibrationItemStatus.QUEUED).update(status=CalibrationItemStatus.CANCELLED)
    run.status = CalibrationRunStatus.CANCELLED
    run.cancelled_at = timezone.now()
    run.save(update_fields=["status", "cancelled_at"])
    return cancelled


@transaction.atomic
def calibration_run_resume(*, run: CalibrationRun) -> int:
    """Queue the cancelled items again and enqueue every unfinished item (a running item whose worker is alive
    is left alone by its lock). Returns how many items were enqueued."""
    run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
    if run.status == CalibrationRunStatus.FINISHED:
        raise ValidationError("the run is finished")
    run.items.filter(status=CalibrationItemStatus.CANCELLED).update(status=CalibrationItemStatus.QUEUED)
    run.status = CalibrationRunStatus.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.cancelled_at = None
    run.save(update_fields=["status", "started_at", "cancelled_at"])
    item_ids = list(run.items.filter(status__in=UNFINISHED).order_by("pk").values_list("pk", flat=True))
    transaction.on_commit(lambda: items_enqueue(item_ids))
    if not item_ids:
        transaction.on_commit(lambda: calibration_run_finish_check(run_id=run.pk))
    return len(item_ids)


# --- reading -----------------------------------------------------------------------------------------------


def calibration_runs_item_counts(run_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{run id: {total, queued, running, done, failed, cancelled, settled, to_run}}`` in one query.

    ``settled`` is done or failed; ``to_run`` is every item but the cancelled ones. Runs without items are absent.
    """
    found: dict[int, dict[str, int]] = {}
    rows = CalibrationItem.objects.filter(run_id__in=list(run_ids)).values("run_id", "status").annotate(n=Count("pk"))
    for row in rows.order_by():
        found.setdefault(row["run_id"], dict.fromkeys(CalibrationItemStatus.values, 0))[row["status"]] = row["n"]
    return {run_id: _with_totals(counts) for run_id, counts in found.items()}


def _with_totals(counts: dict[str, int]) -> dict[str, int]:
    total = sum(counts.values())
    return {
        **counts,
        "total": total,
        "settled": counts["done"] + counts["failed"],
        "to_run": total - counts["cancelled"],
    }


def calibration_run_progress(run: CalibrationRun | int) -> dict[str, Any]:
    """``{total, done, failed, running, queued, cancelled, percent}`` counted from the item rows (one query).

    ``percent`` is the settled share (done or failed) of the items that will run (all but the cancelled ones).
    """
    run_id = run if isinstance(run, int) else run.pk
    counts = calibration_runs_item_counts([run_id]).get(run_id) or _with_totals(
        dict.fromkeys(CalibrationItemStatus.values, 0)
    )
    settled, to_run = counts.pop("settled"), counts.pop("to_run")
    counts["percent"] = round(100.0 * settled / to_run, 1) if to_run else (100.0 if counts["total"] else 0.0)
    return counts
