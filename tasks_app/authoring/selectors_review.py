"""Reads behind the review queue: its filters read from a query string, the queue they select, the next and
previous item of a reviewer's queue, and the first one free to claim, in the queue's own order and filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from tasks_app.authoring.selectors import review_queue, review_queue_authors
from tasks_app.calibration.selectors import FLAG_FILTERS, SORTS, tasks_calibrated
from tasks_app.models import Review, ReviewStage, SavedFilter, Task, TaskStatus, TaskType

QUEUE_FILTERS = ("type", "author", "age", "flag", "sort")


@dataclass(frozen=True)
class FilteredQueue:
    """A reviewer's queue under the filters of a query string: the tasks, the values read, an error per filter
    that could not be read (left out of the selection), the authors with a task waiting, and the query string of
    the filters kept."""

    tasks: QuerySet[Task]
    values: dict[str, Any]
    errors: dict[str, str]
    authors: list

    @property
    def query(self) -> str:
        return urlencode({name: value for name, value in self.values.items() if value and name not in self.errors})


def _queue_filters(params, authors) -> tuple[dict[str, Any], dict[str, str]]:
    values = {name: str(params.get(name, "")).strip() for name in QUEUE_FILTERS}
    errors: dict[str, str] = {}
    if values["flag"] not in FLAG_FILTERS:
        errors["flag"] = "Pick a calibration filter from the list."
    if values["sort"] not in SORTS:
        errors["sort"] = "Pick an order from the list."
    if values["type"] and values["type"] not in TaskType.values:
        errors["type"] = "Pick a task type from the list."
    if values["author"] and values["author"] not in {str(a.pk) for a in authors}:
        errors["author"] = "Nobody by that id has a task waiting."
    if values["age"]:
        try:
            days = int(values["age"])
        except ValueError:
            days = -1
        if days < 0 or days > 3650:
            errors["age"] = "A whole number of days, 0 or more."
    return values, errors


def review_queue_filtered(*, reviewer, params) -> FilteredQueue:
    """``reviewer``'s queue with the filters and order of ``params`` (a query dict, or a form that carries one)."""
    authors = list(review_queue_authors(reviewer=reviewer))
    values, errors = _queue_filters(params, authors)
    tasks = review_queue(
        reviewer=reviewer,
        task_type=values["type"] if values["type"] and "type" not in errors else None,
        author=next((a for a in authors if str(a.pk) == values["author"] and "author" not in errors), None),
        older_than=(
            timezone.now() - timedelta(days=int(values["age"])) if values["age"] and "age" not in errors else None
        ),
    )
    tasks = tasks_calibrated(
        tasks,
        flag=values["flag"] if "flag" not in errors else "",
        sort=values["sort"] if "sort" not in errors else "",
    )
    return FilteredQueue(tasks=tasks, values=values, errors=errors, authors=authors)


def pending_first_review(task: Task) -> Review | None:
    """The sealed first review of the task's current version waiting for its second, or None."""
    if task.current_version_id is None:
        return None
    return (
        Review.objects.filter(
            task=task, version_id=task.current_version_id, stage=ReviewStage.FIRST, second_review__isnull=True
        )
        .select_related("reviewer")
        .order_by("-created_at", "-pk")
        .first()
    )


def review_queue_claim_states(tasks: list[Task], *, user, now: datetime) -> None:
    """Mark each task ``claim_state``: "mine" (``user`` holds it), "other" (someone else does) or "free"; and
    ``review_round``: "" (one review), "first" (two needed, none given) or "second" (the sealed first is in)."""
    sealed = set(
        Review.objects.filter(
            task__in=[t.pk for t in tasks if t.second_review_required],
            version_id__in=[t.current_version_id for t in tasks if t.second_review_required],
            stage=ReviewStage.FIRST,
            second_review__isnull=True,
        ).values_list("task_id", "version_id")
    ) if any(t.second_review_required for t in tasks) else set()  # fmt: skip
    for task in tasks:
        if (task.pk, task.current_version_id) in sealed:
            task.review_round = "second"
        else:
            task.review_round = "first" if task.second_review_required else ""
        held = task.claimed_by_id is not None and task.claim_expires_at and task.claim_expires_at > now
        task.claim_state = ("mine" if task.claimed_by_id == user.pk else "other") if held else "free"


