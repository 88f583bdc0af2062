"""tau2-bench's retail domain, measured the way our benches measure our world (issue 18).

Runs under tau2-bench's own Python (>= 3.12, tau2 installed: ``make tau2-peer TAU2_REPO=...``) and imports nothing
of ours: the standard library and tau2 only. Our benches run it as a subprocess in the same run and print its
figures beside theirs. Each subcommand prints one JSON object as its last line of stdout:

- ``tools``: every retail tool through ``Environment.get_response`` (what tau2's orchestrator calls for a tool call:
  the call, the JSON string, the ToolMessage), the same number of calls per tool as bench/tools.py, real ids from
  its db.json; each write tool on a fresh environment, on orders in the state where the write succeeds (error
  results are counted and reported); the floor: the bare tool (``use_tool``) and a dict look-up in its db;
- ``reset``: a fresh retail environment per simulation as tau2's runner builds one (``get_environment()``:
  db.json loaded and validated), and the cheaper paths (a deep copy of a loaded db);
- ``reward``: ``evaluate_simulation`` (what its runner calls after each simulation: the environment replayed from
  the trajectory and from the gold actions, DB hashes compared, actions and communication checked) on retail
  tasks, the trajectory being the task's own gold actions;
- ``rollout-script`` / ``rollouts``: see bench/peers/tau2_rollouts.py.

Loguru logs every tool response at DEBUG to stderr by default; the figures are taken with loguru at WARNING (as a
trainer would run it) and the tool figures also with tau2's default DEBUG logging into /dev/null.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _data_dir() -> None:
    """TAU2_DATA_DIR from the environment, else the one scripts/tau2_peer.sh recorded in this venv."""
    recorded = Path(sys.prefix) / "tau2_data_dir"
    if not os.environ.get("TAU2_DATA_DIR") and recorded.exists():
        os.environ["TAU2_DATA_DIR"] = recorded.read_text().strip()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of litellm's price list


_data_dir()

from loguru import logger  # noqa: E402

logger.remove()
logger.add(sys.stderr, level="WARNING")

from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.domains.retail.data_model import RetailDB  # noqa: E402
from tau2.domains.retail.environment import get_environment, get_tasks  # noqa: E402
from tau2.domains.retail.utils import RETAIL_DB_PATH  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.evaluator.evaluator_env import EnvironmentEvaluator  # noqa: E402
from tau2.registry import registry  # noqa: E402
from tau2_arguments import read_arguments, write_arguments  # noqa: E402


def pct(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (nearest rank), as bench/measuring.py computes it."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def tau2_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tau2")
    except PackageNotFoundError:
        return "unknown"


# --- tools --------------------------------------------------------------------------------------------------------


def bench_tools(samples: int) -> dict:
    env = get_environment()
    types = {name: env.tools.tool_type(name) for name in env.tools.get_tools()}
    reads, writes = read_arguments(env.tools.db, samples), write_arguments(env.tools.db, samples)
    warm = get_environment()
    for name, calls in {**reads, **writes}.items():  # warm-up: imports, first pydantic dumps
        warm.get_response(ToolCall(id="warm", name=name, arguments=calls[-1]))

    def measure(name: str, calls: list[dict], target) -> dict:
        timings, errors, first_error = [], 0, None
        for i, arguments in enumerate(calls):
            ms, message = timed(
                lambda a=arguments, i=i: target.get_response(ToolCall(id=f"c{i}", name=name, arguments=a))
            )
            timings.append(ms)
            if message.error:
                errors += 1
                first_error = first_error or message.content
        return {"ms": timings, "errors": errors, "first_error": first_error}

    figures = {}
    for name, calls in reads.items():
        figures[name] = {"group": types[name].value, **measure(name, calls, env)}
    for name, calls in writes.items():
        figures[name] = {"group": types[name].value, **measure(name, calls, get_environment())}

    # The floor: the bare tool function (no ToolMessage, no JSON), and a dict look-up in the loaded db.
    bare_read = [timed(lambda a=a: env.use_tool("get_order_details", **a))[0] for a in reads["get_order_details"]]
    fresh = get_environment()
    bare_write = [
        timed(lambda a=a: fresh.use_tool("modify_pending_order_address", **a))[0]
        for a in writes["modify_pending_order_address"]
    ]
    order_ids = [a["order_id"] for a in reads["get_order_details"]]
    lookup = [timed(lambda o=o: env.tools.db.orders[o])[0] for o in order_ids]

    # tau2's default: loguru at DEBUG (every response logged); into /dev/null, so the figure is its formatting.
    with open(os.devnull, "w") as sink:
        handler = logger.add(sink, level="DEBUG")
        debug_reads = measure("get_order_details", reads["get_order_details"], env)["ms"]
        debug_writes = measure(
            "modify_pending_order_address", writes["modify_pending_order_address"], get_environment()
        )["ms"]
        logger.remove(handler)

    def group(kind: str) -> list[float]:
        return [ms for f in figures.values() if f["group"] == kind for ms in f["ms"]]

    read_ms, write_ms = group("read"), group("write")
    return {
        "tau2_version": tau2_version(),
        "log_level": "WARNING",
        "db": {
            "users": len(env.tools.db.users),
            "orders": len(env.tools.db.orders),
            "products": len(env.tools.db.products),
        },
        "calls_per_tool": samples,
        "read_p50_ms": round(pct(read_ms, 0.5), 4),
        "read_p95_ms": round(pct(read_ms, 0.95), 4),
        "write_p50_ms": round(pct(write_ms, 0.5), 4),
        "write_p95_ms": round(pct(write_ms, 0.95), 4),
        "noop_step_p50_ms": round(pct(figures["transfer_to_human_agents"]["ms"], 0.5), 4),
        "use_tool_read_p50_ms": round(pct(bare_read, 0.5), 4),
        "use_tool_write_p50_ms": round(pct(bare_write, 0.5), 4),
        "dict_lookup_p50_ms": round(pct(lookup, 0.5), 5),
        "debug_log_read_p50_ms": round(pct(debug_reads, 0.5), 4),
        "debug_log_write_p50_ms": round(pct(debug_writes, 0.5), 4),
        "error_results": sum(f["errors"] for f in figures.values()),
        "calls": sum(len(f["ms"]) for f in figures.values()),
        "tools": {
            name: {
                "group": f["group"],
                "p50_ms": round(pct(f["ms"], 0.5), 4),
                "p95_ms": round(pct(f["ms"], 0.95), 4),
                "calls": len(f["ms"]),
                "errors": f["errors"],
                "first_error": (f["first_error"] or "")[:160] or None,
            }
            for name, f in figures.items()
        },
    }


# --- reset --------------------------------------------------------------------------------------------------------


def bench_reset(repeat: int) -> dict:
    get_environment()  # warm-up: imports, the policy file, pydantic's validators
    constructor = registry.get_env_constructor("retail")  # what build_environment() calls per simulation
    built = [timed(constructor)[0] for _ in range(repeat)]
    loaded = RetailDB.load(RETAIL_DB_PATH)
    deep = [timed(lambda: get_environment(db=loaded.model_copy(deep=True)))[0] for _ in range(repeat)]
    stdlib_deep = [timed(lambda: copy.deepcopy(loaded))[0] for _ in range(repeat)]
    return {
        "tau2_version": tau2_version(),
        "resets": repeat,
        "get_environment_p50_ms": round(pct(built, 0.5), 2),
        "get_environment_p95_ms": round(pct(built, 0.95), 2),
        "db_model_copy_env_p50_ms": round(pct(deep, 0.5), 2),
        "db_deepcopy_p50_ms": round(pct(stdlib_deep, 0.5), 2),
        "env_builds_per_simulation": 4,  # build_environment, then evaluate_simulation: tool types, predicted, gold
    }


# --- reward -------------------------------------------------------------------------------------------------------


def gold_simulation(task) -> SimulationRun:
    """A finished simulation whose agent made exactly the task's gold actions (results from a fresh environment)."""
    env = get_environment()
    messages = [
        AssistantMessage(role="assistant", content="Hi! How can I help you today?"),
        UserMessage(role="user", content="I need help with my order."),
    ]
    for i, action in enumerate(task.evaluation_criteria.actions or []):
        call = ToolCall(id=f"gold_{i}", name=action.name, arguments=action.arguments, requestor=action.requestor)
        messages.append(AssistantMessage(role="assistant", tool_calls=[call]))
        messages.append(env.get_response(call))
    messages.append(AssistantMessage(role="assistant", content="That is done. Anything else?"))
    messages.append(UserMessage(role="user", content="No, thanks. ###STOP###"))
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    return SimulationRun(
        id=f"gold-{task.id}",
        task_id=task.id,
        start_time=now,
        end_time=now,
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP,
        messages=messages,
    )


