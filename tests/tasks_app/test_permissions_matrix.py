"""Who may do what: every actor x every action, enforced by the services themselves."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from tasks_app.authoring.services.reference_solution import reference_solution_run
from tasks_app.authoring.services.reviews import (
    comment_add,
    review_approve,
    review_claim,
    review_reject,
    review_release,
    review_request_changes,
)
from tasks_app.authoring.services.tasks import task_create, task_retire, task_submit_for_review, task_update
from tasks_app.models import Task
from tests.tasks_app.factories import (
    WorldSnapshotFactory,
    admin,
    author,
    reviewer,
    task_fields,
    task_in_review,
    task_make,
)

pytestmark = pytest.mark.django_db

ACTORS = ("owner", "other_author", "reviewer", "admin", "anonymous")


def _held_by(task: Task, user) -> Task:
    """The task in review with ``user`` holding its lease (set directly: the lease is not what is tested here)."""
    if user.is_authenticated:
        Task.objects.filter(pk=task.pk).update(claimed_by=user, claim_expires_at=timezone.now() + timedelta(minutes=5))
    return task


def _draft(owner):
    return task_make(user=owner)


def _in_review(owner):
    return task_in_review(user=owner)


# action: (what the task must be, the call, the actors allowed)
ACTIONS = {
    "create": (None, lambda task, user: task_create(user=user, snapshot=WorldSnapshotFactory(), **task_fields()),
               {"owner", "other_author", "admin"}),
    "update": (_draft, lambda task, user: task_update(task=task, user=user, base_revision=1, title="Edited"),
               {"owner", "admin"}),
    "submit": (_draft, lambda task, user: task_submit_for_review(task=task, user=user), {"owner", "admin"}),
    "claim": (_in_review, lambda task, user: review_claim(task=task, user=user), {"reviewer", "admin"}),
    "release_others_lease": (
        _in_review,
        lambda task, user: review_release(task=_held_by(task, reviewer()), user=user),
        {"admin"},
    ),
    "approve": (_in_review, lambda task, user: review_approve(task=_held_by(task, user), user=user),
                {"reviewer", "admin"}),
    "request_changes": (
        _in_review,
        lambda task, user: review_request_changes(task=_held_by(task, user), user=user, comment="Fix"),
        {"reviewer", "admin"},
    ),
    "reject": (_in_review, lambda task, user: review_reject(task=_held_by(task, user), user=user, comment="No"),
               {"reviewer", "admin"}),
    "retire": (_draft, lambda task, user: task_retire(task=task, user=user), {"admin"}),
    "comment": (_in_review, lambda task, user: comment_add(task=task, user=user, body="Hm"),
                {"owner", "reviewer", "admin"}),
    # Allowed actors get past the permission check to "record the calls first" (no solution was recorded).
    # A draft is its author's until it is submitted: reviewers see what they review, not drafts.
    "reference_run": (_draft, lambda task, user: reference_solution_run(version=task.current_version, user=user),
                      {"owner", "admin"}),
    "reference_run_in_review": (
        _in_review, lambda task, user: reference_solution_run(version=task.current_version, user=user),
        {"owner", "reviewer", "admin"},
    ),
}  # fmt: skip


def _actor(name: str, owner):
    return {
        "owner": lambda: owner,
        "other_author": author,
        "reviewer": reviewer,
        "admin": admin,
        "anonymous": AnonymousUser,
    }[name]()


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("action", ACTIONS)
def test_permission_matrix(action, actor):
    make, call, allowed = ACTIONS[action]
    owner = author()
    task = make(owner) if make else None
    user = _actor(actor, owner)
    if actor in allowed:
        try:
            call(task, user)
        except ValidationError as exc:
            assert action.startswith("reference_run"), exc.messages
    else:
        with pytest.raises(PermissionDenied):
            call(task, user)
