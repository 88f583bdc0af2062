"""Queues, badge counts, history and diffs: what each shows, in a fixed number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tasks_app.authoring.selectors import author_queue, review_queue, task_history, task_version_diff, work_counts
from tasks_app.authoring.services.reviews import comment_add, review_claim, review_request_changes
from tasks_app.authoring.services.tasks import task_update
from tasks_app.models import Task
from tests.tasks_app.factories import admin, author, reviewer, task_in_review, task_make

pytestmark = pytest.mark.django_db


def queries(fn) -> tuple[object, int]:
    with CaptureQueriesContext(connection) as captured:
        result = fn()
    return result, len(captured)


def test_review_queue_lists_others_tasks_in_review_in_one_query():
    who = reviewer()
    waiting = [task_in_review() for _ in range(4)]
    task_make()  # a draft: not in review
    own = task_in_review(user=admin())
    boss = own.author
    Task.objects.filter(pk=waiting[0].pk).update(submitted_at=timezone.now() - timedelta(days=3))

    listed, count = queries(
        lambda: [(t.author.username, t.current_version.number, t.claimed_by) for t in review_queue(reviewer=who)]
    )
    assert len(listed) == 5 and count == 1
    assert [t.pk for t in review_queue(reviewer=boss)] == [t.pk for t in waiting]  # oldest first, not their own
    old = review_queue(reviewer=who, older_than=timezone.now() - timedelta(days=1))
    assert [t.pk for t in old] == [waiting[0].pk]
    assert [t.pk for t in review_queue(reviewer=who, author=waiting[1].author)] == [waiting[1].pk]
    assert review_queue(reviewer=who, task_type="reasoning").count() == 0


def test_author_queue_shows_requested_changes_with_the_latest_comment():
    writer = author()
    draft = task_make(user=writer, title="Draft")
    sent_back = task_in_review(user=writer, title="Sent back")
    task_in_review(user=writer, title="Waiting")
    who = reviewer()
    review_claim(task=sent_back, user=who)
    review_request_changes(task=sent_back, user=who, comment="Name the order in the instruction.")

    rows, count = queries(
        lambda: [(t.title, t.latest_review_comment, t.current_version.number) for t in author_queue(author=writer)]
    )
    assert count == 1
    assert rows == [("Sent back", "Name the order in the instruction.", 1), ("Draft", None, 1)]
    assert draft.pk in {t.pk for t in author_queue(author=writer)}


def test_work_counts_are_badges_per_role_in_one_query():
    writer, who = author(), reviewer()
    task_make(user=writer)
    sent_back = task_in_review(user=writer)
    held = task_in_review()
    task_in_review()
    review_claim(task=sent_back, user=who)
    review_request_changes(task=sent_back, user=who, comment="Fix it")
    review_claim(task=held, user=who)

    counts, count = queries(lambda: work_counts(user=who))
    assert counts == {"to_review": 2, "claimed": 1, "changes_requested": 0, "drafts": 0}
    assert count <= 2  # the roles, then one aggregate
    assert work_counts(user=writer) == {"to_review": 0, "claimed": 0, "changes_requested": 1, "drafts": 1}
    other = reviewer()
    assert work_counts(user=other)["to_review"] == 1  # the held one is someone else's for now


def test_task_history_is_every_version_review_and_comment_in_time_order():
    task = task_in_review()
    who = reviewer()
    comment_add(task=task, user=who, body="Question")
    review_claim(task=task, user=who)
    review_request_changes(task=task, user=who, comment="Fix")
    task_update(task=task, user=task.author, base_revision=task.revision, title="Fixed")
    events, count = queries(lambda: [(e["kind"], str(e["object"])) for e in task_history(task=task)])
    assert [kind for kind, _ in events] == ["version", "comment", "review", "version"]
    assert count == 3


def test_version_diff_names_field_changes():
    task = task_make()
    v1 = task.current_version
    task = task_update(task=task, user=task.author, base_revision=1, difficulty="hard", tags=["orders", "tax"],
                       criteria=[])  # fmt: skip
    diff = task_version_diff(v1, task.current_version)
    assert {f["field"]: (f["before"], f["after"]) for f in diff["fields"]} == {
        "difficulty": ("easy", "hard"),
        "tags": (["orders"], ["orders", "tax"]),
    }
    assert diff["instruction"] == "" and len(diff["criteria"]["removed"]) == 2
