"""tau2-bench beside our benches, in the same run (issue 18): find tau2's Python, run the peer, print the comparison.

The peer (bench/peers/tau2_retail.py) runs under tau2-bench's own Python (>= 3.12, made by ``make tau2-peer
TAU2_REPO=...``) as a subprocess and prints one JSON object. Standard library only, so a bench imports it before it
sets Django up. Where tau2's Python is absent, the bench prints one line saying so and carries on.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "bench" / "peers" / "tau2_retail.py"
DEFAULT_PYTHON = ROOT / ".tau2-venv" / "bin" / "python"
NOT_INSTALLED = "tau2-bench: not installed (make tau2-peer TAU2_REPO=/path/to/tau2-bench)"
HELP = "tau2-bench's Python (default: $TAU2_PYTHON, else .tau2-venv/bin/python); absent: the peer is skipped."


def tau2_python(explicit: str | None = None) -> Path | None:
    """The peer's interpreter: ``--tau2-python``, else $TAU2_PYTHON, else .tau2-venv/bin/python; None when absent."""
    path = Path(explicit or os.environ.get("TAU2_PYTHON") or DEFAULT_PYTHON)
    return path if path.exists() else None


def tau2_run(python: Path | None, *arguments: str, timeout: float = 900) -> dict | None:
    """Run one peer subcommand; its JSON object, or None (with the reason printed) when it cannot run."""
    if python is None:
        print(NOT_INSTALLED, flush=True)
        return None
    try:
        done = subprocess.run(
            [str(python), str(PEER), *arguments], capture_output=True, text=True, timeout=timeout, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        print(f"tau2-bench: `{arguments[0]}` ran past {timeout:.0f} s; left out", flush=True)
        return None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        print(f"tau2-bench: `{arguments[0]}` failed (exit {done.returncode}): {' | '.join(tail)}", flush=True)
        return None
    return json.loads(lines[-1])


def ratio(ours: float, theirs: float) -> str:
    """How ours compares: 'N.Nx faster' or 'N.Nx slower' (lower is better for every figure compared)."""
    if not ours or not theirs:
        return "-"
    return f"{theirs / ours:.1f}x faster" if ours <= theirs else f"{ours / theirs:.1f}x slower"


def row(name: str, ours: float | None, theirs: float | None, unit: str = "ms", *, compare: bool = True) -> None:
    cells = [f"{v:10.3f}" if v is not None else f"{'-':>10s}" for v in (ours, theirs)]
    verdict = ratio(ours, theirs) if compare and ours is not None and theirs is not None else ""
    print(f"  {name:64s} {cells[0]} {cells[1]}  {unit:3s} {verdict}")


def header(what: str) -> None:
    print(f"beside tau2-bench ({what}, measured in this run):")
    print(f"  {'measure':64s} {'ours':>10s} {'tau2':>10s}")


def tools_report(figures: dict, peer: dict) -> None:
    """bench/tools.py's in-process figures beside tau2's retail tools through Environment.get_response."""
    header(
        f"retail domain, tau2 {peer['tau2_version']}, loguru at {peer['log_level']}, {peer['calls_per_tool']} "
        "calls per tool"
    )
    row("read p50 (ours: call_tool; tau2: get_response)", figures["read_p50_ms"], peer["read_p50_ms"])
    row("read p95", figures["read_p95_ms"], peer["read_p95_ms"])
    row("write p50", figures["write_p50_ms"], peer["write_p50_ms"])
    row("write p95", figures["write_p95_ms"], peer["write_p95_ms"])
    row(
        "no-op step p50 (ours logged no-op; tau2 transfer_to_human)",
        figures["step_overhead_p50_ms"],
        peer["noop_step_p50_ms"],
    )
    row(
        "tool code alone, read p50 (ours: in SQLite; tau2: use_tool)",
        figures["read_tool_only_p50_ms"],
        peer["use_tool_read_p50_ms"],
    )
    row("tool code alone, write p50", figures["write_tool_only_p50_ms"], peer["use_tool_write_p50_ms"])
    row("floor: a dict look-up in tau2's loaded db", None, peer["dict_lookup_p50_ms"])
    row("tau2, default DEBUG logging into /dev/null: read p50", None, peer["debug_log_read_p50_ms"])
    row("tau2, default DEBUG logging into /dev/null: write p50", None, peer["debug_log_write_p50_ms"])
    print(f"  tau2 error results: {peer['error_results']} of {peer['calls']} calls; its db: {peer['db']}")


def episodes_report(figures: dict, reset: dict | None, reward: dict | None) -> None:
    """bench/episodes.py's reset (and close) beside a fresh tau2 retail environment (and its evaluation)."""
    peer = reset or reward
    header(f"retail domain, tau2 {peer['tau2_version']}")
    if reset:
        row(
            "reset p50 (ours: private world ready; tau2: get_environment())",
            figures["reset_p50_ms"],
            reset["get_environment_p50_ms"],
        )
        row("reset p95", figures["reset_p95_ms"], reset["get_environment_p95_ms"])
        row("tau2, a loaded db deep-copied (model_copy) into an environment", None, reset["db_model_copy_env_p50_ms"])
        print(
            f"  tau2's runner builds {reset['env_builds_per_simulation']} retail environments per simulation "
            "(build_environment, then evaluate_simulation: tool types, predicted and gold replays)"
        )
    if reward:
        row("tau2 reward p50: evaluate_simulation, gold trajectory", None, reward["reward_p50_ms"])
        row("  of which its environment evaluator (replays, DB hashes)", None, reward["env_evaluator_p50_ms"])
        print(
            f"  ({reward['tasks']} retail tasks without LLM-judged assertions, {reward['gold_actions_per_task']} "
            f"gold actions each, {reward['rewards_1']} of {reward['evaluations']} rewards 1.0; ours: close "
            f"{figures['close_warm_ms']} ms here, close + judge in bench/rollouts.py)"
        )


def rollout_scripts(python: Path | None, delays: list[list[float]], tmp: Path) -> dict | None:
    """The scripted server's script for tau2's simulations (their own model names), one per latency list; None when
    the peer cannot run. The latencies stay in ``tmp``/tau2_delays.json for the run."""
    (tmp / "tau2_delays.json").write_text(json.dumps(delays))
    made = tau2_run(python, "rollout-script", "--delays", str(tmp / "tau2_delays.json"), "--out",
                    str(tmp / "tau2_script.json"))  # fmt: skip
    return json.loads((tmp / "tau2_script.json").read_text()) if made else None


def rollouts_report(figures: dict, peer: dict | None, reward: dict | None) -> None:
    """bench/rollouts.py's batch beside tau2's runner on the same server and latencies."""
    if peer:
        header(f"its runner, {peer['threads']} threads in one process (ours: {figures['processes']} processes)")
        row("orchestration overhead (wall / ideal - 1)", figures["overhead_pct"], peer["overhead_pct"], "%")
        row("wall time of the batch", figures["wall_s"], peer["wall_s"], "s")
        row("ideal (the slowest rollout's completions)", figures["ideal_s"], peer["ideal_s"], "s", compare=False)
        row("CPU per rollout (the orchestrating processes)", figures["cpu_ms_per_rollout"], peer["cpu_ms_per_rollout"])
        print(f"  tau2: {peer['finished']} finished / {peer['failed']} failed / {peer['passed']} passed; "
              f"{peer['completions_per_rollout']:.0f} completions and {peer['tool_calls_per_rollout']:.0f} tool calls "
              f"per rollout (ours {figures['turns']} and {figures['tool_calls_per_rollout']:.0f}: its user simulator "
              "opens and closes each conversation)")  # fmt: skip
    if reward:
        ours = figures["cpu_ms_close"] + figures["cpu_ms_judge_closed"]
        row("reward CPU p50 (ours: close + judge; tau2: evaluate_simulation)", ours, reward["reward_cpu_p50_ms"])
