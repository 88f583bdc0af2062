"""Writes of a task's content: create, edit (a new immutable version per save), submit, retire."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from corecraft_site.canonical import sorted_json_sha256
from rubrics_app.criteria import CriterionInput, criteria_validate, criterion_content_hash
from tasks_app.authoring.services.reference_solution import reference_solution_validate
from tasks_app.models import Criterion, Difficulty, Task, TaskStatus, TaskType, TaskVersion
from tasks_app.permissions import task_create_check, task_edit_check, task_retire_check
from world_app.contract import CONVERSATION_TOOLS
from world_app.conversation import SimulatedUserInvalid, simulated_user_validate
from world_app.models import WorldSnapshot

# The authored fields a version holds, besides its criteria.
VERSION_FIELDS = (
    "title",
    "task_type",
    "difficulty",
    "family",
    "tags",
    "instruction",
    "snapshot",
    "reviewer_notes",
    "reference_solution",
    "simulated_user",
)
# Fields hashed into a version's content only when set (versions without them keep the hash they had).
HASHED_WHEN_SET = ("simulated_user",)
LIST_FIELDS = ("title", "task_type", "difficulty", "family", "tags")  # copied onto the Task for lists and filters
EDITABLE_STATUSES = (TaskStatus.DRAFT, TaskStatus.CHANGES_REQUESTED, TaskStatus.APPROVED)


class TaskConflict(Exception):
    """Someone saved the task after the editor opened it: nothing was written; ``current_version`` is theirs."""

    def __init__(self, *, task: Task, base_revision: int):
        self.task = task
        self.current_version = task.current_version
        self.base_revision = base_revision
        editor = self.current_version.created_by if self.current_version else None
        super().__init__(
            f"task {task.pk} was saved by {editor} (revision {task.revision}) after you opened revision "
            f"{base_revision}; reload and apply your changes to version {self.current_version.number}"
        )


def _clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The task's fields checked; refused with ``ValidationError({field: [why], ...})`` naming every problem."""
    problems: dict[str, list[str]] = {}

    def refuse(field: str, why: str) -> None:
        problems.setdefault(field, []).append(why)

    title = (fields.get("title") or "").strip()
    if not title:
        refuse("title", "required")
    if fields.get("task_type") not in TaskType.values:
        refuse("task_type", f"one of {', '.join(TaskType.values)}")
    if fields.get("difficulty") not in Difficulty.values:
        refuse("difficulty", f"one of {', '.join(Difficulty.values)}")
    if not (fields.get("instruction") or "").strip():
        refuse("instruction", "required (the message the agent receives)")
    if fields.get("snapshot") is None:
        refuse("snapshot", "required (publish a world snapshot first)")
    tags = fields.get("tags") or []
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) and t.strip() for t in tags):
        refuse("tags", "a list of non-empty texts")
    solution = fields.get("reference_solution") or {}
    try:
        solution = reference_solution_validate(solution) if solution else {}
    except ValidationError as exc:
        for field, whys in exc.message_dict.items():
            problems.setdefault(field, []).extend(whys)
    user: dict = {}
    try:
        user = simulated_user_validate(fields.get("simulated_user") or {})
    except SimulatedUserInvalid as exc:
        for field, whys in exc.problems.items():
            problems.setdefault(field, []).extend(whys)
    asks = [c.get("tool") for c in solution.get("calls") or [] if c.get("tool") in CONVERSATION_TOOLS]
    if asks and not user and not problems:
        refuse("reference_solution", "it asks the user (ask_user) but the task has no simulated_user to answer")
    if problems:
        raise ValidationError(problems)
    return {
        **fields,
        "title": title,
        "family": (fields.get("family") or "").strip(),
        "tags": sorted({t.strip() for t in tags}),
        "instruction": fields["instruction"].strip(),
        "reviewer_notes": (fields.get("reviewer_notes") or "").strip(),
        "reference_solution": solution,
        "simulated_user": user,
    }


def _version_hash(fields: dict[str, Any], criteria_hashes: list[tuple[str, str]]) -> str:
    payload = {
        name: fields[name]
        for name in VERSION_FIELDS
        if name != "snapshot" and (name not in HASHED_WHEN_SET or fields.get(name))
    }
    payload["snapshot"] = fields["snapshot"].pk
    payload["criteria"] = criteria_hashes
    return sorted_json_sha256(payload)


def _criteria_rows(inputs: list[CriterionInput]) -> list[Criterion]:
    rows = []
    for position, item in enumerate(inputs):
        fields = {
            "kind": item.kind,
            "text": item.text,
            "spec": item.spec,
            "weight": item.weight,
            "category": item.category,
            "required": item.required,
        }
        content_hash = criterion_content_hash(**fields)
        rows.append(Criterion(key=item.key or uuid.uuid4(), position=position, content_hash=content_hash, **fields))
    return rows


def _version_write(*, task: Task, user, fields: dict, criteria: list[Criterion], number: int) -> TaskVersion:
    version = TaskVersion.objects.create(
        task=task,
        number=number,
        created_by=user,
        content_hash=_version_hash(fields, [(str(c.key), c.content_hash) for c in criteria]),
        **{name: fields[name] for name in VERSION_FIELDS},
    )
    for row in criteria:
        row.pk = None
        row.version = version
    Criterion.objects.bulk_create(criteria)
    return version


