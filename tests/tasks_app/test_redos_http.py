"""ReDoS at the site level: a stored catastrophic regex criterion reached through an HTTP path (the playground's
"run the reference solution") is an ``error`` verdict within the time limit, and the process keeps serving."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings
from django.urls import reverse

from rubrics_app.patterns import PATTERN_TIMEOUT_S
from tasks_app.models import Criterion, ReferenceRun
from tests.conftest import TEST_WORLD_NOW
from tests.tasks_app.factories import author, task_make
from world_app.snapshots import snapshot_publish

pytestmark = [
    pytest.mark.django_db(databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

HTMX = {"HTTP_HX_REQUEST": "true"}
CATASTROPHIC = r"^(a|a)*$"  # about 2**60 steps on the answer below without a limit


def test_a_stored_catastrophic_regex_is_an_error_verdict_over_http_and_the_site_keeps_serving(client, seeded_world):
    with override_settings(WORLD_NOW=TEST_WORLD_NOW):
        snapshot = snapshot_publish(note="redos over http")
    user = author()
    client.force_login(user)
    task = task_make(
        user=user,
        snapshot=snapshot,
        criteria=[
            {"kind": "response", "text": "Answers in a's", "category": "format", "required": True,
             "spec": {"op": "regex", "value": "^a+!$"}},
            {"kind": "response", "text": "Says a", "category": "correctness", "spec": {"op": "contains", "value": "a"}},
        ],
        reference_solution={"calls": [], "final_answer": "a" * 60 + "!"},
    )  # fmt: skip
    # As an old row or a frozen release row holds it: written past the save-time check.
    Criterion.objects.filter(version=task.current_version, text="Answers in a's").update(
        spec={"op": "regex", "value": CATASTROPHIC}
    )
    started = time.perf_counter()
    response = client.post(reverse("tasks:playground_run", args=[task.pk]), **HTMX)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    run = ReferenceRun.objects.get(version=task.current_version)
    statuses = {v["text"]: v["status"] for v in run.verdicts}
    assert statuses == {"Answers in a's": "error", "Says a": "met"}
    # The limit is wall-clock time inside the regex engine (no thread left running): a loaded two-core machine may
    # overshoot it by seconds, never by the years the match would take.
    assert elapsed < PATTERN_TIMEOUT_S * 30 + 10
    started = time.perf_counter()
    page = client.get(reverse("tasks:playground", args=[task.pk]))
    assert page.status_code == 200 and time.perf_counter() - started < 10
