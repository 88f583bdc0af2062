"""Reads of tasks: the review and author queues, badge counts, a task's history and version diffs."""

from __future__ import annotations

import difflib
from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER, user_roles
from tasks_app.authoring.criterion_words import criterion_change_words
from tasks_app.models import Comment, Criterion, ReferenceRun, Review, ReviewStage, Task, TaskStatus, TaskVersion


def _not_written_by(user) -> Q:
    # A subquery on the versions this user made (created_by index), not a join of every task to its version:
    # the badge counts run on every page.
    made = TaskVersion.objects.filter(created_by=user).values("pk")
    return ~Q(author=user) & ~Q(current_version__in=made)


def _first_review_given_by(user) -> Q:
    """The task's current version has a sealed first review by ``user`` waiting for its second: a different
    reviewer gives that one, so the task is not in ``user``'s queue."""
    sealed = Review.objects.filter(
        task=OuterRef("pk"),
        version=OuterRef("current_version"),
        reviewer=user,
        stage=ReviewStage.FIRST,
        second_review__isnull=True,
    )
    return Q(Exists(sealed))


def review_queue(
    *, reviewer, task_type: str | None = None, author=None, older_than: datetime | None = None
) -> QuerySet[Task]:
    """Tasks waiting for review that ``reviewer`` may review (not their own), oldest submission first.

    ``older_than``: only tasks submitted before that moment. Each task carries its author, current version and
    lease holder, so listing them costs one query.
    """
    tasks = (
        Task.objects.filter(status=TaskStatus.IN_REVIEW)
        .filter(_not_written_by(reviewer))
        .exclude(_first_review_given_by(reviewer))
        .select_related("author", "current_version", "current_version__created_by", "claimed_by")
        .order_by("submitted_at", "pk")
    )
    if task_type:
        tasks = tasks.filter(task_type=task_type)
    if author is not None:
        tasks = tasks.filter(author=author)
    if older_than is not None:
        tasks = tasks.filter(submitted_at__lt=older_than)
    return tasks


def author_queue(*, author) -> QuerySet[Task]:
    """The author's tasks to work on (changes requested first, then drafts), each with ``latest_review_comment``."""
    latest = Review.objects.filter(task=OuterRef("pk")).order_by("-created_at", "-pk")
    return (
        Task.objects.filter(author=author, status__in=(TaskStatus.CHANGES_REQUESTED, TaskStatus.DRAFT))
        .select_related("current_version")
        .annotate(
            latest_review_comment=Subquery(latest.values("comment")[:1]),
            latest_review_decision=Subquery(latest.values("decision")[:1]),
        )
        .order_by("status", "-updated_at")  # "changes_requested" sorts before "draft"
    )


def work_counts(*, user) -> dict[str, int]:
    """Badge numbers in one query: work waiting for ``user`` in each role they hold."""
    roles = user_roles(user)
    now = timezone.now()
    counts = {"to_review": 0, "claimed": 0, "changes_requested": 0, "drafts": 0}
    reviewing = bool({REVIEWER, ADMIN} & roles)
    authoring = bool({AUTHOR, ADMIN} & roles)
    if not (reviewing or authoring):
        return counts
    free = Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now) | Q(claimed_by=user)
    in_review = Q(status=TaskStatus.IN_REVIEW) & _not_written_by(user) & ~_first_review_given_by(user)
    mine = Q(author=user)
    # Only rows that can count: the tasks in review and the user's own (status and author indexes), not all tasks.
    relevant = (Q(status=TaskStatus.IN_REVIEW) if reviewing else Q(pk__in=[])) | (mine if authoring else Q(pk__in=[]))
    found = Task.objects.filter(relevant).aggregate(
        to_review=Count("pk", filter=in_review & free),
        claimed=Count("pk", filter=in_review & Q(claimed_by=user, claim_expires_at__gt=now)),
        changes_requested=Count("pk", filter=mine & Q(status=TaskStatus.CHANGES_REQUESTED)),
        drafts=Count("pk", filter=mine & Q(status=TaskStatus.DRAFT)),
    )
    if reviewing:
        counts.update(to_review=found["to_review"], claimed=found["claimed"])
    if authoring:
        counts.update(changes_requested=found["changes_requested"], drafts=found["drafts"])
    return counts