@transaction.atomic
def task_create(
    *,
    user,
    title: str,
    task_type: str,
    difficulty: str,
    instruction: str,
    snapshot=None,
    family: str = "",
    tags: list[str] | None = None,
    reviewer_notes: str = "",
    criteria: list[dict] | None = None,
    reference_solution: dict | None = None,
    simulated_user: dict | None = None,
) -> Task:
    """A new draft task and its version 1. ``snapshot`` defaults to the latest published world snapshot."""
    task_create_check(user)
    if snapshot is None:
        snapshot = WorldSnapshot.objects.defer("image").order_by("-version").first()
    fields = _clean_fields(
        {
            "title": title,
            "task_type": task_type,
            "difficulty": difficulty,
            "family": family,
            "tags": tags or [],
            "instruction": instruction,
            "snapshot": snapshot,
            "reviewer_notes": reviewer_notes,
            "reference_solution": reference_solution or {},
            "simulated_user": simulated_user or {},
        }
    )
    rows = _criteria_rows(criteria_validate(list(criteria or [])))
    task = Task.objects.create(author=user, revision=1, **{name: fields[name] for name in LIST_FIELDS})
    task.current_version = _version_write(task=task, user=user, fields=fields, criteria=rows, number=1)
    task.save(update_fields=["current_version"])
    return task


_UNCHANGED: Any = object()


@transaction.atomic
def task_update(
    *,
    task: Task,
    user,
    base_revision: int,
    title: str = _UNCHANGED,
    task_type: str = _UNCHANGED,
    difficulty: str = _UNCHANGED,
    instruction: str = _UNCHANGED,
    snapshot=_UNCHANGED,
    family: str = _UNCHANGED,
    tags: list[str] = _UNCHANGED,
    reviewer_notes: str = _UNCHANGED,
    criteria: list[dict] = _UNCHANGED,
    reference_solution: dict = _UNCHANGED,
    simulated_user: dict = _UNCHANGED,
) -> Task:
    """Save an edit as a new immutable version; arguments left out keep the current version's value.

    ``base_revision`` is the task's ``revision`` when the editor opened it: if anyone saved since, raises
    ``TaskConflict`` and writes nothing. Criteria passed replace the rubric (keep a criterion's ``key`` to continue
    it). An edit that changes nothing makes no version. Status: draft and changes requested stay as they are
    (the author resubmits when ready); an approved task goes back to draft; in review and retired can't be edited.
    """
    task_edit_check(user, task)
    # The row lock serialises concurrent saves; of two editors who opened the same revision, the second conflicts.
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.revision != base_revision:
        raise TaskConflict(
            task=Task.objects.select_related("current_version__created_by").get(pk=task.pk),
            base_revision=base_revision,
        )
    if task.status not in EDITABLE_STATUSES:
        raise ValidationError(f"a task {task.get_status_display().lower()} can't be edited")
    current = task.current_version
    given = {
        "title": title,
        "task_type": task_type,
        "difficulty": difficulty,
        "instruction": instruction,
        "snapshot": snapshot,
        "family": family,
        "tags": tags,
        "reviewer_notes": reviewer_notes,
        "reference_solution": reference_solution,
        "simulated_user": simulated_user,
    }
    fields = _clean_fields(
        {name: getattr(current, name) if value is _UNCHANGED else value for name, value in given.items()}
    )
    if criteria is _UNCHANGED:
        rows = list(current.criteria.order_by("position"))
    else:
        inputs = criteria_validate(list(criteria))
        known = set(Criterion.objects.filter(version__task=task).values_list("key", flat=True))
        unknown = {
            f"criteria[{i}].key": [f"{c.key} is no criterion of this task"]
            for i, c in enumerate(inputs)
            if c.key and c.key not in known
        }
        if unknown:
            raise ValidationError(unknown)
        rows = _criteria_rows(inputs)
    content_hash = _version_hash(fields, [(str(c.key), c.content_hash) for c in rows])
    if content_hash == current.content_hash:
        return task  # nothing changed: no version, and the editor's revision stays current
    task.current_version = _version_write(task=task, user=user, fields=fields, criteria=rows, number=current.number + 1)
    for name in LIST_FIELDS:
        setattr(task, name, fields[name])
    if task.status == TaskStatus.APPROVED:
        task.status = TaskStatus.DRAFT
    task.revision += 1
    task.save(update_fields=["current_version", "status", "revision", "updated_at", *LIST_FIELDS])
    return task


@transaction.atomic
def task_submit_for_review(*, task: Task, user) -> Task:
    """Draft or changes requested -> in review; the rubric must have at least one criterion."""
    task_edit_check(user, task)
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.status not in (TaskStatus.DRAFT, TaskStatus.CHANGES_REQUESTED):
        raise ValidationError(f"only a draft or a task with changes requested can be submitted, not {task.status}")
    if not Criterion.objects.filter(version_id=task.current_version_id).exists():
        raise ValidationError({"criteria": ["a task needs at least one criterion before review"]})
    task.status = TaskStatus.IN_REVIEW
    task.submitted_at = timezone.now()
    task.claimed_by, task.claim_expires_at = None, None
    task.save(update_fields=["status", "submitted_at", "claimed_by", "claim_expires_at", "updated_at"])
    return task


@transaction.atomic
def task_retire(*, task: Task, user) -> Task:
    """Any status -> retired (admins only); a retired task leaves every queue and is never edited again."""
    task_retire_check(user)
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.status == TaskStatus.RETIRED:
        raise ValidationError("the task is retired already")
    task.status = TaskStatus.RETIRED
    task.claimed_by, task.claim_expires_at = None, None
    task.save(update_fields=["status", "claimed_by", "claim_expires_at", "updated_at"])
    return task
