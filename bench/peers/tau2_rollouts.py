"""tau2-bench's own orchestration of N concurrent retail simulations against a latency-controlled model server.

Imported by bench/peers/tau2_retail.py (under tau2's Python, nothing of ours imported). bench/rollouts.py hands it
the completion latencies it drew for its own rollouts (one list per rollout), then:

- ``rollout-script`` writes the script our scripted OpenAI-compatible server (corecraft_site/llm/scripted_server.py,
  started by bench/rollouts.py with our Python) plays: per simulation one model name for its agent and one for its
  user simulator, every completion with its latency;
- ``rollouts`` runs tau2's runner (``run_tasks``, ``max_concurrency`` = N threads, its orchestrator, its LLM agent
  and user simulator through litellm, a fresh retail environment per simulation, ``evaluate_simulation`` after
  each) and reports wall, ideal, overhead and CPU per rollout computed as bench/rollouts.py computes ours.

The shape of a tau2 simulation: the agent's greeting is fixed (no model call), the user simulator opens (1
completion), the agent makes tool calls (reads, then a write) and answers, the user simulator stops (1 completion).
So a rollout of T completions makes T-3 tool calls (ours: T-1). A simulation's agent and user find their scripts
through tau2's registry (its extension point: an agent factory receives the task; the user's model name is marked in
the task's instructions): tau2's LLMAgent and UserSimulator themselves, only the model name differs per simulation.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tau2.agent.llm_agent import LLMAgent
from tau2.data_model.simulation import TerminationReason, TextRunConfig
from tau2.data_model.tasks import Task
from tau2.domains.retail.environment import get_environment
from tau2.registry import registry
from tau2.runner.batch import run_tasks
from tau2.user.user_simulator import UserSimulator
from tau2_arguments import ADDRESS

AGENT_MODEL = "tau2-agent"
USER_MODEL = "tau2-user"
MARK = re.compile(r"\[simulation (\d+)\]")


def _plan() -> dict:
    """The order the simulations work on: a pending order of the retail db (each simulation has its own copy)."""
    db = get_environment().tools.db
    order = next(o for _, o in sorted(db.orders.items()) if o.status == "pending")
    return {"order_id": order.order_id, "user_id": order.user_id, "product_id": order.items[0].product_id}


def _tool_calls(plan: dict, count: int) -> list[tuple[str, dict]]:
    reads = [
        ("get_user_details", {"user_id": plan["user_id"]}),
        ("get_order_details", {"order_id": plan["order_id"]}),
        ("get_product_details", {"product_id": plan["product_id"]}),
    ]
    write = ("modify_pending_order_address", {"order_id": plan["order_id"], **ADDRESS})
    return [reads[i % len(reads)] for i in range(max(count - 1, 0))] + ([write] if count else [])


def _reply(delay: float, *, content: str | None = None, call: tuple[str, dict] | None = None, i: int = 0) -> dict:
    reply: dict = {"delay_s": delay, "prompt_tokens": 1500 + 300 * i, "completion_tokens": 40}
    if call is not None:
        reply["tool_calls"] = [{"name": call[0], "arguments": call[1], "id": f"call_{i}"}]
    else:
        reply["content"] = content
    return {"reply": reply}


def rollout_script_write(delays: list[list[float]], out: Path) -> dict:
    """Write the scripted server's script (model name -> steps) for one simulation per latency list."""
    plan = _plan()
    script: dict[str, list[dict]] = {}
    for n, latency in enumerate(delays):
        turns = len(latency)
        if turns < 3:
            raise SystemExit("a tau2 simulation takes at least 3 completions (user, agent's answer, user's stop)")
        calls = _tool_calls(plan, turns - 3)
        script[f"{USER_MODEL}-{n}"] = [
            _reply(
                latency[0],
                content=f"Hi, please ship my order {plan['order_id']} to my new address. "
                f"My user id is {plan['user_id']}.",
            ),
            _reply(latency[-1], content="Thanks, that's all. ###STOP###"),
        ]
        script[f"{AGENT_MODEL}-{n}"] = [_reply(latency[1 + i], call=call, i=i) for i, call in enumerate(calls)] + [
            _reply(latency[-2], content=f"Done: order {plan['order_id']} now ships to 1 Bench Way, Austin.")
        ]
    out.write_text(json.dumps(script))
    return {"models": len(script), "simulations": len(delays), "tool_calls_per_simulation": len(calls), **plan}


