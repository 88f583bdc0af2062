"""The task library: hand-written fixture files and family instances, loaded as tasks through the real workflow.

A library task is identified by ``Task.source_key``: ``starter:<key>`` for a fixture file
(``tasks_app/fixtures/starter_tasks/<task_type>/<slug>.yaml``), ``family:<name>:<entity ids>`` for a family
instance (``tasks_app.families``). Loading is idempotent:

- a new key makes a task (``task_create``) by the library author, then, for ``status="approved"``, submits it
  (``task_submit_for_review``) and has the library reviewer claim and approve it (``review_claim`` +
  ``review_approve``): the history says who loaded it, who approved it and why ("reviewed in the repository"),
  exactly like a task made in the studio;
- an unchanged file does nothing (its content is compared with the last version the library wrote);
- a changed file makes a new version (``task_update``, criteria keep their keys by position) pinned to the
  snapshot given (default: the latest), approved again the same way;
- a task edited in the studio since the library last wrote it, or sent back by a reviewer (changes requested),
  is left alone (``kept`` in the report): a file never overwrites an expert's edit nor approves over a
  reviewer's objection; a retired task stays retired; a task in review is reported as an error.

The library's two users are system accounts without a usable password: ``corecraft-library`` (author role)
and ``corecraft-library-review`` (reviewer role); nobody reviews their own task, so it takes two.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction

from rubrics_app.criteria import criteria_validate, criterion_content_hash
from tasks_app.models import Difficulty, Task, TaskStatus, TaskType, TaskVersion
from tasks_app.roles import AUTHOR, REVIEWER
from tasks_app.services.gates import gate_replay
from tasks_app.services.reference_solution import reference_solution_validate
from tasks_app.services.reviews import review_approve, review_claim
from tasks_app.services.tasks import task_create, task_submit_for_review, task_update

STARTER_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "starter_tasks"
LIBRARY_AUTHOR = "corecraft-library"
LIBRARY_REVIEWER = "corecraft-library-review"
LOAD_STATUSES = (TaskStatus.APPROVED, TaskStatus.DRAFT)
REQUIRED_FIELDS = ("key", "title", "task_type", "difficulty", "instruction", "criteria", "reference_solution")
OPTIONAL_FIELDS = ("family", "tags", "reviewer_notes")
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{1,150}$")
APPROVAL_COMMENT = "Library task: its {what} was reviewed in the repository; approved on load ({loaded_by})."
# Library approvals go through the gate (tasks_app.services.gates) once the library's rubrics pass it (issue 11:
# the starter library is being migrated onto primitives a dump or a spray cannot meet). Until then a load neither
# computes nor enforces it (computing it for the demo's 299 tasks would take minutes of `make demo`); the review
# records a stored gate if any, `calibrate --policy red_team` stores every task's, and releases leave the tasks it
# flags out.
LIBRARY_GATE_ENFORCED = False


# Who ran the load, for the approval comment ("load_tasks by admin").
_LOADED_BY: ContextVar[str] = ContextVar("library_loaded_by", default="load_tasks")


class TaskLibraryError(ValidationError):
    """The library cannot be loaded at all (no snapshot, no directory)."""


@dataclass
class LoadReport:
    """What a load did, by source key; ``errors`` name the file (or instance) and the field."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.created) + len(self.updated) + len(self.unchanged) + len(self.kept)

    def merge(self, other: LoadReport) -> LoadReport:
        for name in ("created", "updated", "unchanged", "kept", "approved", "errors"):
            getattr(self, name).extend(getattr(other, name))
        return self

    def summary(self) -> str:
        return (
            f"{len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.kept)} kept (edited in the studio or retired), {len(self.approved)} approved, "
            f"{len(self.errors)} error(s)"
        )

    def as_dict(self) -> dict:
        return {
            "created": len(self.created),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "kept": len(self.kept),
            "approved": len(self.approved),
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class LibraryTask:
    """A task as the library defines it (validated): what ``task_create`` takes, plus its source key."""

    source_key: str
    fields: dict
    criteria: list[dict]

    def criteria_hashes(self) -> list[str]:
        return [criterion_content_hash(**{k: c[k] for k in _HASHED}) for c in self.criteria]


_HASHED = ("kind", "text", "spec", "weight", "category", "required")


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


# --- parsing and validation -----------------------------------------------------------------------------------


def library_task_validate(data: Any, *, source_key: str | None = None, where: str) -> LibraryTask:
    """Check one task definition; raise ValidationError with every problem as ``<where>: <field>: why``."""
    if not isinstance(data, dict):
        raise ValidationError([f"{where}: a task must be a mapping of fields"])
    problems = []
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        problems.append(f"{where}: {', '.join(unknown)}: unknown field(s); the fields are "
                        f"{', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}")  # fmt: skip
    for name in REQUIRED_FIELDS:
        if name not in data or data[name] in (None, ""):
            problems.append(f"{where}: {name}: required")
    key = str(data.get("key") or "")
    if key and not KEY.match(key):
        problems.append(f"{where}: key: lowercase letters, digits, '-' and '_' only (got {key!r})")
    if data.get("task_type") and data["task_type"] not in TaskType.values:
        problems.append(f"{where}: task_type: one of {', '.join(TaskType.values)}")
    if data.get("difficulty") and data["difficulty"] not in Difficulty.values:
        problems.append(f"{where}: difficulty: one of {', '.join(Difficulty.values)}")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        problems.append(f"{where}: tags: a list of non-empty texts")
    criteria: list[dict] = []
    if isinstance(data.get("criteria"), list):
        try:
            criteria = [
                {
                    "kind": str(c.kind),
                    "text": c.text,
                    "spec": c.spec,
                    "weight": c.weight,
                    "category": str(c.category),
                    "required": c.required,
                }
                for c in criteria_validate(data["criteria"])
            ]
        except ValidationError as exc:
            problems.extend(f"{where}: {m}" for m in exc.messages)
        if not data["criteria"]:
            problems.append(f"{where}: criteria: at least one criterion")
    elif "criteria" in data:
        problems.append(f"{where}: criteria: must be a list")
    solution: dict = {}
    if data.get("reference_solution") is not None:
        try:
            solution = reference_solution_validate(data["reference_solution"])
        except ValidationError as exc:
            problems.extend(f"{where}: {m}" for m in exc.messages)
    if problems:
        raise ValidationError(problems)
    fields = {
        "title": str(data["title"]).strip(),
        "task_type": data["task_type"],
        "difficulty": data["difficulty"],
        "family": str(data.get("family") or "").strip(),
        "tags": sorted({t.strip() for t in tags}),
        "instruction": str(data["instruction"]).strip(),
        "reviewer_notes": str(data.get("reviewer_notes") or "").strip(),
        "reference_solution": solution,
    }
    return LibraryTask(source_key=source_key or f"starter:{key}", fields=fields, criteria=criteria)


def starter_files(path: Path | str | None = None) -> list[Path]:
    """Every fixture file under ``path`` (default: the starter library), sorted."""
    root = Path(path) if path else STARTER_DIR
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise TaskLibraryError(f"path: {root} is not a directory of task files")
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def starter_tasks_read(path: Path | str | None = None) -> tuple[list[LibraryTask], list[str]]:
    """The valid tasks of every fixture file, and the problems of the others (each naming its file)."""
    files = starter_files(path)
    base = Path(path) if path and Path(path).is_dir() else (STARTER_DIR if path is None else Path(path).parent)
    tasks, errors, seen = [], [], {}
    for file in files:
        where = str(file.relative_to(base)) if file.is_relative_to(base) else str(file)
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            errors.append(f"{where}: not valid YAML: {' '.join(str(exc).split())}")
            continue
        try:
            task = library_task_validate(data, where=where)
        except ValidationError as exc:
            errors.extend(exc.messages)
            continue
        if task.source_key in seen:
            errors.append(
                f"{where}: key: {task.source_key.removeprefix('starter:')!r} is also the key of {seen[task.source_key]}"
            )
            continue
        seen[task.source_key] = where
        tasks.append(task)
    return tasks, errors


# --- loading --------------------------------------------------------------------------------------------------


def library_snapshot(snapshot=None):
    """``snapshot``, or the latest published one; TaskLibraryError (a clear message) when none is published."""
    if snapshot is not None:
        return snapshot
    from world_app.episodes.errors import SnapshotNotPublished
    from world_app.snapshots import snapshot_latest

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


def _approve(task: Task, *, author, reviewer, what: str) -> None:
    task_submit_for_review(task=task, user=author)
    review_claim(task=task, user=reviewer)
    review_approve(
        task=task,
        user=reviewer,
        comment=APPROVAL_COMMENT.format(what=what, loaded_by=_LOADED_BY.get()),
        enforce_gate=LIBRARY_GATE_ENFORCED,
    )


@transaction.atomic
def library_task_upsert(
    *, task: LibraryTask, author, reviewer, status: str, snapshot, report: LoadReport, what: str
) -> str:
    """Create, update or leave one library task; returns what was done (created|updated|unchanged|kept)."""
    existing = Task.objects.select_for_update().filter(source_key=task.source_key).first()
    if existing is None:
        created = task_create(user=author, snapshot=snapshot, criteria=task.criteria, **task.fields)
        Task.objects.filter(pk=created.pk).update(source_key=task.source_key)
        if status == TaskStatus.APPROVED:
            _approve(created, author=author, reviewer=reviewer, what=what)
            report.approved.append(task.source_key)
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
    if ours is not None and _version_matches(ours, task):
        if status == TaskStatus.APPROVED and existing.status == TaskStatus.DRAFT:
            _approve(existing, author=author, reviewer=reviewer, what=what)
            report.approved.append(task.source_key)
        report.unchanged.append(task.source_key)
        return "unchanged"
    if existing.status == TaskStatus.IN_REVIEW:
        raise ValidationError(f"{task.source_key}: the task is in review; decide the review before reloading it")
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
        _approve(updated, author=author, reviewer=reviewer, what=what)
        report.approved.append(task.source_key)
    report.updated.append(task.source_key)
    return "updated"


def library_tasks_load(
    tasks: Iterable[LibraryTask], *, status: str = TaskStatus.APPROVED, snapshot=None, what: str = "fixture file"
) -> LoadReport:
    """Load validated library tasks (see the module docstring); a task that fails is reported, the rest load."""
    if status not in LOAD_STATUSES:
        raise TaskLibraryError(f"status: one of {', '.join(LOAD_STATUSES)}")
    snapshot = library_snapshot(snapshot)
    author, reviewer = library_users_ensure()
    report = LoadReport()
    with gate_replay(snapshot) if LIBRARY_GATE_ENFORCED else contextlib.nullcontext():
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
                )
            except ValidationError as exc:
                report.errors.extend(
                    m if m.startswith(task.source_key) else f"{task.source_key}: {m}" for m in exc.messages
                )
    return report


