"""Running a task's reference solution: a fresh episode on the pinned snapshot, every programmatic verdict at once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tasks_app.authoring.selectors import reference_run_latest
from tasks_app.authoring.services.reference_solution import reference_solution_run
from tasks_app.authoring.services.tasks import task_submit_for_review, task_update
from tasks_app.models import ReferenceRun
from tests.factories import small_world
from tests.tasks_app.factories import reviewer, task_make
from world_app.models import Episode, EpisodeStep, Order
from world_app.snapshots import snapshot_publish

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def world():
    rows = small_world()
    rows["snapshot"] = snapshot_publish(note="reference runs")
    return SimpleNamespace(**rows)


def backorder_task(world, *, final_answer: str):
    order = world.order.pk
    return task_make(
        snapshot=world.snapshot,
        title="Backorder the GPU order",
        task_type="multi_step_workflow",
        instruction=f"Supervisor: the GPU for {order} is out of stock. Backorder it and tell the customer.",
        criteria=[
            {"kind": "state", "text": "The order is backordered", "category": "correctness", "required": True,
             "spec": {"entity_type": "order", "filters": [{"field": "id", "value": order}], "field": "status",
                      "op": "eq", "value": "backorder"}},
            {"kind": "tool_call", "text": "No refund is issued", "category": "constraint",
             "spec": {"tool": "create_refund", "expect": "not_called"}},
            {"kind": "response", "text": "States the order total", "category": "completeness", "weight": 2,
             "spec": {"op": "number", "value": "549.98", "tolerance": 0.01}},
            {"kind": "llm", "text": "Apologises for the wait", "category": "tone"},
        ],
        reference_solution={
            "calls": [
                {"tool": "get_order_details", "arguments": {"order_id": order}},
                {"tool": "update_order_status",
                 "arguments": {"order_id": order, "status": "backorder", "reason": "GPU out of stock"}},
            ],
            "final_answer": final_answer,
        },
    )  # fmt: skip


def test_reference_run_replays_the_calls_and_judges_every_programmatic_criterion(world):
    task = backorder_task(world, final_answer="Sorry for the wait: your $549.98 order is on backorder.")
    run = reference_solution_run(version=task.current_version, user=task.author)
    assert isinstance(run, ReferenceRun) and run.pk
    assert [c["is_error"] for c in run.call_results] == [False, False]
    assert [v["status"] for v in run.verdicts] == ["met", "met", "met", "pending"]
    assert run.reward is None and run.passed is True  # the llm criterion is still pending
    assert run.outcome["partial_reward"] == 1.0 and run.outcome["pending"] == 1
    episode = Episode.objects.get(pk=run.episode_id)
    assert episode.status == Episode.Status.CLOSED and episode.snapshot_id == world.snapshot.pk
    assert f"task {task.pk} v1 reference" in episode.label
    assert list(EpisodeStep.objects.filter(episode=episode).values_list("name", flat=True)) == [
        "get_order_details",
        "update_order_status",
    ]
    assert Order.objects.get(pk=world.order.pk).status == "paid"  # the live world is untouched
    assert reference_run_latest(version=task.current_version) == run


def test_a_wrong_final_answer_fails_its_criterion_and_reviewers_may_run_it(world):
    task = backorder_task(world, final_answer="Your order is on backorder.")
    with pytest.raises(PermissionDenied):  # a reviewer sees a task once it is submitted, not another's draft
        reference_solution_run(version=task.current_version, user=reviewer())
    task = task_submit_for_review(task=task, user=task.author)
    run = reference_solution_run(version=task.current_version, user=reviewer())
    assert [v["status"] for v in run.verdicts] == ["met", "met", "not_met", "pending"]
    assert run.passed is True  # the failed criterion is not required


def test_a_failing_call_is_recorded_and_the_required_state_fails(world):
    task = backorder_task(world, final_answer="549.98")
    solution = {**task.current_version.reference_solution}
    solution["calls"] = [
        {"tool": "update_order_status", "arguments": {"order_id": "ord-missing", "status": "backorder"}}
    ]
    task = task_update(task=task, user=task.author, base_revision=task.revision, reference_solution=solution)
    run = reference_solution_run(version=task.current_version, user=task.author)
    assert run.call_results[0]["is_error"] and "error" in run.call_results[0]["result"]
    assert run.verdicts[0]["status"] == "not_met" and run.passed is False


def test_nothing_to_run_without_a_solution(world):
    task = task_make(snapshot=world.snapshot)
    with pytest.raises(ValidationError, match="record the calls"):
        reference_solution_run(version=task.current_version, user=task.author)