class ScriptedUser(UserSimulator):
    """tau2's UserSimulator on the simulation's own model name (marked in its task's instructions)."""

    def __init__(self, *, llm: str, instructions: str | None = None, **kwargs) -> None:
        super().__init__(llm=f"{llm}-{MARK.search(instructions or '').group(1)}", instructions=instructions, **kwargs)


def scripted_agent(tools, domain_policy, **kwargs) -> LLMAgent:
    """tau2's LLMAgent on the simulation's own model name (from its task)."""
    n = kwargs["task"].id.rsplit("-", 1)[1]
    return LLMAgent(tools=tools, domain_policy=domain_policy, llm=f"{kwargs['llm']}-{n}", llm_args=kwargs["llm_args"])


def _tasks(count: int, plan: dict) -> list[Task]:
    write = {"order_id": plan["order_id"], **ADDRESS}
    return [
        Task.model_validate(
            {
                "id": f"bench-{n}",
                "user_scenario": {
                    "instructions": f"[simulation {n}] You want order {plan['order_id']} shipped to "
                    "1 Bench Way, Suite 18, Austin TX 78701."
                },
                "evaluation_criteria": {
                    "actions": [{"action_id": f"{n}_0", "name": "modify_pending_order_address", "arguments": write}],
                    "reward_basis": ["DB"],
                },
            }
        )
        for n in range(count)
    ]


def rollouts_run(delays: list[list[float]], base_url: str) -> dict:
    plan = _plan()
    registry.register_user(ScriptedUser, "bench_scripted_user")
    registry.register_agent_factory(scripted_agent, "bench_scripted_agent")
    concurrency = len(delays)
    llm_args = {"temperature": 0.0, "api_base": base_url, "api_key": "bench", "timeout": 60}
    config = TextRunConfig(
        domain="retail",
        agent="bench_scripted_agent",
        llm_agent=f"openai/{AGENT_MODEL}",
        llm_args_agent=llm_args,
        user="bench_scripted_user",
        llm_user=f"openai/{USER_MODEL}",
        llm_args_user=llm_args,
        max_concurrency=concurrency,
        num_trials=1,
        log_level="WARNING",
        max_retries=0,
    )
    tasks = _tasks(concurrency, plan)
    cpu, began = time.process_time(), time.time()
    results = run_tasks(config, tasks, save_path=None, console_display=False)
    wall, cpu = time.time() - began, time.process_time() - cpu
    simulations = results.simulations
    stopped = {TerminationReason.AGENT_STOP, TerminationReason.USER_STOP}
    finished = [s for s in simulations if s.termination_reason in stopped]
    ideal = max(sum(d) for d in delays)
    completions = [sum(1 for m in s.messages if m.role in ("assistant", "user") and m.raw_data) for s in simulations]
    tool_calls = [sum(len(m.tool_calls or ()) for m in s.messages if m.role == "assistant") for s in simulations]
    return {
        "concurrency": concurrency,
        "turns": len(delays[0]),
        "completions_per_rollout": sum(completions) / len(simulations),
        "tool_calls_per_rollout": sum(tool_calls) / len(simulations),
        "finished": len(finished),
        "failed": len(simulations) - len(finished) + (concurrency - len(simulations)),
        "passed": sum(1 for s in finished if s.reward_info and s.reward_info.reward == 1.0),
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "overhead_pct": round(100 * (wall / ideal - 1), 2) if ideal else None,
        "cpu_ms_per_rollout": round(1000 * cpu / concurrency, 1),
        "threads": concurrency,
        "termination": sorted({s.termination_reason.value for s in simulations}),
    }
