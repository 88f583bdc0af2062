"""The review workflow: claim (a lease), decide, comment."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from rubrics_app.models import Criterion
from tasks_app.models import Comment, Review, ReviewDecision, Task, TaskStatus, TaskVersion
from tasks_app.permissions import is_admin, review_check, task_discuss_check

REVIEW_LEASE = timedelta(minutes=30)


class ClaimUnavailable(ValidationError):
    """Another reviewer holds an unexpired lease on the task."""


@transaction.atomic
def review_claim(*, task: Task, user, lease: timedelta = REVIEW_LEASE) -> Task:
    """Take (or renew) the review lease on a task in review; an expired lease of someone else can be taken."""
    task = Task.objects.select_related("current_version").get(pk=task.pk)
    review_check(user, task)
    if task.status != TaskStatus.IN_REVIEW:
        raise ValidationError(f"only a task in review can be claimed, not a {task.status} one")
    now = timezone.now()
    # Compare-and-set: of two reviewers claiming at once, one UPDATE matches and the other finds the lease taken.
    taken = Task.objects.filter(
        Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now) | Q(claimed_by=user),
        pk=task.pk,
        status=TaskStatus.IN_REVIEW,
    ).update(claimed_by=user, claim_expires_at=now + lease)
    task.refresh_from_db()
    if not taken:
        raise ClaimUnavailable(f"{task.claimed_by} is reviewing this task until {task.claim_expires_at:%H:%M} UTC")
    return task


@transaction.atomic
def review_release(*, task: Task, user) -> Task:
    """Give the lease back (its holder, or an admin)."""
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.claimed_by_id is None:
        return task
    if task.claimed_by_id != user.pk and not is_admin(user):
        raise PermissionDenied("only the reviewer holding the task (or an admin) can release it")
    task.claimed_by, task.claim_expires_at = None, None
    task.save(update_fields=["claimed_by", "claim_expires_at", "updated_at"])
    return task


def _decide(*, task: Task, user, decision: str, comment: str, status: str) -> Review:
    task = Task.objects.select_for_update(of=("self",)).select_related("current_version").get(pk=task.pk)
    review_check(user, task)
    if task.status != TaskStatus.IN_REVIEW:
        raise ValidationError(f"only a task in review can be decided, not a {task.status} one")
    if task.claimed_by_id != user.pk or task.claim_expires_at is None or task.claim_expires_at <= timezone.now():
        raise PermissionDenied("claim the task first: only the reviewer holding its lease decides")
    review = Review.objects.create(
        task=task, version=task.current_version, reviewer=user, decision=decision, comment=comment.strip()
    )
    task.status = status
    task.claimed_by, task.claim_expires_at = None, None
    task.save(update_fields=["status", "claimed_by", "claim_expires_at", "updated_at"])
    return review


def _required_comment(comment: str, message: str) -> None:
    if not (comment or "").strip():
        raise ValidationError(message)


@transaction.atomic
def review_approve(*, task: Task, user, comment: str = "") -> Review:
    return _decide(task=task, user=user, decision=ReviewDecision.APPROVE, comment=comment, status=TaskStatus.APPROVED)


@transaction.atomic
def review_request_changes(*, task: Task, user, comment: str) -> Review:
    """Back to the author's queue with the comment; the author edits and resubmits."""
    _required_comment(comment, "comment: say what the author should change")
    return _decide(
        task=task,
        user=user,
        decision=ReviewDecision.REQUEST_CHANGES,
        comment=comment,
        status=TaskStatus.CHANGES_REQUESTED,
    )


@transaction.atomic
def review_reject(*, task: Task, user, comment: str) -> Review:
    """The task is not worth fixing: it is retired, with the reason on record."""
    _required_comment(comment, "comment: say why the task is rejected")
    return _decide(task=task, user=user, decision=ReviewDecision.REJECT, comment=comment, status=TaskStatus.RETIRED)


@transaction.atomic
def comment_add(
    *, task: Task, user, body: str, criterion_key: uuid.UUID | str | None = None, version: TaskVersion | None = None
) -> Comment:
    """A comment on a task version (default: the current one), or on one of its criteria by key."""
    task = Task.objects.select_related("current_version").get(pk=task.pk)
    task_discuss_check(user, task)
    if not (body or "").strip():
        raise ValidationError("body: a comment needs text")
    version = version or task.current_version
    if version.task_id != task.pk:
        raise ValidationError("version: not a version of this task")
    if criterion_key is not None:
        try:
            criterion_key = uuid.UUID(str(criterion_key))
        except ValueError:
            raise ValidationError(f"criterion_key: {criterion_key!r} is not a criterion key") from None
        if not Criterion.objects.filter(version=version, key=criterion_key).exists():
            raise ValidationError(f"criterion_key: version {version.number} has no criterion {criterion_key}")
    return Comment.objects.create(
        task=task, version=version, criterion_key=criterion_key, author=user, body=body.strip()
    )


@transaction.atomic
def comment_resolve(*, comment: Comment, user) -> Comment:
    """Mark a comment dealt with (the task's author, the comment's author, or an admin)."""
    comment = Comment.objects.select_related("task").select_for_update(of=("self",)).get(pk=comment.pk)
    if user.pk not in (comment.author_id, comment.task.author_id) and not is_admin(user):
        raise PermissionDenied("only the task's author, the comment's author or an admin resolves a comment")
    comment.resolved = True
    comment.save(update_fields=["resolved"])
    return comment
