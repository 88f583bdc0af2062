"""The task library: hand-written fixture files and family instances, loaded as tasks through the real workflow.

A library task is identified by ``Task.source_key``: ``starter:<key>`` for a fixture file
(``tasks_app/fixtures/starter_tasks/<task_type>/<slug>.yaml``), ``family:<name>:<entity ids>`` for a family
instance (``tasks_app.library.families``). Loading is idempotent:

- a new key makes a task (``task_create``) by the library author, then, for ``status="approved"``, submits it
  (``task_submit_for_review``) and has the library reviewer claim and approve it (``review_claim`` +
  ``review_approve``): the history says who loaded it, who approved it and why ("reviewed in the repository"),
  exactly like a task made in the studio;
- an unchanged file does nothing (its content is compared with the last version the library wrote);
- a changed file makes a new version (``task_update``, criteria keep their keys by position) pinned to the
  snapshot given (default: the latest), approved again the same way;
- a task edited in the studio since the library last wrote it, or sent back by a reviewer (changes requested),
  is left alone (``kept`` in the report): a file never overwrites an expert's edit nor approves over a
  reviewer's objection; a retired task stays retired; a task a person is reviewing is reported as an error.

Approval goes through the gate, exactly as a reviewer's (``review_approve``;
``tasks_app.calibration.services.gates``): a version whose gate refuses stays in review, unclaimed, with the gate's
reason as the library reviewer's comment
(``refused`` in the report), until an admin approves it over the gate with a written reason or a later load
brings a version that passes (the library withdraws its own unclaimed submission to replace it). The gate's
result is read from the stored gates (``RubricGate``, then the library's precomputed gate file
``tasks_app/fixtures/library_gates.json``, both under the content-addressed gate key) and computed, in one
scratch world for the whole load, only where neither has it: a stale or missing entry is never trusted.

The library's two users are system accounts without a usable password: ``corecraft-library`` (author role)
and ``corecraft-library-review`` (reviewer role); nobody reviews their own task, so it takes two.

Beside the loading, this module answers which world entities a task names and whether the world has them
(``entity_ids_named``, ``entities_missing``). Reading and validating the files is ``library_files``; the gates of
the whole library (``manage.py library_gates``) are ``library_gates``; the counts of tasks are
``tasks_app.library.selectors``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction

from corecraft_site.roles import AUTHOR, REVIEWER
from corecraft_site.service_errors import error_lines
from tasks_app.authoring.services.reviews import GateRefused, comment_add, review_approve, review_claim, review_release
from tasks_app.authoring.services.tasks import task_create, task_submit_for_review, task_update
from tasks_app.calibration.services.gates import (
    gate_problems,
    gate_replay,
    library_gates_read,
    rubric_gate_current,
    rubric_gate_ensure,
)
from tasks_app.library.services.library_files import LibraryTask, TaskLibraryError, starter_tasks_read
from tasks_app.models import Task, TaskStatus, TaskVersion
from world_app.episodes import scratch_world
from world_app.episodes.errors import SnapshotNotPublished
from world_app.models import WORLD_MODELS
from world_app.snapshots import snapshot_latest

LIBRARY_AUTHOR = "corecraft-library"
LIBRARY_REVIEWER = "corecraft-library-review"
LOAD_STATUSES = (TaskStatus.APPROVED, TaskStatus.DRAFT)
APPROVAL_COMMENT = "Library task: its {what} was reviewed in the repository; approved on load ({loaded_by})."
GATE_REFUSED_COMMENT = (
    "Not approved on load: the gate refuses this version ({problems}). An admin may approve it over the gate "
    "with a written reason."
)

# Who ran the load, for the approval comment ("load_tasks by admin").
_LOADED_BY: ContextVar[str] = ContextVar("library_loaded_by", default="load_tasks")


@dataclass
class LoadReport:
    """What a load did, by source key; ``errors`` name the file (or instance) and the field."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "<key>: <the gate's problems>", left in review
    errors: list[str] = field(default_factory=list)
    # Where each approval's gate came from: "stored" (RubricGate), "file" (the library's gate file), "computed".
    gate_sources: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.created) + len(self.updated) + len(self.unchanged) + len(self.kept)

    def merge(self, other: LoadReport) -> LoadReport:
        for name in ("created", "updated", "unchanged", "kept", "approved", "refused", "errors"):
            getattr(self, name).extend(getattr(other, name))
        for source, count in other.gate_sources.items():
            self.gate_sources[source] = self.gate_sources.get(source, 0) + count
        return self

    def summary(self) -> str:
        sources = ", ".join(f"{n} {s}" for s, n in sorted(self.gate_sources.items())) or "none checked"
        return (
            f"{len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.kept)} kept (edited in the studio or retired), {len(self.approved)} approved, "
            f"{len(self.refused)} left in review by the gate, {len(self.errors)} error(s); gates: {sources}"
        )

    def as_dict(self) -> dict:
        return {
            "created": len(self.created),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "kept": len(self.kept),
            "approved": len(self.approved),
            "refused": list(self.refused),
            "gate_sources": dict(sorted(self.gate_sources.items())),
            "errors": list(self.errors),
        }


