"""Shared set-up of the rollout and calibration tests: a small world, a backorder task, scripted endpoints."""

from __future__ import annotations

from types import SimpleNamespace

from corecraft_site.llm.scripted_server import Reply, ScriptedToolCall
from rubrics_app.models import ModelEndpoint
from tests.factories import small_world
from tests.tasks_app.factories import task_make
from world_app.snapshots import snapshot_publish

ANSWER = "Sorry for the wait: your $549.98 order is now on backorder until the GPU is back in stock."


def world_make(note: str = "rollouts") -> SimpleNamespace:
    rows = small_world()
    rows["snapshot"] = snapshot_publish(note=note)
    return SimpleNamespace(**rows)


def backorder_task(world, *, llm: bool = False, title: str = "Backorder the GPU order", final_answer: str = ANSWER):
    """A task whose rubric is programmatic (plus one llm criterion when asked), with a reference solution."""
    order = world.order.pk
    criteria = [
        {"kind": "state", "text": "The order is backordered", "category": "correctness", "required": True,
         "spec": {"entity_type": "order", "filters": [{"field": "id", "value": order}], "field": "status",
                  "op": "eq", "value": "backorder"}},
        {"kind": "tool_call", "text": "No refund is issued", "category": "constraint",
         "spec": {"tool": "create_refund", "expect": "not_called"}},
        {"kind": "response", "text": "States the order total", "category": "completeness", "weight": 2,
         "spec": {"op": "number", "value": "549.98", "tolerance": 0.01}},
    ]  # fmt: skip
    if llm:
        criteria.append({"kind": "llm", "text": "Apologises for the wait", "category": "tone"})
    return task_make(
        snapshot=world.snapshot,
        title=title,
        task_type="multi_step_workflow",
        instruction=f"Supervisor: the GPU for {order} is out of stock. Backorder it and tell the customer.",
        criteria=criteria,
        reference_solution={
            "calls": [
                {"tool": "get_order_details", "arguments": {"order_id": order}},
                {"tool": "update_order_status",
                 "arguments": {"order_id": order, "status": "backorder", "reason": "GPU out of stock"}},
            ],
            "final_answer": final_answer,
        },
    )  # fmt: skip


def solving_script(order_id: str, *, delay_s: float = 0.0, prompt_tokens: int = 100) -> list[Reply]:
    """A model that solves the backorder task in three turns: read, write, answer."""
    return [
        Reply(
            tool_calls=[ScriptedToolCall(name="get_order_details", arguments={"order_id": order_id}, id="c1")],
            prompt_tokens=prompt_tokens, completion_tokens=10, delay_s=delay_s,
        ),
        Reply(
            tool_calls=[ScriptedToolCall(
                name="update_order_status", id="c2",
                arguments={"order_id": order_id, "status": "backorder", "reason": "GPU out of stock"},
            )],
            prompt_tokens=prompt_tokens, completion_tokens=20, delay_s=delay_s,
        ),
        Reply(content=ANSWER, prompt_tokens=prompt_tokens, completion_tokens=30, delay_s=delay_s),
    ]  # fmt: skip


def endpoint_make(server, *, name: str = "scripted", model: str = "scripted", **fields) -> ModelEndpoint:
    fields.setdefault("timeout_s", 5.0)
    fields.setdefault("max_retries", 3)
    return ModelEndpoint.objects.create(name=name, base_url=server.base_url, model=model, **fields)


class RecordedSleep:
    """Stands in for time.sleep in retries: no wall time, and the waits are visible."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
