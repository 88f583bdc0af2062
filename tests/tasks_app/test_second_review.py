"""The optional second review: two reviewers decide independently, the second blind to the first; approved only
when both approve; agreement shown on the review page and the queue. A task without the requirement is
reviewed once, as before."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from tasks_app.authoring.selectors import review_queue, task_history, work_counts
from tasks_app.authoring.selectors_review import review_agreement
from tasks_app.authoring.services.review_bulk import review_bulk_decide
from tasks_app.authoring.services.reviews import (
    GateRefused,
    review_approve,
    review_claim,
    review_reject,
    review_request_changes,
)
from tasks_app.authoring.services.second_review import pair_status, second_review_set
from tasks_app.models import Review, ReviewStage, Task, TaskStatus
from tests.tasks_app.factories import admin, gate_stored, reviewer, task_in_review

pytestmark = pytest.mark.django_db


def two_review_task(**kwargs) -> Task:
    task = task_in_review(**kwargs)
    return second_review_set(task=task, user=admin(), required=True)


def decide(task: Task, user, decision: str, comment: str = "") -> Review:
    review_claim(task=task, user=user)
    if decision == "approve":
        return review_approve(task=task, user=user, comment=comment)
    if decision == "request_changes":
        return review_request_changes(task=task, user=user, comment=comment or "Fix the wording.")
    return review_reject(task=task, user=user, comment=comment or "Not a task.")


def test_without_the_requirement_one_approval_approves_as_before():
    task = task_in_review()
    review = decide(task, reviewer(), "approve")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED and review.stage == ReviewStage.SINGLE and review.paired_with is None


def test_the_first_decision_is_sealed_and_keeps_the_task_in_review_until_a_different_reviewer_decides():
    task = two_review_task()
    first, second, author_ = reviewer(), reviewer(), task.author
    review = decide(task, first, "approve", "Looks right.")
    task.refresh_from_db()
    assert review.stage == ReviewStage.FIRST and review.gate["passes"] is True
    assert task.status == TaskStatus.IN_REVIEW and task.claimed_by is None

    # The first reviewer can't give the second: not claimable, not in their queue or badge, refused in bulk.
    with pytest.raises(ValidationError, match="a different reviewer gives the second"):
        review_claim(task=task, user=first)
    assert task not in review_queue(reviewer=first) and task in review_queue(reviewer=second)
    assert work_counts(user=first)["to_review"] == 0 and work_counts(user=second)["to_review"] == 1
    [outcome] = review_bulk_decide(task_ids=[task.pk], user=first, decision="approve")
    assert not outcome.done and "different reviewer" in outcome.message

    # Blind: nobody but the first reviewer sees the first decision in the history until the second is given.
    def reviews_seen_by(user):
        return [e["object"].pk for e in task_history(task=task, viewer=user) if e["kind"] == "review"]

    assert reviews_seen_by(first) == [review.pk]
    assert reviews_seen_by(second) == [] and reviews_seen_by(author_) == [] and reviews_seen_by(None) == []

    settled = decide(task, second, "approve")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED
    assert settled.stage == ReviewStage.SECOND and settled.paired_with == review
    assert reviews_seen_by(second) == reviews_seen_by(author_) == [review.pk, settled.pk]


@pytest.mark.parametrize(
    ("first", "second", "status"),
    [
        ("approve", "approve", TaskStatus.APPROVED),
        ("approve", "request_changes", TaskStatus.CHANGES_REQUESTED),
        ("request_changes", "approve", TaskStatus.CHANGES_REQUESTED),
        ("approve", "reject", TaskStatus.CHANGES_REQUESTED),
        ("reject", "request_changes", TaskStatus.CHANGES_REQUESTED),
        ("reject", "reject", TaskStatus.RETIRED),
    ],
)
def test_the_pair_settles_the_task_approved_only_when_both_approve(first, second, status):
    assert pair_status(first, second) == status
    task = two_review_task()
    decide(task, reviewer(), first)
    decide(task, reviewer(), second)
    task.refresh_from_db()
    assert task.status == status


def test_the_gate_still_applies_to_both_approvals():
    task = two_review_task(gate_passes=False)
    who = reviewer()
    review_claim(task=task, user=who)
    with pytest.raises(GateRefused):
        review_approve(task=task, user=who)
    assert not Review.objects.filter(task=task).exists()

    gate_stored(task.current_version, passes=True)
    decide(task, who, "approve")
    gate_stored(task.current_version, passes=False)  # the red team finds a gap before the second approval
    second = reviewer()
    review_claim(task=task, user=second)
    with pytest.raises(GateRefused):
        review_approve(task=task, user=second)
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW


def test_who_may_require_a_second_review_and_when_it_can_be_dropped():
    task = task_in_review()
    with pytest.raises(PermissionDenied):
        second_review_set(task=task, user=task.author, required=True)
    assert second_review_set(task=task, user=reviewer(), required=True).second_review_required
    decide(task, reviewer(), "approve")
    with pytest.raises(ValidationError, match="waiting for its second"):
        second_review_set(task=task, user=admin(), required=False)
    decide(task, reviewer(), "approve")
    assert not second_review_set(task=task, user=admin(), required=False).second_review_required


def test_agreement_overall_and_per_pair_of_reviewers():
    ann, bob, cy = reviewer(username="ann"), reviewer(username="bob"), reviewer(username="cy")
    for first, second, d1, d2 in [
        (ann, bob, "approve", "approve"),
        (bob, ann, "approve", "request_changes"),
        (ann, cy, "reject", "reject"),
    ]:
        task = two_review_task()
        decide(task, first, d1)
        decide(task, second, d2)
    decide(task_in_review(), ann, "approve")  # a single review counts for nothing
    overall, pairs = review_agreement()
    assert (overall.pairs, overall.agreed) == (3, 2)
    assert [(p.label, p.pairs, p.agreed) for p in pairs] == [("ann & bob", 2, 1), ("ann & cy", 1, 1)]
    assert pairs[0].rate == 0.5


def test_the_pages_hide_the_first_decision_then_show_both_and_agreement(client):
    task = two_review_task()
    first, second = reviewer(username="first-rev"), reviewer(username="second-rev")
    decide(task, first, "request_changes", "The sealed words.")
    page = reverse("review:task", args=[task.pk])

    client.force_login(second)
    queue = client.get(reverse("review:queue")).content.decode()
    assert "2nd review" in queue and "review-agreement" not in queue
    seen = client.get(page).content.decode()
    assert "first-review-sealed" in seen and "The sealed words." not in seen and "Request changes</span>" not in seen

    client.force_login(first)
    mine = client.get(page).content.decode()
    assert "first-review-mine" in mine and "The sealed words." in mine
    assert task.pk not in [t.pk for t in review_queue(reviewer=first)]

    client.force_login(second)
    assert client.post(reverse("review:claim", args=[task.pk])).status_code == 302
    response = client.post(reverse("review:decide", args=[task.pk]), {"decision": "approve", "comment": ""})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == TaskStatus.CHANGES_REQUESTED
    shown = client.get(page).content.decode()
    assert "review-pairs" in shown and "Disagree" in shown and "The sealed words." in shown
    queue = client.get(reverse("review:queue")).content.decode()
    assert "Two-review agreement:" in queue and "0% (0 of 1 pair" in queue and "first-rev &amp; second-rev" in queue


def test_the_requirement_is_set_from_the_review_page(client):
    task = task_in_review()
    url = reverse("review:second_review", args=[task.pk])
    client.force_login(task.author)
    assert client.post(url, {"required": "1"}).status_code == 403
    client.force_login(reviewer())
    assert client.post(url, {"required": "1"}).status_code == 302
    task.refresh_from_db()
    assert task.second_review_required
    assert client.post(reverse("review:second_review", args=[987654]), {"required": "1"}).status_code == 404
    page = client.get(reverse("review:task", args=[task.pk])).content.decode()
    assert "Two reviewers decide" in page and "Go back to one reviewer" in page


def test_bulk_approve_says_a_first_of_two_reviews_is_sealed_not_approved(client):
    """A bulk approval that only gives the first of two reviews must not read "Approved": the task stays in review."""
    single, paired = task_in_review(title="One review"), two_review_task(title="Two reviews")
    client.force_login(reviewer())
    response = client.post(reverse("review:bulk"), {"task": [single.pk, paired.pk], "decision": "approve"}, follow=True)
    text = response.content.decode()
    assert "Approved 1 of 2: One review" in text
    assert "First of two reviews given on 1 of 2" in text and "Two reviews" in text.split("First of two")[1]
    paired.refresh_from_db()
    assert paired.status == TaskStatus.IN_REVIEW
    outcomes = {o.title: o for o in review_bulk_decide(task_ids=[paired.pk], user=reviewer(), decision="approve")}
    assert outcomes["Two reviews"].done and not outcomes["Two reviews"].sealed  # the second settles it
    paired.refresh_from_db()
    assert paired.status == TaskStatus.APPROVED
