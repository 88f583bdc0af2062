"""What bench/rollouts.py runs its rollouts on: the default world (seeded and published when missing), the benchmark's
task (made once, found again by its source key), each rollout's script of completions with their latencies
(lock-step or lognormal), and the scripted OpenAI-compatible server that plays them.

Imported by bench/rollouts.py once Django is set up.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command

from tasks_app.models import Task
from world_app.models import Customer, Order
from world_app.snapshots import snapshot_publish

ROOT = Path(__file__).resolve().parent.parent
LABEL = "bench/rollouts.py"
SOURCE_KEY = "bench:rollouts"


def world_ready() -> None:
    if not Customer.objects.exists():
        print("seeding the default world (seed 7, scale 1)...", flush=True)
        call_command("seed_world", seed=7, scale=1)


def bench_task(order: Order):
    """The benchmark's task (made once, found again by its source key)."""
    from tasks_app.authoring.services.tasks import task_create

    snapshot = snapshot_publish(note=LABEL, if_changed=True)
    task = Task.objects.filter(source_key=SOURCE_KEY).select_related("current_version").first()
    if task is not None and task.current_version.snapshot_id == snapshot.pk:
        return task.current_version
    if task is not None:
        Task.objects.filter(pk=task.pk).update(source_key=None)
    user, _ = get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})
    task = task_create(
        user=user,
        snapshot=snapshot,
        title="Bench: backorder an order",
        task_type="multi_step_workflow",
        difficulty="medium",
        instruction=f"Supervisor: the parts for {order.pk} are out of stock. Backorder it and tell the customer.",
        criteria=[
            {
                "kind": "state",
                "text": "The order is backordered",
                "category": "correctness",
                "required": True,
                "spec": {
                    "entity_type": "order",
                    "filters": [{"field": "id", "value": order.pk}],
                    "field": "status",
                    "op": "eq",
                    "value": "backorder",
                },
            },
            {
                "kind": "tool_call",
                "text": "The order was looked up",
                "category": "completeness",
                "spec": {"tool": "get_order_details", "arguments": {"order_id": {"op": "eq", "value": order.pk}}},
            },
            {
                "kind": "tool_call",
                "text": "No refund is issued",
                "category": "constraint",
                "spec": {"tool": "create_refund", "expect": "not_called"},
            },
            {
                "kind": "response",
                "text": "Says it is on backorder",
                "category": "completeness",
                "spec": {"op": "contains", "value": "backorder"},
            },
        ],
        reference_solution={
            "calls": [
                {
                    "tool": "update_order_status",
                    "arguments": {"order_id": order.pk, "status": "backorder", "reason": "out of stock"},
                },
            ],
            "final_answer": f"Your order {order.pk} is on backorder.",
        },
    )
    Task.objects.filter(pk=task.pk).update(source_key=SOURCE_KEY)
    return task.current_version


def latencies(*, turns: int, latency: float, spread: str, sigma: float, rng: random.Random) -> list[float]:
    """Seconds for each completion of one rollout: all ``latency`` (lock-step), or lognormal with mean ``latency``
    (as real servers answer: most near the median, a long tail)."""
    if spread == "lockstep":
        return [latency] * turns
    mu = math.log(latency) - sigma**2 / 2  # the mean of the lognormal is then `latency`
    return [round(rng.lognormvariate(mu, sigma), 4) for _ in range(turns)]


def script(order: Order, *, turns: int, latency: float | list[float]) -> list[dict]:
    """turns-1 tool-call turns (reads, then the write), then the final answer; each completion takes latency s
    (or the list's seconds, one per completion)."""
    delays = latency if isinstance(latency, list) else [latency] * turns
    reads = [
        ("search_orders", {"customer_id": order.customer_id, "limit": 5}),
        ("get_order_details", {"order_id": order.pk}),
        ("get_customer_ticket_history", {"customer_id": order.customer_id}),
        ("search_knowledge_base", {"query": "backorder"}),
    ]
    write = ("update_order_status", {"order_id": order.pk, "status": "backorder", "reason": "out of stock"})
    calls = [reads[i % len(reads)] for i in range(max(turns - 2, 0))] + [write]
    steps = [
        {"reply": {"tool_calls": [{"name": name, "arguments": arguments, "id": f"call_{i}"}], "delay_s": delays[i],
                   "prompt_tokens": 1500 + 300 * i, "completion_tokens": 40}}
        for i, (name, arguments) in enumerate(calls[: turns - 1])
    ]  # fmt: skip
    steps.append({"reply": {"content": f"Your order {order.pk} is now on backorder; sorry for the wait.",
                            "delay_s": delays[turns - 1], "prompt_tokens": 3000, "completion_tokens": 30}})  # fmt: skip
    return steps


def server_start(scripts: dict[str, list[dict]], port_file: Path) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    port_file.write_text(json.dumps(scripts))
    server = subprocess.Popen(
        [sys.executable, "-m", "corecraft_site.llm.scripted_server", "--port", str(port), "--script", str(port_file)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).read()  # noqa: S310
            return server, base_url
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                sys.exit("the scripted server did not start")
            time.sleep(0.1)