# --- users ----------------------------------------------------------------------------------------------------


@transaction.atomic
def library_users_ensure() -> tuple[Any, Any]:
    """The library's author and reviewer system users (created once, no usable password)."""
    user_model = get_user_model()
    users = []
    for username, role in ((LIBRARY_AUTHOR, AUTHOR), (LIBRARY_REVIEWER, REVIEWER)):
        user, created = user_model.objects.get_or_create(username=username, defaults={"is_active": True})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
        users.append(user)
    return users[0], users[1]


# --- loading --------------------------------------------------------------------------------------------------


def library_snapshot(snapshot=None):
    """``snapshot``, or the latest published one; TaskLibraryError (a clear message) when none is published."""
    if snapshot is not None:
        return snapshot
    try:
        return snapshot_latest()
    except SnapshotNotPublished:
        raise TaskLibraryError(
            "snapshot: no world snapshot is published; run `manage.py seed_world --seed 7 --scale 1` and "
            "`manage.py publish_world --note ...` first"
        ) from None


def _version_matches(version: TaskVersion, task: LibraryTask) -> bool:
    stored = {name: getattr(version, name) for name in task.fields}
    if stored != task.fields:
        return False
    hashes = list(version.criteria.order_by("position").values_list("content_hash", flat=True))
    return hashes == task.criteria_hashes()


def _gate_ensure(version: TaskVersion, *, stored: Mapping[str, dict], report: LoadReport):
    current = rubric_gate_current(version)
    if current is not None:
        source = "stored"
    else:
        current = rubric_gate_ensure(version=version, stored=stored)
        source = "file" if current.source.startswith("library gate file") else "computed"
    report.gate_sources[source] = report.gate_sources.get(source, 0) + 1
    return current


def _approve(task: Task, *, author, reviewer, what: str, stored: Mapping[str, dict], report: LoadReport) -> bool:
    """Submit (unless it is in review already), claim and approve through the gate; a refused gate leaves the
    task in review, unclaimed, with the reason as a comment (once per gate result). True when approved."""
    task = Task.objects.select_related("current_version").get(pk=task.pk)
    if task.status != TaskStatus.IN_REVIEW:
        task_submit_for_review(task=task, user=author)
    review_claim(task=task, user=reviewer)
    gate = _gate_ensure(task.current_version, stored=stored, report=report)
    try:
        review_approve(task=task, user=reviewer, comment=APPROVAL_COMMENT.format(what=what, loaded_by=_LOADED_BY.get()))
    except GateRefused:
        review_release(task=task, user=reviewer)
        body = GATE_REFUSED_COMMENT.format(problems=gate_problems(gate))
        if not task.comments.filter(author=reviewer, version=task.current_version, body=body).exists():
            comment_add(task=task, user=reviewer, body=body)
        report.refused.append(f"{task.source_key or task.pk}: {gate_problems(gate)}")
        return False
    report.approved.append(task.source_key)
    return True


