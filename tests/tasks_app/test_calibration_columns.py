"""Calibration where decisions are made: figures and flags as columns, filters and sorting of the task list and
the review queue, provisional while llm criteria are pending (tasks_app.calibration.selectors)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.calibration.selectors import gate_flagged_versions, tasks_calibrated, with_cells
from tasks_app.models import Task, TaskCalibration
from tests.tasks_app.factories import RESPONSE_CRITERION, WorldSnapshotFactory, admin, reviewer, task_in_review

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    """Four tasks in review: calibrated clean (0.8), gameable by its gate (0.3), judged by a judge config (0.5, its
    llm criterion judged), and one never calibrated."""
    snapshot = WorldSnapshotFactory()
    clean = task_in_review(snapshot=snapshot, title="Clean one")
    gamed = task_in_review(snapshot=snapshot, title="Gamed one", gate_passes=False)
    judged = task_in_review(snapshot=snapshot, title="Judged one")
    bare = task_in_review(snapshot=snapshot, title="Bare one", gate_passes=None, criteria=[RESPONSE_CRITERION])
    TaskCalibration.objects.create(version=clean.current_version, n_rollouts=10, pass_at_1=0.8, reward_std=0.2)
    TaskCalibration.objects.create(version=gamed.current_version, n_rollouts=10, pass_at_1=0.3, reward_std=0.4)
    endpoint = ModelEndpoint.objects.create(name="judge-model", base_url="http://127.0.0.1:9/v1", model="m")
    config = JudgeConfig.objects.create(name="judge", endpoint=endpoint)
    TaskCalibration.objects.create(
        version=judged.current_version, judge_config=config, n_rollouts=4, pass_at_1=0.5, flags=["judge_unstable"]
    )
    return {"clean": clean, "gamed": gamed, "judged": judged, "bare": bare}


def _titles(tasks) -> list[str]:
    return [t.title for t in tasks]


def test_filters_sorts_and_cells(board):
    tasks = Task.objects.filter(pk__in=[t.pk for t in board.values()]).order_by("pk")
    assert _titles(tasks_calibrated(tasks, flag="gate_flagged")) == ["Gamed one"]
    assert _titles(tasks_calibrated(tasks, flag="gameable")) == ["Gamed one"]
    assert _titles(tasks_calibrated(tasks, flag="over_specified")) == []
    assert _titles(tasks_calibrated(tasks, flag="uncalibrated")) == ["Bare one"]
    assert set(_titles(tasks_calibrated(tasks, flag="any_flag"))) == {"Gamed one", "Judged one"}
    assert _titles(tasks_calibrated(tasks, flag="clean")) == ["Clean one"]
    # llm criteria without a judge configuration: provisional; the judged one and the one without llm are not
    assert set(_titles(tasks_calibrated(tasks, flag="provisional"))) == {"Clean one", "Gamed one"}
    assert _titles(tasks_calibrated(tasks, sort="pass_rate")) == ["Gamed one", "Judged one", "Clean one", "Bare one"]
    assert _titles(tasks_calibrated(tasks, sort="-pass_rate"))[:3] == ["Clean one", "Judged one", "Gamed one"]
    cells = {t.title: t.calibration for t in with_cells(list(tasks_calibrated(tasks)))}
    assert cells["Gamed one"].gate == "refused" and "gameable" in cells["Gamed one"].flags
    assert cells["Gamed one"].gate_flagged and cells["Gamed one"].provisional
    assert cells["Judged one"].flags == ["judge_unstable"] and not cells["Judged one"].provisional
    assert cells["Clean one"].pass_rate == 0.8 and cells["Clean one"].gate == "passes"
    assert cells["Bare one"].rollouts is None and cells["Bare one"].gate == "" and not cells["Bare one"].provisional
    # the list's "flagged by the gate (left out of releases)" is the release's own rule
    listed = {t.current_version_id for t in tasks_calibrated(tasks, flag="gate_flagged")}
    assert listed == gate_flagged_versions() & {t.current_version_id for t in tasks} and listed


def test_the_task_list_and_queue_show_and_filter_by_calibration(client, board, django_assert_max_num_queries):
    client.force_login(admin())
    body = client.get(reverse("tasks:list"), {"flag": "gate_flagged"}).content.decode()
    assert "Gamed one" in body and "Clean one" not in body and "gate refused" in body and "provisional" in body
    sorted_page = client.get(reverse("tasks:list"), {"sort": "pass_rate", "status": "in_review"})
    assert _titles(sorted_page.context["page"].object_list)[:3] == ["Gamed one", "Judged one", "Clean one"]
    client.force_login(reviewer())
    client.get(reverse("review:queue"))
    with django_assert_max_num_queries(9):  # with the two-review agreement aggregate
        queue = client.get(reverse("review:queue"), {"flag": "clean", "sort": "-pass_rate"})
    text = queue.content.decode()
    assert queue.status_code == 200 and "Clean one" in text and "Gamed one" not in text and "0.80" in text
    bad = client.get(reverse("review:queue"), {"flag": "nonsense"})
    assert bad.status_code == 400 and "Pick a calibration filter" in bad.content.decode()
