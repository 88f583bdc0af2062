"""Deciding several tasks of the queue at once, each exactly as one decision would be (claim, then the service),
so the gate still stops an approval and every refusal is reported for its task."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from tasks_app.authoring.services.reviews import ClaimUnavailable, review_approve, review_claim, review_release
from tasks_app.authoring.services.reviews import review_request_changes as request_changes
from tasks_app.models import ReviewDecision, ReviewStage, Task

BULK_DECISIONS = (ReviewDecision.APPROVE, ReviewDecision.REQUEST_CHANGES)
BULK_MAX = 50


@dataclass(frozen=True)
class BulkOutcome:
    """One selected task's outcome. ``done``: the decision was taken; ``sealed``: it was the first of two reviews,
    so the task stays in review (sealed until a second reviewer decides), not approved or returned yet."""

    task_id: int
    title: str
    done: bool
    message: str
    sealed: bool = False


def _reasons(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


def review_bulk_decide(*, task_ids: list[int], user, decision: str, comment: str = "") -> list[BulkOutcome]:
    """Approve (through the gate, never over it) or return with ``comment`` each task of ``task_ids`` that
    ``user`` may review: each is claimed, decided in its own transaction, and released again when refused."""
    if decision not in BULK_DECISIONS:
        raise ValidationError({"decision": ["Approve or request changes."]})
    if decision == ReviewDecision.REQUEST_CHANGES and not comment.strip():
        raise ValidationError({"comment": ["Say what to change (the comment goes to every author)."]})
    if not task_ids:
        raise ValidationError({"task": ["Select at least one task."]})
    if len(task_ids) > BULK_MAX:
        raise ValidationError({"task": [f"At most {BULK_MAX} tasks at once."]})
    outcomes = []
    for task in Task.objects.filter(pk__in=task_ids).select_related("current_version").order_by("submitted_at", "pk"):
        claimed_here = task.claimed_by_id != user.pk
        try:
            task = review_claim(task=task, user=user)
            if decision == ReviewDecision.APPROVE:
                review = review_approve(task=task, user=user, comment=comment)
            else:
                review = request_changes(task=task, user=user, comment=comment)
        except (ValidationError, PermissionDenied, Http404) as exc:
            if claimed_here and not isinstance(exc, ClaimUnavailable):
                task.refresh_from_db()
                if task.claimed_by_id == user.pk:
                    review_release(task=task, user=user)
            outcomes.append(BulkOutcome(task.pk, task.title, False, _reasons(exc)))
        else:
            outcomes.append(BulkOutcome(task.pk, task.title, True, "", sealed=review.stage == ReviewStage.FIRST))
    found = {o.task_id for o in outcomes}
    outcomes += [BulkOutcome(pk, f"task {pk}", False, "not found") for pk in task_ids if pk not in found]
    return outcomes
