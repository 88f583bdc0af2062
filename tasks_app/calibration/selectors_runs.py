"""What the calibration run pages show: a run's progress, its results per task version with their charts, the
difficulty of the calibrated tasks, and what a new run's plan reads (approved tasks, the policies chosen).

Each is a fixed number of queries, whatever the run's size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from django.db.models import F, QuerySet

from rubrics_app.models import ModelEndpoint
from tasks_app.calibration.charts import bar_chart, difficulty_histogram, percent, strip_chart
from tasks_app.calibration.metrics import perturbed_unnoticed
from tasks_app.models import (
    CalibrationRun,
    CalibrationRunStatus,
    Rollout,
    RolloutPolicy,
    Task,
    TaskCalibration,
    TaskStatus,
    TaskVersion,
)

DONE_RUN_STATUSES = (CalibrationRunStatus.FINISHED, CalibrationRunStatus.CANCELLED, CalibrationRunStatus.FAILED)


def run_progress(run: CalibrationRun, counts: dict[str, int]) -> dict:
    """The progress bar's figures from ``calibration_runs_item_counts``: a whole percent of the settled items
    among those that will run; a finished run with no items reads 100."""
    counts = counts or {}
    total, settled, to_run = counts.get("total", 0), counts.get("settled", 0), counts.get("to_run", 0)
    finished = run.status in DONE_RUN_STATUSES
    return {
        "total": total,
        "settled": settled,
        **{status: counts.get(status, 0) for status in ("done", "failed", "running", "queued", "cancelled")},
        "percent": round(100 * settled / to_run) if to_run else (100 if finished or total else 0),
        "finished": finished,
    }


def calibrated_difficulties() -> list[str]:
    """One label per calibrated task: its current version's most recent calibration (any judge configuration)."""
    return list(
        TaskCalibration.objects.filter(version__task__current_version=F("version"))
        .exclude(calibrated_difficulty="")
        .order_by("version_id", "-updated_at")
        .distinct("version_id")
        .values_list("calibrated_difficulty", flat=True)
    )


def approved_tasks_matching(*, task_type: str = "", difficulty: str = "", family: str = "") -> list[Task]:
    """Approved tasks with a current version, of this type, difficulty and family (an empty one matches any)."""
    found = Task.objects.filter(status=TaskStatus.APPROVED, current_version__isnull=False)
    wanted = {"task_type": task_type, "difficulty": difficulty, "family": family}
    return list(found.filter(**{field: value for field, value in wanted.items() if value}).order_by("pk"))


def calibration_policies_chosen(
    *, reference: bool, perturbed_reference: bool, endpoints: Iterable[ModelEndpoint]
) -> list[dict[str, Any]]:
    """A run's policies: the reference, perturbed references, then one model policy per endpoint."""
    policies: list[dict[str, Any]] = []
    if reference:
        policies.append({"policy": RolloutPolicy.REFERENCE.value, "endpoint": None})
    if perturbed_reference:
        policies.append({"policy": RolloutPolicy.PERTURBED_REFERENCE.value, "endpoint": None})
    return policies + [{"policy": RolloutPolicy.MODEL.value, "endpoint": e.pk} for e in endpoints]


def calibration_run_results(run: CalibrationRun) -> dict:
    """Per task version of the run: its rollouts' figures, and the plots; a fixed number of queries."""
    versions = {
        v.pk: v
        for v in TaskVersion.objects.filter(calibration_items__run=run).distinct().select_related("task").order_by("pk")
    }
    rollouts = list(
        Rollout.objects.filter(run=run)
        .order_by("version_id", "policy_label", "sample")
        .values("id", "version_id", "policy", "policy_label", "status", "reward", "passed", "verdicts")
    )
    calibrations = {
        c.version_id: c
        for c in TaskCalibration.objects.filter(version_id__in=list(versions), judge_config=run.judge_config)
    }
    by_version: dict[int, list[dict]] = defaultdict(list)
    by_label: dict[str, list[dict]] = defaultdict(list)
    for rollout in rollouts:
        by_version[rollout["version_id"]].append(rollout)
        by_label[rollout["policy_label"]].append(rollout)
    rows = []
    for version_id, version in versions.items():
        items = by_version.get(version_id, [])
        model = [r for r in items if r["policy"] == RolloutPolicy.MODEL and r["passed"] is not None]
        references = [
            SimpleNamespace(**r) for r in items if r["policy"] == RolloutPolicy.REFERENCE and r["passed"] is not None
        ]
        reference = [r.passed for r in references]
        perturbed = [r for r in items if r["policy"] == RolloutPolicy.PERTURBED_REFERENCE and r["passed"] is not None]
        rows.append(
            {
                "version": version,
                "task": version.task,
                "rollouts": len(items),
                "finished": sum(1 for r in items if r["status"] == "finished"),
                "failed": sum(1 for r in items if r["status"] == "failed"),
                "model_pass_rate": (sum(1 for r in model if r["passed"]) / len(model)) if model else None,
                "model_judged": len(model),
                "reference": (all(reference) if reference else None),
                # Caught: the copy failed, or a criterion judged it differently from the reference.
                "perturbed_caught": sum(
                    1 for r in perturbed if not perturbed_unnoticed(SimpleNamespace(**r), references)
                ),
                "perturbed": len(perturbed),
                "rewards": [r["reward"] for r in items if r["reward"] is not None],
                "calibration": calibrations.get(version_id),
            }
        )
    policy_rows = []
    for label, items in sorted(by_label.items()):
        judged = [r for r in items if r["passed"] is not None]
        rate = (sum(1 for r in judged if r["passed"]) / len(judged)) if judged else None
        policy_rows.append((label, rate, f"{percent(rate)} of {len(judged)}"))
    return {
        "rows": rows,
        "reward_chart": strip_chart(
            [(f"{row['task'].title} v{row['version'].number}", row["rewards"]) for row in rows],
            title="Reward distribution per task",
        ),
        "policy_chart": bar_chart(policy_rows, title="Pass rate per policy / model"),
        "difficulty_chart": difficulty_histogram(
            [c.calibrated_difficulty for c in calibrations.values() if c.calibrated_difficulty],
            title="Difficulty of these tasks",
        ),
    }


def calibration_run_policies(run: CalibrationRun) -> list[dict[str, Any]]:
    """The run's policies, each with its endpoint row (``None`` for the references)."""
    policies = run.policies or []
    endpoint_ids = [p.get("endpoint") for p in policies if p.get("endpoint")]
    endpoints_by_id = {e.pk: e for e in ModelEndpoint.objects.filter(pk__in=endpoint_ids)}
    return [{"policy": p.get("policy"), "endpoint": endpoints_by_id.get(p.get("endpoint"))} for p in policies]


def calibration_run_rollouts(run: CalibrationRun) -> QuerySet[Rollout]:
    """The run's rollouts for its table: by task version, policy and sample, without their trajectories."""
    return (
        Rollout.objects.filter(run=run)
        .select_related("version__task", "endpoint")
        .only(
            "id",
            "policy_label",
            "sample",
            "status",
            "reward",
            "passed",
            "turns",
            "failure_reason",
            "judge_errors",
            "version__number",
            "version__task__title",
            "version__task_id",
            "endpoint__name",
        )
        .order_by("version_id", "policy_label", "sample", "pk")
    )
