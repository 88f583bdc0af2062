"""Celery tasks of the trainer bridge: thin wrappers that call a service (queue "exports")."""

from __future__ import annotations

from celery import shared_task

from trainer_bridge.export_jobs import export_job_run
from trainer_bridge.models import ExportJob


@shared_task(name="trainer_bridge.tasks.export_run", queue="exports")
def export_run(job_id: int) -> str:
    """Write one export file; returns the job's status ("missing" when the job was deleted meanwhile)."""
    try:
        return export_job_run(job_id=job_id).status
    except ExportJob.DoesNotExist:
        return "missing"
