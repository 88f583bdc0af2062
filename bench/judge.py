"""Judging cost per trajectory through the single entry point, beside the old path, and the red-team calibration.

On the database of ``make demo`` (the demo's tasks loaded): for ``--tasks N`` tasks, each red-team trajectory
(``tasks_app.red_team``: the reference, dump, spray, echo, a rewording...) is played once in a real episode of
the task's snapshot, then judged

- **new, programmatic**: ``rubrics_app.judgement.trajectory_judge`` without a judge configuration (llm criteria
  pending), the first time (cache miss: verdicts decided and stored) and again (served from the verdict cache);
- **new, scripted LLM judge**: the same with a judge configuration whose endpoint is the scripted
  OpenAI-compatible server (``corecraft_site.llm.scripted_server``), every llm criterion asked over HTTP;
- **old path** (measured in the same run): what every scoring path did before the single judgement:
  ``rubrics_app.programmatic.criteria_evaluate`` + ``reward`` (no cache), and for the LLM judge also one
  ``rubrics_app.judge.judge_llm_criterion`` call per llm criterion (the old ``rollout_judge`` loop; its function
  is gone, its parts are not).

``--calibration`` also times ``manage.py calibrate --policy red_team --samples 1 --wait`` over every task with a
real Celery worker (``-Q default,rollouts,judging --concurrency 2``, as ``make demo`` starts it) and prints the
calibration's last line (its per-policy JSON). Prints p50/p95 per path and the ratio new/old, and last one JSON line.

    .venv/bin/python bench/judge.py [--tasks 40] [--calibration]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django  # noqa: E402

django.setup()

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer  # noqa: E402
from rubrics_app.judge import judge_llm_criterion  # noqa: E402
from rubrics_app.judgement import Trajectory, rubric_of_version, trajectory_hash, trajectory_judge  # noqa: E402
from rubrics_app.models import (  # noqa: E402
    CriterionKind,
    JudgeConfig,
    ModelEndpoint,
)
from rubrics_app.programmatic import criteria_evaluate, reward  # noqa: E402
from tasks_app.models import Task, TaskStatus  # noqa: E402
from tasks_app.red_team import version_red_team  # noqa: E402
from world_app.episodes import episode_close, episode_create  # noqa: E402
from world_app.tools.registry import call_tool_step  # noqa: E402

KINDS = ("reference", "dump", "spray", "echo", "no_call", "reword", "formats", "drop_fact")


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50_ms": None, "p95_ms": None}
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 3), "p95_ms": round(p95, 3)}


def trajectories(tasks: int) -> list[tuple]:
    """(version, rubric, Trajectory, episode) for each chosen red-team trajectory, played in a real episode."""
    out = []
    chosen = Task.objects.filter(status=TaskStatus.APPROVED).select_related("current_version__snapshot")
    for task in chosen.order_by("pk")[:tasks]:
        version = task.current_version
        rubric = rubric_of_version(version)
        seen = set()
        for policy in version_red_team(version):
            if policy.kind not in KINDS or policy.kind in seen:
                continue
            seen.add(policy.kind)
            episode = episode_create(snapshot=version.snapshot, label=f"bench judge: {policy.key}")
            for call in policy.solution["calls"]:
                call_tool_step(episode, call["tool"], call.get("arguments") or {})
            trajectory = Trajectory.from_episode(
                episode=episode,
                instruction=version.instruction,
                snapshot_version=version.snapshot.version,
                final_answer=policy.solution["final_answer"],
            )
            out.append((version, rubric, trajectory, episode))
    return out


def verdict_reply(request_count: int) -> list[Reply]:
    return [
        Reply(content=json.dumps({"met": i % 2 == 0, "rationale": "scripted", "evidence": "bench"}))
        for i in range(request_count)
    ]


def timed(fn, /, **kwargs) -> float:
    began = time.perf_counter()
    fn(**kwargs)
    return (time.perf_counter() - began) * 1000


def old_programmatic(*, criteria: list, episode, final_answer: str) -> dict:
    return reward(criteria_evaluate(criteria=criteria, episode=episode, final_answer=final_answer))


def old_with_llm(*, criteria: list, episode, trajectory, config) -> dict:
    """The pre-judgement path with an LLM judge: programmatic verdicts, then one judge call per llm criterion."""
    verdicts = criteria_evaluate(criteria=criteria, episode=episode, final_answer=trajectory.final_answer)
    digest = hashlib.sha256(f"old path {trajectory_hash(trajectory)}".encode()).hexdigest()
    for index, criterion in enumerate(criteria):
        if criterion.kind == CriterionKind.LLM:
            judge_llm_criterion(
                judge_config=config,
                criterion=criterion,
                instruction=trajectory.instruction,
                tool_calls=trajectory.tool_call_dicts(),
                final_answer=trajectory.final_answer,
                trajectory_hash=digest,
            )
            verdicts[index]["status"] = "met"
    return reward(verdicts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--calibration", action="store_true", help="Also time the red-team calibration (minutes).")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument(
        "--calibration-tasks",
        type=int,
        default=0,
        help="Time the calibration on the first N tasks only (default: every task, as make demo loads them).",
    )
    args = parser.parse_args()
    if not Task.objects.filter(status=TaskStatus.APPROVED).exists():
        print("no approved task: run `make demo` (or load_tasks) first")
        return 2
    started = time.perf_counter()
    items = trajectories(args.tasks)
    built = time.perf_counter() - started
    figures: dict[str, list[float]] = {k: [] for k in ("old", "new_cold", "new_cached", "old_llm", "new_llm")}
    for version, rubric, trajectory, episode in items:
        criteria = list(version.criteria.order_by("position"))
        answer = trajectory.final_answer
        figures["old"].append(timed(old_programmatic, criteria=criteria, episode=episode, final_answer=answer))
        figures["new_cold"].append(timed(trajectory_judge, rubric=rubric, trajectory=trajectory))
        figures["new_cached"].append(timed(trajectory_judge, rubric=rubric, trajectory=trajectory))
    llm_items = [item for item in items if any(c.kind == CriterionKind.LLM for c in item[1])]
    llm_calls = sum(2 * sum(1 for c in item[1] if c.kind == CriterionKind.LLM) for item in llm_items)
    with ScriptedLLMServer(verdict_reply(llm_calls + 10)) as server:
        endpoint, _ = ModelEndpoint.objects.update_or_create(
            name="bench-judge-scripted",
            defaults={"base_url": server.base_url, "model": "scripted", "max_retries": 0, "timeout_s": 10},
        )
        config = JudgeConfig.objects.filter(name="bench-judge-scripted").first()
        if config is None:
            config = JudgeConfig.objects.create(name="bench-judge-scripted", endpoint=endpoint)
        old_config, _ = JudgeConfig.objects.get_or_create(name="bench-judge-scripted-old", endpoint=endpoint)
        stamp = str(time.time_ns())
        for version, rubric, trajectory, episode in llm_items:
            criteria = list(version.criteria.order_by("position"))
            # A fresh instruction suffix makes every trajectory new to the verdict cache (both paths judge).
            fresh = Trajectory.of(
                instruction=trajectory.instruction + f"\n[bench {stamp}]",
                snapshot_version=trajectory.snapshot_version,
                tool_calls=trajectory.tool_call_dicts(),
                final_answer=trajectory.final_answer,
                episode=episode,
            )

            figures["old_llm"].append(
                timed(old_with_llm, criteria=criteria, episode=episode, trajectory=fresh, config=old_config)
            )
            figures["new_llm"].append(timed(trajectory_judge, rubric=rubric, trajectory=fresh, judge_config=config))
    for _, _, _, episode in items:
        episode_close(episode)
    summary = {name: percentiles(values) for name, values in figures.items()}
    print(
        f"{len(items)} trajectories of {args.tasks} tasks (played in {built:.1f}s); {len(llm_items)} with llm criteria"
    )
    print(f"{'path':<12} {'n':>5} {'p50 ms':>9} {'p95 ms':>9}")
    for name, row in summary.items():
        p50 = "-" if row["p50_ms"] is None else f"{row['p50_ms']:.2f}"
        p95 = "-" if row["p95_ms"] is None else f"{row['p95_ms']:.2f}"
        print(f"{name:<12} {row['n']:>5} {p50:>9} {p95:>9}")
    ratios = {}
    for new, old in (("new_cold", "old"), ("new_cached", "old"), ("new_llm", "old_llm")):
        if summary[new]["p50_ms"] and summary[old]["p50_ms"]:
            ratios[f"{new}/{old}_p50"] = round(summary[new]["p50_ms"] / summary[old]["p50_ms"], 3)
    for name, value in ratios.items():
        print(f"ratio {name}: {value}")
    calibration = None
    if args.calibration:
        calibration = calibration_timed(timeout=args.timeout, tasks=args.calibration_tasks)
        print(f"red-team calibration with a Celery worker: {calibration['seconds']:.1f}s")
        print(calibration["last_line"])
    print(
        json.dumps(
            {
                "trajectories": len(items),
                "paths": summary,
                "ratios": ratios,
                "calibration_seconds": calibration["seconds"] if calibration else None,
            },
            sort_keys=True,
        )
    )
    return 0


def calibration_timed(*, timeout: float, tasks: int = 0) -> dict:
    """``calibrate --policy red_team --samples 1 --wait`` with a Celery worker started for it (and stopped)."""
    env = dict(os.environ)
    python = sys.executable
    worker = subprocess.Popen(
        [
            python,
            "-m",
            "celery",
            "-A",
            "corecraft_site",
            "worker",
            "-Q",
            "default,rollouts,judging",
            "--concurrency",
            "2",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    chosen = []
    if tasks:
        ids = Task.objects.exclude(current_version=None).order_by("pk").values_list("pk", flat=True)[:tasks]
        chosen = ["--tasks", *map(str, ids)]
    try:
        time.sleep(5)
        began = time.perf_counter()
        done = subprocess.run(
            [
                python,
                "manage.py",
                "calibrate",
                "--policy",
                "red_team",
                "--samples",
                "1",
                "--wait",
                "--timeout",
                str(timeout),
                *chosen,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - began
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {"seconds": seconds, "returncode": done.returncode, "last_line": lines[-1] if lines else done.stderr[-2000:]}


if __name__ == "__main__":
    sys.exit(main())
