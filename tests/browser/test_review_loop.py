"""The whole authoring and review loop in a real browser.

An author writes a task with one criterion of each kind, looks an order up in the live world, records and runs
a reference solution in the tool playground and submits it; a reviewer requests changes; the author fixes it and
resubmits; the reviewer approves. The author could never have approved it: no control for it on the page, and
forged POSTs (claim, decide, even with a lease planted in the database) are refused.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tasks_app.models import Review, Task, TaskStatus
from tasks_app.role_grants import demo_users_ensure
from world_app.models import Order
from world_app.snapshots import snapshot_publish

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

TITLE = "Where is my order? (browser walk-through)"


def log_in(page, username: str, password: str) -> None:
    from playwright.sync_api import expect

    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def log_out(page) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def settle(page) -> None:
    """Let the htmx requests a change started finish and their swaps settle (inline validation and "Add
    criterion" re-render parts of the form; typing into a part that is about to be replaced loses the text).

    ``wait_for_load_state("networkidle")`` is no help here: it returns at once once the page has loaded.
    """
    page.wait_for_timeout(50)  # htmx sends on the next tick after the event
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )


def put(page, selector: str, value: str) -> None:
    field = page.locator(selector)
    field.fill(value)
    field.blur()  # "change" fires: the criterion is checked inline
    settle(page)


def choose(page, selector: str, value: str) -> None:
    page.locator(selector).select_option(value)
    settle(page)


def csrf_headers(page) -> dict[str, str]:
    return json.loads(page.locator("body").get_attribute("hx-headers"))


def test_author_and_reviewer_walk_the_review_loop(page, screenshot, live_server, seeded_world):
    from playwright.sync_api import expect

    demo_users_ensure()
    snapshot_publish(note="browser: the review loop", if_changed=True)
    order = Order.objects.order_by("id").first()

    # --- the author writes the task ---------------------------------------------------------------------------
    log_in(page, "author", "corecraft-author")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Tasks").click()
    page.locator("#new-task").click()
    expect(page.get_by_role("heading", name="New task")).to_be_visible()
    page.locator("#id_title").fill(TITLE)
    page.locator("#id_task_type").select_option("information_retrieval")
    page.locator("#id_difficulty").select_option("easy")
    page.locator("#id_instruction").fill(f"Hi, what is the status of my order {order.pk}? Thanks!")
    page.locator("#id_family").fill("order-status")
    page.locator("#id_tags").fill("orders, status")
    page.locator("#id_reviewer_notes").fill("The status is read from get_order_details.")

    for index, kind in enumerate(["llm", "state", "tool_call", "response"]):
        page.locator("#new-kind").select_option(kind)
        page.locator("#add-criterion").click()
        expect(page.locator(f"#criterion-c{index}")).to_have_attribute("data-kind", kind)
        settle(page)

    put(page, "#id_c0-text", "The reply is polite and answers the question asked.")
    put(page, "#id_c1-text", "The order is left as it was.")
    choose(page, "#id_c1-entity_type", "order")
    put(page, "#id_c1-filter_field-0", "id")
    choose(page, "#id_c1-filter_op-0", "eq")
    put(page, "#id_c1-filter_value-0", order.pk)
    choose(page, "#id_c1-op", "eq")
    put(page, "#id_c1-field", "status")
    put(page, "#id_c1-value", order.status)
    put(page, "#id_c2-text", "Looks the order up.")
    choose(page, "#id_c2-tool", "get_order_details")
    put(page, "#id_c2-arg_name-0", "order_id")
    choose(page, "#id_c2-arg_op-0", "eq")
    put(page, "#id_c2-arg_value-0", order.pk)
    put(page, "#id_c3-text", "Names the order.")
    choose(page, "#id_c3-response_op", "contains")
    put(page, "#id_c3-response_value", order.pk)

    # The world look-up beside the editor: search as you type, open the order.
    page.locator("#lookup-kind").select_option("order")
    page.locator("#lookup-q").press_sequentially(order.pk, delay=20)
    hit = page.locator("#lookup-results .lookup-hit", has_text=order.pk).first
    expect(hit).to_be_visible()
    hit.click()
    expect(page.locator("#lookup-entity")).to_contain_text(order.pk)
    screenshot("review_loop_editor")

    page.locator("#save-task").click()
    expect(page.locator("#task-status")).to_have_text("Draft")
    task = Task.objects.get(title=TITLE)
    assert task.current_version.criteria.count() == 4
    assert sorted(task.current_version.criteria.values_list("kind", flat=True)) == sorted(
        ["llm", "state", "tool_call", "response"]
    )

    # --- the reference solution, recorded and run in the playground ------------------------------------------
    page.locator("#open-playground").click()
    page.locator("#pg-tool").select_option("get_order_details")
    expect(page.locator("#pg-arg-order_id")).to_be_visible()
    page.locator("#pg-arg-order_id").fill(order.pk)
    page.locator("#pg-run-tool").click()
    expect(page.locator("#pg-result")).to_contain_text(order.pk)
    page.locator("#pg-record").click()
    expect(page.locator("#pg-draft .pg-calls li")).to_have_count(1)
    page.locator("#pg-final-answer").fill(f"Your order {order.pk} is {order.status}.")
    page.locator("#pg-save").click()
    expect(page.locator("#pg-draft-notice")).to_contain_text("Saved as the reference solution of version")
    page.locator("#pg-run-reference").click()
    expect(page.locator("#pg-run #run-summary")).to_be_visible()
    expect(page.locator("#pg-run").get_by_text("✓ met")).to_have_count(3)  # every programmatic criterion
    screenshot("review_loop_playground")
    task.refresh_from_db()
    assert task.current_version.reference_solution["calls"][0]["tool"] == "get_order_details"

    page.goto(f"/tasks/{task.pk}/")
    page.locator("#submit-review").click()
    expect(page.locator("#task-status")).to_have_text("In review")

    # --- the author cannot approve their own task -------------------------------------------------------------
    page.goto(f"/review/tasks/{task.pk}/")
    expect(page.locator("#decide-note")).to_contain_text("nobody reviews (or approves) their own work")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Claim", exact=True)).to_have_count(0)
    headers = csrf_headers(page)
    assert page.request.post(f"/review/tasks/{task.pk}/claim/", headers=headers).status == 403
    forged = page.request.post(
        f"/review/tasks/{task.pk}/decide/", headers=headers, form={"decision": "approve", "comment": "LGTM"}
    )
    assert forged.status == 403
    # Even holding a lease (planted behind the pages' back), the services refuse the author.
    Task.objects.filter(pk=task.pk).update(
        claimed_by=task.author, claim_expires_at=timezone.now() + timedelta(minutes=5)
    )
    forged = page.request.post(
        f"/review/tasks/{task.pk}/decide/", headers=headers, form={"decision": "approve", "comment": ""}
    )
    assert forged.status == 403 and "Not allowed" in forged.text()
    Task.objects.filter(pk=task.pk).update(claimed_by=None, claim_expires_at=None)
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW and not Review.objects.filter(task=task).exists()
    log_out(page)

    # --- the reviewer requests changes ------------------------------------------------------------------------
    log_in(page, "reviewer", "corecraft-reviewer")
    review_link = page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^Review"))
    expect(review_link.locator(".badge")).to_be_visible()
    review_link.click()
    expect(page.locator("#queue-table")).to_contain_text("Free")
    screenshot("review_loop_queue_waiting")
    page.get_by_role("link", name=TITLE).click()
    expect(page.get_by_role("heading", name=TITLE)).to_be_visible()
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
    page.get_by_role("button", name="Claim", exact=True).click()
    expect(page.locator(".lease")).to_contain_text("Claimed by you")

    # A comment on one criterion, appended by htmx without a reload.
    page.evaluate("window.__stillHere = true")
    key = str(task.current_version.criteria.get(kind="response").key)
    criterion = page.locator(f"#criterion-{key}")
    criterion.locator("summary").click()
    criterion.get_by_label("Comment on this criterion").fill("Also check the order total is stated.")
    criterion.get_by_role("button", name="Add comment").click()
    expect(criterion.locator(".comment")).to_contain_text("Also check the order total is stated.")
    assert page.evaluate("window.__stillHere") is True
    screenshot("review_loop_task")

    # Request changes without saying what: a form error, nothing decided.
    page.get_by_role("button", name="Request changes").click()
    expect(page.locator("#decision-errors")).to_contain_text("Say what the author should change")
    assert Task.objects.get(pk=task.pk).status == TaskStatus.IN_REVIEW
    page.get_by_label("Comment for the author").fill("Please also state the order total in the answer.")
    page.get_by_role("button", name="Request changes").click()
    expect(page).to_have_url(re.compile(r"/review/$"))
    expect(page.locator(".messages")).to_contain_text("Changes requested on")
    screenshot("review_loop_queue")
    log_out(page)

    # --- the author fixes and resubmits -----------------------------------------------------------------------
    log_in(page, "author", "corecraft-author")
    page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^My work")).click()
    item = page.locator(".work-item", has_text=TITLE)
    expect(item).to_contain_text("Please also state the order total in the answer.")
    screenshot("review_loop_my_work")
    item.get_by_role("link", name="Fix and resubmit").click()
    page.locator("#id_instruction").fill(f"Hi, what is the status and the total of my order {order.pk}? Thanks!")
    page.locator("#save-task").click()
    expect(page.locator("#task-status")).to_have_text("Changes requested")
    page.locator("#submit-review").click()
    expect(page.locator("#task-status")).to_have_text("In review")
    task.refresh_from_db()
    assert task.current_version.number >= 3  # v1, the playground's v2, the fix
    log_out(page)

    # --- the reviewer approves --------------------------------------------------------------------------------
    log_in(page, "reviewer", "corecraft-reviewer")
    page.goto("/review/")
    page.get_by_role("link", name=TITLE).click()
    history = page.locator("#task-history")
    expect(history).to_contain_text("Request changes")
    expect(history).to_contain_text("Also check the order total is stated.")
    expect(history.get_by_role("link", name=re.compile(r"^What changed since version"))).to_have_count(
        task.current_version.number - 1
    )
    page.get_by_role("button", name="Claim", exact=True).click()
    screenshot("review_loop_before_approval")
    # The gate: a dump of the tool results passes this rubric (it names the order and the call is made), so
    # the reviewer's approval is refused with the checklist; an admin approves over it with a written reason.
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#decision-errors")).to_contain_text("No policy that must fail passes")
    expect(page.locator("#gate-checklist")).to_contain_text("dump")
    screenshot("review_loop_gate_refused")
    page.get_by_role("button", name="Release", exact=True).click()
    log_out(page)
    log_in(page, "admin", "corecraft-admin")
    page.goto(f"/review/tasks/{task.pk}/")
    page.get_by_role("button", name="Claim", exact=True).click()
    page.locator("#decision-override").fill("Walk-through task: kept to show the review loop, not for training.")
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Approved")
    screenshot("review_loop_approved")

    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED
    decisions = list(Review.objects.filter(task=task).order_by("created_at").values_list("decision", "reviewer"))
    assert [d for d, _ in decisions] == ["request_changes", "approve"]
    approval = Review.objects.get(task=task, decision="approve")
    assert approval.gate["passes"] is False and approval.gate_override_reason.startswith("Walk-through task")
    assert all(reviewer != task.author_id for _, reviewer in decisions)
