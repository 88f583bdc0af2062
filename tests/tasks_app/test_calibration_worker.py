"""A real Celery worker runs a calibration; killed with SIGKILL mid-run and restarted, the run still completes with
every item (and its rollout) exactly once."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid

import pytest

from corecraft_site.llm.scripted_server import ScriptedLLMServer
from tasks_app.calibration.services.calibration import (
    calibration_run_create,
    calibration_run_progress,
    calibration_run_start,
)
from tasks_app.models import (
    CalibrationItemStatus,
    CalibrationRunStatus,
    Rollout,
    RolloutStatus,
    TaskCalibration,
)
from tests.processes import ROOT, app_process_env
from tests.tasks_app.rollout_helpers import backorder_task, endpoint_make, solving_script, world_make
from world_app.models import Episode

TURN_DELAY_S = 0.25  # three turns: ~0.75 s per model rollout, long enough to be killed in the middle of one


def start_worker(queues: list[str], log_path, *, name: str, db_pool: bool = False) -> subprocess.Popen:
    with log_path.open("ab") as out:
        return subprocess.Popen(  # noqa: S603
            [
                str(ROOT / ".venv/bin/celery"), "-A", "corecraft_site", "worker", "--pool", "solo",
                "-Q", ",".join(queues), "-n", f"{name}@%h", "--without-mingle", "--without-gossip",
                "--without-heartbeat", "-l", "info",
            ],
            cwd=ROOT,
            # Unacknowledged messages of a dead worker come back after 2 s (swept every second).
            env=app_process_env(
                EPISODE_IDLE_TIMEOUT_S="3600", CELERY_VISIBILITY_TIMEOUT_S="2",
                CELERY_UNACKED_RESTORE_INTERVAL_S="1", CELERY_UNACKED_RESTORE_THROTTLE="1",
                DB_POOL="1" if db_pool else "0",
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


def stop(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


def wait_for(condition, *, worker: subprocess.Popen, timeout: float, log_path, what: str, run=None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        state = ""
        if run is not None:
            state = f"{calibration_run_progress(run)} {list(run.items.values_list('pk', 'status', 'attempts'))}\n"
        if worker.poll() is not None:
            pytest.fail(f"the worker exited ({worker.returncode}) before {what}: {state}{log_path.read_text()[-6000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached in {timeout:.0f} s: {state}the log:\n{log_path.read_text()[-6000:]}")
        time.sleep(0.1)


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_a_worker_killed_mid_run_and_restarted_completes_the_run_with_every_item_once(tmp_path, settings):
    world = world_make("worker calibration")
    versions = [backorder_task(world, title=f"Backorder {n}").current_version for n in range(3)]
    queues = [f"test-rollouts-{uuid.uuid4().hex[:8]}", f"test-judging-{uuid.uuid4().hex[:8]}"]
    settings.CALIBRATION_ROLLOUTS_QUEUE, settings.CALIBRATION_JUDGING_QUEUE = queues
    log_path = tmp_path / "worker.log"
    # Plenty of replies: a rollout cut short by the kill leaves the next one mid-script, which still finishes.
    script = solving_script(world.order.pk, delay_s=TURN_DELAY_S) * 20

    with ScriptedLLMServer(script) as server:
        endpoint = endpoint_make(server)
        run = calibration_run_create(
            name="killed worker",
            versions=versions,
            policies=["reference", {"policy": "model", "endpoint": endpoint.pk}],
            samples=2,
        )
        items = list(run.items.order_by("pk"))
        assert len(items) == 9
        worker = start_worker(queues, log_path, name=f"calib-{uuid.uuid4().hex[:6]}")
        try:
            calibration_run_start(run=run)  # autocommit here: the messages go out at once

            def mid_run() -> bool:
                progress = calibration_run_progress(run)
                running_model = run.items.filter(status=CalibrationItemStatus.RUNNING, policy="model").exists()
                return progress["done"] >= 2 and running_model

            wait_for(
                mid_run,
                worker=worker,
                timeout=120,
                log_path=log_path,
                what="two items done and a model rollout running",
                run=run,
            )
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
            killed = calibration_run_progress(run)
            assert killed["running"] == 1 and killed["done"] < len(items)
            interrupted = run.items.get(status=CalibrationItemStatus.RUNNING)

            # The second worker uses the connection pool (rollouts hand their connection back between turns).
            worker = start_worker(queues, log_path, name=f"calib-{uuid.uuid4().hex[:6]}", db_pool=True)

            def finished() -> bool:
                run.refresh_from_db()
                return run.status != CalibrationRunStatus.RUNNING

            wait_for(
                finished,
                worker=worker,
                timeout=180,
                log_path=log_path,
                what="the run finished after the restart",
                run=run,
            )
        finally:
            stop(worker)

    run.refresh_from_db()
    assert run.status == CalibrationRunStatus.FINISHED, calibration_run_progress(run)
    assert calibration_run_progress(run)["done"] == len(items)
    rollouts = list(Rollout.objects.filter(run=run))
    assert len(rollouts) == len(items)  # nothing lost, nothing twice
    assert sorted(r.item_id for r in rollouts) == [i.pk for i in items]
    for item in run.items.all():
        assert item.rollout_id == Rollout.objects.get(item=item).pk
    assert all(r.status == RolloutStatus.FINISHED for r in rollouts)
    interrupted.refresh_from_db()
    assert interrupted.status == CalibrationItemStatus.DONE and interrupted.attempts >= 2
    # The killed attempt's episode was closed when the item was taken over; every rollout's own one is closed.
    assert not Episode.objects.filter(pk__in=[r.episode_id for r in rollouts], status=Episode.Status.OPEN).exists()
    assert TaskCalibration.objects.filter(run=run).count() == len(versions)
    assert all(r.passed is True for r in rollouts if r.policy == "reference")
