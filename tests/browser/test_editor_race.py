"""The rubric editor keeps what the author types while a request that re-renders the criteria is in flight (issue
17: text typed while an "Add criterion" request was in flight could be replaced by the answer's copy of it).

The server is made slow for that one request (the editor's ``criteria_apply`` sleeps before it answers), the author
types into the first criterion meanwhile, and the page must show every keystroke once the new criterion arrives.
"""

from __future__ import annotations

import time

import pytest

from tasks_app.role_grants import demo_users_ensure
from tests.browser.test_daily_loop import log_in, settle

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

SLOW_S = 1.5


@pytest.fixture
def slow_add(monkeypatch):
    """The editor's actions, with "add" answered only after SLOW_S seconds."""
    from tasks_app.authoring.views import editor

    real = editor.criteria_apply

    def slow(drafts, action, data):
        if action == "add" and len(drafts) >= 1:
            time.sleep(SLOW_S)
        return real(drafts, action, data)

    monkeypatch.setattr(editor, "criteria_apply", slow)


def test_text_typed_while_a_criterion_is_being_added_is_kept(page, live_server, slow_add):
    from playwright.sync_api import expect

    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    demo_users_ensure()
    log_in(page, "author", "corecraft-author")
    page.goto("/tasks/new/")
    page.locator("#new-kind").select_option("response")
    page.locator("#add-criterion").press("Enter")
    expect(page.locator("#criterion-c0")).to_be_visible()
    settle(page)
    text = page.locator("#id_c0-text")
    text.fill("Names the card")
    value = page.locator("#id_c0-response_value")
    value.fill("Nyra")

    page.locator("#add-criterion").click()  # answered after SLOW_S seconds
    page.wait_for_function("() => document.querySelector('#criteria.htmx-request, #add-criterion.htmx-request')")
    text.click()
    page.keyboard.press("End")
    page.keyboard.type(" it was", delay=20)
    value.click()
    page.keyboard.press("End")
    page.keyboard.type(" NX 4060", delay=20)
    assert page.evaluate("() => !!document.querySelector('.htmx-request')")  # still in flight: typed meanwhile

    expect(page.locator("#criterion-c1")).to_be_visible(timeout=10_000)
    settle(page)
    expect(page.locator("#id_c0-text")).to_have_value("Names the card it was")
    expect(page.locator("#id_c0-response_value")).to_have_value("Nyra NX 4060")
    expect(page.locator("#id_c0-response_value")).to_be_focused()  # the author keeps typing where they were
    assert problems == []
