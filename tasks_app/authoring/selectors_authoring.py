"""Reads behind the authoring pages: the filtered task list, a task with what its page shows, its versions."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from tasks_app.models import Comment, Criterion, Task, TaskVersion
from world_app.models import WorldSnapshot

# The snapshot image is megabytes: pages that show a snapshot never load it.
SNAPSHOT_HEAVY = ("image", "entity_counts")


def task_list(
    *,
    query: str = "",
    status: str = "",
    task_type: str = "",
    difficulty: str = "",
    family: str = "",
    author_id: int | None = None,
) -> QuerySet[Task]:
    """Tasks matching the filters, newest change first; each row carries its author (one query per page)."""
    tasks = Task.objects.select_related("author").only(
        "pk",
        "title",
        "task_type",
        "difficulty",
        "family",
        "tags",
        "status",
        "revision",
        "updated_at",
        "author__username",
    )
    if status:
        tasks = tasks.filter(status=status)
    if task_type:
        tasks = tasks.filter(task_type=task_type)
    if difficulty:
        tasks = tasks.filter(difficulty=difficulty)
    if family:
        tasks = tasks.filter(family__iexact=family.strip())
    if author_id is not None:
        tasks = tasks.filter(author_id=author_id)
    for term in query.split():
        match = Q(title__icontains=term) | Q(family__icontains=term) | Q(tags__icontains=term)
        if term.isdigit():
            match |= Q(pk=int(term))
        tasks = tasks.filter(match)
    return tasks.order_by("-updated_at", "-pk")


def task_authors() -> QuerySet:
    """Users who authored at least one task, by username (the author filter's choices)."""
    return (
        get_user_model()
        .objects.filter(pk__in=Task.objects.order_by().values("author_id"))
        .order_by("username")
        .only("pk", "username")
    )


def task_families() -> list[str]:
    """Every family in use, for the family filter's suggestions."""
    return list(Task.objects.exclude(family="").order_by("family").values_list("family", flat=True).distinct())


def task_for_page(*, task_id: int) -> Task:
    """The task with its author, current version (and its author and snapshot, without the image)."""
    return (
        Task.objects.select_related(
            "author", "claimed_by", "current_version", "current_version__created_by", "current_version__snapshot"
        )
        .defer(*(f"current_version__snapshot__{name}" for name in SNAPSHOT_HEAVY))
        .get(pk=task_id)
    )


def version_criteria(*, version: TaskVersion) -> list[Criterion]:
    return list(Criterion.objects.filter(version=version).order_by("position"))


def task_versions(*, task: Task) -> list[TaskVersion]:
    """Every version, newest first, with who saved it (without the heavy text)."""
    return list(
        TaskVersion.objects.filter(task=task)
        .select_related("created_by")
        .only("pk", "task_id", "number", "title", "created_at", "content_hash", "created_by__username")
        .order_by("-number")
    )


def task_open_comments(*, task: Task) -> list[Comment]:
    """Comments not resolved yet, oldest first, with their author and version."""
    return list(
        Comment.objects.filter(task=task, resolved=False)
        .select_related("author", "version")
        .only("pk", "criterion_key", "body", "resolved", "created_at", "author__username", "version__number")
        .order_by("created_at", "pk")
    )


def snapshots_for_choice() -> QuerySet[WorldSnapshot]:
    """Published snapshots, newest first, without their images."""
    return WorldSnapshot.objects.defer(*SNAPSHOT_HEAVY).order_by("-version")


def versions_by_number(*, task: Task, numbers: tuple[int, ...]) -> dict[int, TaskVersion]:
    versions = TaskVersion.objects.filter(task=task, number__in=numbers).select_related("created_by")
    return {v.number: v for v in versions}
