"""The task and rubric admin: every model listed, records read-only, actions that go through the services."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.authoring.services.reviews import comment_add
from tasks_app.models import Comment, Criterion, ReferenceRun, Review, Task, TaskStatus, TaskVersion
from tests.tasks_app.factories import admin, author, reviewer, task_in_review

pytestmark = pytest.mark.django_db

MODELS = (Task, TaskVersion, Review, Comment, ReferenceRun, Criterion)


def staff(user):
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_model_has_a_searchable_list_and_a_read_only_page(client, model):
    task = task_in_review()
    comment_add(task=task, user=task.author, body="A note")
    client.force_login(staff(admin()))
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    assert client.get(url, {"q": "order"}).status_code == 200
    obj = model.objects.first()
    if obj is not None:
        page = client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk]))
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")).status_code == 403


def test_claim_and_approve_actions_call_the_services(client):
    task = task_in_review()
    who = staff(admin())
    client.force_login(who)
    url = reverse("admin:tasks_app_task_changelist")
    response = client.post(url, {"action": "claim", "_selected_action": [task.pk]}, follow=True)
    assert "Claimed: 1 done." in response.content.decode()
    client.post(url, {"action": "approve", "_selected_action": [task.pk]})
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED and Review.objects.get(task=task).reviewer == who


def test_authors_and_reviewers_have_no_task_admin(client):
    """The admin is for the live world; tasks are worked on through the pages and their checks."""
    task = task_in_review()
    for user in (staff(author()), staff(reviewer())):
        client.force_login(user)
        assert client.get(reverse("admin:tasks_app_task_changelist")).status_code == 403
        assert client.get(reverse("admin:tasks_app_task_change", args=[task.pk])).status_code == 403


def test_a_refused_action_says_why(client):
    boss = staff(admin())
    task = task_in_review(user=boss)
    client.force_login(boss)
    url = reverse("admin:tasks_app_task_changelist")
    client.post(url, {"action": "claim", "_selected_action": [task.pk]})
    response = client.post(url, {"action": "approve", "_selected_action": [task.pk]}, follow=True)
    assert "nobody reviews a task they authored" in response.content.decode()
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW
