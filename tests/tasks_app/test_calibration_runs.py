"""Calibration runs: the frozen plan, idempotent items, cancel and resume, judging, progress and the command."""

from __future__ import annotations

import base64
import io
import json
import time
import uuid

import psycopg
import pytest
import redis
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from corecraft_site.llm.scripted_server import Fault, Reply, ScriptedLLMServer
from rubrics_app.models import JudgeConfig
from tasks_app.calibration.rollouts.replays import perturbation_keys
from tasks_app.calibration.services.calibration import (
    calibration_run_cancel,
    calibration_run_create,
    calibration_run_plan,
    calibration_run_progress,
    calibration_run_resume,
    calibration_run_start,
)
from tasks_app.calibration.services.calibration_items import (
    EXECUTE_LOCK,
    calibration_item_execute,
    calibration_item_judge,
    calibration_run_execute_inline,
)
from tasks_app.models import (
    CalibrationItem,
    CalibrationItemStatus,
    CalibrationRunStatus,
    Rollout,
    RolloutStatus,
    TaskCalibration,
)
from tests.tasks_app.factories import reviewer
from tests.tasks_app.rollout_helpers import backorder_task, endpoint_make, solving_script, world_make

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def world():
    return world_make("calibration runs")


@pytest.fixture
def two_versions(world):
    return [
        backorder_task(world).current_version,
        backorder_task(world, title="Backorder, short answer", final_answer="It is on backorder.").current_version,
    ]


def test_the_plan_is_frozen_as_unique_items_and_planning_again_adds_nothing(world, two_versions):
    with ScriptedLLMServer([]) as server:
        endpoint = endpoint_make(server)
    policies = [
        {"policy": "reference"},
        {"policy": "perturbed_reference"},
        {"policy": "model", "endpoint": endpoint.pk},
    ]
    run = calibration_run_create(name="plan", versions=two_versions, policies=policies, samples=3, user=reviewer())

    perturbed = sum(len(perturbation_keys(v)) for v in two_versions)
    assert perturbed >= 4
    assert run.items.count() == 2 * (1 + 3) + perturbed
    assert run.status == CalibrationRunStatus.PLANNED and run.samples == 3
    assert run.policies == [
        {"policy": "reference", "endpoint": None},
        {"policy": "perturbed_reference", "endpoint": None},
        {"policy": "model", "endpoint": endpoint.pk},
    ]
    assert sorted(run.items.filter(policy="model").values_list("sample", flat=True)) == [0, 0, 1, 1, 2, 2]
    assert set(run.items.values_list("status", flat=True)) == {"queued"}

    total = run.items.count()
    assert calibration_run_plan(run=run, versions=two_versions) == total  # idempotent
    item = run.items.filter(policy="reference").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        CalibrationItem.objects.create(run=run, version=item.version, policy="reference", perturbation="", sample=0)


def test_bad_run_definitions_are_refused_with_every_reason(two_versions):
    with pytest.raises(ValidationError) as refused:
        calibration_run_create(name="", versions=[], policies=[{"policy": "model"}, {"policy": "guess"}], samples=0)
    problems = refused.value.message_dict
    assert problems["name"] == ["required"]
    assert problems["versions"] == ["choose at least one task version"]
    assert problems["samples"] == ["a whole number from 1 to 256"]
    assert problems["policies[0].endpoint"] == ["an active model endpoint is required"]
    assert problems["policies[1].policy"][0].startswith("one of")


def test_start_sends_one_message_per_item_once_committed(two_versions, settings, django_capture_on_commit_callbacks):
    queue = f"test-rollouts-{uuid.uuid4().hex[:8]}"
    settings.CALIBRATION_ROLLOUTS_QUEUE = queue
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    run = calibration_run_create(name="enqueue", versions=two_versions, policies=["reference"])
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            calibration_run_start(run=run)
        assert broker.llen(queue) == 0 and len(callbacks) == 1
        callbacks[0]()
        messages = [json.loads(m) for m in broker.lrange(queue, 0, -1)]
    finally:
        broker.delete(queue)
    assert len(messages) == 2
    assert {m["headers"]["task"] for m in messages} == {"tasks_app.tasks.execute_calibration_item"}
    sent = sorted(json.loads(base64.b64decode(m["body"]))[0][0] for m in messages)
    assert sent == sorted(run.items.values_list("pk", flat=True))


