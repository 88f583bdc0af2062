"""Reviewing at keyboard speed: next/previous item, claim the next free one and open it, bulk approve or return
with the gate still applied, criteria changes in words."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.authoring.services.reviews import review_claim
from tasks_app.models import Review, Task, TaskStatus
from tests.tasks_app.factories import WorldSnapshotFactory, reviewer, task_in_review

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue_of_three():
    snapshot = WorldSnapshotFactory()
    tasks = [task_in_review(snapshot=snapshot, title=f"Queue item {n}") for n in range(3)]
    return tasks


def test_next_and_previous_walk_the_queue_in_its_order_skipping_held_items(client, queue_of_three):
    first, second, third = queue_of_three
    me, other = reviewer(), reviewer()
    review_claim(task=second, user=other)
    client.force_login(me)
    nxt = client.get(reverse("review:next"), {"after": first.pk})
    assert nxt.status_code == 302 and nxt["Location"] == reverse("review:task", args=[third.pk])  # second is held
    back = client.get(reverse("review:next"), {"after": third.pk, "dir": "prev"})
    assert back["Location"] == reverse("review:task", args=[first.pk])
    end = client.get(reverse("review:next"), {"after": third.pk})
    assert end["Location"] == reverse("review:queue")  # the last one: back to the queue, which says so
    filtered = client.get(reverse("review:next"), {"after": first.pk, "sort": "pass_rate"})
    assert filtered["Location"].endswith("?sort=pass_rate")  # the queue's order travels with the reviewer
    page = client.get(reverse("review:task", args=[first.pk]), {"sort": "pass_rate"}).content.decode()
    assert 'id="next-item"' in page and "dir=next&amp;sort=pass_rate" in page and "js/review.js" in page


def test_claim_next_claims_the_first_free_item_and_opens_it(client, queue_of_three):
    first, second, _third = queue_of_three
    me, other = reviewer(), reviewer()
    review_claim(task=first, user=other)
    client.force_login(me)
    response = client.post(reverse("review:claim_next"))
    assert response.status_code == 302 and response["Location"] == reverse("review:task", args=[second.pk])
    second.refresh_from_db()
    assert second.claimed_by_id == me.pk
    claim_url = reverse("review:claim", args=[_third.pk])
    assert f'action="{claim_url}"' in client.get(reverse("review:queue")).content.decode()


def test_bulk_approve_goes_through_the_gate_and_bulk_return_needs_a_comment(client):
    snapshot = WorldSnapshotFactory()
    good = task_in_review(snapshot=snapshot, title="Passes its gate")
    gamed = task_in_review(snapshot=snapshot, title="Gameable", gate_passes=False)
    client.force_login(reviewer())
    response = client.post(reverse("review:bulk"), {"task": [good.pk, gamed.pk], "decision": "approve"}, follow=True)
    text = response.content.decode()
    assert "Approved 1 of 2" in text and "gate" in text
    good.refresh_from_db()
    gamed.refresh_from_db()
    assert good.status == TaskStatus.APPROVED
    assert gamed.status == TaskStatus.IN_REVIEW and gamed.claimed_by_id is None  # refused, and released again
    refused = client.post(reverse("review:bulk"), {"task": [gamed.pk], "decision": "request_changes"}, follow=True)
    assert "Say what to change" in refused.content.decode()
    client.post(reverse("review:bulk"), {"task": [gamed.pk], "decision": "request_changes", "comment": "Tighten it"})
    gamed.refresh_from_db()
    assert gamed.status == TaskStatus.CHANGES_REQUESTED
    assert Review.objects.get(task=gamed).comment == "Tighten it"
    assert Task.objects.get(pk=good.pk).reviews.count() == 1


def test_a_comment_on_a_criterion_shows_in_the_editor_on_that_criterion_until_resolved(client):
    from tasks_app.authoring.services.reviews import comment_add, review_request_changes

    task = task_in_review(snapshot=WorldSnapshotFactory())
    who = reviewer()
    criteria = list(task.current_version.criteria.order_by("position"))
    review_claim(task=task, user=who)
    note = comment_add(task=task, user=who, body="The total needs a tolerance.", criterion_key=criteria[1].key)
    comment_add(task=task, user=who, body="Say which order in the title.")
    review_request_changes(task=task, user=who, comment="See the comments")
    client.force_login(task.author)
    page = client.get(reverse("tasks:edit", args=[task.pk])).content.decode()
    second = page.index('id="criterion-', page.index('id="criterion-') + 1)  # the second criterion's fieldset
    assert page.index("The total needs a tolerance.") > second  # inline, on its criterion
    assert "Open comments on the task" in page and "Say which order in the title." in page
    resolved = client.post(reverse("review:comment_resolve", args=[note.pk]), HTTP_HX_REQUEST="true")
    assert resolved.status_code == 200
    assert "The total needs a tolerance." not in client.get(reverse("tasks:edit", args=[task.pk])).content.decode()
