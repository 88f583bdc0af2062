"""Reads behind reviewing at keyboard speed: the next and previous item of a reviewer's queue, and the first one free
to claim, in the queue's own order and filters."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.utils import timezone

from tasks_app.models import SavedFilter, Task


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