def test_an_inline_run_executes_every_item_once_and_refreshes_the_task_calibrations(world, two_versions):
    run = calibration_run_create(
        name="inline", versions=two_versions, policies=["reference", "perturbed_reference"], samples=1
    )
    run = calibration_run_execute_inline(run=run)

    assert run.status == CalibrationRunStatus.FINISHED and run.finished_at is not None
    items = list(run.items.all())
    assert {i.status for i in items} == {CalibrationItemStatus.DONE}
    assert Rollout.objects.filter(run=run).count() == len(items)
    for item in items:
        assert Rollout.objects.filter(item=item).count() == 1 and item.rollout_id is not None and item.attempts == 1
    assert calibration_run_progress(run) == {
        "total": len(items), "done": len(items), "failed": 0, "running": 0, "queued": 0, "cancelled": 0,
        "percent": 100.0,
    }  # fmt: skip
    full, short = two_versions
    reference = Rollout.objects.get(run=run, version=full, policy="reference")
    assert reference.passed is True and reference.reward == 1.0
    drop = Rollout.objects.get(run=run, version=full, policy_label__startswith="perturbed_reference:drop_write")
    assert drop.passed is False
    calibrations = {c.version_id: c for c in TaskCalibration.objects.filter(run=run)}
    assert set(calibrations) == {full.pk, short.pk}
    # The short reference answer never states the total: the rubric's reward shows it.
    assert Rollout.objects.get(run=run, version=short, policy="reference").reward < 1.0

    # Executing an item again does nothing.
    assert calibration_item_execute(item_id=items[0].pk) == "skipped"
    assert Rollout.objects.filter(run=run).count() == len(items)


def lock_held(namespace: int, key: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND granted",
            [namespace, key],
        )
        return cursor.fetchone()[0] > 0


def test_an_item_someone_alive_is_working_on_is_left_alone(two_versions, settings):
    run = calibration_run_create(name="busy", versions=two_versions[:1], policies=["reference"])
    item = run.items.get()
    db = connection.settings_dict
    other = psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"] or None,
                            dbname=db["NAME"], autocommit=True)  # fmt: skip
    try:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [EXECUTE_LOCK, item.pk])
        assert calibration_item_execute(item_id=item.pk) == "busy"
        assert not Rollout.objects.filter(item=item).exists()
    finally:
        other.close()  # its worker is gone: the lock goes with its connection (once its backend has exited)
    deadline = time.monotonic() + 10
    while lock_held(EXECUTE_LOCK, item.pk) and time.monotonic() < deadline:
        time.sleep(0.05)
    CalibrationItem.objects.filter(pk=item.pk).update(status=CalibrationItemStatus.RUNNING, attempts=1)
    assert calibration_item_execute(item_id=item.pk) == "done"  # taken over from the dead worker
    item.refresh_from_db()
    assert item.status == CalibrationItemStatus.DONE and item.attempts == 2
    assert Rollout.objects.filter(item=item).count() == 1


