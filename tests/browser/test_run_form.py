"""The calibration run form's task picker and its Models hint (issue 17: the picker was a few hundred checkboxes
without search; the Models heading was empty without a word on how to add a model).

The picker filters as the admin types (every word must be in the task's label), keeps ticked tasks shown whatever
the filter, and "Tick shown" ticks what the filter shows; with no model endpoint, the form says how to add one.
"""

from __future__ import annotations

import pytest

from tasks_app.models import Task, TaskStatus
from tasks_app.role_grants import demo_users_ensure
from tests.browser.test_daily_loop import log_in
from tests.tasks_app.factories import task_make

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

TITLES = ["Refund a lost GPU parcel", "Refund a duplicate charge", "Warranty claim for a fan", "Loyalty tier quote"]


def test_the_task_picker_filters_as_you_type_and_the_form_says_how_to_add_a_model(page, live_server):
    from playwright.sync_api import expect

    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    demo_users_ensure()
    for title in TITLES:
        task_make(title=title)
    Task.objects.update(status=TaskStatus.APPROVED)  # arranged: the picker lists approved tasks
    log_in(page, "admin", "corecraft-admin")
    page.goto("/calibration/runs/new/")

    boxes = page.locator("#task-picker input[type=checkbox]")
    expect(boxes).to_have_count(len(TITLES))
    expect(page.locator("#task-filter-count")).to_have_text("4 of 4 shown, 0 ticked")
    page.locator("#task-filter").press_sequentially("refund gpu", delay=10)
    expect(page.locator("#task-picker input[type=checkbox]:visible")).to_have_count(1)
    expect(page.locator("#task-filter-count")).to_have_text("1 of 4 shown, 0 ticked")
    page.locator("#task-filter").press("Enter")  # filters, does not submit the form
    expect(page).to_have_url(f"{live_server.url}/calibration/runs/new/")
    page.locator("#task-tick-shown").click()
    page.locator("#task-filter").fill("warranty")
    page.locator("#task-filter").dispatch_event("input")
    visible = page.locator("#task-picker input[type=checkbox]:visible")
    expect(visible).to_have_count(2)  # the warranty task, and the ticked GPU refund that stays shown
    expect(page.locator("#task-picker label", has_text="Refund a lost GPU parcel").locator("input")).to_be_checked()
    expect(page.locator("#task-filter-count")).to_have_text("2 of 4 shown, 1 ticked")

    hint = page.locator("#no-models")
    expect(hint).to_contain_text("add a model endpoint")
    hint.get_by_role("link", name="add a model endpoint").click()
    expect(page).to_have_url(f"{live_server.url}/calibration/endpoints/new/")
    assert problems == []
