"""Calibration items: executing one idempotently (a Celery task per item), the sweeper that heals faults, and the
end of a run.

An item whose rollout has llm criteria to judge is finished on queue ``judging``. Executing an item is safe to
repeat:

- a Postgres advisory lock (session level, on a connection of its own, so a dead worker's lock dies with its
  connection) makes sure one process at a time works on an item; a redelivered message for an item someone
  alive is working on does nothing;
- the item is claimed with a compare-and-set UPDATE (queued -> running; running -> running only under the lock,
  i.e. when its last worker died), and a done, failed or cancelled item is never run again;
- an item has at most one rollout (unique), and a finished rollout is never executed again.

When the last item settles, the run is finished and the per-task calibration
(``tasks_app.calibration.metrics.task_calibration_update``) is refreshed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from corecraft_site.dedicated_connection import dedicated_connection
from tasks_app.calibration.metrics import task_calibration_update
from tasks_app.calibration.rollouts.execute import (
    rollout_create,
    rollout_execute,
    rollout_judge_store,
    rollout_judged_without_judge,
    rollout_needs_llm_judge,
)
from tasks_app.calibration.services.gates import rubric_gate_store
from tasks_app.models import (
    CalibrationItem,
    CalibrationItemStatus,
    CalibrationRun,
    CalibrationRunStatus,
    Rollout,
    RolloutStatus,
)

logger = logging.getLogger(__name__)

# Advisory lock namespaces (the first key of pg_try_advisory_lock(int, int)).
EXECUTE_LOCK = 5_101
JUDGE_LOCK = 5_102
UNFINISHED = (CalibrationItemStatus.QUEUED, CalibrationItemStatus.RUNNING)


ENQUEUE_STAMP_BATCH = 200


def items_enqueue(item_ids: list[int]) -> int:
    """Hand the items' messages to the broker, stamping each one sent; returns how many were sent.

    A broker that is down is no error here: the items stay queued with an old (or no) stamp, and the sweeper
    (``calibration_items_sweep``, on Celery beat) sends them once the broker is back.
    """
    from tasks_app.tasks import calibration_item_enqueue  # the Celery tasks module imports this one at its top

    sent = 0
    for start in range(0, len(item_ids), ENQUEUE_STAMP_BATCH):
        batch = item_ids[start : start + ENQUEUE_STAMP_BATCH]
        done: list[int] = []
        try:
            for item_id in batch:
                calibration_item_enqueue(item_id)
                done.append(item_id)
        except (BrokerUnavailable, OSError) as exc:
            logger.warning(
                "broker unavailable, %d items wait for the sweeper: %s", len(item_ids) - sent - len(done), exc
            )
        # One statement per batch of sent items, not one per item (a red-team run of the demo library is 7,000).
        if done:
            CalibrationItem.objects.filter(pk__in=done).update(enqueued_at=timezone.now())
            sent += len(done)
        if len(done) < len(batch):
            break
    return sent


# --- executing one item ------------------------------------------------------------------------------------


_lock_connections = threading.local()
_lock_connections_kept = False


def calibration_lock_connections_keep(keep: bool = True) -> None:
    """Keep each thread's item-lock connection open between items (Celery worker processes call this when they
    start): opening one per lock cost two connections per item, about a tenth of a red-team item's time.
    Elsewhere (web, tests, ``manage.py calibrate``) a lock opens its connection and closes it after."""
    global _lock_connections_kept
    _lock_connections_kept = keep


def _lock_connect() -> psycopg.Connection:
    """A connection for item locks, not Django's: a rollout hands Django's back to the pool while the model
    thinks, and a session lock left on a pooled connection would outlive the work and be held by whoever takes
    the connection next. A lock lives at most as long as its connection (and its process)."""
    return dedicated_connection("corecraft calibration item lock")


@contextmanager
def _lock_connection() -> Iterator[psycopg.Connection]:
    """This thread's kept lock connection (opened again if the server dropped it), or a new one closed after."""
    if not _lock_connections_kept:
        with _lock_connect() as fresh:
            yield fresh
        return
    db = connection.settings_dict
    key = (db["NAME"], db["HOST"], db["PORT"], db["USER"])
    held = getattr(_lock_connections, "connection", None)
    if held is None or held.closed or held.broken or getattr(_lock_connections, "key", None) != key:
        if held is not None and not held.closed:
            held.close()
        held = _lock_connections.connection = _lock_connect()
        _lock_connections.key = key
    try:
        yield held
    except psycopg.OperationalError:
        held.close()
        raise


