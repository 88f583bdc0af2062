"""What a task's calibration page, a trajectory page and the labelling page show, read for the page.

The task page's figures (per calibration: criteria pass rates, pass@k and pass^k, flags; per policy: rewards and
pass rates, as charts), a trajectory's conversation, tool calls, state diff and verdicts, and the verdicts to
label with the criterion and a rollout each.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from corecraft_site.canonical import sorted_json
from rubrics_app.models import Verdict
from tasks_app.calibration.charts import bar_chart, percent, strip_chart
from tasks_app.models import CalibrationFlag, Criterion, Rollout, Task, TaskCalibration, TaskVersion
from world_app.episodes import EpisodeError, episode_diff


def task_version_shown(task: Task, wanted: str) -> tuple[list[TaskVersion], TaskVersion | None]:
    """The task's versions, newest first, and the one asked for by number (else the current one, else the newest);
    ``None`` when the task has no version."""
    versions = list(task.versions.order_by("-number").only("id", "number", "task_id"))
    if not versions:
        return versions, None
    version = next((v for v in versions if str(v.number) == wanted), None)
    if version is None:
        version = next((v for v in versions if v.pk == task.current_version_id), versions[0])
    return versions, version


def task_calibration_figures(version: TaskVersion) -> dict[str, Any]:
    """The version's calibrations (newest first) with their rows for the page, its criteria, and the charts of
    its finished rollouts' rewards and pass rates per policy."""
    calibrations = list(
        TaskCalibration.objects.filter(version=version).select_related("judge_config", "run").order_by("-updated_at")
    )
    criteria = list(Criterion.objects.filter(version=version).order_by("position"))
    for calibration in calibrations:
        calibration.criteria_rows = [
            {"criterion": c, "rate": calibration.criterion_pass_rates.get(str(c.key))} for c in criteria
        ]
        calibration.flag_labels = [CalibrationFlag(f).label for f in calibration.flags if f in CalibrationFlag.values]
        calibration.k_rows = [
            {"k": k, "at": calibration.pass_at_k.get(k), "hat": calibration.pass_hat_k.get(k)}
            for k in sorted(calibration.pass_at_k, key=int)
        ]
        calibration.policy_rows = sorted((calibration.per_policy or {}).items())
    stats = list(
        Rollout.objects.filter(version=version, status="finished")
        .order_by()
        .values_list("policy_label", "reward", "passed")
    )
    rewards_by_label: dict[str, list[float]] = defaultdict(list)
    passes_by_label: dict[str, list[bool]] = defaultdict(list)
    for label, reward_value, passed in stats:
        if reward_value is not None:
            rewards_by_label[label].append(reward_value)
        if passed is not None:
            passes_by_label[label].append(passed)
    policy_bars = [
        (label, sum(p) / len(p) if p else None, f"{percent(sum(p) / len(p) if p else None)} of {len(p)}")
        for label, p in sorted(passes_by_label.items())
    ]
    return {
        "calibrations": calibrations,
        "criteria": criteria,
        "reward_chart": strip_chart(sorted(rewards_by_label.items()), title="Reward distribution per policy"),
        "policy_chart": bar_chart(policy_bars, title="Pass rate per policy / model"),
    }


def rollout_trajectory(rollout: Rollout) -> dict[str, Any]:
    """A rollout's verdicts (with their criteria), state diff, conversation and tool calls, shaped for the page."""
    criteria = {str(c.key): c for c in Criterion.objects.filter(version=rollout.version_id)}
    verdicts = [
        {**verdict, "criterion": criteria.get(verdict.get("key")), "evidence_text": _evidence_text(verdict)}
        for verdict in rollout.verdicts or []
    ]
    diff, diff_error = None, ""
    if rollout.episode_id is not None:
        try:
            diff = episode_diff(rollout.episode)
        except EpisodeError as exc:
            diff_error = f"The episode's world could not be read: {exc}"
    return {
        "verdicts": verdicts,
        "diff": diff,
        "diff_rows": _diff_rows(diff) if diff else [],
        "diff_error": diff_error,
        "conversation": [_message_view(m) for m in rollout.messages or []],
        "tool_calls": [
            {**call, "arguments_text": _pretty(call.get("arguments")), "result_text": _pretty(call.get("result"))}
            for call in rollout.tool_calls or []
        ],
    }


def _pretty(value: Any, limit: int = 6000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit} more characters)"


def _evidence_text(verdict: dict) -> str:
    evidence = verdict.get("evidence")
    if evidence in (None, "", [], {}):
        return ""
    return evidence if isinstance(evidence, str) else sorted_json(evidence)


def _message_view(message: dict) -> dict:
    calls = [
        {"name": (c.get("function") or {}).get("name", "?"), "arguments": (c.get("function") or {}).get("arguments")}
        for c in message.get("tool_calls") or []
    ]
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in content)
    role = message.get("role", "?")
    return {
        "role": role,
        "content": _pretty(content, 4000) if content else "",
        "calls": calls,
        "name": message.get("name") or message.get("tool_call_id") or "",
    }


def _diff_rows(diff: dict) -> list[dict]:
    rows = []
    for change in ("created", "updated", "deleted"):
        for entry in diff.get(change, []):
            if change == "updated":
                fields = [
                    {"name": name, "before": _pretty(v.get("before"), 300), "after": _pretty(v.get("after"), 300)}
                    for name, v in sorted(entry.get("fields", {}).items())
                ]
            else:
                fields = [
                    {
                        "name": name,
                        "before": "" if change == "created" else _pretty(value, 300),
                        "after": "" if change == "deleted" else _pretty(value, 300),
                    }
                    for name, value in sorted((entry.get("row") or {}).items())
                ]
            rows.append({"change": change, "model": entry.get("model"), "pk": entry.get("pk"), "fields": fields})
    return rows


def verdict_label_cards(verdicts: list[Verdict]) -> list[dict]:
    """Each verdict with its criterion and one rollout that has its trajectory (two queries for the batch)."""
    keys = {(v.criterion_key, v.criterion_hash) for v in verdicts}
    criteria = {
        (c.key, c.content_hash): c
        for c in Criterion.objects.filter(key__in={k for k, _ in keys}, content_hash__in={h for _, h in keys})
    }
    rollouts: dict[str, dict] = {}
    for row in (
        Rollout.objects.filter(trajectory_hash__in={v.trajectory_hash for v in verdicts})
        .order_by("trajectory_hash", "-created_at")
        .values("id", "trajectory_hash", "final_answer", "policy_label", "version__instruction", "version__task__title")
    ):
        rollouts.setdefault(row["trajectory_hash"], row)
    return [
        {
            "verdict": v,
            "criterion": criteria.get((v.criterion_key, v.criterion_hash)),
            "rollout": rollouts.get(v.trajectory_hash),
        }
        for v in verdicts
    ]