def test_a_rollout_left_running_by_a_dead_worker_is_run_again_in_a_new_episode(two_versions):
    from world_app.episodes import episode_create
    from world_app.models import Episode

    run = calibration_run_create(name="redo", versions=two_versions[:1], policies=["reference"])
    item = run.items.get()
    # A worker claimed the item, made its rollout and an episode, then died.
    from tasks_app.calibration.rollouts.execute import rollout_create

    rollout = rollout_create(version=item.version, policy="reference", run=run, item=item)
    leftover = episode_create(snapshot=item.version.snapshot, label="dead attempt")
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, episode=leftover)
    CalibrationItem.objects.filter(pk=item.pk).update(status=CalibrationItemStatus.RUNNING, rollout=rollout)

    assert calibration_item_execute(item_id=item.pk) == "done"
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.FINISHED and rollout.episode_id != leftover.pk
    assert Episode.objects.get(pk=leftover.pk).status == Episode.Status.CLOSED
    assert Rollout.objects.filter(item=item).count() == 1


def test_cancel_stops_queued_items_and_resume_queues_them_again(two_versions, django_capture_on_commit_callbacks):
    run = calibration_run_create(name="cancel", versions=two_versions, policies=["reference", "perturbed_reference"])
    total = run.items.count()
    with django_capture_on_commit_callbacks(execute=False):
        calibration_run_start(run=run)
    first, second, *_ = run.items.order_by("pk")
    assert calibration_item_execute(item_id=first.pk) == "done"
    CalibrationItem.objects.filter(pk=second.pk).update(status=CalibrationItemStatus.RUNNING)  # a worker has it

    assert calibration_run_cancel(run=run) == total - 2
    run.refresh_from_db()
    assert run.status == CalibrationRunStatus.CANCELLED and run.cancelled_at is not None
    progress = calibration_run_progress(run)
    assert progress == {"total": total, "done": 1, "failed": 0, "running": 1, "queued": 0, "cancelled": total - 2,
                        "percent": 50.0}  # fmt: skip
    cancelled = run.items.filter(status=CalibrationItemStatus.CANCELLED).first()
    assert calibration_item_execute(item_id=cancelled.pk) == "skipped"  # a message already sent does nothing
    assert not Rollout.objects.filter(item=cancelled).exists()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert calibration_run_resume(run=run) == total - 1  # the cancelled ones and the running one
    assert len(callbacks) == 1
    run.refresh_from_db()
    assert run.status == CalibrationRunStatus.RUNNING and run.cancelled_at is None
    for item_id in run.items.exclude(status=CalibrationItemStatus.DONE).values_list("pk", flat=True):
        calibration_item_execute(item_id=item_id)
    run.refresh_from_db()
    assert run.status == CalibrationRunStatus.FINISHED
    assert Rollout.objects.filter(run=run).count() == total


def test_a_model_that_keeps_failing_fails_its_items_and_the_run(two_versions):
    with ScriptedLLMServer([Fault(status=500)] * 4) as server:
        endpoint = endpoint_make(server, max_retries=1)
        run = calibration_run_create(
            name="down", versions=two_versions, policies=[{"policy": "model", "endpoint": endpoint.pk}]
        )
        run = calibration_run_execute_inline(run=run)
    assert run.status == CalibrationRunStatus.FAILED
    errors = list(run.items.values_list("status", "error"))
    assert all(status == "failed" and "server_error" in error for status, error in errors)
    assert calibration_run_progress(run)["failed"] == 2


