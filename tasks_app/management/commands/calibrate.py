"""Run a calibration headless and print a JSON summary (the same run the calibration pages start)."""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from corecraft_site.service_errors import error_lines
from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.calibration.metrics import red_team_outcomes
from tasks_app.calibration.services.calibration import (
    calibration_run_create,
    calibration_run_progress,
    calibration_run_start,
)
from tasks_app.calibration.services.calibration_items import calibration_run_execute_inline
from tasks_app.models import (
    CalibrationRun,
    CalibrationRunStatus,
    Rollout,
    RolloutPolicy,
    Task,
    TaskCalibration,
    TaskStatus,
)
from tasks_app.red_team import REFERENCE, RedTeamReport, red_team_flags, red_team_summary

POLICY_ALIASES = {
    "perturbed-reference": RolloutPolicy.PERTURBED_REFERENCE,
    "perturbed": RolloutPolicy.PERTURBED_REFERENCE,
    "red-team": RolloutPolicy.RED_TEAM,
}


class Command(BaseCommand):
    help = (
        "Calibrate tasks: roll out each policy on each task's current version, judge, and print a JSON summary "
        "(per task pass rate, mean reward, difficulty and flags). Runs in this process unless --wait is given."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--policy",
            action="append",
            dest="policies",
            help="model, reference, perturbed_reference or red_team (the reference and every must-fail and "
            "must-pass policy of tasks_app.red_team); repeat for several (default: reference).",
        )
        parser.add_argument("--samples", type=int, default=1, help="Samples per task for model policies.")
        parser.add_argument("--tasks", nargs="+", type=int, metavar="ID", help="Task ids (default: every task "
                            "with a version that is not retired).")  # fmt: skip
        parser.add_argument("--endpoint", action="append", dest="endpoints", default=[],
                            help="Model endpoint name for --policy model; repeat for several models.")  # fmt: skip
        parser.add_argument("--judge", help="Judge configuration name for llm criteria (default: none, pending).")
        parser.add_argument("--name", help="Run name (default: 'calibrate <policies>').")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--eager", action="store_true", help="Run every item in this process (the default).")
        mode.add_argument("--wait", action="store_true", help="Enqueue to the Celery workers and wait for them.")
        parser.add_argument("--timeout", type=float, default=3600.0, help="With --wait: give up after this long.")

    def handle(self, *args, **options) -> None:
        policies = self._policies(options["policies"] or ["reference"], options["endpoints"])
        versions = self._versions(options["tasks"])
        judge_config = self._judge(options["judge"])
        name = options["name"] or "calibrate " + ", ".join(sorted({p["policy"] for p in policies}))
        try:
            run = calibration_run_create(
                name=name,
                versions=versions,
                policies=policies,
                samples=options["samples"],
                judge_config=judge_config,
                user=None,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(error_lines(exc))) from None
        started = time.monotonic()
        if options["wait"]:
            run = self._wait(run, timeout=options["timeout"])
        else:
            run = calibration_run_execute_inline(run=run)
        seconds = time.monotonic() - started
        red_team = any(p["policy"] == RolloutPolicy.RED_TEAM for p in policies)
        summary = calibration_summary(run, compact_labels=red_team)
        self.stdout.write(json.dumps(summary, indent=2, sort_keys=True, default=str))
        if red_team:
            # Last, on one line: the red team's figures per policy over the run's tasks.
            self.stdout.write(json.dumps(red_team_run_summary(run, seconds=seconds), sort_keys=True))

    def _policies(self, names: list[str], endpoint_names: list[str]) -> list[dict[str, Any]]:
        policies: list[dict[str, Any]] = []
        for raw in names:
            policy = POLICY_ALIASES.get(raw, raw)
            if policy not in RolloutPolicy.values:
                raise CommandError(f"--policy {raw}: one of {', '.join(RolloutPolicy.values)}")
            if policy != RolloutPolicy.MODEL:
                policies.append({"policy": policy, "endpoint": None})
                continue
            if not endpoint_names:
                raise CommandError("--policy model needs --endpoint NAME")
            for endpoint_name in endpoint_names:
                endpoint = ModelEndpoint.objects.filter(name=endpoint_name).first()
                if endpoint is None:
                    known = ", ".join(ModelEndpoint.objects.values_list("name", flat=True)) or "none"
                    raise CommandError(f"--endpoint {endpoint_name}: no such endpoint (known: {known})")
                policies.append({"policy": policy, "endpoint": endpoint.pk})
        return policies

    def _versions(self, task_ids: list[int] | None) -> list:
        tasks = Task.objects.exclude(current_version=None).select_related("current_version").order_by("pk")
        if task_ids:
            tasks = tasks.filter(pk__in=task_ids)
            missing = sorted(set(task_ids) - {t.pk for t in tasks})
            if missing:
                raise CommandError(f"--tasks: no task (with a version) with id {', '.join(map(str, missing))}")
        else:
            tasks = tasks.exclude(status=TaskStatus.RETIRED)
        versions = [t.current_version for t in tasks]
        if not versions:
            raise CommandError("no tasks to calibrate")
        return versions

    def _judge(self, name: str | None):
        if not name:
            return None
        judge_config = JudgeConfig.objects.filter(name=name).first()
        if judge_config is None:
            raise CommandError(f"--judge {name}: no such judge configuration")
        return judge_config

    def _wait(self, run: CalibrationRun, *, timeout: float) -> CalibrationRun:
        calibration_run_start(run=run)
        deadline = time.monotonic() + timeout
        last = None
        while True:
            run.refresh_from_db()
            progress = calibration_run_progress(run)
            if progress != last:
                sys.stderr.write(f"run {run.pk}: {json.dumps(progress, sort_keys=True)}\n")
                last = progress
            if run.status not in (CalibrationRunStatus.RUNNING, CalibrationRunStatus.PLANNED):
                return run
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.pk} did not finish in {timeout:.0f} s: {json.dumps(progress)}")
            time.sleep(1.0)