def _open_to(user) -> Q:
    """Not held by another reviewer: free, expired, or held by ``user``."""
    return Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=timezone.now()) | Q(claimed_by=user)


def review_queue_neighbour(*, queue: QuerySet[Task], user, after: int | None, step: int) -> int | None:
    """The id of the item ``step`` (+1 next, -1 previous) from task ``after`` in ``queue`` (a review queue, filtered
    and ordered as the reviewer sees it), skipping items another reviewer holds. When ``after`` has left the queue
    (just decided), the next item is the head of what is left. One query; None at either end."""
    ids = list(queue.filter(_open_to(user)).values_list("pk", flat=True)[:5000])
    if not ids:
        return None
    if after not in ids:
        return ids[0] if step > 0 else None
    index = ids.index(after) + step
    return ids[index] if 0 <= index < len(ids) else None


def review_queue_first_free(*, queue: QuerySet[Task], user) -> Task | None:
    """The first item of ``queue`` nobody else holds (the one "claim next" takes)."""
    return queue.filter(_open_to(user)).first()


def saved_filters_of(*, user, page: str) -> list:
    """``user``'s saved filters of a list page, by name."""
    return list(SavedFilter.objects.filter(user=user, page=page).order_by("name"))


@dataclass(frozen=True)
class Agreement:
    """Pairs of reviews (a first and its second) and how many agreed (the same decision)."""

    label: str
    pairs: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return self.agreed / self.pairs if self.pairs else None


def review_agreement() -> tuple[Agreement, list[Agreement]]:
    """How often two reviewers of the same version made the same decision: overall, and per pair of reviewers
    (whoever went first), the pairs with most reviews first. One query."""
    rows = (
        Review.objects.filter(stage=ReviewStage.SECOND, paired_with__isnull=False)
        .values("reviewer__username", "paired_with__reviewer__username")
        .annotate(pairs=Count("pk"), agreed=Count("pk", filter=Q(decision=F("paired_with__decision"))))
        .order_by()
    )
    by_pair: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        key = tuple(sorted((row["reviewer__username"], row["paired_with__reviewer__username"])))
        counts = by_pair.setdefault(key, [0, 0])
        counts[0] += row["pairs"]
        counts[1] += row["agreed"]
    pairs = [Agreement(f"{a} & {b}", n, k) for (a, b), (n, k) in by_pair.items()]
    pairs.sort(key=lambda p: (-p.pairs, p.label))
    overall = Agreement("all reviewers", sum(p.pairs for p in pairs), sum(p.agreed for p in pairs))
    return overall, pairs


def task_review_pairs(*, history: list[dict]) -> list[dict]:
    """The settled pairs of reviews in a task's history (``selectors.task_history``), newest first:
    ``{"first", "second", "agree"}`` (a sealed first review is not in it: it shows once its second is given)."""
    reviews = [e["object"] for e in reversed(history) if e["kind"] == "review"]
    seconds = [r for r in reviews if r.stage == ReviewStage.SECOND]
    return [
        {"first": r.paired_with, "second": r, "agree": r.decision == r.paired_with.decision}
        for r in seconds
        if r.paired_with is not None
    ]


def second_review_context(*, task: Task, user, history: list[dict]) -> dict[str, Any]:
    """What the review page shows of the second review: whether one is required, the sealed first review's
    state (never its decision, except to its own reviewer), the settled pairs with agree/disagree. No query when
    the task needs one review (a sealed first review exists only while two are required)."""
    waiting = task.status == TaskStatus.IN_REVIEW and task.second_review_required
    first = pending_first_review(task) if waiting else None
    return {
        "second_required": task.second_review_required,
        "first_sealed": first,
        "first_is_mine": first is not None and first.reviewer_id == user.pk,
        "review_pairs": task_review_pairs(history=history),
    }