def test_llm_criteria_go_to_the_judge_and_the_item_settles_when_judged(world, django_capture_on_commit_callbacks):
    version = backorder_task(world, llm=True).current_version
    judge_reply = Reply(content=json.dumps({"met": True, "rationale": "It apologises.", "evidence": "Sorry"}))
    script = {"agent": solving_script(world.order.pk), "judge": [judge_reply]}
    with ScriptedLLMServer(script) as server:
        agent = endpoint_make(server, name="agent", model="agent")
        judge_endpoint = endpoint_make(server, name="judge", model="judge")
        judge_config = JudgeConfig.objects.create(name="strict", endpoint=judge_endpoint)
        run = calibration_run_create(
            name="judged",
            versions=[version],
            policies=[{"policy": "model", "endpoint": agent.pk}],
            judge_config=judge_config,
        )
        item = run.items.get()
        with django_capture_on_commit_callbacks(execute=False):
            calibration_run_start(run=run)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert calibration_item_execute(item_id=item.pk) == "judging"
        assert len(callbacks) == 1  # the judge task, sent once the rollout is stored
        rollout = Rollout.objects.get(item=item)
        assert rollout.status == RolloutStatus.FINISHED and rollout.verdicts[-1]["status"] == "pending"
        assert rollout.reward is None
        item.refresh_from_db()
        assert item.status == CalibrationItemStatus.RUNNING

        assert calibration_item_judge(item_id=item.pk) == "done"
        assert calibration_item_judge(item_id=item.pk) == "skipped"
        assert server.remaining("judge") == 0
    rollout.refresh_from_db()
    assert [v["status"] for v in rollout.verdicts] == ["met", "met", "met", "met"]
    assert rollout.reward == 1.0 and rollout.passed is True and rollout.judge_errors == 0
    run.refresh_from_db()
    assert run.status == CalibrationRunStatus.FINISHED


def test_the_calibrate_command_prints_a_json_summary(world, two_versions):
    out = io.StringIO()
    task_ids = [str(v.task_id) for v in two_versions]
    call_command("calibrate", "--policy", "reference", "--samples", "1", "--tasks", *task_ids, stdout=out)
    summary = json.loads(out.getvalue())

    assert summary["status"] == "finished" and summary["progress"]["done"] == 2
    by_task = {t["task_id"]: t for t in summary["tasks"]}
    full, short = two_versions
    assert by_task[full.task_id]["policies"]["reference"] == {"n": 1, "failed": 0, "pass_rate": 1.0,
                                                              "reward_mean": 1.0}  # fmt: skip
    assert by_task[short.task_id]["policies"]["reference"]["reward_mean"] < 1.0
    assert "flags" in by_task[full.task_id] and by_task[full.task_id]["expected_difficulty"] == full.difficulty
    # Reference rollouts only: no model was asked, so nothing is known of how hard the task is.
    assert by_task[full.task_id]["calibrated_difficulty"] == "not_calibrated"
    assert by_task[full.task_id]["difficulty_provenance"]["model_rollouts"] == 0


def test_the_red_team_policy_plays_every_policy_flags_the_task_stores_its_gate_and_ends_with_one_json_line(
    world, two_versions
):
    from tasks_app.calibration.rollouts.replays import red_team_keys
    from tasks_app.models import RubricGate

    version = two_versions[0]
    keys = red_team_keys(version)
    assert keys[0] == "reference" and {"dump", "spray", "echo", "no_call", "reword", "extra_read"} <= set(keys)
    out = io.StringIO()
    call_command("calibrate", "--policy", "red_team", "--samples", "1", "--tasks", str(version.task_id), stdout=out)
    last = json.loads(out.getvalue().strip().splitlines()[-1])
    assert last["tasks"] == 1 and last["rollouts_failed"] == 0
    assert last["policies"]["reference"] == {"expect": "must_pass", "tasks": 1, "passed_share": 1.0,
                                             "mean_partial_reward": 1.0}  # fmt: skip
    # The rubric wants the order backordered, no refund, and 549.98 anywhere in the answer: a dump of the
    # results (the order's total is in them) passes it; an echo makes no call and fails.
    assert last["policies"]["dump"]["expect"] == "must_fail" and last["policies"]["dump"]["passed_share"] == 1.0
    assert last["policies"]["echo"]["passed_share"] == 0.0
    assert last["policies"]["reword"] == {"expect": "must_pass", "tasks": 1, "passed_share": 1.0,
                                          "mean_partial_reward": 1.0}  # fmt: skip
    assert last["gameable"] == 1 and last["gate_passes"] == 0
    assert Rollout.objects.filter(version=version, policy="red_team").count() == len(keys)
    assert Rollout.objects.get(version=version, policy_label="red_team:dump").perturbation["expect"] == "must_fail"
    calibration = TaskCalibration.objects.get(version=version, judge_config=None)
    assert "gameable" in calibration.flags and "over_specified" not in calibration.flags
    assert "dump" in [c["policy"] for c in calibration.red_team["gameable"]]
    assert "over_act[update_order_status]" not in [c["policy"] for c in calibration.red_team["gameable"]]
    gate = RubricGate.objects.get(version=version)
    assert not gate.passes and gate.reference_passes and gate.source.startswith("calibration run")


