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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction

from corecraft_site.roles import AUTHOR, REVIEWER
from corecraft_site.service_errors import error_lines
from rubrics_app.criteria import criteria_validate, criterion_content_hash
from tasks_app.authoring.services.reference_solution import reference_solution_validate
from tasks_app.authoring.services.reviews import GateRefused, comment_add, review_approve, review_claim, review_release
from tasks_app.authoring.services.tasks import task_create, task_submit_for_review, task_update
from tasks_app.calibration.services.gates import (
    findings_problems,
    gate_entry,
    gate_entry_findings,
    gate_key_of,
    gate_problems,
    gate_replay,
    library_gates_read,
    rubric_gate_current,
    rubric_gate_ensure,
)
from tasks_app.models import Difficulty, Task, TaskStatus, TaskType, TaskVersion
from tasks_app.perturbations import SnapshotReplay
from tasks_app.red_team import red_team_check
from world_app.contract import CONVERSATION_TOOLS
from world_app.conversation import SimulatedUserInvalid, facts_disclosed, simulated_user_validate
from world_app.episodes import scratch_world
from world_app.episodes.errors import SnapshotNotPublished
from world_app.models import WORLD_MODELS
from world_app.snapshots import snapshot_latest

STARTER_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "starter_tasks"  # tasks_app/fixtures/starter_tasks
LIBRARY_AUTHOR = "corecraft-library"
LIBRARY_REVIEWER = "corecraft-library-review"
LOAD_STATUSES = (TaskStatus.APPROVED, TaskStatus.DRAFT)
REQUIRED_FIELDS = ("key", "title", "task_type", "difficulty", "instruction", "criteria", "reference_solution")
OPTIONAL_FIELDS = ("family", "tags", "reviewer_notes", "simulated_user")
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{1,150}$")
APPROVAL_COMMENT = "Library task: its {what} was reviewed in the repository; approved on load ({loaded_by})."
GATE_REFUSED_COMMENT = (
    "Not approved on load: the gate refuses this version ({problems}). An admin may approve it over the gate "
    "with a written reason."
)

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
            problems.extend(f"{where}: {m}" for m in error_lines(exc))
        if not data["criteria"]:
            problems.append(f"{where}: criteria: at least one criterion")
    elif "criteria" in data:
        problems.append(f"{where}: criteria: must be a list")
    solution: dict = {}
    if data.get("reference_solution") is not None:
        try:
            solution = reference_solution_validate(data["reference_solution"])
        except ValidationError as exc:
            problems.extend(f"{where}: {m}" for m in error_lines(exc))
    user: dict = {}
    try:
        user = simulated_user_validate(data.get("simulated_user"))
    except SimulatedUserInvalid as exc:
        problems.extend(f"{where}: {path}: {why}" for path, whys in exc.problems.items() for why in whys)
    problems.extend(f"{where}: {m}" for m in _conversation_problems(user, criteria, solution))
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
        "simulated_user": user,
    }
    return LibraryTask(source_key=source_key or f"starter:{key}", fields=fields, criteria=criteria)


def _conversation_problems(user: dict, criteria: list[dict], solution: dict) -> list[str]:
    """A scripted user's facts against the criteria that name them and the reference's questions: every fact a
    criterion names is the user's, and every fact a criterion requires the reference actually asks for."""
    problems = []
    asks = [c for c in solution.get("calls") or [] if c.get("tool") in CONVERSATION_TOOLS]
    if asks and not user:
        problems.append("reference_solution: it asks the user (ask_user) but there is no simulated_user to answer")
    facts = {f["key"] for f in (user or {}).get("facts", [])}
    asked = {k for c in asks for k in facts_disclosed(user, str((c.get("arguments") or {}).get("message", "")))}
    for index, criterion in enumerate(criteria):
        spec = criterion.get("spec") or {}
        if criterion.get("kind") != "tool_call" or spec.get("expect") != "asked":
            continue
        fact = spec.get("fact")
        if fact not in facts:
            problems.append(f"criteria[{index}].spec.fact: {fact!r} is no fact of the simulated_user "
                            f"({', '.join(sorted(facts)) or 'there is none'})")  # fmt: skip
        elif fact not in asked:
            problems.append(f"criteria[{index}].spec.fact: the reference never asks for {fact!r} (no ask_user "
                            "message of it mentions one of the fact's topics)")  # fmt: skip
    return problems


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


@dataclass
class LibraryGates:
    """The gates of the library as ``load_tasks`` loads it (``library_gates_compute``)."""

    entries: dict[str, dict]  # gate key -> gate file entry, the current ones only
    tasks: int = 0
    from_file: int = 0
    computed: int = 0
    missing: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source key, the gate's problems)
    reports: list = field(default_factory=list)  # the red team's reports of the gates computed here


def library_gates_compute(
    *, families: int | None = 20, stored: Mapping[str, dict] | None = None, compute: bool = True, snapshot=None
) -> LibraryGates:
    """The gate of every starter task and family instance (``families`` per family; None = all) on ``snapshot``
    (default the latest), under its gate key: from ``stored`` where it holds the key, else (with ``compute``)
    played by the red team in one scratch world. What ``manage.py library_gates`` writes to the gate file."""
    # tasks_app.library.families imports this module at its top (family_tasks_load loads through it).
    from tasks_app.library.families import families_instantiate

    snapshot = library_snapshot(snapshot)
    stored = stored or {}
    tasks, _ = starter_tasks_read()
    for name, instances in families_instantiate(None, snapshot=snapshot, limit=families).items():
        for instance in instances:
            data = {**instance.as_fixture(), "family": name}
            try:
                tasks.append(library_task_validate(data, source_key=instance.source_key, where=instance.source_key))
            except ValidationError:
                continue  # load_tasks reports it; it has no gate
    result = LibraryGates(entries={}, tasks=len(tasks))
    with SnapshotReplay(snapshot) as replay:
        for task in tasks:
            solution = task.fields["reference_solution"]
            user = task.fields.get("simulated_user") or {}
            key = gate_key_of(instruction=task.fields["instruction"], criteria_hashes=task.criteria_hashes(),
                              reference_solution=solution, snapshot=snapshot, simulated_user=user)  # fmt: skip
            entry = stored.get(key)
            if entry is not None:
                result.from_file += 1
            elif compute:
                report = red_team_check(criteria=task.criteria, instruction=task.fields["instruction"],
                                        solution=solution, replay=replay, simulated_user=user)  # fmt: skip
                entry = gate_entry(report.as_dict())
                result.reports.append(report)
                result.computed += 1
            else:
                result.missing += 1
                continue
            result.entries[key] = entry
            findings = gate_entry_findings(entry)
            if not (findings["reference_passes"] and not findings["gameable"] and not findings["over_specified"]):
                result.refused.append((task.source_key, findings_problems(findings)))
    return result


# --- statistics (a read) ----------------------------------------------------------------------------------------


def task_library_stats() -> dict:
    """Counts of tasks per type, status, difficulty, family and source (``starter``, ``family``, ``studio``), with
    the per-type counts of the approved starter library (the library's floor: >= 30/30/30/40)."""
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
