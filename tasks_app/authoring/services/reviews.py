"""The review workflow: claim (a lease), decide, comment.

A task that requires a second review (``services.second_review``) is settled by two independent decisions: the
first is sealed and keeps the task in review; the second settles it (approved only when both approve).

Approving goes through the gate (``tasks_app.calibration.services.gates``): the version's reference passes on its
snapshot, no must-fail red-team policy passes and every must-pass one does. A refused gate stops the approval unless an
admin gives a written reason (``override_reason``); the review keeps the gate's checklist and the reason.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from corecraft_site.roles import is_admin
from tasks_app.authoring.services.second_review import pair_status, review_stage_for
from tasks_app.calibration.services.gates import gate_problems, gate_record, rubric_gate_current, rubric_gate_ensure
from tasks_app.models import Comment, Criterion, Review, ReviewDecision, ReviewStage, Task, TaskStatus, TaskVersion
from tasks_app.permissions import review_check, task_discuss_check

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
    review_stage_for(task=task, user=user)  # the reviewer who gave the first of two reviews can't take the second
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


class GateRefused(ValidationError):
    """The version does not pass the gate, and no admin gave a reason to approve it anyway."""


def _decide(*, task: Task, user, decision: str, comment: str, status: str, gate_check=None) -> Review:
    task = Task.objects.select_for_update(of=("self",)).select_related("current_version").get(pk=task.pk)
    review_check(user, task)
    if task.status != TaskStatus.IN_REVIEW:
        raise ValidationError(f"only a task in review can be decided, not a {task.status} one")
    if task.claimed_by_id != user.pk or task.claim_expires_at is None or task.claim_expires_at <= timezone.now():
        raise PermissionDenied("claim the task first: only the reviewer holding its lease decides")
    stage, first = review_stage_for(task=task, user=user)
    extra = gate_check(task.current_version) if gate_check is not None else {}
    review = Review.objects.create(
        task=task,
        version=task.current_version,
        reviewer=user,
        decision=decision,
        comment=comment.strip(),
        stage=stage,
        paired_with=first,
        **extra,
    )
    if stage == ReviewStage.FIRST:  # sealed: the task waits in review for a different reviewer's decision
        status = TaskStatus.IN_REVIEW
    elif stage == ReviewStage.SECOND:
        status = pair_status(first.decision, decision)
    task.status = status
    task.claimed_by, task.claim_expires_at = None, None
    task.save(update_fields=["status", "claimed_by", "claim_expires_at", "updated_at"])
    return review


def _required_comment(comment: str, why: str) -> None:
    if not (comment or "").strip():
        raise ValidationError({"comment": [why]})


def review_approve(
    *, task: Task, user, comment: str = "", override_reason: str = "", enforce_gate: bool = True
) -> Review:
    """Approve the version under review when it passes the gate; over a refused gate only an admin may, with
    ``override_reason`` (kept on the review, in the history). ``enforce_gate=False`` (the library load while its
    rubrics are not yet all through the gate) neither computes nor enforces it: the review records the stored
    gate when there is one (a red-team calibration stores them).

    The gate is computed (and stored) first, in its own transaction, so a refusal leaves the checklist on the
    review page; the decision itself is one transaction."""

    current = Task.objects.select_related("current_version").get(pk=task.pk)
    review_check(user, current)
    if enforce_gate and current.current_version is not None:
        rubric_gate_ensure(version=current.current_version)
    return _review_approve(task=task, user=user, comment=comment, override_reason=override_reason,
                           enforce_gate=enforce_gate)  # fmt: skip


@transaction.atomic
def _review_approve(*, task: Task, user, comment: str, override_reason: str, enforce_gate: bool) -> Review:

    reason = (override_reason or "").strip()

    def gate_check(version: TaskVersion) -> dict:
        if not enforce_gate:
            stored = rubric_gate_current(version)
            return {"gate": gate_record(stored) if stored else {}, "gate_override_reason": ""}
        gate = rubric_gate_ensure(version=version)
        if not gate.passes:
            if not reason:
                raise GateRefused(f"gate: the gate refuses this version: {gate_problems(gate)}")
            if not is_admin(user):
                raise PermissionDenied("only an admin may approve a version over the gate")
        return {"gate": gate_record(gate), "gate_override_reason": reason if not gate.passes else ""}

    return _decide(
        task=task,
        user=user,
        decision=ReviewDecision.APPROVE,
        comment=comment,
        status=TaskStatus.APPROVED,
        gate_check=gate_check,
    )


@transaction.atomic
def review_request_changes(*, task: Task, user, comment: str) -> Review:
    """Back to the author's queue with the comment; the author edits and resubmits."""
    _required_comment(comment, "say what the author should change")
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
    _required_comment(comment, "say why the task is rejected")
    return _decide(task=task, user=user, decision=ReviewDecision.REJECT, comment=comment, status=TaskStatus.RETIRED)


@transaction.atomic
def comment_add(
    *, task: Task, user, body: str, criterion_key: uuid.UUID | str | None = None, version: TaskVersion | None = None
) -> Comment:
    """A comment on a task version (default: the current one), or on one of its criteria by key."""
    task = Task.objects.select_related("current_version").get(pk=task.pk)
    task_discuss_check(user, task)
    if not (body or "").strip():
        raise ValidationError({"body": ["a comment needs text"]})
    version = version or task.current_version
    if version.task_id != task.pk:
        raise ValidationError({"version": ["not a version of this task"]})
    if criterion_key is not None:
        try:
            criterion_key = uuid.UUID(str(criterion_key))
        except ValueError:
            raise ValidationError({"criterion_key": [f"{criterion_key!r} is not a criterion key"]}) from None
        if not Criterion.objects.filter(version=version, key=criterion_key).exists():
            raise ValidationError({"criterion_key": [f"version {version.number} has no criterion {criterion_key}"]})
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