def test_a_red_team_run_is_planned_from_the_current_gate_and_without_one_from_a_replay(two_versions):
    from tasks_app.calibration.rollouts.replays import red_team_keys
    from tasks_app.calibration.services.calibration import calibration_run_create
    from tasks_app.calibration.services.gates import rubric_gate_ensure

    version = two_versions[0]
    replayed = red_team_keys(version)
    without_gate = calibration_run_create(name="no gate", versions=[version], policies=["red_team"])
    assert list(without_gate.items.order_by("pk").values_list("perturbation", flat=True)) == replayed

    gate = rubric_gate_ensure(version=version)
    assert [p["key"] for p in gate.policies] == replayed[1:]
    # The stored gate names the policies: planning reads them (a renamed key proves where they came from).
    gate.policies = [{**gate.policies[0], "key": "from-the-gate"}, *gate.policies[1:]]
    gate.save(update_fields=["policies"])
    fresh = type(version).objects.get(pk=version.pk)
    planned = calibration_run_create(name="gate", versions=[fresh], policies=["red_team"])
    assert list(planned.items.order_by("pk").values_list("perturbation", flat=True)) == [
        "reference",
        "from-the-gate",
        *replayed[2:],
    ]


def test_the_calibrate_command_refuses_unknown_input(two_versions):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--policy model needs --endpoint"):
        call_command("calibrate", "--policy", "model", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no task"):
        call_command("calibrate", "--tasks", "999999", stdout=io.StringIO())


def test_the_admin_lists_runs_rollouts_and_endpoints_and_its_actions_call_the_services(
    client, two_versions, django_capture_on_commit_callbacks
):
    from django.urls import reverse

    from tests.tasks_app.factories import admin

    user = admin(is_staff=True)
    client.force_login(user)
    run = calibration_run_create(name="admin run", versions=two_versions, policies=["reference"])
    calibration_run_execute_inline(run=run)
    for name in ("rollout", "calibrationrun", "calibrationitem", "taskcalibration"):
        assert client.get(reverse(f"admin:tasks_app_{name}_changelist"), {"q": "run"}).status_code == 200
    rollout = Rollout.objects.filter(run=run).first()
    assert client.get(reverse("admin:tasks_app_rollout_change", args=[rollout.pk])).status_code == 200
    for name in ("judgeconfig", "verdict", "verdictlabel", "modelendpoint"):
        assert client.get(reverse(f"admin:rubrics_app_{name}_changelist")).status_code == 200

    planned = calibration_run_create(name="admin start", versions=two_versions, policies=["reference"])
    url = reverse("admin:tasks_app_calibrationrun_changelist")
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(url, {"action": "start", "_selected_action": [planned.pk]}, follow=True)
    assert "Started: 1 done." in response.content.decode()
    response = client.post(url, {"action": "cancel", "_selected_action": [planned.pk]}, follow=True)
    assert "Cancelled: 1 done." in response.content.decode()
    planned.refresh_from_db()
    assert planned.status == CalibrationRunStatus.CANCELLED

    with ScriptedLLMServer([Reply(content="ready")]) as server:
        endpoint = endpoint_make(server)
        response = client.post(
            reverse("admin:rubrics_app_modelendpoint_changelist"),
            {"action": "test_connection", "_selected_action": [endpoint.pk]},
            follow=True,
        )
    assert "Scripted: answered in" in response.content.decode()  # the admin capitalises messages
    endpoint.refresh_from_db()
    assert endpoint.last_check["ok"] is True