def _library_held(task: Task, *, author, reviewer) -> bool:
    """A task in review that only the library holds: its current version is the library's and no person has
    claimed it (an unclaimed submission, or one the library reviewer's lease still names)."""
    from django.utils import timezone

    if task.status != TaskStatus.IN_REVIEW or task.current_version is None:
        return False
    if task.current_version.created_by_id != author.pk:
        return False
    claim_live = task.claimed_by_id is not None and task.claim_expires_at and task.claim_expires_at > timezone.now()
    return not claim_live or task.claimed_by_id == reviewer.pk


@transaction.atomic
def library_task_upsert(
    *, task: LibraryTask, author, reviewer, status: str, snapshot, report: LoadReport, what: str,
    stored: Mapping[str, dict] | None = None,
) -> str:  # fmt: skip
    """Create, update or leave one library task; returns what was done (created|updated|unchanged|kept)."""
    stored = stored if stored is not None else {}
    approve = {"author": author, "reviewer": reviewer, "what": what, "stored": stored, "report": report}
    existing = Task.objects.select_for_update().filter(source_key=task.source_key).first()
    if existing is None:
        created = task_create(user=author, snapshot=snapshot, criteria=task.criteria, **task.fields)
        Task.objects.filter(pk=created.pk).update(source_key=task.source_key)
        created.source_key = task.source_key
        if status == TaskStatus.APPROVED:
            _approve(created, **approve)
        report.created.append(task.source_key)
        return "created"
    current = existing.current_version
    ours = existing.versions.filter(created_by=author).order_by("-number").first()
    # A retired task, one an expert edited, or one a reviewer sent back: people are on it, the file waits.
    if (
        existing.status in (TaskStatus.RETIRED, TaskStatus.CHANGES_REQUESTED)
        or current is None
        or current.created_by_id != author.pk
    ):
        report.kept.append(task.source_key)
        return "kept"
    held = _library_held(existing, author=author, reviewer=reviewer)
    if ours is not None and _version_matches(ours, task):
        if status == TaskStatus.APPROVED and (existing.status == TaskStatus.DRAFT or held):
            # A draft to approve, or a version the gate held back: through the gate again (a stored result under
            # the current key decides at once; a changed gate code or snapshot computes it anew).
            _approve(existing, **approve)
        report.unchanged.append(task.source_key)
        return "unchanged"
    if existing.status == TaskStatus.IN_REVIEW:
        if not held:
            raise ValidationError(f"{task.source_key}: the task is in review; decide the review before reloading it")
        # The library's own submission, held back by the gate and claimed by nobody: withdrawn to be replaced.
        Task.objects.filter(pk=existing.pk).update(status=TaskStatus.DRAFT, claimed_by=None, claim_expires_at=None)
        existing.refresh_from_db()
    keys = list(current.criteria.order_by("position").values_list("key", flat=True))
    criteria = [{**c, "key": keys[i]} if i < len(keys) else dict(c) for i, c in enumerate(task.criteria)]
    updated = task_update(
        task=existing,
        user=author,
        base_revision=existing.revision,
        snapshot=snapshot,
        criteria=criteria,
        **task.fields,
    )
    if status == TaskStatus.APPROVED and updated.status != TaskStatus.APPROVED:
        _approve(updated, **approve)
    report.updated.append(task.source_key)
    return "updated"