def bench_reward(tasks_count: int, repeat: int) -> dict:
    # Tasks with natural-language assertions need an LLM judge: left out (ours are measured without a model too).
    tasks = [
        t
        for t in get_tasks("base")
        if t.evaluation_criteria and t.evaluation_criteria.actions and not t.evaluation_criteria.nl_assertions
    ][:tasks_count]
    simulations = [(task, gold_simulation(task)) for task in tasks]
    evaluate_simulation(
        simulation=simulations[0][1],
        task=simulations[0][0],
        evaluation_type=EvaluationType.ALL,
        solo_mode=False,
        domain="retail",
    )  # warm-up
    wall, cpu, env_only, rewards = [], [], [], []
    for _ in range(repeat):
        for task, simulation in simulations:
            c0 = time.process_time()
            ms, info = timed(
                lambda t=task, s=simulation: evaluate_simulation(
                    simulation=s, task=t, evaluation_type=EvaluationType.ALL, solo_mode=False, domain="retail"
                )
            )
            cpu.append((time.process_time() - c0) * 1000)
            wall.append(ms)
            rewards.append(info.reward)
            env_only.append(
                timed(
                    lambda t=task, s=simulation: EnvironmentEvaluator.calculate_reward(
                        environment_constructor=get_environment, task=t, full_trajectory=s.messages
                    )
                )[0]
            )
    return {
        "tau2_version": tau2_version(),
        "tasks": len(tasks),
        "evaluations": len(wall),
        "gold_actions_per_task": round(statistics.mean(len(t.evaluation_criteria.actions) for t in tasks), 1),
        "reward_p50_ms": round(pct(wall, 0.5), 2),
        "reward_p95_ms": round(pct(wall, 0.95), 2),
        "reward_cpu_p50_ms": round(pct(cpu, 0.5), 2),
        "env_evaluator_p50_ms": round(pct(env_only, 0.5), 2),
        "rewards_1": sum(1 for r in rewards if r == 1.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tools = sub.add_parser("tools")
    tools.add_argument("--calls", type=int, default=60, help="Timed calls per tool (bench/tools.py's default).")
    reset = sub.add_parser("reset")
    reset.add_argument("--repeat", type=int, default=20)
    reward = sub.add_parser("reward")
    reward.add_argument("--tasks", type=int, default=10)
    reward.add_argument("--repeat", type=int, default=2)
    rollout_script = sub.add_parser("rollout-script")
    rollouts = sub.add_parser("rollouts")
    for p in (rollout_script, rollouts):
        p.add_argument("--delays", type=Path, required=True, help="JSON: per rollout, each completion's seconds.")
    rollout_script.add_argument("--out", type=Path, required=True, help="Where to write the server's script.")
    rollouts.add_argument("--base-url", required=True, help="The scripted OpenAI-compatible server (…/v1).")
    args = parser.parse_args()
    if args.command == "tools":
        figures = bench_tools(args.calls)
    elif args.command == "reset":
        figures = bench_reset(args.repeat)
    elif args.command == "reward":
        figures = bench_reward(args.tasks, args.repeat)
    else:
        from tau2_rollouts import rollout_script_write, rollouts_run

        delays = json.loads(args.delays.read_text())
        if args.command == "rollout-script":
            figures = rollout_script_write(delays, args.out)
        else:
            figures = rollouts_run(delays, args.base_url)
    print(json.dumps({"peer": "tau2-bench retail", "command": args.command, **figures}, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