def red_team_run_summary(run: CalibrationRun, *, seconds: float | None = None) -> dict[str, Any]:
    """Per red-team policy kind over the run's tasks: must_fail or must_pass, the share of tasks passed and the
    mean partial reward (llm criteria pending unless the run has a judge), from the run's red_team rollouts
    (judged in real episodes); and how many tasks pass the gate, are gameable, are over-specified."""

    by_version: dict[int, list[Rollout]] = defaultdict(list)
    failed = 0
    for rollout in Rollout.objects.filter(run=run, policy=RolloutPolicy.RED_TEAM).only(
        "version_id", "policy", "policy_label", "status", "verdicts"
    ):
        if rollout.status == "finished":
            by_version[rollout.version_id].append(rollout)
        else:
            failed += 1
    reports = []
    for rollouts in by_version.values():
        outcomes = red_team_outcomes(rollouts)
        reference = next((o for o in outcomes if o.kind == REFERENCE), None)
        if reference is None:
            continue
        flags = red_team_flags(outcomes)
        rest = [o for o in outcomes if o.kind != REFERENCE]
        reports.append(RedTeamReport(reference, rest, flags["gameable"], flags["over_specified"], []))
    return {
        "run": run.pk,
        "policy": "red_team",
        "judge": run.judge_config.name if run.judge_config_id else None,
        "tasks": len(reports),
        "rollouts_failed": failed,
        "gate_passes": sum(1 for r in reports if r.gate_passes),
        "gameable": sum(1 for r in reports if r.gameable),
        "over_specified": sum(1 for r in reports if r.over_specified),
        "seconds": round(seconds, 1) if seconds is not None else None,
        "policies": red_team_summary(reports),
    }


def calibration_summary(run: CalibrationRun, *, compact_labels: bool = False) -> dict[str, Any]:
    """The run's outcome per task: pass rate and mean reward per policy label, plus the calibration flags.

    ``compact_labels`` (red-team runs: a score of labels per task) leaves the ``red_team:*`` labels' figures out
    and gives per task the policies that make it gameable or over-specified instead."""
    rollouts = (
        Rollout.objects.filter(run=run).select_related("version").order_by("version_id", "policy_label", "sample")
    )
    by_version: dict[int, dict[str, Any]] = {}
    labels: dict[int, dict[str, list[Rollout]]] = defaultdict(lambda: defaultdict(list))
    for rollout in rollouts:
        version = rollout.version
        by_version.setdefault(
            version.pk,
            {
                "task_id": version.task_id,
                "version_id": version.pk,
                "title": version.title,
                "expected_difficulty": version.difficulty,
            },
        )
        labels[version.pk][rollout.policy_label].append(rollout)
    calibrations = {
        c.version_id: c
        for c in TaskCalibration.objects.filter(version_id__in=list(by_version), judge_config=run.judge_config)
    }
    tasks = []
    for version_id, entry in by_version.items():
        entry["policies"] = {
            label: _figures(items)
            for label, items in sorted(labels[version_id].items())
            if not compact_labels or not label.startswith("red_team:")
        }
        calibration = calibrations.get(version_id)
        if calibration is not None:
            entry.update({
                "pass_at_1": calibration.pass_at_1,
                "reward_mean": calibration.reward_mean,
                "reward_std": calibration.reward_std,
                "calibrated_difficulty": calibration.calibrated_difficulty,
                "difficulty_provenance": calibration.difficulty_provenance,
                "flags": calibration.flags,
            })  # fmt: skip
            if calibration.red_team:
                entry["red_team"] = {
                    "gameable": [c["policy"] for c in calibration.red_team.get("gameable", [])],
                    "over_specified": [c["policy"] for c in calibration.red_team.get("over_specified", [])],
                }
        tasks.append(entry)
    return {
        "run": run.pk,
        "name": run.name,
        "status": run.status,
        "progress": calibration_run_progress(run),
        "tasks": tasks,
    }


def _figures(rollouts: list[Rollout]) -> dict[str, Any]:
    judged = [r for r in rollouts if r.passed is not None]
    rewards = [r.reward for r in rollouts if r.reward is not None]
    return {
        "n": len(rollouts),
        "failed": sum(1 for r in rollouts if r.status == "failed"),
        "pass_rate": round(sum(1 for r in judged if r.passed) / len(judged), 4) if judged else None,
        "reward_mean": round(sum(rewards) / len(rewards), 4) if rewards else None,
    }