@contextmanager
def _item_lock(namespace: int, item_id: int) -> Iterator[bool]:
    """A session-level advisory lock on the item, on a lock connection; yields whether it was taken."""
    with _lock_connection() as lock_connection:
        taken = lock_connection.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, item_id]).fetchone()[0]
        try:
            yield taken
        finally:
            if taken:
                lock_connection.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, item_id])


def _item_claim(item_id: int) -> bool:
    """Compare-and-set: queued -> running, or running -> running (the caller holds the item's lock, so whoever
    had it is gone). Counts the attempt. False for an item that is done, failed or cancelled."""
    claimed = CalibrationItem.objects.filter(pk=item_id, status__in=UNFINISHED).update(
        status=CalibrationItemStatus.RUNNING, attempts=F("attempts") + 1, claimed_at=timezone.now()
    )
    return claimed == 1


def _item_rollout(item: CalibrationItem) -> Rollout:
    """The item's one rollout: the existing one, or a new one."""

    existing = Rollout.objects.filter(item=item).first()
    if existing is not None:
        return existing
    try:
        rollout = rollout_create(
            version=item.version,
            policy=item.policy,
            endpoint=item.endpoint,
            perturbation_key=item.perturbation,
            sample=item.sample,
            run=item.run,
            item=item,
        )
    except IntegrityError:
        rollout = Rollout.objects.get(item=item)
    CalibrationItem.objects.filter(pk=item.pk).update(rollout=rollout)
    return rollout


def _item_settle(item_id: int, *, status: str, error: str = "") -> bool:
    settled = CalibrationItem.objects.filter(pk=item_id, status=CalibrationItemStatus.RUNNING).update(
        status=status, error=error[:2000], settled_at=timezone.now()
    )
    return settled == 1


