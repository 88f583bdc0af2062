"""The Celery app for real: a worker process on Redis runs a task enqueued here, against the test database."""

import subprocess
import uuid
from datetime import timedelta

import pytest
from celery.exceptions import TimeoutError as CeleryTimeoutError
from django.utils import timezone

from corecraft_site.celery import app as celery_app
from tests.factories import small_world
from tests.processes import ROOT, app_process_env
from world_app.episodes import episode_create, episode_log_settle, episode_step
from world_app.models import Episode, Order
from world_app.snapshots import snapshot_publish
from world_app.tasks import close_idle_episodes


@pytest.fixture
def worker_queue(tmp_path):
    """A real worker (solo pool) consuming a queue of its own, made the default queue for this test.

    A queue of its own: a development worker on the same Redis must not take this test's message.
    """
    queue = f"test-{uuid.uuid4().hex[:12]}"
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(  # noqa: S603
            [
                str(ROOT / ".venv/bin/celery"),
                "-A",
                "corecraft_site",
                "worker",
                "--pool",
                "solo",
                "-Q",
                queue,
                "-n",
                f"{queue}@%h",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "-l",
                "info",
            ],
            cwd=ROOT,
            env=app_process_env(EPISODE_IDLE_TIMEOUT_S="3600"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    try:
        yield log
    finally:
        celery_app.conf.task_default_queue = previous
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


def _set_status(order_id: str):
    def call():
        Order.objects.filter(pk=order_id).update(status="cancelled")
        return {"ok": True}

    return call


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_a_worker_closes_idle_episodes_enqueued_with_delay(worker_queue):
    world = small_world()
    snapshot_publish(note="celery test")
    idle, active = episode_create(label="idle"), episode_create(label="active")
    episode_step(episode=idle, name="cancel", arguments={}, fn=_set_status(world["order"].id))
    # Two hours idle: the step was written long ago. Write this process's deferred step first (ADR 0001, deferred
    # steps), or its batch, written after the backdating, would stamp the episode active again.
    episode_log_settle(idle)
    Episode.objects.filter(pk=idle.pk).update(last_activity_at=timezone.now() - timedelta(hours=2))

    result = close_idle_episodes.delay()
    try:
        closed = result.get(timeout=120)  # through the Redis result backend
    except CeleryTimeoutError:
        pytest.fail(f"no result from the worker in 120 s; its log:\n{worker_queue.read_text()[-4000:]}")

    assert closed == 1
    idle.refresh_from_db()
    active.refresh_from_db()
    assert idle.status == Episode.Status.CLOSED
    assert idle.final_diff["updated"][0]["fields"]["status"] == {"before": "paid", "after": "cancelled"}
    assert active.status == Episode.Status.OPEN
