"""Celery tasks of calibration runs: thin wrappers over ``tasks_app.calibration.services``
(``calibration_items``: executing, judging and sweeping items).

Both take an item id (never a model instance), acknowledge late and are rejected back to the queue when their
worker dies; the services make a repeated delivery harmless. Rollouts go to the ``rollouts`` queue and llm
judging to ``judging``: the enqueue functions below name the queue (settings CALIBRATION_ROLLOUTS_QUEUE /
CALIBRATION_JUDGING_QUEUE override the names). Run ``celery -A corecraft_site worker -Q rollouts,judging``.
"""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings

from tasks_app.calibration.services.calibration_items import (
    calibration_item_execute,
    calibration_item_judge,
    calibration_items_sweep,
    calibration_lock_connections_keep,
)


@worker_process_init.connect
def _worker_keeps_lock_connections(**_: object) -> None:
    """A worker process runs thousands of items: it keeps its item-lock connection open between them."""
    calibration_lock_connections_keep()


ROLLOUTS_QUEUE = "rollouts"
JUDGING_QUEUE = "judging"


def rollouts_queue() -> str:
    return settings.CALIBRATION_ROLLOUTS_QUEUE


def judging_queue() -> str:
    return settings.CALIBRATION_JUDGING_QUEUE


# An item another process holds is looked at again later: its holder may be alive (the item is then done and
# this delivery does nothing) or a worker whose database session has not been cleaned up yet.
BUSY_RETRY_S = 5
BUSY_MAX_RETRIES = 720


@shared_task(
    bind=True,
    name="tasks_app.tasks.execute_calibration_item",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=BUSY_MAX_RETRIES,
)
def execute_calibration_item(self, item_id: int) -> str:
    """Run one calibration item's rollout (idempotent)."""
    outcome = calibration_item_execute(item_id=item_id)
    if outcome == "busy":
        raise self.retry(countdown=BUSY_RETRY_S, queue=rollouts_queue())
    return outcome


@shared_task(
    bind=True,
    name="tasks_app.tasks.judge_calibration_item",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=BUSY_MAX_RETRIES,
)
def judge_calibration_item(self, item_id: int) -> str:
    """Judge one calibration item's rollout with the run's judge configuration (idempotent)."""
    outcome = calibration_item_judge(item_id=item_id)
    if outcome == "busy":
        raise self.retry(countdown=BUSY_RETRY_S, queue=judging_queue())
    return outcome


def calibration_item_enqueue(item_id: int) -> None:
    execute_calibration_item.apply_async(args=[item_id], queue=rollouts_queue())


def calibration_item_judge_enqueue(item_id: int) -> None:
    judge_calibration_item.apply_async(args=[item_id], queue=judging_queue())


@shared_task(name="tasks_app.tasks.sweep_calibration_items", ignore_result=True)
def sweep_calibration_items() -> dict[str, int]:
    """Celery beat: re-send lost or orphaned calibration items, finish settled runs, flag stalled ones."""
    return calibration_items_sweep()