def library_tasks_load(
    tasks: Iterable[LibraryTask],
    *,
    status: str = TaskStatus.APPROVED,
    snapshot=None,
    what: str = "fixture file",
    gates: Mapping[str, dict] | Path | str | None = None,
) -> LoadReport:
    """Load validated library tasks (see the module docstring); a task that fails is reported, the rest load.

    ``gates``: precomputed gate results by gate key (a mapping, or a gate file's path; default the library's
    ``tasks_app/fixtures/library_gates.json``)."""
    if status not in LOAD_STATUSES:
        raise TaskLibraryError(f"status: one of {', '.join(LOAD_STATUSES)}")
    snapshot = library_snapshot(snapshot)
    author, reviewer = library_users_ensure()
    report = LoadReport()
    stored = gates if isinstance(gates, Mapping) else library_gates_read(gates)
    with gate_replay(snapshot):
        for task in tasks:
            try:
                library_task_upsert(
                    task=task,
                    author=author,
                    reviewer=reviewer,
                    status=status,
                    snapshot=snapshot,
                    report=report,
                    what=what,
                    stored=stored,
                )
            except ValidationError as exc:
                report.errors.extend(
                    m if m.startswith(task.source_key) else f"{task.source_key}: {m}" for m in error_lines(exc)
                )
    return report


def task_library_load(
    *,
    path: Path | str | None = None,
    user=None,
    status: str = TaskStatus.APPROVED,
    snapshot=None,
    gates: Mapping[str, dict] | Path | str | None = None,
) -> LoadReport:
    """Load the starter fixture files under ``path`` (default ``tasks_app/fixtures/starter_tasks``).

    The tasks are authored by the library's system user (see the module docstring); ``user``, who ran the load,
    is named in the approval comment. Invalid files are reported in ``errors`` (file: field: why) and skipped.
    ``gates``: see ``library_tasks_load``.
    """
    snapshot = library_snapshot(snapshot)
    tasks, errors = starter_tasks_read(path)
    token = _LOADED_BY.set(f"load_tasks by {user.get_username()}" if user is not None else "load_tasks")
    try:
        report = library_tasks_load(tasks, status=status, snapshot=snapshot, what="fixture file", gates=gates)
    finally:
        _LOADED_BY.reset(token)
    report.errors[:0] = errors
    return report


# --- grounding: the entities a task names ----------------------------------------------------------------------


def _models_by_prefix() -> dict[str, type]:
    return {m.ID_PREFIX: m for m in WORLD_MODELS if getattr(m, "ID_PREFIX", "ent") != "ent"}


def entity_ids_named(value: Any) -> set[str]:
    """Every world id (by the world's id prefixes: ord-, cus-, li-, prd-...) in a text or any JSON value.

    Ids a tool makes (``ref-w00001``: the ``w`` marks them) are left out: they are what the reference creates,
    not what the task names; so are regex patterns of criteria (``{"op": "regex", "value": ...}``).
    """
    prefixes = "|".join(sorted(_models_by_prefix(), key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])(?:{prefixes})-(?!w\d)\d[\d-]*(?<!-)(?![\w])")
    found: set[str] = set()

    def walk(item: Any) -> None:
        if isinstance(item, str):
            found.update(pattern.findall(item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                if key == "value" and item.get("op") == "regex":
                    continue  # a pattern ("emp-000[345]") matches ids; it names none
                walk(key)
                walk(sub)
        elif isinstance(item, list | tuple):
            for sub in item:
                walk(sub)

    walk(value)
    return found


def entities_missing(ids: Iterable[str], *, snapshot=None) -> list[str]:
    """The ids (of ``entity_ids_named``) with no row in the world of ``snapshot`` (default: the live world)."""
    by_prefix: dict[str, set[str]] = {}
    models = _models_by_prefix()
    for entity_id in ids:
        prefix = entity_id.split("-", 1)[0]
        by_prefix.setdefault(prefix, set()).add(entity_id)

    def missing() -> list[str]:
        absent = []
        for prefix, wanted in by_prefix.items():
            model = models[prefix]
            present = set(model._base_manager.filter(pk__in=wanted).values_list("pk", flat=True))
            absent.extend(wanted - present)
        return sorted(absent)

    if snapshot is None:
        return missing()
    with scratch_world(snapshot, label="task library: entity check"):
        return missing()
