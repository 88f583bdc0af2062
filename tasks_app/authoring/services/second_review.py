"""The optional second review, as annotation tools run one: a task marked ``second_review_required`` gets two
independent decisions by two different reviewers.

The rule:

- the first reviewer's decision (approve, request changes or reject, the gate applied to an approval as always) is
  recorded as the ``first`` review and sealed: the task stays in review, its lease is given back, and nobody but
  that reviewer sees the decision or its comment until the second is in;
- the first reviewer can't give the second (nor can the task's author or last editor, as for any review);
- the second reviewer decides without seeing the first decision; their review is the ``second``, ``paired_with``
  the first, and the pair settles the task: **approved only when both approve** (the gate applies to the second
  approval too), **retired when both reject**, otherwise **changes requested**, the author reading both comments;
- the two agree when they made the same decision; ``selectors_review.review_agreement`` gives the rate overall
  and per pair of reviewers.

A task without the requirement is reviewed once, as before (``single`` reviews).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from corecraft_site.roles import is_admin
from tasks_app.authoring.selectors_review import pending_first_review
from tasks_app.models import Review, ReviewDecision, ReviewStage, Task, TaskStatus
from tasks_app.permissions import review_check, review_queue_check, task_view_check


def pair_status(first: str, second: str) -> str:
    """The task's status after two decisions: approved when both approve, retired when both reject, otherwise
    changes requested."""
    if first == second == ReviewDecision.APPROVE:
        return TaskStatus.APPROVED
    if first == second == ReviewDecision.REJECT:
        return TaskStatus.RETIRED
    return TaskStatus.CHANGES_REQUESTED


def review_stage_for(*, task: Task, user) -> tuple[str, Review | None]:
    """The stage of the review ``user`` is about to give on ``task`` and the first review it pairs with; refuses
    the reviewer who gave the first."""
    first = pending_first_review(task)
    if first is not None:
        if first.reviewer_id == user.pk:
            raise ValidationError("you gave the first review of this version: a different reviewer gives the second")
        return ReviewStage.SECOND, first
    if task.second_review_required:
        return ReviewStage.FIRST, None
    return ReviewStage.SINGLE, None


@transaction.atomic
def second_review_set(*, task: Task, user, required: bool) -> Task:
    """Require (or stop requiring) a second review of ``task``: an admin, or a reviewer who may review it. Not
    while a first review waits for its second (that pair is settled first)."""
    task = Task.objects.select_for_update(of=("self",)).select_related("current_version").get(pk=task.pk)
    review_queue_check(user)
    if is_admin(user):
        task_view_check(user, task)
    else:
        review_check(user, task)
    if task.status == TaskStatus.RETIRED:
        raise ValidationError("a retired task is not reviewed again")
    if not required and task.second_review_required and pending_first_review(task) is not None:
        raise ValidationError("a first review is waiting for its second: the second reviewer settles it first")
    if task.second_review_required != required:
        task.second_review_required = required
        task.save(update_fields=["second_review_required", "updated_at"])
    return task


def decision_words(review: Review, done: str) -> str:
    """What to tell the reviewer who just decided: ``done`` ("Approved") for a single review; for one of two, that
    the first is sealed, or what the pair settled."""
    if review.stage == ReviewStage.FIRST:
        return f"Your first review (sealed until a second reviewer decides) is in on “{review.task.title}”."
    if review.stage == ReviewStage.SECOND:
        agree = "agrees with" if review.decision == review.paired_with.decision else "differs from"
        return (
            f"Your second review {agree} the first ({review.paired_with.get_decision_display().lower()}): "
            f"“{review.task.title}” is now {review.task.get_status_display().lower()}."
        )
    return f"{done} “{review.task.title}”."
