"""The RL lead's dashboard: tasks by status and type, calibration coverage, pass rates per model and task type by
week, the frozen releases and their use by tokens, in a fixed number of queries."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from tasks_app.models import Rollout, RolloutStatus, TaskCalibration
from trainer_bridge.selectors_dashboard import lead_dashboard

pytestmark = pytest.mark.django_db


def test_the_dashboard_counts_tasks_coverage_pass_rates_and_release_use(
    client, admin_user, make_approved, frozen_release, django_assert_max_num_queries
):
    tasks = [make_approved(task_type="reasoning", difficulty="easy") for _ in range(3)]
    TaskCalibration.objects.create(version=tasks[0].current_version, calibrated_difficulty="hard")
    now = timezone.now()
    for n, passed in enumerate([True, False, True, True]):
        Rollout.objects.create(
            version=tasks[n % 3].current_version, policy="model", policy_label="qwen3-8b", sample=n,
            status=RolloutStatus.FINISHED, passed=passed, reward=1.0 if passed else 0.2, finished_at=now,
        )  # fmt: skip
    board = lead_dashboard()
    reasoning = dict(board.table())["Reasoning"]
    assert sum(reasoning) >= 3 and board.approved >= 3
    assert board.calibrated >= 1 and board.model_calibrated >= 1
    row = next(r for r in board.pass_rates if r.model == "qwen3-8b")
    assert row.task_type == "reasoning" and row.total == (4, 3)
    assert [u.release.slug for u in board.releases] == ["r1"]
    client.force_login(admin_user)
    client.get(reverse("dashboard"))
    with django_assert_max_num_queries(12):
        response = client.get(reverse("dashboard"))
    body = response.content.decode()
    assert response.status_code == 200 and "qwen3-8b" in body and "75%" in body and "r1" in body