def task_history(*, task: Task, viewer=None) -> list[dict]:
    """Every version, review and comment of the task in time order: ``{"at", "kind", "object"}`` (three queries).

    A sealed first review (one of two, its second not given yet) is left out except for ``viewer`` its reviewer:
    the second reviewer decides without seeing it."""
    versions = TaskVersion.objects.filter(task=task).select_related("created_by").defer("reference_solution")
    sealed = Q(stage=ReviewStage.FIRST, second_review__isnull=True)
    if viewer is not None and viewer.pk is not None:
        sealed &= ~Q(reviewer=viewer)
    reviews = (
        Review.objects.filter(task=task)
        .exclude(sealed)
        .select_related("reviewer", "version", "paired_with__reviewer", "second_review")
    )
    comments = Comment.objects.filter(task=task).select_related("author", "version")
    events = [{"at": v.created_at, "kind": "version", "object": v} for v in versions]
    events += [{"at": r.created_at, "kind": "review", "object": r} for r in reviews]
    events += [{"at": c.created_at, "kind": "comment", "object": c} for c in comments]
    order = {"version": 0, "review": 1, "comment": 2}
    return sorted(events, key=lambda e: (e["at"], order[e["kind"]], e["object"].pk))


DIFF_FIELDS = ("title", "task_type", "difficulty", "family", "tags", "snapshot_id", "reviewer_notes")
CRITERION_FIELDS = ("kind", "text", "spec", "weight", "category", "required")


def task_version_diff(a: TaskVersion, b: TaskVersion) -> dict:
    """What changed from version ``a`` to ``b``: fields, the instruction as a unified diff, criteria by key.

    ``{"fields": [{field, before, after}], "instruction": str, "reference_solution_changed": bool,
    "criteria": {"added": [...], "removed": [...], "changed": [{key, text, changes}], "moved": [key, ...]}}``
    """
    if a.task_id != b.task_id:
        raise ValueError(f"{a} and {b} are versions of different tasks")
    fields = [
        {"field": name.removesuffix("_id"), "before": getattr(a, name), "after": getattr(b, name)}
        for name in DIFF_FIELDS
        if getattr(a, name) != getattr(b, name)
    ]
    instruction = "".join(
        difflib.unified_diff(
            a.instruction.splitlines(keepends=True),
            b.instruction.splitlines(keepends=True),
            fromfile=f"v{a.number}",
            tofile=f"v{b.number}",
        )
    )
    before = {c.key: c for c in Criterion.objects.filter(version=a)}
    after = {c.key: c for c in Criterion.objects.filter(version=b)}
    common = sorted(before.keys() & after.keys(), key=lambda k: after[k].position)
    changed = []
    for key in common:
        old, new = before[key], after[key]
        changes = [  # in words: a spec as the sentence it checks and each value that changed, never a raw dict
            criterion_change_words(
                name, getattr(old, name), getattr(new, name), kind_before=old.kind, kind_after=new.kind
            )
            for name in CRITERION_FIELDS
            if getattr(old, name) != getattr(new, name)
        ]
        if changes:
            changed.append({"key": str(key), "text": after[key].text, "changes": changes})
    # Moved = its place among the criteria both versions hold changed (an insertion above is not a move).
    old_order = sorted(common, key=lambda k: before[k].position)
    moved = [str(k) for index, k in enumerate(common) if old_order[index] != k]
    added = sorted(after.keys() - before.keys(), key=lambda k: after[k].position)
    removed = sorted(before.keys() - after.keys(), key=lambda k: before[k].position)
    return {
        "fields": fields,
        "instruction": instruction,
        "reference_solution_changed": a.reference_solution != b.reference_solution,
        "criteria": {
            "added": [_criterion_summary(after[k]) for k in added],
            "removed": [_criterion_summary(before[k]) for k in removed],
            "changed": changed,
            "moved": moved,
        },
    }


def _criterion_summary(criterion: Criterion) -> dict:
    return {
        "key": str(criterion.key),
        "position": criterion.position,
        "kind": criterion.kind,
        "text": criterion.text,
        "weight": criterion.weight,
        "required": criterion.required,
    }


def reference_run_latest(*, version: TaskVersion) -> ReferenceRun | None:
    """The newest run of the version's reference solution, if any."""
    return ReferenceRun.objects.filter(version=version).select_related("created_by").order_by("-created_at").first()


# --- Review pages: reads behind /review/ -------------------------------------------------------------


def review_queue_authors(*, reviewer) -> QuerySet:
    """The authors whose tasks wait in ``reviewer``'s queue, by username (the queue's author filter)."""
    from django.contrib.auth import get_user_model

    waiting = review_queue(reviewer=reviewer).order_by().values("author_id")
    return get_user_model().objects.filter(pk__in=waiting).order_by("username").only("pk", "username")


def task_for_review(*, task_id: int) -> Task:
    """The task with everything its review page shows of the head: author, current version, snapshot, lease holder."""
    return (
        Task.objects.select_related(
            "author", "current_version", "current_version__created_by", "current_version__snapshot", "claimed_by"
        )
        .defer("current_version__snapshot__image")
        .get(pk=task_id)
    )  # the image is megabytes; the page needs its number


def task_comments(*, task: Task) -> list[Comment]:
    """Every comment on the task (any version), oldest first, with its author and version."""
    return list(Comment.objects.filter(task=task).select_related("author", "version").order_by("created_at", "pk"))
