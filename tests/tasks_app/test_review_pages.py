"""The review pages: the queue, a task's review page (lease, comments, decisions), My work, diffs.

Each action is driven through the page as a browser would post it; refusals must be 403 pages (never a 500),
bad input a form error that keeps what was typed, and the main pages a fixed number of queries.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from tasks_app.authoring.services.reviews import comment_add, review_claim, review_request_changes
from tasks_app.authoring.services.tasks import task_submit_for_review, task_update
from tasks_app.models import Comment, Criterion, Review, Task, TaskStatus
from tests.tasks_app.factories import (
    LLM_CRITERION,
    RESPONSE_CRITERION,
    WorldSnapshotFactory,
    admin,
    author,
    reviewer,
    task_in_review,
    task_make,
)

pytestmark = pytest.mark.django_db

STATE_CRITERION = {
    "kind": "state",
    "text": "The order is cancelled.",
    "category": "correctness",
    "spec": {
        "entity_type": "order",
        "filters": [{"field": "id", "op": "eq", "value": "ord-f00001"}],
        "field": "status",
        "op": "eq",
        "value": "cancelled",
    },
}
TOOL_CRITERION = {
    "kind": "tool_call",
    "text": "Looks the order up.",
    "category": "completeness",
    "spec": {"tool": "get_order_details", "arguments": {"order_id": {"op": "eq", "value": "ord-f00001"}}},
}
ALL_KINDS = [LLM_CRITERION, STATE_CRITERION, TOOL_CRITERION, RESPONSE_CRITERION]
HTMX = {"HTTP_HX_REQUEST": "true"}


def page_url(task: Task, name: str = "review:task") -> str:
    return reverse(name, kwargs={"task_id": task.pk})


def has_author_pages() -> bool:
    try:
        reverse("tasks:detail", args=[1]), reverse("tasks:edit", args=[1])
    except NoReverseMatch:
        return False
    return True


@pytest.fixture
def snapshot():
    return WorldSnapshotFactory()


# --- the queue ----------------------------------------------------------------------------------------------------


def test_queue_lists_others_tasks_in_review_with_their_claim_state(client, snapshot):
    me, other = reviewer(username="rita"), reviewer(username="otto")
    free = task_in_review(title="Free one", snapshot=snapshot)
    mine = task_in_review(title="Held by me", snapshot=snapshot)
    theirs = task_in_review(title="Held by Otto", snapshot=snapshot)
    task_make(title="A draft", snapshot=snapshot)
    own = task_in_review(user=admin(username="boss"), title="Boss's own", snapshot=snapshot)
    review_claim(task=mine, user=me)
    review_claim(task=theirs, user=other)
    client.force_login(me)

    response = client.get(reverse("review:queue"))

    assert response.status_code == 200
    html = response.content.decode()
    assert "4 tasks waiting" in html
    for task in (free, mine, theirs, own):
        assert page_url(task) in html
    assert "A draft" not in html
    assert "Claimed by you" in html and "Claimed by otto" in html and "Free" in html
    client.force_login(own.author)
    assert page_url(own) not in client.get(reverse("review:queue")).content.decode()  # never one's own


def test_queue_filters_by_type_author_and_age_and_htmx_gets_only_the_table(client, snapshot):
    me = reviewer()
    old = task_in_review(title="Old one", snapshot=snapshot)
    Task.objects.filter(pk=old.pk).update(submitted_at=timezone.now() - timedelta(days=5))
    reasoning = task_in_review(title="Reasoning one", task_type="reasoning", snapshot=snapshot)
    client.force_login(me)
    url = reverse("review:queue")

    by_type = client.get(url, {"type": "reasoning"}).content.decode()
    assert page_url(reasoning) in by_type and page_url(old) not in by_type
    by_author = client.get(url, {"author": old.author.pk}).content.decode()
    assert page_url(old) in by_author and page_url(reasoning) not in by_author
    by_age = client.get(url, {"age": "3"}).content.decode()
    assert page_url(old) in by_age and page_url(reasoning) not in by_age

    table = client.get(url, {"type": "reasoning"}, **HTMX)
    assert table.status_code == 200
    body = table.content.decode()
    assert body.lstrip().startswith('<section class="card" id="queue-table"')
    assert "<html" not in body and page_url(reasoning) in body


def test_saved_filters_keep_the_queues_filters_under_a_name_and_open_them_again(client, snapshot):
    from tasks_app.models import SavedFilter

    me, other = reviewer(username="rita"), reviewer(username="otto")
    reasoning = task_in_review(title="Reasoning one", task_type="reasoning", snapshot=snapshot)
    plain = task_in_review(title="Plain one", snapshot=snapshot)
    client.force_login(me)
    queue_url = reverse("review:queue")

    # The htmx table carries the save form with the filters now shown (it is swapped on every filter change).
    table = client.get(queue_url, {"type": "reasoning", "sort": "bogus"}, **HTMX).content.decode()
    assert 'name="query" value="type=reasoning"' in table
    # So does the bulk form's return query (bound to the form outside the table).
    assert 'name="query" value="type=reasoning" form="bulk-form"' in table

    # Saved through the queue's own filters: an unknown key and an invalid value are left out.
    saved = client.post(
        reverse("review:filter_save"), {"name": "  My   reasoning ", "query": "type=reasoning&sort=bogus&x=1&page=3"}
    )
    assert saved.status_code == 302 and saved["Location"] == f"{queue_url}?type=reasoning"
    row = SavedFilter.objects.get(user=me)
    assert (row.name, row.page, row.query) == ("My reasoning", "review_queue", "type=reasoning")

    page = client.get(queue_url).content.decode()
    assert f'href="{queue_url}?type=reasoning">My reasoning</a>' in page
    opened = client.get(f"{queue_url}?{row.query}").content.decode()
    assert page_url(reasoning) in opened and page_url(plain) not in opened

    # The same name again updates it; nobody else sees it or can delete it.
    client.post(reverse("review:filter_save"), {"name": "My reasoning", "query": "type=communication"})
    assert list(SavedFilter.objects.filter(user=me).values_list("query", flat=True)) == ["type=communication"]
    client.force_login(other)
    assert ">My reasoning</a>" not in client.get(queue_url).content.decode()
    assert client.post(reverse("review:filter_delete", args=[row.pk])).status_code == 404
    client.force_login(me)
    assert client.post(reverse("review:filter_delete", args=[row.pk])).status_code == 302
    assert not SavedFilter.objects.exists()


def test_a_saved_filter_without_a_name_is_a_field_error_and_keeps_the_filters(client, snapshot):
    from tasks_app.authoring.services.saved_filters import SAVED_FILTERS_PER_PAGE
    from tasks_app.models import SavedFilter

    me = reviewer()
    task_in_review(title="Reasoning one", task_type="reasoning", snapshot=snapshot)
    client.force_login(me)
    refused = client.post(reverse("review:filter_save"), {"name": "   ", "query": "type=reasoning"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Give the filters a name." in html and 'name="query" value="type=reasoning"' in html
    assert not SavedFilter.objects.exists()

    for n in range(SAVED_FILTERS_PER_PAGE):
        SavedFilter.objects.create(user=me, page="review_queue", name=f"f{n:02d}", query="")
    full = client.post(reverse("review:filter_save"), {"name": "one more", "query": ""})
    assert full.status_code == 400 and "delete one first" in full.content.decode()
    assert client.post(reverse("review:filter_save"), {"name": "f03", "query": "age=2"}).status_code == 302


def test_queue_bad_filters_are_field_errors_not_500(client, snapshot):
    task_in_review(snapshot=snapshot)
    client.force_login(reviewer())
    response = client.get(reverse("review:queue"), {"age": "soon", "type": "poetry", "author": "999999"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "A whole number of days" in html and "Pick a task type" in html and "Nobody by that id" in html
    assert 'value="soon"' in html  # what was typed stays
    assert "1 task waiting" in html  # the bad filters are ignored, not applied


def test_queue_paginates(client, snapshot):
    for _ in range(27):
        task_in_review(snapshot=snapshot)
    client.force_login(reviewer())
    first = client.get(reverse("review:queue")).content.decode()
    assert "27 tasks waiting" in first and "Page 1 of 2" in first
    second = client.get(reverse("review:queue"), {"page": 2}).content.decode()
    assert second.count('href="/review/tasks/') == 2


def test_queue_is_refused_to_someone_who_does_not_review(client):
    client.force_login(author())
    response = client.get(reverse("review:queue"))
    assert response.status_code == 403
    assert "Only reviewers and admins review tasks" in response.content.decode()


def test_queue_needs_a_login(client):
    response = client.get(reverse("review:queue"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_queue_queries_do_not_grow_with_tasks(client, snapshot, django_assert_max_num_queries):
    me, other = reviewer(), reviewer()
    for index in range(30):
        task = task_in_review(snapshot=snapshot)
        if index % 3 == 0:
            review_claim(task=task, user=other)
    client.force_login(me)
    client.get(reverse("review:queue"))  # session warm-up
    with django_assert_max_num_queries(9):  # 8, and the agreement of two-review pairs (one aggregate)
        response = client.get(reverse("review:queue"))
    assert response.status_code == 200 and "30 tasks waiting" in response.content.decode()


# --- a task's review page -----------------------------------------------------------------------------------------


def test_task_page_shows_the_submitted_version_read_only(client, snapshot):
    task = task_in_review(
        snapshot=snapshot,
        criteria=ALL_KINDS,
        reference_solution={
            "calls": [{"tool": "get_order_details", "arguments": {"order_id": "ord-f00001"}}],
            "final_answer": "Your order total was $549.98.",
        },
    )
    client.force_login(reviewer())
    response = client.get(page_url(task))
    assert response.status_code == 200
    html = response.content.decode()
    assert "What did I pay in total?" in html  # the instruction
    assert "The total includes shipping." in html  # notes for reviewers
    # every criterion in plain language with its spec summarised
    assert "Judged by the LLM judge" in html
    assert "In the final world, every one of the order rows where id = ord-f00001 has status = cancelled." in html
    assert "The agent calls get_order_details with order_id = ord-f00001." in html
    assert "The final answer states the number 549.98 (± 0.01)." in html
    assert "get_order_details" in html and "Your order total was $549.98." in html
    assert "Not run yet on this version." in html
    assert 'id="task-history"' in html and "Version 1" in html
    assert "Claim the task to decide" in html
    assert 'value="approve" class="approve" disabled' in html  # visible, disabled until claimed


def test_task_page_for_its_author_has_no_decision_controls_and_says_why(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(task.author)
    response = client.get(page_url(task))
    assert response.status_code == 200
    html = response.content.decode()
    assert "nobody reviews (or approves) their own work" in html
    assert 'value="approve"' not in html and "Claim</button>" not in html


def test_task_page_is_refused_to_another_author_and_404_for_nothing(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(author())
    response = client.get(page_url(task))
    assert response.status_code == 403 and "Not allowed" in response.content.decode()
    client.force_login(reviewer())
    assert client.get(reverse("review:task", kwargs={"task_id": 987654})).status_code == 404


def test_task_page_queries_do_not_grow_with_criteria_and_comments(client, snapshot, django_assert_max_num_queries):
    task = task_in_review(snapshot=snapshot, criteria=[dict(LLM_CRITERION, text=f"Check {i}") for i in range(12)])
    who = reviewer()
    keys = list(Criterion.objects.filter(version=task.current_version).values_list("key", flat=True))
    for index in range(30):
        comment_add(task=task, user=who, body=f"Remark {index}", criterion_key=keys[index % 12] if index % 2 else None)
    review_claim(task=task, user=who)
    client.force_login(who)
    client.get(page_url(task))
    with django_assert_max_num_queries(14):
        response = client.get(page_url(task))
    assert response.status_code == 200 and response.content.decode().count('class="comment"') == 30


# --- claim and release --------------------------------------------------------------------------------------------


def test_claim_then_another_reviewer_sees_who_holds_it_and_cannot_take_it(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    rita, otto = reviewer(username="rita"), reviewer(username="otto")
    client.force_login(rita)
    response = client.post(page_url(task, "review:claim"), follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Claimed by you" in html and "Release</button>" in html
    assert 'value="approve" class="approve">' in html  # enabled now
    task.refresh_from_db()
    assert task.claimed_by == rita

    client.force_login(otto)
    html = client.get(page_url(task)).content.decode()
    assert "Claimed by rita" in html and "Claim</button>" not in html
    response = client.post(page_url(task, "review:claim"), follow=True)
    assert "rita is reviewing this task until" in response.content.decode()
    task.refresh_from_db()
    assert task.claimed_by == rita
    assert client.post(page_url(task, "review:release")).status_code == 403  # not otto's to give back

    client.force_login(rita)
    response = client.post(page_url(task, "review:release"), follow=True)
    assert "Released" in response.content.decode()
    task.refresh_from_db()
    assert task.claimed_by is None


def test_the_author_cannot_claim_their_own_task(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(task.author)
    response = client.post(page_url(task, "review:claim"))
    assert response.status_code == 403
    task.refresh_from_db()
    assert task.claimed_by is None


def test_claiming_a_draft_is_a_message_not_an_error(client, snapshot):
    task = task_make(snapshot=snapshot)
    client.force_login(reviewer())
    assert client.post(page_url(task, "review:claim")).status_code == 403  # a draft is not theirs to see
    client.force_login(admin())
    response = client.post(page_url(task, "review:claim"), follow=True)
    assert response.status_code == 200 and "only a task in review can be claimed" in response.content.decode()


def test_pages_refuse_get_on_actions(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(reviewer())
    assert client.get(page_url(task, "review:claim")).status_code == 405


# --- comments -----------------------------------------------------------------------------------------------------


def test_htmx_comment_on_the_task_comes_back_appended_to_its_thread(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    who = reviewer()
    comment_add(task=task, user=who, body="First remark")
    client.force_login(who)
    response = client.post(page_url(task, "review:comment"), {"body": "Second remark", "criterion_key": ""}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div class="thread" id="thread">')
    assert html.index("First remark") < html.index("Second remark")
    assert "<html" not in html
    assert Comment.objects.filter(task=task, body="Second remark", criterion_key=None).exists()


def test_htmx_comment_on_one_criterion(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    key = Criterion.objects.filter(version=task.current_version).first().key
    client.force_login(reviewer())
    response = client.post(
        page_url(task, "review:comment"), {"body": "Weight this higher", "criterion_key": str(key)}, **HTMX
    )
    assert response.status_code == 200
    assert f'id="thread-{key}"' in response.content.decode()
    assert f'<span id="comment-count-{key}" hx-swap-oob="true">1</span>' in response.content.decode()
    assert Comment.objects.get(task=task).criterion_key == key
    # and the page shows it under that criterion, and in the history with the criterion's text
    html = client.get(page_url(task)).content.decode()
    assert html.index(f'id="criterion-{key}"') < html.index("Weight this higher")
    assert "commented\n              on a criterion: <q" in html


def test_empty_or_bad_comment_is_a_form_error(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(reviewer())
    response = client.post(page_url(task, "review:comment"), {"body": "   "}, **HTMX)
    assert response.status_code == 200 and "A comment needs text" in response.content.decode()
    response = client.post(page_url(task, "review:comment"), {"body": "Keep me", "criterion_key": "nope"}, **HTMX)
    html = response.content.decode()
    assert "is not a criterion key" in html and ">Keep me</textarea>" in html
    assert not Comment.objects.exists()
    # without htmx: back to the page with a message
    response = client.post(page_url(task, "review:comment"), {"body": ""}, follow=True)
    assert "Comment not added" in response.content.decode()


def test_a_stranger_cannot_comment(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(author())
    response = client.post(page_url(task, "review:comment"), {"body": "Hi"}, **HTMX)
    assert response.status_code == 403 and not Comment.objects.exists()


def test_resolve_a_comment_by_htmx_and_who_may(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    comment = comment_add(task=task, user=reviewer(), body="Typo in the instruction")
    client.force_login(reviewer())  # neither the task's author nor the comment's
    assert client.post(reverse("review:comment_resolve", args=[comment.pk]), **HTMX).status_code == 403
    comment.refresh_from_db()
    assert not comment.resolved

    client.force_login(task.author)
    response = client.post(reverse("review:comment_resolve", args=[comment.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<li class="comment is-resolved" id="comment-{comment.pk}"')
    assert "Resolved" in html and "Mark resolved" not in html
    comment.refresh_from_db()
    assert comment.resolved


# --- decisions ----------------------------------------------------------------------------------------------------


def claimed(snapshot, **kwargs):
    task = task_in_review(snapshot=snapshot, **kwargs)
    who = reviewer()
    review_claim(task=task, user=who)
    return task, who


@pytest.mark.parametrize("decision", ["request_changes", "reject"])
def test_request_changes_and_reject_need_a_comment(client, snapshot, decision):
    task, who = claimed(snapshot)
    client.force_login(who)
    response = client.post(page_url(task, "review:decide"), {"decision": decision, "comment": "  "})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="decision-errors"' in html and "Say " in html
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW and not Review.objects.exists()


def test_a_decision_form_error_keeps_what_was_typed(client, snapshot):
    task, who = claimed(snapshot)
    client.force_login(who)
    response = client.post(page_url(task, "review:decide"), {"decision": "maybe", "comment": "Half-written thought"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Choose approve, request changes or reject." in html
    assert ">Half-written thought</textarea>" in html


def test_request_changes_sends_it_back_to_the_author(client, snapshot):
    task, who = claimed(snapshot)
    client.force_login(who)
    response = client.post(
        page_url(task, "review:decide"), {"decision": "request_changes", "comment": "Name the order."}
    )
    assert response.status_code == 302 and response["Location"] == reverse("review:queue")
    task.refresh_from_db()
    assert task.status == TaskStatus.CHANGES_REQUESTED
    assert Review.objects.get(task=task).comment == "Name the order."
    html = client.get(page_url(task)).content.decode()
    assert "Request changes</span>" in html or "Request changes\n" in html or "decision-request_changes" in html


def test_approve_and_reject(client, snapshot):
    task, who = claimed(snapshot)
    client.force_login(who)
    response = client.post(page_url(task, "review:decide"), {"decision": "approve", "comment": ""}, follow=True)
    assert response.status_code == 200 and "Approved" in response.content.decode()
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED

    other, who = claimed(snapshot)
    client.force_login(who)
    client.post(page_url(other, "review:decide"), {"decision": "reject", "comment": "Duplicate of another task."})
    other.refresh_from_db()
    assert other.status == TaskStatus.RETIRED


def test_deciding_without_the_claim_is_refused(client, snapshot):
    task = task_in_review(snapshot=snapshot)
    client.force_login(reviewer())
    response = client.post(page_url(task, "review:decide"), {"decision": "approve"})
    assert response.status_code == 403 and "claim the task first" in response.content.decode()
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW


def test_nobody_approves_their_own_task_even_by_a_forged_post(client, snapshot):
    boss = admin()
    task = task_in_review(user=boss, snapshot=snapshot)
    client.force_login(boss)
    html = client.get(page_url(task)).content.decode()
    assert 'value="approve"' not in html and "nobody reviews (or approves) their own work" in html
    assert client.post(page_url(task, "review:claim")).status_code == 403
    Task.objects.filter(pk=task.pk).update(claimed_by=boss, claim_expires_at=timezone.now() + timedelta(minutes=5))
    response = client.post(page_url(task, "review:decide"), {"decision": "approve"})
    assert response.status_code == 403
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW and not Review.objects.exists()


def test_the_last_editor_cannot_approve_either(client, snapshot):
    task = task_make(snapshot=snapshot)
    editor = admin()
    task = task_update(task=task, user=editor, base_revision=task.revision, instruction="Edited by the admin.")
    task = task_submit_for_review(task=task, user=task.author)
    client.force_login(editor)
    response = client.post(page_url(task, "review:claim"))
    assert response.status_code == 403


# --- My work ------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not has_author_pages(), reason="tasks:detail / tasks:edit are not installed yet")
def test_my_work_lists_requested_changes_first_with_the_reviewers_comment(client, snapshot):
    writer = author()
    draft = task_make(user=writer, title="My draft", snapshot=snapshot)
    sent_back = task_in_review(user=writer, title="Sent back", snapshot=snapshot)
    waiting = task_in_review(user=writer, title="Waiting for review", snapshot=snapshot)
    who = reviewer()
    review_claim(task=sent_back, user=who)
    review_request_changes(task=sent_back, user=who, comment="Say which order.")
    client.force_login(writer)

    response = client.get(reverse("review:mine"))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("Sent back") < html.index("Say which order.") < html.index("My draft")
    assert reverse("tasks:edit", args=[sent_back.pk]) in html and reverse("tasks:detail", args=[draft.pk]) in html
    assert "Fix and resubmit" in html
    assert waiting.title not in html


@pytest.mark.skipif(not has_author_pages(), reason="tasks:detail / tasks:edit are not installed yet")
def test_my_work_queries_do_not_grow(client, snapshot, django_assert_max_num_queries):
    writer, who = author(), reviewer()
    for index in range(20):
        task = (
            task_in_review(user=writer, snapshot=snapshot) if index % 2 else task_make(user=writer, snapshot=snapshot)
        )
        if index % 2:
            review_claim(task=task, user=who)
            review_request_changes(task=task, user=who, comment=f"Fix {index}")
    client.force_login(writer)
    client.get(reverse("review:mine"))
    with django_assert_max_num_queries(8):
        response = client.get(reverse("review:mine"))
    assert response.status_code == 200 and "20 tasks to work on" in response.content.decode()


@pytest.mark.skipif(not has_author_pages(), reason="tasks:detail / tasks:edit are not installed yet")
def test_my_work_when_empty(client):
    client.force_login(author())
    assert "Nothing to do" in client.get(reverse("review:mine")).content.decode()


# --- diffs and the history partial ---------------------------------------------------------------------------------


def test_diff_page_and_the_history_link_to_it(client, snapshot):
    task = task_make(snapshot=snapshot)
    task = task_update(task=task, user=task.author, base_revision=task.revision, instruction="Hi, where is ord-f00002?")
    task_submit_for_review(task=task, user=task.author)
    client.force_login(reviewer())
    html = client.get(page_url(task)).content.decode()
    diff_url = reverse("review:diff", kwargs={"task_id": task.pk, "a": 1, "b": 2})
    assert diff_url in html and "What changed since version 1" in html
    response = client.get(diff_url)
    assert response.status_code == 200
    body = response.content.decode()
    assert "+Hi, where is ord-f00002?" in body and "-Hi, my order ord-f00001" in body
    assert client.get(reverse("review:diff", kwargs={"task_id": task.pk, "a": 1, "b": 9})).status_code == 404


def test_history_shows_reviews_and_resolved_comments(client, snapshot):
    task, who = claimed(snapshot)
    comment = comment_add(task=task, user=who, body="Check the total")
    comment.resolved = True
    comment.save()
    review_request_changes(task=task, user=who, comment="Please fix the total.")
    client.force_login(who)
    html = client.get(page_url(task)).content.decode()
    history = html[html.index('id="task-history"') :]
    assert "decision-request_changes" in history and "Please fix the total." in history
    assert "Check the total" in history and "Resolved" in history
    assert history.index("Version 1") < history.index("Check the total") < history.index("Please fix the total.")