def calibration_item_execute(*, item_id: int, judge_inline: bool = False) -> str:
    """Run one planned item: claim it, run (or reuse) its rollout, judge it. Safe to call any number of times.

    With ``judge_inline`` llm criteria are judged here; otherwise an item that needs the LLM judge is handed to
    the ``judging`` queue and stays running until judged. Returns what happened: ``busy`` (someone alive holds
    it), ``skipped`` (done, failed or cancelled), ``done``, ``failed`` or ``judging``.
    """

    with _item_lock(EXECUTE_LOCK, item_id) as taken:
        if not taken:
            return "busy"
        if not _item_claim(item_id):
            return "skipped"
        item = CalibrationItem.objects.select_related("run__judge_config", "version", "endpoint").get(pk=item_id)
        try:
            rollout = rollout_execute(rollout=_item_rollout(item), judge=False)
        except Exception as exc:  # rollout_execute records its own failures; this is the database or a bug
            logger.exception("calibration item %s failed", item_id)
            _item_settle(item_id, status=CalibrationItemStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
            calibration_run_finish_check(run_id=item.run_id)
            return "failed"
        if rollout.status != RolloutStatus.FINISHED:
            _item_settle(item_id, status=CalibrationItemStatus.FAILED, error=rollout.failure_reason)
            calibration_run_finish_check(run_id=item.run_id)
            return "failed"
        if rollout.judged_at is None and not item.run.judge_config_id:
            # No judge configured: judging again would store the same verdicts (llm ones stay pending).
            rollout = rollout_judged_without_judge(rollout)
        if rollout.judged_at is not None:
            # Judged with the rollout (every verdict programmatic and decided): nothing is left for the judge.
            _item_settle(item_id, status=CalibrationItemStatus.DONE)
            calibration_run_finish_check(run_id=item.run_id)
            return "done"
        if rollout_needs_llm_judge(rollout) and item.run.judge_config_id and not judge_inline:
            from tasks_app.tasks import calibration_item_judge_enqueue  # tasks_app.tasks imports this module

            transaction.on_commit(lambda: calibration_item_judge_enqueue(item_id))
            return "judging"
    return calibration_item_judge(item_id=item_id)


def calibration_item_judge(*, item_id: int) -> str:
    """Judge a running item's finished rollout under the run's judge config and settle the item."""

    with _item_lock(JUDGE_LOCK, item_id) as taken:
        if not taken:
            return "busy"
        item = CalibrationItem.objects.select_related("run__judge_config").filter(pk=item_id).first()
        if item is None or item.status != CalibrationItemStatus.RUNNING or item.rollout_id is None:
            return "skipped"
        rollout = Rollout.objects.select_related("version", "episode").get(pk=item.rollout_id)
        if rollout.status != RolloutStatus.FINISHED:
            return "skipped"
        try:
            rollout_judge_store(rollout=rollout, judge_config=item.run.judge_config)
        except Exception as exc:
            logger.exception("judging calibration item %s failed", item_id)
            _item_settle(item_id, status=CalibrationItemStatus.FAILED, error=f"judge: {type(exc).__name__}: {exc}")
            calibration_run_finish_check(run_id=item.run_id)
            return "failed"
        _item_settle(item_id, status=CalibrationItemStatus.DONE)
    calibration_run_finish_check(run_id=item.run_id)
    return "done"


# --- the sweeper: faults heal without a person --------------------------------------------------------------


def _item_unheld(item_id: int) -> bool:
    """No live process works on the item: neither of its advisory locks is held (a dead worker's died with it)."""
    with _lock_connection() as lock_connection:
        for namespace in (EXECUTE_LOCK, JUDGE_LOCK):
            taken = lock_connection.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, item_id]).fetchone()[0]
            if not taken:
                return False
            lock_connection.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, item_id])
    return True


def _stall_reason(*, run_id: int, now, stall_after_s: int) -> str:
    """Why the run makes no progress, or "" when an item was claimed or settled within ``stall_after_s``."""
    items = CalibrationItem.objects.filter(run_id=run_id)
    marks = items.aggregate(claimed=Max("claimed_at"), settled=Max("settled_at"), enqueued=Max("enqueued_at"))
    started = CalibrationRun.objects.filter(pk=run_id).values_list("started_at", flat=True).first()
    last = max((m for m in (marks["claimed"], marks["settled"], started) if m is not None), default=None)
    if last is None or (now - last).total_seconds() < stall_after_s:
        return ""
    queued = items.filter(status=CalibrationItemStatus.QUEUED).count()
    running = items.filter(status=CalibrationItemStatus.RUNNING).count()
    idle_s = int((now - last).total_seconds())
    broker = "never reached the broker" if marks["enqueued"] is None else "sent to the broker"
    return (
        f"stalled: no worker has made progress for {idle_s} s ({queued} queued, {running} running; the latest "
        f"messages were {broker}). Is a worker running on the rollouts and judging queues, and is Redis up? "
        "The sweeper re-sends the items by itself."
    )