def task_library_load(
    *, path: Path | str | None = None, user=None, status: str = TaskStatus.APPROVED, snapshot=None
) -> LoadReport:
    """Load the starter fixture files under ``path`` (default ``tasks_app/fixtures/starter_tasks``).

    The tasks are authored by the library's system user (see the module docstring); ``user``, who ran the load,
    is named in the approval comment. Invalid files are reported in ``errors`` (file: field: why) and skipped.
    """
    snapshot = library_snapshot(snapshot)
    tasks, errors = starter_tasks_read(path)
    token = _LOADED_BY.set(f"load_tasks by {user.get_username()}" if user is not None else "load_tasks")
    try:
        report = library_tasks_load(tasks, status=status, snapshot=snapshot, what="fixture file")
    finally:
        _LOADED_BY.reset(token)
    report.errors[:0] = errors
    return report


# --- statistics (a read) ----------------------------------------------------------------------------------------


def task_library_stats() -> dict:
    """Counts of tasks per type, status, difficulty, family and source (``starter``, ``family``, ``studio``), with
    the per-type counts of the approved starter library (what issue 7 asks for: >= 30/30/30/40)."""
    from django.db.models import Case, CharField, Count, Value, When

    source = Case(
        When(source_key__startswith="starter:", then=Value("starter")),
        When(source_key__startswith="family:", then=Value("family")),
        default=Value("studio"),
        output_field=CharField(),
    )
    rows = list(
        Task.objects.annotate(source=source)
        .values("task_type", "status", "difficulty", "family", "source")
        .annotate(n=Count("id"))
        .order_by()
    )

    def count_by(*names: str, where=None) -> dict:
        counts: dict[str, int] = {}
        for row in rows:
            if where and not where(row):
                continue
            key = "/".join(str(row[n]) for n in names)
            counts[key] = counts.get(key, 0) + row["n"]
        return dict(sorted(counts.items()))

    return {
        "total": sum(row["n"] for row in rows),
        "by_type": count_by("task_type"),
        "by_status": count_by("status"),
        "by_difficulty": count_by("difficulty"),
        "by_family": count_by("family"),
        "by_source": count_by("source"),
        "by_type_and_status": count_by("task_type", "status"),
        "starter_by_type": count_by("task_type", where=lambda r: r["source"] == "starter"),
        "starter_by_family": count_by("family", where=lambda r: r["source"] == "starter"),
        "family_instances_by_family": count_by("family", where=lambda r: r["source"] == "family"),
    }


# --- grounding: the entities a task names ----------------------------------------------------------------------


def _models_by_prefix() -> dict[str, type]:
    from world_app.models import WORLD_MODELS

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
    from world_app.episodes import episode_close, episode_create, episode_world

    episode = episode_create(snapshot=snapshot, label="task library: entity check")
    try:
        with episode_world(episode):
            return missing()
    finally:
        episode_close(episode)
