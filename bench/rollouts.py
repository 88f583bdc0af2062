"""Benchmark: the orchestration overhead of concurrent model rollouts, and programmatic verdicts per second.

Run by hand against the database named by DATABASE_URL: ``.venv/bin/python bench/rollouts.py
[--concurrency 64] [--latency 1.0] [--turns 6] [--spread lockstep|lognormal] [--sigma 0.5]``. Seeds the
default world (seed 7, scale 1) when the world is empty and publishes a snapshot when none matches the live world.
Then:

- starts the scripted OpenAI-compatible server (corecraft_site/llm/scripted_server.py) in its own process, one
  script per model: every completion takes ``--latency`` seconds; a rollout is ``--turns`` completions (tool
  calls reading and writing the world over turns-1 turns, then the final answer);
- runs ``--concurrency`` rollouts at once (a thread each) through ``rollout_execute``: a fresh episode, the
  agent loop over HTTP, every tool call in the episode, the trajectory stored, the episode closed and judged;
- wall time against the ideal (the slowest rollout's completions back to back) is the orchestration overhead
  (target <= 10% with ``--spread lognormal``, <= 25% in lock-step);
- then judges the finished rollouts again with ``criteria_evaluate`` (each from its closed episode's log):
  programmatic verdicts per second.

Then tau2-bench's own runner in the same run (bench/peers/tau2_retail.py under tau2's Python, ``--tau2-python``;
skipped with a note when not installed): N simulations at once (``max_concurrency`` N) with its agent and user
simulator on the same scripted server and the same latencies, and its reward (``evaluate_simulation``) CPU.
It prints a table, then last a one-line JSON object with every figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measuring import pct  # noqa: E402
from bench.tau2_peer import HELP, rollout_scripts, rollouts_report, tau2_python, tau2_run  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")
# Rollouts hand their connection back to the pool while the model thinks; a few spare for the judge's reads.
os.environ.setdefault("DB_POOL_MAX", "24")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

# No query log (the worker processes import this module too): measure the rollouts, not Django's debug cursor.
settings.DEBUG = False

from django.db import connection  # noqa: E402

from bench.rollout_setup import LABEL, bench_task, latencies, script, server_start, world_ready  # noqa: E402
from rubrics_app.endpoints import endpoint_client  # noqa: E402
from rubrics_app.models import ModelEndpoint  # noqa: E402
from rubrics_app.programmatic import criteria_evaluate  # noqa: E402
from tasks_app.calibration.rollouts import rollout_create, rollout_execute  # noqa: E402
from tasks_app.models import Rollout, RolloutPolicy, RolloutStatus  # noqa: E402
from world_app.models import Order  # noqa: E402

TARGET_OVERHEAD = 0.10  # with spread latencies; lock-step (every rollout answered at the same instant): 0.25
TARGET_OVERHEAD_LOCKSTEP = 0.25
VERDICT_PASSES = 3
PHASE_ROLLOUTS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds per completion.")
    parser.add_argument("--turns", type=int, default=6, help="Completions per rollout (the last is the answer).")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="Worker processes (threads "
                        "inside share the rollouts), as Celery prefork workers would.")  # fmt: skip
    parser.add_argument("--spread", choices=("lockstep", "lognormal"), default="lockstep",
                        help="Every completion takes --latency (lock-step: all rollouts answer at once), or a "
                        "lognormal draw with that mean (seeded).")  # fmt: skip
    parser.add_argument("--sigma", type=float, default=0.5, help="The lognormal's sigma (log-space spread).")
    parser.add_argument("--tau2-python", help=HELP)
    args = parser.parse_args()

    world_ready()
    order = Order.objects.filter(status="paid").order_by("pk").first()
    version = bench_task(order)
    rng = random.Random(7)
    delays = [
        latencies(turns=args.turns, latency=args.latency, spread=args.spread, sigma=args.sigma, rng=rng)
        for _ in range(args.concurrency)
    ]
    # The ideal batch: every rollout's completions back to back with no orchestration at all; the slowest decides.
    args.ideal_s = max(sum(d) for d in delays)
    scripts = {f"bench-{i}": script(order, turns=args.turns, latency=delays[i]) for i in range(args.concurrency)}
    scripts["bench-phases"] = script(order, turns=args.turns, latency=0.0) * (PHASE_ROLLOUTS + 1)
    python = tau2_python(args.tau2_python)
    with tempfile.TemporaryDirectory() as tmp:
        peer_scripts = rollout_scripts(python, delays, Path(tmp))  # tau2's simulations: their own model names
        server, base_url = server_start({**scripts, **(peer_scripts or {})}, Path(tmp) / "script.json")
        try:
            figures = run(version, base_url=base_url, args=args)
            figures.update(phases(version, base_url=base_url))
            delays_file = str(Path(tmp) / "tau2_delays.json")
            peer = (
                tau2_run(python, "rollouts", "--delays", delays_file, "--base-url", base_url) if peer_scripts else None
            )
        finally:
            server.terminate()
            server.wait(timeout=10)
    reward = tau2_run(python, "reward", "--repeat", "1") if peer else None
    report(figures, args)
    if peer or reward:
        rollouts_report(figures, peer, reward)
    print(json.dumps({"bench": LABEL, **figures, "tau2": {"rollouts": peer, "reward": reward}}, sort_keys=True))


def worker(rollout_ids: list[int], barrier) -> tuple[list[tuple[int, float]], float]:
    """One process of the pool: warm up, wait for the others, run its rollouts in threads at once.

    Returns (rollout id, time.time() when done) per rollout, and the process's CPU seconds in the batch.
    """
    from world_app.episodes import episode_close, episode_create
    from world_app.tools.registry import tool_schemas

    rollouts = list(Rollout.objects.filter(pk__in=rollout_ids).select_related("version__snapshot", "endpoint"))
    # One-time costs of a fresh worker process (the snapshot image, the tool modules, the HTTP clients).
    tool_schemas("openai")
    episode_close(episode_create(snapshot=rollouts[0].version.snapshot, label=f"{LABEL} warm-up"))
    for rollout in rollouts:
        endpoint_client(rollout.endpoint)
    connection.close()
    threads_ready = threading.Barrier(len(rollouts) + 1)
    done_at: list[tuple[int, float]] = []

    def one(rollout: Rollout) -> None:
        threads_ready.wait()
        try:
            rollout_execute(rollout=rollout)
            done_at.append((rollout.pk, time.time()))
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(rollouts)) as pool:
        futures = [pool.submit(one, r) for r in rollouts]
        barrier.wait()
        cpu = time.process_time()
        threads_ready.wait()
        for future in futures:
            future.result()
        cpu = time.process_time() - cpu
    return done_at, cpu


def run(version, *, base_url: str, args) -> dict:
    endpoints = []
    for i in range(args.concurrency):
        endpoint, _ = ModelEndpoint.objects.update_or_create(
            name=f"bench-{i}",
            defaults={"base_url": base_url, "model": f"bench-{i}", "timeout_s": 60, "max_retries": 2,
                      "sampling": {"max_turns": args.turns + 2}},
        )  # fmt: skip
        endpoints.append(endpoint)
    ids = [rollout_create(version=version, policy=RolloutPolicy.MODEL, endpoint=e).pk for e in endpoints]
    connection.close()
    processes = max(1, min(args.processes, args.concurrency))
    shares = [ids[p::processes] for p in range(processes)]
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        barrier = manager.Barrier(processes + 1)
        futures = [pool.submit(worker, share, barrier) for share in shares]
        barrier.wait()
        began = time.time()
        outcomes = [f.result() for f in futures]
        wall = time.time() - began
    finished_at = dict(pair for done_at, _cpu in outcomes for pair in done_at)
    cpu_s = sum(cpu for _done_at, cpu in outcomes)
    results = list(Rollout.objects.filter(pk__in=ids).select_related("episode"))
    per_rollout = [finished_at[r.pk] - began for r in results if r.pk in finished_at]
    ideal = args.ideal_s
    target = TARGET_OVERHEAD_LOCKSTEP if args.spread == "lockstep" else TARGET_OVERHEAD
    failed = [r for r in results if r.status != RolloutStatus.FINISHED]
    tool_ms = [call["latency_ms"] for r in results for call in r.tool_calls or ()]

    # Programmatic verdicts per second: the judge's deterministic pass over each finished rollout.
    criteria = list(version.criteria.order_by("position"))
    finished = [r for r in results if r.status == RolloutStatus.FINISHED]
    verdicts = 0
    t0 = time.perf_counter()
    for _ in range(VERDICT_PASSES):
        for rollout in finished:
            verdicts += len(
                criteria_evaluate(criteria=criteria, episode=rollout.episode, final_answer=rollout.final_answer)
            )
    judge_s = time.perf_counter() - t0
    return {
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "spread": args.spread,
        "sigma": args.sigma if args.spread == "lognormal" else 0.0,
        "turns": args.turns,
        "tool_calls_per_rollout": statistics.mean(len(r.tool_calls) for r in results),
        "finished": len(finished),
        "failed": len(failed),
        "passed": sum(1 for r in finished if r.passed),
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "overhead_pct": round(100 * (wall / ideal - 1), 2),
        "rollout_done_p50_s": round(pct(per_rollout, 0.5), 3),
        "rollout_done_p95_s": round(pct(per_rollout, 0.95), 3),
        "rollout_done_max_s": round(max(per_rollout), 3) if per_rollout else None,
        "agent_loop_p50_ms": round(pct([r.latency_ms for r in results], 0.5), 1),
        # A tool call's wall time in the batch (its CPU plus any queueing behind the other rollouts' work).
        "tool_call_p50_ms": round(pct(tool_ms, 0.5), 2),
        "tool_call_p95_ms": round(pct(tool_ms, 0.95), 2),
        "processes": processes,
        "cpu_ms_per_rollout": round(1000 * cpu_s / len(results), 1),
        "completions_per_s": round(sum(r.turns for r in results) / wall, 1),
        "programmatic_verdicts": verdicts,
        "programmatic_verdicts_per_s": round(verdicts / judge_s, 1),
        "target_overhead_pct": target * 100,
        "meets_target": wall / ideal - 1 <= target and not failed,
    }


def phases(version, *, base_url: str) -> dict:
    """Where a rollout's CPU goes, one rollout at a time at zero model latency (ms of this process's CPU, p50):
    the episode made, the agent loop (HTTP client, tool calls), judging on the open episode, the close, and judging
    again from the closed episode's log (what a later judge does)."""
    from tasks_app.calibration.rollouts.agent import agent_loop
    from world_app.episodes import episode_close, episode_create
    from world_app.tools.steps import call_tool_step

    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name="bench-phases", defaults={"base_url": base_url, "model": "bench-phases", "timeout_s": 60}
    )
    client = endpoint_client(endpoint)
    criteria = list(version.criteria.order_by("position"))
    samples: dict[str, list[float]] = {}
    for index in range(PHASE_ROLLOUTS + 1):
        marks = [time.process_time()]
        episode = episode_create(snapshot=version.snapshot, label=f"{LABEL} phases")
        marks.append(time.process_time())

        def run_tool(name, arguments, episode=episode):
            step = call_tool_step(episode, name, arguments)
            return step.result, step.seq

        loop = agent_loop(client=client, instruction=version.instruction, run_tool=run_tool)
        marks.append(time.process_time())
        criteria_evaluate(criteria=criteria, episode=episode, final_answer=loop.final_answer)
        marks.append(time.process_time())
        episode_close(episode)
        marks.append(time.process_time())
        criteria_evaluate(criteria=criteria, episode=episode, final_answer=loop.final_answer)
        marks.append(time.process_time())
        if index == 0:
            continue  # the first pays the process's one-time costs
        for name, (start, end) in zip(
            ("create", "agent_loop", "judge_open", "close", "judge_closed"), itertools.pairwise(marks), strict=True
        ):
            samples.setdefault(name, []).append(1000 * (end - start))
    return {f"cpu_ms_{name}": round(pct(values, 0.5), 1) for name, values in samples.items()}


def report(figures: dict, args) -> None:
    calls = figures["tool_calls_per_rollout"]
    spread = "each" if figures["spread"] == "lockstep" else f"on average, lognormal sigma {figures['sigma']}"
    print(f"{LABEL}: {figures['concurrency']} concurrent rollouts, {figures['turns']} completions of "
          f"{figures['latency_s']} s {spread} ({calls:.0f} tool calls per rollout); load average "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    rows = [
        ("rollouts finished / failed / passed", f"{figures['finished']} / {figures['failed']} / {figures['passed']}"),
        ("wall time of the batch", f"{figures['wall_s']:.3f} s"),
        ("ideal (the slowest rollout's completions)", f"{figures['ideal_s']:.3f} s"),
        ("orchestration overhead", f"{figures['overhead_pct']:.2f} % (<= {figures['target_overhead_pct']:.0f} %)"),
        ("rollout done p50 / p95", f"{figures['rollout_done_p50_s']:.3f} s / {figures['rollout_done_p95_s']:.3f} s"),
        ("agent loop p50 (model + tools)", f"{figures['agent_loop_p50_ms']:.1f} ms"),
        ("tool call in the batch p50 / p95", f"{figures['tool_call_p50_ms']:.2f} ms / "
                                             f"{figures['tool_call_p95_ms']:.2f} ms"),
        ("worker processes", f"{figures['processes']}"),
        ("CPU per rollout (all phases)", f"{figures['cpu_ms_per_rollout']:.1f} ms"),
        ("  of which, one at a time (p50):", ""),
        ("    episode create", f"{figures['cpu_ms_create']:.1f} ms"),
        ("    agent loop (client + tools)", f"{figures['cpu_ms_agent_loop']:.1f} ms"),
        ("    judge, open episode", f"{figures['cpu_ms_judge_open']:.1f} ms"),
        ("    episode close", f"{figures['cpu_ms_close']:.1f} ms"),
        ("    judge, closed episode", f"{figures['cpu_ms_judge_closed']:.1f} ms"),
        ("completions per second", f"{figures['completions_per_s']:.1f}"),
        ("programmatic verdicts per second", f"{figures['programmatic_verdicts_per_s']:.1f} "
                                             f"({figures['programmatic_verdicts']} verdicts)"),
    ]  # fmt: skip
    for name, value in rows:
        print(f"  {name:<36}{value}")


if __name__ == "__main__":
    main()