def calibration_items_sweep(*, now=None) -> dict[str, int]:
    """Heal running runs: re-enqueue items whose claim expired with nobody holding them (a killed worker) and
    queued items whose message is old or was never sent (a broker that lost its data or was down), finish runs
    whose items have all settled, and say on each run whether it is stalled. Idempotent; Celery beat runs it.
    """
    now = now or timezone.now()
    claim_timeout = timedelta(seconds=settings.CALIBRATION_CLAIM_TIMEOUT_S)
    requeue_after = timedelta(seconds=settings.CALIBRATION_REQUEUE_AFTER_S)
    running_runs = list(CalibrationRun.objects.filter(status=CalibrationRunStatus.RUNNING).values_list("pk", flat=True))
    items = CalibrationItem.objects.filter(run_id__in=running_runs)
    expired = items.filter(status=CalibrationItemStatus.RUNNING, claimed_at__lt=now - claim_timeout)
    orphans = [item_id for item_id in expired.values_list("pk", flat=True) if _item_unheld(item_id)]
    unsent = list(
        items.filter(status=CalibrationItemStatus.QUEUED)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - requeue_after))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    sent = items_enqueue(orphans + unsent) if orphans or unsent else 0
    finished = sum(calibration_run_finish_check(run_id=run_id) for run_id in running_runs)
    stalled = 0
    for run_id in running_runs:
        reason = _stall_reason(run_id=run_id, now=now, stall_after_s=settings.CALIBRATION_STALL_AFTER_S)
        stalled += bool(reason)
        CalibrationRun.objects.filter(pk=run_id, status=CalibrationRunStatus.RUNNING).exclude(
            stalled_reason=reason
        ).update(stalled_reason=reason)
    CalibrationRun.objects.exclude(status=CalibrationRunStatus.RUNNING).exclude(stalled_reason="").update(
        stalled_reason=""
    )
    return {"orphans": len(orphans), "unsent": len(unsent), "sent": sent, "finished": finished, "stalled": stalled}


def calibration_run_finish_check(*, run_id: int) -> bool:
    """Finish a running run whose items have all settled (once: a compare-and-set), refresh its task
    calibrations. Returns whether this call finished it."""
    if CalibrationItem.objects.filter(run_id=run_id, status__in=UNFINISHED).exists():
        return False
    counts = CalibrationItem.objects.filter(run_id=run_id).aggregate(
        total=Count("pk"), failed=Count("pk", filter=Q(status=CalibrationItemStatus.FAILED))
    )
    status = (
        CalibrationRunStatus.FAILED
        if counts["total"] and counts["failed"] == counts["total"]
        else CalibrationRunStatus.FINISHED
    )
    finished = CalibrationRun.objects.filter(pk=run_id, status=CalibrationRunStatus.RUNNING).update(
        status=status, finished_at=timezone.now(), stalled_reason=""
    )
    if finished:
        calibration_metrics_refresh(run=CalibrationRun.objects.get(pk=run_id))
    return bool(finished)


def calibration_metrics_refresh(*, run: CalibrationRun) -> list:
    """Refresh the run's ``TaskCalibration`` rows (and store the red team's gate results they carry)."""
    rows = task_calibration_update(run=run)
    for row in rows:
        if row.red_team and row.red_team.get("reference_passes") is not None:
            rubric_gate_store(version=row.version, findings=row.red_team, source=f"calibration run {run.pk}")
    return rows


def calibration_run_execute_inline(*, run: CalibrationRun) -> CalibrationRun:
    """Start the run and execute every item in this process (no worker): what ``calibrate --eager`` does."""
    run = CalibrationRun.objects.get(pk=run.pk)
    if run.status in (CalibrationRunStatus.PLANNED, CalibrationRunStatus.CANCELLED):
        CalibrationRun.objects.filter(pk=run.pk).update(
            status=CalibrationRunStatus.RUNNING, started_at=run.started_at or timezone.now(), cancelled_at=None
        )
        run.items.filter(status=CalibrationItemStatus.CANCELLED).update(status=CalibrationItemStatus.QUEUED)
    for item_id in run.items.filter(status__in=UNFINISHED).order_by("pk").values_list("pk", flat=True):
        calibration_item_execute(item_id=item_id, judge_inline=True)
    calibration_run_finish_check(run_id=run.pk)
    return CalibrationRun.objects.get(pk=run.pk)
