"""Export jobs of the trainer bridge: a frozen release's split written as a file (small ones in the request,
larger ones on the "exports" queue), claimed by compare-and-set so that no job runs twice at once."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from trainer_bridge.exports import EXTENSIONS, export_write, write_tool_sets
from trainer_bridge.models import ExportFormat, ExportJob, ExportStatus, Release, Split
from trainer_bridge.selectors import release_tool_sets

# Exports up to this many rows are written in the request; larger ones go to the "exports" queue.
EXPORT_INLINE_MAX_ROWS = 2000
EXPORT_QUEUE = "exports"


def export_file_path(job: ExportJob) -> Path:
    return Path(settings.MEDIA_ROOT) / job.file_path


def export_has_tools_file(job: ExportJob) -> bool:
    """A ``jsonl`` export names its rows' tool schemas by digest and holds them once, in a tools file beside it."""
    return job.format == ExportFormat.JSONL


def export_tools_path(job: ExportJob) -> Path:
    """The tools file beside the export's file: ``{tools_sha256: [schemas]}`` (``<split>.jsonl.tools.json``)."""
    return export_file_path(job).with_name(_tools_name(job))


def _tools_name(job: ExportJob) -> str:
    return f"{job.split}.{job.format}.tools.json"


def export_file_ready(job: ExportJob) -> bool:
    if not (job.status == ExportStatus.DONE and bool(job.file_path) and export_file_path(job).is_file()):
        return False
    return not export_has_tools_file(job) or export_tools_path(job).is_file()


def export_request(*, release: Release, split: str, format: str, user=None, inline: bool | None = None) -> ExportJob:
    """The export job of (release, split, format): made (or requeued when failed or its file is gone) if needed.

    Small exports are written at once (``inline``; default: up to EXPORT_INLINE_MAX_ROWS rows), larger ones are
    queued on "exports" after the transaction commits.
    """
    if not release.is_frozen:
        raise ValidationError({"release": ["Only a frozen release is exported."]})
    if split not in Split.values:
        raise ValidationError({"split": [f"One of {', '.join(Split.values)}."]})
    if format not in ExportFormat.values:
        raise ValidationError({"format": [f"One of {', '.join(ExportFormat.values)}."]})
    with transaction.atomic():
        job, created = ExportJob.objects.select_for_update().get_or_create(
            release=release,
            split=split,
            format=format,
            defaults={"created_by": user, "rows_total": release.rows.filter(split=split).count()},
        )
        stale = job.status == ExportStatus.FAILED or (job.status == ExportStatus.DONE and not export_file_ready(job))
        if not (created or stale):
            return job
        if stale:
            job.status, job.rows_written, job.error, job.finished_at = ExportStatus.QUEUED, 0, "", None
            job.save(update_fields=["status", "rows_written", "error", "finished_at"])
        run_inline = job.rows_total <= EXPORT_INLINE_MAX_ROWS if inline is None else inline
        if not run_inline:
            from trainer_bridge.tasks import export_run  # trainer_bridge.tasks imports this module at its top

            transaction.on_commit(lambda: export_run.apply_async(args=[job.pk], queue=EXPORT_QUEUE))
    if run_inline:
        return export_job_run(job_id=job.pk)
    return job


def export_job_run(*, job_id: int) -> ExportJob:
    """Write the job's file (what the "exports" worker runs). Claimed by compare-and-set: never run twice at once."""

    claimed = ExportJob.objects.filter(pk=job_id, status=ExportStatus.QUEUED).update(
        status=ExportStatus.RUNNING, started_at=timezone.now(), rows_written=0
    )
    job = ExportJob.objects.select_related("release").get(pk=job_id)
    if not claimed:
        return job
    relative = Path("exports") / job.release.slug / f"{job.split}.{job.format}.{EXTENSIONS[job.format]}"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{job.pk}.part")

    def progress(written: int) -> None:
        ExportJob.objects.filter(pk=job.pk).update(rows_written=written)

    try:
        with partial.open("wb") as out:
            rows = export_write(release=job.release, split=job.split, format=job.format, out=out, progress=progress)
        digest = hashlib.sha256()
        with partial.open("rb") as written:
            for block in iter(lambda: written.read(1 << 20), b""):
                digest.update(block)
        if export_has_tools_file(job):
            tools_target = target.with_name(_tools_name(job))
            tools_partial = tools_target.with_name(tools_target.name + f".{job.pk}.part")
            with tools_partial.open("wb") as out:
                write_tool_sets(release_tool_sets(release=job.release, splits={job.split}), out)
            tools_partial.replace(tools_target)
        partial.replace(target)
    except Exception as exc:  # noqa: BLE001 (a failed export is recorded on its job, for the page and API)
        partial.unlink(missing_ok=True)
        target.with_name(f"{_tools_name(job)}.{job.pk}.part").unlink(missing_ok=True)
        ExportJob.objects.filter(pk=job.pk).update(
            status=ExportStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        job.refresh_from_db()
        return job
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportStatus.DONE,
        rows_total=rows,
        rows_written=rows,
        file_path=str(relative),
        sha256=digest.hexdigest(),
        size_bytes=target.stat().st_size,
        finished_at=timezone.now(),
    )
    job.refresh_from_db()
    return job
