"""The review workflow: leases, decisions, comments, and the author's round trip."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.utils import timezone

from tasks_app.authoring.services.reviews import (
    ClaimUnavailable,
    GateRefused,
    comment_add,
    comment_resolve,
    review_approve,
    review_claim,
    review_reject,
    review_release,
    review_request_changes,
)
from tasks_app.authoring.services.tasks import task_submit_for_review, task_update
from tasks_app.models import Review, Task, TaskStatus
from tests.tasks_app.factories import admin, author, gate_stored, reviewer, task_in_review, task_make

pytestmark = pytest.mark.django_db


def test_claim_is_a_lease_that_a_second_reviewer_cannot_take_until_it_expires():
    task = task_in_review()
    first, second = reviewer(), reviewer()
    claimed = review_claim(task=task, user=first)
    assert claimed.claimed_by == first and claimed.claim_expires_at > timezone.now() + timedelta(minutes=29)
    with pytest.raises(ClaimUnavailable, match="is reviewing this task"):
        review_claim(task=task, user=second)
    assert review_claim(task=task, user=first).claimed_by == first  # renewing is fine
    Task.objects.filter(pk=task.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    assert review_claim(task=task, user=second).claimed_by == second
    with pytest.raises(PermissionDenied, match="claim the task first"):
        review_approve(task=task, user=first)


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_claiming_at_once_get_one_lease():
    task = task_in_review()
    reviewers = [reviewer(), reviewer(), reviewer(), reviewer()]
    outcomes: list[str] = []
    barrier = threading.Barrier(len(reviewers))

    def claim(user):
        try:
            barrier.wait()
            review_claim(task=task, user=user)
            outcomes.append("claimed")
        except ClaimUnavailable:
            outcomes.append("taken")
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(user,)) for user in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["claimed", "taken", "taken", "taken"]
    assert Task.objects.get(pk=task.pk).claimed_by in reviewers


def test_release_gives_the_lease_back():
    task = task_in_review()
    holder, other = reviewer(), reviewer()
    review_claim(task=task, user=holder)
    with pytest.raises(PermissionDenied):
        review_release(task=task, user=other)
    assert review_release(task=task, user=holder).claimed_by is None
    assert review_claim(task=task, user=other).claimed_by == other


def test_request_changes_needs_a_comment_and_the_author_resubmits():
    task = task_in_review()
    who = reviewer()
    review_claim(task=task, user=who)
    with pytest.raises(ValidationError, match="comment"):
        review_request_changes(task=task, user=who, comment="  ")
    review = review_request_changes(task=task, user=who, comment="The instruction never names the order.")
    task.refresh_from_db()
    assert (task.status, task.claimed_by, review.version) == (TaskStatus.CHANGES_REQUESTED, None, task.current_version)
    task = task_update(task=task, user=task.author, base_revision=task.revision, instruction="Order ord-f00001?")
    assert task.status == TaskStatus.CHANGES_REQUESTED  # stays in the author's queue until resubmitted
    task = task_submit_for_review(task=task, user=task.author)
    gate_stored(task.current_version)  # the new version's gate (what the red team says is not tested here)
    review_claim(task=task, user=who)
    review = review_approve(task=task, user=who, comment="Good now.")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED and review.version.number == 2
    assert list(Review.objects.filter(task=task).values_list("decision", flat=True)) == ["request_changes", "approve"]


def test_reject_retires_the_task_with_its_reason():
    task = task_in_review()
    who = reviewer()
    review_claim(task=task, user=who)
    with pytest.raises(ValidationError):
        review_reject(task=task, user=who, comment="")
    review_reject(task=task, user=who, comment="Duplicate of another task.")
    task.refresh_from_db()
    assert task.status == TaskStatus.RETIRED


def test_nobody_reviews_a_task_they_authored_or_last_edited():
    boss = admin()
    own = task_in_review(user=boss)
    with pytest.raises(PermissionDenied, match="authored or last edited"):
        review_claim(task=own, user=boss)
    # An admin who edited someone else's task can't approve it either.
    task = task_make()
    task_update(task=task, user=boss, base_revision=1, title="Polished by the admin")
    task = task_submit_for_review(task=task, user=task.author)
    with pytest.raises(PermissionDenied, match="authored or last edited"):
        review_claim(task=task, user=boss)
    assert review_claim(task=task, user=admin()).claimed_by is not None


def test_decisions_need_a_task_in_review():
    task = task_make()
    with pytest.raises(PermissionDenied):  # a reviewer does not see another author's draft at all
        review_claim(task=task, user=reviewer())
    with pytest.raises(ValidationError, match="only a task in review"):
        review_claim(task=task, user=admin())


def test_comments_on_the_task_and_on_one_criterion():
    task = task_in_review()
    criterion = task.current_version.criteria.order_by("position").first()
    who = reviewer()
    on_task = comment_add(task=task, user=who, body="Is the total with tax?")
    on_criterion = comment_add(task=task, user=who, body="Tolerance too tight", criterion_key=criterion.key)
    assert on_task.version == task.current_version and on_criterion.criterion_key == criterion.key
    with pytest.raises(ValidationError, match="criterion_key"):
        comment_add(task=task, user=who, body="?", criterion_key="00000000-0000-0000-0000-000000000009")
    with pytest.raises(ValidationError, match="body"):
        comment_add(task=task, user=who, body=" ")
    with pytest.raises(PermissionDenied):
        comment_add(task=task, user=author(), body="Drive-by")
    with pytest.raises(PermissionDenied):
        comment_resolve(comment=on_task, user=reviewer())
    assert comment_resolve(comment=on_task, user=task.author).resolved


# --- the gate ---------------------------------------------------------------------------------------------------


def test_a_refused_gate_stops_the_approval_and_only_an_admin_overrides_it_with_a_reason():
    task = task_in_review(gate_passes=False)
    who = reviewer()
    review_claim(task=task, user=who)
    with pytest.raises(GateRefused, match=r"gate refuses this version.*dump"):
        review_approve(task=task, user=who, comment="Looks fine.")
    with pytest.raises(PermissionDenied, match="only an admin"):
        review_approve(task=task, user=who, override_reason="I like it.")
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW and not Review.objects.filter(task=task).exists()

    boss = admin()
    Task.objects.filter(pk=task.pk).update(claimed_by=None, claim_expires_at=None)
    review_claim(task=task, user=boss)
    with pytest.raises(GateRefused):
        review_approve(task=task, user=boss, override_reason="   ")  # a reason has words
    review = review_approve(task=task, user=boss, override_reason="Kept for the demo: the dump is known.")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED
    assert review.gate_override_reason == "Kept for the demo: the dump is known."
    assert review.gate["passes"] is False
    assert [c["ok"] for c in review.gate["checks"]] == [True, False, True]


def test_a_passing_gate_is_recorded_on_the_review_without_a_reason():
    task = task_in_review()
    who = reviewer()
    review_claim(task=task, user=who)
    review = review_approve(task=task, user=who, override_reason="ignored: nothing to override")
    assert review.gate["passes"] is True and review.gate_override_reason == ""


@pytest.mark.django_db(databases=["default", "episode"])
def test_the_gate_is_computed_by_the_red_team_on_the_snapshot_and_stored(seeded_world):
    """A task with one weak criterion and no reference solution (approvable in three clicks before the gate) is
    refused by a real red-team run, and the result is kept per (version, snapshot)."""
    from tasks_app.calibration.services.gates import gate_checklist, rubric_gate_current
    from tasks_app.models import RubricGate
    from world_app.snapshots import snapshot_publish

    snapshot = snapshot_publish(note="gate")
    weak = [{"kind": "response", "text": "Mentions the warranty", "spec": {"op": "contains", "value": "warranty"},
             "weight": 1, "category": "correctness", "required": True}]  # fmt: skip
    task = task_in_review(snapshot=snapshot, criteria=weak, reference_solution={}, gate_passes=None)
    who = reviewer()
    review_claim(task=task, user=who)
    with pytest.raises(GateRefused):
        review_approve(task=task, user=who)
    gate = rubric_gate_current(task.current_version)
    assert gate is not None and gate.snapshot_id == snapshot.pk and not gate.passes
    assert not gate.reference_passes  # an empty answer never mentions the warranty
    assert "no_call" in {c["policy"] for c in gate.gameable}  # the policy words include "warranty claim"
    assert [c["ok"] for c in gate_checklist(gate)][:2] == [False, False]
    assert RubricGate.objects.filter(version=task.current_version).count() == 1
