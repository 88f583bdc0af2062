"""The experts' and reviewers' day in one walk, by keyboard where the flow allows.

Find an order by a product name and a remembered date; write a task from it, record and run its reference,
submit; the reviewer claims the next item in one step, comments on a criterion (the author sees it inline in the
editor), requests changes; the author fixes and resubmits; the reviewer approves it with the queue's bulk action
(through the gate); the admin builds a release that leaves a flagged task out and freezes it after the
confirmation. No console error on any page.

The world is a small one made here (a customer, a Nyra NX 4060 and the order of it in mid-August), not the shared
seeded world: this test empties the database when it ends, as every browser test does, and should not make the
next one seed it again. The gate of the task's version is arranged passing (its red team is tested in
tests/tasks_app/test_rubric_hardening.py and in test_review_loop.py); a second approved task's gate is arranged
refused, so the release has a flagged task to leave out.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from tasks_app.models import Task, TaskStatus
from tasks_app.role_grants import demo_users_ensure
from tests.tasks_app.factories import gate_stored, task_make
from trainer_bridge.models import Release, ReleaseStatus
from world_app.models import Customer, Order, OrderLineItem, Product
from world_app.snapshots import snapshot_publish

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

TITLE = "Which card was on my August order?"
EST = ZoneInfo("EST")


def small_world() -> Order:
    customer = Customer.objects.create(
        id="cus-70001", first_name="Mara", last_name="Quill", email="mara.quill@example.com", phone="+1-555-0100"
    )
    card = Product.objects.create(
        id="prd-70001", sku="GPU-KES-7001", name="Kestrel Nyra NX 4060 Compact 8GB", brand="Kestrel",
        category="gpu", price=Decimal("298.99"), stock_quantity=4,
    )  # fmt: skip
    order = Order.objects.create(
        id="ord-250814-701", customer=customer, status="fulfilled", subtotal=Decimal("298.99"),
        total=Decimal("298.99"), created_at=datetime(2025, 8, 14, 11, 30, tzinfo=EST),
        estimated_delivery=date(2025, 8, 19),
    )  # fmt: skip
    OrderLineItem.objects.create(id="li-250814-701-1", order=order, product=card, quantity=1, unit_price=card.price)
    return order


def log_in(page, username: str, password: str) -> None:
    from playwright.sync_api import expect

    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("#id_password").press("Enter")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def log_out(page) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def settle(page) -> None:
    page.wait_for_timeout(50)
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )


def test_find_write_review_fix_approve_release_by_keyboard(page, screenshot, live_server):
    from playwright.sync_api import expect

    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    demo_users_ensure()
    order = small_world()
    snapshot_publish(note="browser: the daily loop")

    # --- find the order by what the author remembers ----------------------------------------------------------
    log_in(page, "author", "corecraft-author")
    page.goto("/world/lookup/?kind=order")
    page.locator("#lookup-q").press_sequentially("nyra 4060 mid august", delay=10)
    hit = page.locator("#lookup-results .lookup-hit").first
    expect(hit).to_contain_text(order.pk)
    expect(page.locator("#lookup-results")).to_contain_text("Read as: dates Aug 11 to Aug 20, 2025")
    hit.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#lookup-entity")).to_contain_text("Kestrel Nyra NX 4060 Compact 8GB x 1")
    expect(page.locator("#lookup-entity")).to_contain_text("Aug 14, 2025")

    # --- write the task, record and run its reference, submit ---------------------------------------------------
    page.goto("/tasks/new/")
    page.locator("#id_title").fill(TITLE)
    page.locator("#id_task_type").select_option("information_retrieval")
    page.locator("#id_instruction").fill("Hi, which graphics card did I order in mid August? Mara Quill")
    page.locator("#new-kind").select_option("response")
    page.locator("#add-criterion").press("Enter")
    expect(page.locator("#criterion-c0")).to_have_attribute("data-kind", "response")
    settle(page)
    page.locator("#id_c0-text").fill("Names the card.")
    page.locator("#id_c0-response_op").select_option("contains")
    page.locator("#id_c0-response_value").fill("Nyra NX 4060")
    page.locator("#id_c0-response_value").press("Tab")
    settle(page)
    page.locator("#save-task").press("Enter")
    expect(page.locator("#task-status")).to_have_text("Draft")
    task = Task.objects.get(title=TITLE)
    page.locator("#open-playground").press("Enter")
    page.locator("#pg-tool").select_option("get_order_details")
    page.locator("#pg-arg-order_id").fill(order.pk)
    page.locator("#pg-arg-order_id").press("Enter")
    expect(page.locator("#pg-result")).to_contain_text("Nyra NX 4060")
    page.locator("#pg-record").press("Enter")
    expect(page.locator("#pg-draft .pg-calls li")).to_have_count(1)
    page.locator("#pg-final-answer").fill("It was the Kestrel Nyra NX 4060 Compact 8GB.")
    page.locator("#pg-final-answer").press("Tab")  # kept as typed (saving at once aborts that request, by design)
    settle(page)
    page.locator("#pg-save").press("Enter")
    expect(page.locator("#pg-draft-notice")).to_contain_text("version 2")
    expect(page.locator("#pg-version")).to_have_text("2")  # the header follows the save
    page.locator("#pg-run-reference").press("Enter")
    expect(page.locator("#pg-run").get_by_text("✓ met")).to_have_count(1)
    page.goto(f"/tasks/{task.pk}/")
    page.locator("#submit-review").press("Enter")
    expect(page.locator("#task-status")).to_have_text("In review")
    log_out(page)

    # --- review: claim the next item in one step, comment on the criterion, send it back -----------------------
    log_in(page, "reviewer", "corecraft-reviewer")
    page.goto("/review/")
    page.locator("#claim-next").press("Enter")
    expect(page.get_by_role("heading", name=TITLE)).to_be_visible()
    expect(page.locator(".lease")).to_contain_text("Claimed by you")
    key = str(task.current_version.criteria.get().key)
    criterion = page.locator(f"#criterion-{key}")
    criterion.locator("summary").press("Enter")
    criterion.get_by_label("Comment on this criterion").fill("Name the exact model: Compact 8GB.")
    criterion.get_by_role("button", name="Add comment").press("Enter")
    expect(criterion.locator(".comment")).to_contain_text("Compact 8GB")
    page.locator("#decision-comment").fill("See the comment on the criterion.")
    page.get_by_role("button", name="Request changes").press("Enter")
    expect(page.locator(".messages")).to_contain_text("Changes requested on")
    log_out(page)

    # --- the author sees the comment in the editor, on its criterion, fixes and resubmits ----------------------
    log_in(page, "author", "corecraft-author")
    page.goto(f"/tasks/{task.pk}/edit/")
    expect(page.locator("#criterion-c0 .review-comments")).to_contain_text("Name the exact model: Compact 8GB.")
    screenshot("daily_loop_editor_comment")
    overflowing = page.evaluate(
        """() => [...document.querySelectorAll('.criterion input, .criterion select, .criterion textarea')]
            .filter(e => e.getBoundingClientRect().right > e.closest('.criterion').getBoundingClientRect().right + 1)
            .map(e => e.id)"""
    )
    assert overflowing == []  # every value box stays inside its criterion's card
    page.locator("#id_c0-response_value").fill("Nyra NX 4060 Compact 8GB")
    page.locator("#id_c0-response_value").press("Tab")
    settle(page)
    page.locator("#save-task").press("Enter")
    expect(page.locator("#task-status")).to_have_text("Changes requested")
    page.locator("#submit-review").press("Enter")
    expect(page.locator("#task-status")).to_have_text("In review")
    log_out(page)

    # --- approve from the queue, selected, through the gate ----------------------------------------------------
    task.refresh_from_db()
    gate_stored(task.current_version, passes=True)
    log_in(page, "reviewer", "corecraft-reviewer")
    page.goto("/review/")
    row = page.locator("#queue-table tr", has_text=TITLE)
    row.get_by_role("checkbox").press("Space")
    page.locator("#bulk-decision").select_option("approve")
    page.locator("#bulk-comment").fill("Clear and checked.")
    page.locator("#bulk-comment").press("Enter")
    expect(page.locator(".messages")).to_contain_text("Approved 1 of 1")
    assert Task.objects.get(pk=task.pk).status == TaskStatus.APPROVED
    log_out(page)

    # --- a release that leaves the flagged task out, frozen after the confirmation -----------------------------
    flagged = task_make(snapshot=task.current_version.snapshot, title="Flagged by its gate")
    Task.objects.filter(pk=flagged.pk).update(status=TaskStatus.APPROVED)
    gate_stored(flagged.current_version, passes=False)
    log_in(page, "admin", "corecraft-admin")
    page.goto("/releases/new/")
    page.locator("#id_slug").fill("daily-loop")
    page.locator("#id_train").fill("1")
    page.locator("#id_holdout").fill("0")
    page.locator("#id_holdout").press("Enter")
    expect(page.locator("#flagged-left-out")).to_contain_text("1 approved task the gate flags")
    page.locator("#freeze-release").press("Enter")
    expect(page.locator("#freeze-outcome")).to_contain_text("cannot be undone")
    expect(page.locator("#freeze-outcome")).to_contain_text("1 train")
    assert Release.objects.get(slug="daily-loop").status == ReleaseStatus.DRAFT
    screenshot("daily_loop_freeze_confirm")
    page.keyboard.press("Enter")  # the confirm button has the focus
    expect(page.locator(".messages")).to_contain_text("is frozen")
    release = Release.objects.get(slug="daily-loop")
    assert release.status == ReleaseStatus.FROZEN
    (row,) = release.rows.all()  # the approved task; the flagged one (its instruction names ord-f00001) left out
    assert "Mara Quill" in json.dumps(row.content) and "ord-f00001" not in json.dumps(row.content)
    expect(page).to_have_url(re.compile(r"/releases/daily-loop/$"))
    assert problems == [], "\n".join(problems)
