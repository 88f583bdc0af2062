"""Faults heal without a person: a worker killed with SIGKILL mid-run while its broker (a Redis server of this
test's own) loses every message and is down for a while; a run is created meanwhile. Once a worker and an empty
broker are back, the sweeper on Celery beat re-sends what was lost and every item of both runs is done exactly
once, within two minutes, with no resume or any other manual step.

The broker's own redelivery cannot help here: the visibility timeout stays at its hour, and the wiped Redis has
no unacknowledged messages left to restore.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pytest
from django.test import override_settings
from kombu import pools as kombu_pools

from corecraft_site.celery import app as celery_app
from corecraft_site.llm.scripted_server import ScriptedLLMServer
from tasks_app.calibration.services.calibration import (
    calibration_run_create,
    calibration_run_progress,
    calibration_run_start,
)
from tasks_app.calibration.services.calibration_items import calibration_items_sweep
from tasks_app.models import CalibrationItemStatus, CalibrationRun, CalibrationRunStatus, Rollout, RolloutStatus
from tests.processes import ROOT, app_process_env
from tests.tasks_app.rollout_helpers import backorder_task, endpoint_make, solving_script, world_make

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server binary"),
]

TURN_DELAY_S = 0.25
HEAL_LIMIT_S = 120
SWEEP = {
    "CALIBRATION_SWEEP_INTERVAL_S": "2",
    "CALIBRATION_CLAIM_TIMEOUT_S": "6",
    "CALIBRATION_REQUEUE_AFTER_S": "10",
    "CALIBRATION_STALL_AFTER_S": "4",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(port: int, log_path) -> subprocess.Popen:
    with log_path.open("ab") as out:
        proc = subprocess.Popen(  # noqa: S603
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],  # noqa: S607
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"redis-server did not listen on {port}")


def start_worker(redis_url: str, log_path, tmp_path) -> subprocess.Popen:
    """A worker with an embedded beat (so the sweeper runs), on this test's own broker."""
    name = f"faults-{uuid.uuid4().hex[:6]}"
    with log_path.open("ab") as out:
        return subprocess.Popen(  # noqa: S603
            [
                str(ROOT / ".venv/bin/celery"), "-A", "corecraft_site", "worker", "--pool", "solo", "-B",
                "-s", str(tmp_path / f"beat-{name}"), "-Q", "default,rollouts,judging", "-n", f"{name}@%h",
                "--without-mingle", "--without-gossip", "--without-heartbeat", "-l", "info",
            ],
            cwd=ROOT,
            env=app_process_env(REDIS_URL=redis_url, EPISODE_IDLE_TIMEOUT_S="3600", **SWEEP),
            stdout=out,
            stderr=subprocess.STDOUT,
            # Its own process group: the embedded beat is a child process, killed with the worker (an orphaned
            # beat would outlive the test, hold the test database open and schedule sweeps twice).
            start_new_session=True,
        )  # fmt: skip


def stop(proc: subprocess.Popen | None, *, group: bool = False) -> None:
    """Stop ``proc`` (SIGTERM, then SIGKILL); with ``group``, also whatever is left of its process group."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc is not None and group:
        kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (the worker and its embedded beat), as a machine losing it would."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def wait_for(condition, *, timeout: float, what: str, log_path, runs=()) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            state = {run.pk: calibration_run_progress(run) for run in runs}
            pytest.fail(f"{what} not reached in {timeout:.0f} s: {state}\n{log_path.read_text()[-6000:]}")
        time.sleep(0.2)
    return time.monotonic() - started


@pytest.fixture
def own_broker(tmp_path):
    """This test's Redis, and this process's Celery app pointed at it (put back afterwards)."""
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis_log = tmp_path / "redis.log"
    state = {"proc": start_redis(port, redis_log), "port": port, "url": url, "log": redis_log}
    saved = celery_app.conf.broker_url, celery_app.conf.broker_write_url
    _point_celery_at(url)
    yield state
    _point_celery_at(*saved)
    stop(state["proc"])


def _point_celery_at(url: str | None, write_url: str | None = None) -> None:
    """This process's Celery app on another broker: its connection and producer pools are made anew."""
    celery_app.pool.force_close_all()
    # kombu keeps producer pools per broker URL in a registry of its own: pointing back at the first broker would
    # find its (now closed) pool again and later tests would fail with "Acquire on closed pool".
    kombu_pools.reset()
    celery_app.conf.broker_url = url
    celery_app.conf.broker_write_url = write_url if write_url is not None else url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_killed_worker_and_wiped_broker_heal_by_themselves(own_broker, tmp_path):
    world = world_make("fault calibration")
    versions = [backorder_task(world, title=f"Fault {n}").current_version for n in range(4)]
    log_path = tmp_path / "worker.log"
    script = solving_script(world.order.pk, delay_s=TURN_DELAY_S) * 40
    worker = None
    with ScriptedLLMServer(script) as server, override_settings(CALIBRATION_STALL_AFTER_S=4):
        endpoint = endpoint_make(server)
        policies = ["reference", {"policy": "model", "endpoint": endpoint.pk}]
        first = calibration_run_create(name="before the fault", versions=versions, policies=policies, samples=3)
        try:
            worker = start_worker(own_broker["url"], log_path, tmp_path)
            calibration_run_start(run=first)

            def mid_run() -> bool:
                progress = calibration_run_progress(first)
                running_model = first.items.filter(status=CalibrationItemStatus.RUNNING, policy="model").exists()
                return progress["done"] >= 2 and running_model

            wait_for(mid_run, timeout=180, what="two items done and a model rollout running", log_path=log_path,
                     runs=[first])  # fmt: skip
            # The fault: the worker dies mid-rollout, its broker loses every message and stays down a while.
            kill_group(worker)
            worker.wait(timeout=10)
            own_broker["proc"].send_signal(signal.SIGKILL)
            own_broker["proc"].wait(timeout=10)
            at_fault = calibration_run_progress(first)
            assert at_fault["done"] < first.items.count()

            # A run created and started while the broker is down is kept, never an error.
            second = calibration_run_create(name="during the fault", versions=versions[:2], policies=["reference"])
            calibration_run_start(run=second)
            second.refresh_from_db()
            assert second.status == CalibrationRunStatus.RUNNING
            assert not second.items.filter(enqueued_at__isnull=False).exists()

            # With nobody working, the sweeper (run here, as beat would) says the runs are stalled, and why.
            time.sleep(4.5)
            calibration_items_sweep()
            first.refresh_from_db()
            assert first.stalled_reason.startswith("stalled: no worker has made progress")

            # Back: an empty broker and a fresh worker. No resume, nothing else.
            own_broker["proc"] = start_redis(own_broker["port"], own_broker["log"])
            worker = start_worker(own_broker["url"], log_path, tmp_path)

            def both_finished() -> bool:
                return not CalibrationRun.objects.filter(
                    pk__in=[first.pk, second.pk], status=CalibrationRunStatus.RUNNING
                ).exists()

            healed_s = wait_for(both_finished, timeout=HEAL_LIMIT_S, what="both runs finished after the fault",
                                log_path=log_path, runs=[first, second])  # fmt: skip
        finally:
            stop(worker, group=True)

    items = [item for run in (first, second) for item in run.items.all()]
    rollouts = list(Rollout.objects.filter(run__in=[first, second]))
    per_item = {}
    for rollout in rollouts:
        per_item[rollout.item_id] = per_item.get(rollout.item_id, 0) + 1
    figures = {
        "items": len(items),
        "done": sum(item.status == CalibrationItemStatus.DONE for item in items),
        "duplicates": sum(n - 1 for n in per_item.values() if n > 1),
        "lost": sum(item.pk not in per_item for item in items),
        "retried": sum(item.attempts > 1 for item in items),
        "heal_s": round(healed_s, 1),
    }
    print("fault figures: " + json.dumps(figures))
    assert figures["done"] == figures["items"] and figures["duplicates"] == 0 and figures["lost"] == 0, figures
    assert all(rollout.status == RolloutStatus.FINISHED for rollout in rollouts)
    assert healed_s < HEAL_LIMIT_S
    for run in (first, second):
        run.refresh_from_db()
        assert run.status == CalibrationRunStatus.FINISHED and run.stalled_reason == ""
