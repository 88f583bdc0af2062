"""The tool playground: any tool in a sandbox episode of the pinned snapshot, record, save, run the reference."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from django.urls import reverse

from tasks_app.authoring.services.tasks import task_update
from tasks_app.models import ReferenceRun, Task, TaskStatus
from tests.conftest import TEST_WORLD_NOW
from tests.tasks_app.factories import admin, author, reviewer, task_make
from world_app.models import Episode, EpisodeStep, Order
from world_app.snapshots import snapshot_publish
from world_app.tools.registry import all_tools

pytestmark = [
    pytest.mark.django_db(databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def snapshot(seeded_world):
    with override_settings(WORLD_NOW=TEST_WORLD_NOW):
        return snapshot_publish(note="playground tests")


@pytest.fixture
def order():
    return Order.objects.filter(status="paid").order_by("id").first()


@pytest.fixture
def writer(client):
    user = author()
    client.force_login(user)
    return user


def backorder_task(*, user, snapshot, order):
    return task_make(
        user=user,
        snapshot=snapshot,
        title="Backorder an order",
        task_type="multi_step_workflow",
        instruction=f"Supervisor: put {order.pk} on backorder and tell the customer the total.",
        criteria=[
            {"kind": "state", "text": "The order is backordered", "category": "correctness", "required": True,
             "spec": {"entity_type": "order", "filters": [{"field": "id", "value": order.pk}], "field": "status",
                      "op": "eq", "value": "backorder"}},
            {"kind": "tool_call", "text": "Looks the order up", "category": "completeness",
             "spec": {"tool": "get_order_details", "arguments": {"order_id": {"op": "eq", "value": order.pk}}}},
            {"kind": "response", "text": "States the total", "category": "completeness",
             "spec": {"op": "number", "value": str(order.total), "tolerance": 0.01}},
            {"kind": "llm", "text": "Apologises for the wait", "category": "tone"},
        ],
    )  # fmt: skip


def call(client, task, tool: str, **arguments):
    data = {"tool": tool, **{f"arg-{k}": v for k, v in arguments.items()}}
    return client.post(reverse("tasks:playground_call", args=[task.pk]), data, **HTMX)


def test_every_tool_gets_a_form_from_its_schema(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    page = client.get(reverse("tasks:playground", args=[task.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert body.count("<option value=") >= 23 and 'id="pg-run-tool"' in body
    for tool in all_tools():
        form = client.get(reverse("tasks:playground_form", args=[task.pk]), {"tool": tool.name}, **HTMX)
        text = form.content.decode()
        assert form.status_code == 200 and f'<option value="{tool.name}" selected>' in text, tool.name
        for name in tool.input_schema()["properties"]:
            assert f'name="arg-{name}"' in text, (tool.name, name)
    nested = client.get(reverse("tasks:playground_form", args=[task.pk]), {"tool": "create_build"}, **HTMX)
    assert "(JSON)" in nested.content.decode() and "Schema" in nested.content.decode()


def test_running_a_tool_shows_the_result_in_a_sandbox_kept_per_user_and_task(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    response = call(client, task, "get_order_details", order_id=order.pk)
    body = response.content.decode()
    assert response.status_code == 200 and 'id="pg-result"' in body and order.pk in body
    assert f'value="{order.pk}"' in body  # the form keeps what was typed
    state = client.session[f"playground:{task.pk}"]
    episode = Episode.objects.get(pk=state["episode"])
    assert episode.snapshot_id == snapshot.pk and episode.status == "open"
    call(client, task, "update_order_status", order_id=order.pk, status="backorder", reason="GPU out of stock")
    assert client.session[f"playground:{task.pk}"]["episode"] == state["episode"]
    assert EpisodeStep.objects.filter(episode=episode).count() == 2
    order.refresh_from_db()
    assert order.status == "paid"  # the live world is untouched
    reset = client.post(reverse("tasks:playground_reset", args=[task.pk]), **HTMX)
    assert reset.status_code == 200 and "A fresh sandbox is ready" in reset.content.decode()
    fresh = client.session[f"playground:{task.pk}"]["episode"]
    assert fresh != state["episode"]
    episode.refresh_from_db()
    assert episode.status == "closed"


def test_unreadable_input_is_not_run_and_tool_errors_are_shown_as_errors(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    response = call(client, task, "search_orders", limit="lots", query="abc")
    body = response.content.decode()
    assert "a whole number" in body and 'value="lots"' in body and 'value="abc"' in body
    assert 'id="pg-result"' not in body and not Episode.objects.filter(label__startswith="playground").exists()
    response = call(client, task, "get_order_details", order_id="ord-nope")
    body = response.content.decode()
    assert "pg-result is-error" in body and "The tool refused" in body
    bad_json = client.post(
        reverse("tasks:playground_call", args=[task.pk]),
        {"tool": "create_build", "arguments_json": "{not json"},
        **HTMX,
    )
    assert "not valid JSON" in bad_json.content.decode() and "{not json" in bad_json.content.decode()


def test_record_edit_save_and_run_the_reference_solution(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    draft_url = reverse("tasks:playground_draft", args=[task.pk])
    record_url = reverse("tasks:playground_record", args=[task.pk])
    update = {"order_id": order.pk, "status": "backorder", "reason": "GPU out of stock"}
    for tool, arguments in (
        ("update_order_status", update),
        ("get_order_details", {"order_id": order.pk}),
        ("search_customers", {"query": "x"}),
    ):
        result = client.post(record_url, {"tool": tool, "arguments": json.dumps(arguments)}, **HTMX)
        assert result.status_code == 200
    body = result.content.decode()
    assert "Recorded call 3: search_customers" in body and 'id="pg-unsaved"' in body
    # Remove the stray search, and look the order up before changing it.
    client.post(draft_url, {"action": "remove:2", "final_answer": "Sorry"}, **HTMX)
    moved = client.post(draft_url, {"action": "up:1", "final_answer": f"Sorry for the wait: ${order.total}."}, **HTMX)
    state = client.session[f"playground:{task.pk}"]
    assert [c["tool"] for c in state["calls"]] == ["get_order_details", "update_order_status"]
    assert (
        state["final_answer"] == f"Sorry for the wait: ${order.total}."
        and "Sorry for the wait" in moved.content.decode()
    )
    saved = client.post(
        draft_url,
        {"action": "save", "base_revision": str(task.revision), "final_answer": state["final_answer"]},
        **HTMX,
    )
    assert "Saved as the reference solution of version 2" in saved.content.decode()
    task.refresh_from_db()
    assert task.current_version.reference_solution == {
        "calls": [
            {"tool": "get_order_details", "arguments": {"order_id": order.pk}},
            {"tool": "update_order_status", "arguments": update},
        ],
        "final_answer": f"Sorry for the wait: ${order.total}.",
    }
    run = client.post(reverse("tasks:playground_run", args=[task.pk]), **HTMX)
    body = run.content.decode()
    assert run.status_code == 200 and "✓ met" in body and "pending (LLM judge)" in body and "✗ not met" not in body
    assert body.count("✓ met") == 3
    stored = ReferenceRun.objects.get(version=task.current_version)
    assert [v["status"] for v in stored.verdicts] == ["met", "met", "met", "pending"]
    page = client.get(reverse("tasks:detail", args=[task.pk])).content.decode()
    assert 'id="run-summary"' in page and "3 met, 0 not met, 1 pending" in page


def test_a_failing_reference_solution_shows_which_criteria_fail(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    task = task_update(
        task=task,
        user=writer,
        base_revision=task.revision,
        reference_solution={"calls": [{"tool": "get_order_details", "arguments": {"order_id": order.pk}}],
                            "final_answer": "Done."},
    )  # fmt: skip
    body = client.post(reverse("tasks:playground_run", args=[task.pk]), **HTMX).content.decode()
    assert body.count("✗ not met") == 2 and "Fails" in body


def test_running_without_a_reference_solution_explains_what_to_do(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    body = client.post(reverse("tasks:playground_run", args=[task.pk]), **HTMX).content.decode()
    assert "record the calls and final answer first" in body


def test_saving_over_a_newer_version_is_a_conflict_that_keeps_the_draft(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    record_url = reverse("tasks:playground_record", args=[task.pk])
    client.post(record_url, {"tool": "get_order_details", "arguments": json.dumps({"order_id": order.pk})}, **HTMX)
    task_update(task=task, user=admin(username="mallory"), base_revision=task.revision, title="Renamed")
    draft_url = reverse("tasks:playground_draft", args=[task.pk])
    body = client.post(draft_url, {"action": "save", "base_revision": "1", "final_answer": "Typed"}, **HTMX)
    text = body.content.decode()
    assert "mallory saved this task (version 2)" in text and "Typed" in text
    assert client.session[f"playground:{task.pk}"]["calls"][0]["tool"] == "get_order_details"
    task.refresh_from_db()
    assert task.current_version.reference_solution == {}


def test_a_draft_with_bad_arguments_is_refused_with_the_reason(client, writer, snapshot, order):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    record_url = reverse("tasks:playground_record", args=[task.pk])
    client.post(record_url, {"tool": "get_order_details", "arguments": json.dumps({"colour": "red"})}, **HTMX)
    body = client.post(
        reverse("tasks:playground_draft", args=[task.pk]), {"action": "save", "base_revision": "1"}, **HTMX
    ).content.decode()
    assert "The draft can&#x27;t be saved" in body and "get_order_details takes no such argument" in body


def test_reviewers_try_tools_and_run_references_but_do_not_save(client, snapshot, order):
    owner = author()
    task = backorder_task(user=owner, snapshot=snapshot, order=order)
    client.force_login(reviewer())
    assert client.get(reverse("tasks:playground", args=[task.pk])).status_code == 403  # a draft is the author's
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.IN_REVIEW)  # what reviewers review
    page = client.get(reverse("tasks:playground", args=[task.pk])).content.decode()
    assert 'id="pg-save"' not in page and "Only the task's author or an admin" in page
    assert 'id="pg-result"' in call(client, task, "get_order_details", order_id=order.pk).content.decode()
    response = client.post(
        reverse("tasks:playground_draft", args=[task.pk]), {"action": "save", "base_revision": "1"}, **HTMX
    )
    assert response.status_code == 403
    client.force_login(author())  # another author: not even the playground
    assert client.get(reverse("tasks:playground", args=[task.pk])).status_code == 403


def test_the_playground_page_reads_a_bounded_number_of_queries(
    client, writer, snapshot, order, django_assert_max_num_queries
):
    task = backorder_task(user=writer, snapshot=snapshot, order=order)
    calls = [{"tool": "get_order_details", "arguments": {"order_id": order.pk}}] * 12
    task = task_update(
        task=task, user=writer, base_revision=task.revision, reference_solution={"calls": calls, "final_answer": "x"}
    )
    client.post(reverse("tasks:playground_run", args=[task.pk]), **HTMX)
    with django_assert_max_num_queries(14):
        page = client.get(reverse("tasks:playground", args=[task.pk]))
    body = page.content.decode()
    assert body.count('<li id="pg-call-') == 12 and 'id="run-summary"' in body and 'id="lookup-q"' in body
