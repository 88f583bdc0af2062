"""The authoring pages: list, editor (with its criterion editors), task page, diffs, and who may do what."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.authoring.services.reviews import comment_add
from tasks_app.authoring.services.tasks import task_submit_for_review, task_update
from tasks_app.models import Comment, Criterion, Task, TaskStatus
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
from tests.tasks_app.factories import user_in as user_with_role
from world_app.models import WorldSnapshot

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def task_post(**overrides) -> dict:
    """A full editor POST: the task's fields and one criterion of each kind (prefixes c0..c3)."""
    data = {
        "title": "Backorder the GPU order",
        "task_type": "multi_step_workflow",
        "difficulty": "medium",
        "instruction": "Supervisor: the GPU for ord-f00001 is out of stock. Backorder it and tell the customer.",
        "family": "backorders",
        "tags": "orders, gpu",
        "reviewer_notes": "The total is on the order.",
        "criterion": ["c0", "c1", "c2", "c3"],
        "c0-kind": "llm",
        "c0-text": "Apologises for the wait",
        "c0-weight": "1",
        "c0-category": "tone",
        "c1-kind": "state",
        "c1-text": "The order is backordered",
        "c1-weight": "2",
        "c1-category": "correctness",
        "c1-required": "1",
        "c1-entity_type": "order",
        "c1-filter_field": ["id", ""],
        "c1-filter_op": ["eq", "eq"],
        "c1-filter_value": ["ord-f00001", ""],
        "c1-field": "status",
        "c1-op": "eq",
        "c1-value": "backorder",
        "c1-quantifier": "all",
        "c2-kind": "tool_call",
        "c2-text": "No refund is issued",
        "c2-weight": "1",
        "c2-category": "constraint",
        "c2-tool": "create_refund",
        "c2-expect": "not_called",
        "c2-arg_name": ["order_id", ""],
        "c2-arg_op": ["eq", "eq"],
        "c2-arg_value": ["ord-f00001", ""],
        "c2-min_count": "1",
        "c3-kind": "response",
        "c3-text": "States the order total",
        "c3-weight": "1.5",
        "c3-category": "completeness",
        "c3-response_op": "number",
        "c3-response_value": "549.98",
        "c3-tolerance": "0.01",
        "action": "save",
    }
    latest = WorldSnapshot.objects.order_by("-version").only("pk").first()
    if latest is not None:
        data["snapshot"] = str(latest.pk)
    data.update(overrides)
    return data


@pytest.fixture
def snapshot():
    return WorldSnapshotFactory()


@pytest.fixture
def writer(client):
    user = author()
    client.force_login(user)
    return user


# --- list --------------------------------------------------------------------------------------------------


def test_list_filters_by_status_type_family_author_and_text(client, writer, snapshot):
    task_make(user=writer, snapshot=snapshot, title="Refund a dead PSU", family="returns")
    other = task_make(snapshot=snapshot, title="Track a late parcel", task_type="communication", family="shipping")
    task_in_review(snapshot=snapshot, title="Recommend a GPU", family="shipping")
    client.force_login(admin())  # an admin sees every task; what the others see is tested below
    page = client.get(reverse("tasks:list"))
    assert page.status_code == 200
    assert {"Refund a dead PSU", "Track a late parcel", "Recommend a GPU"} <= set(
        t.title for t in page.context["page"].object_list
    )
    assert b'id="new-task"' in page.content
    titles = lambda **q: [t.title for t in client.get(reverse("tasks:list"), q).context["page"].object_list]  # noqa: E731
    assert titles(q="refund psu") == ["Refund a dead PSU"]
    assert titles(task_type="communication") == ["Track a late parcel"]
    assert titles(status="in_review") == ["Recommend a GPU"]
    assert sorted(titles(family="shipping")) == ["Recommend a GPU", "Track a late parcel"]
    assert titles(author=writer.username) == ["Refund a dead PSU"]
    assert titles(q=str(other.pk)) == ["Track a late parcel"]
    assert titles(q="nothing-like-this") == []
    assert titles(author="nobody-by-that-name", family="returns") == ["Refund a dead PSU"]  # a bad filter is ignored


def test_list_htmx_request_gets_the_table_partial_and_pages_carry_the_filters(client, writer, snapshot):
    for n in range(30):
        task_make(user=writer, snapshot=snapshot, title=f"Task {n:02d}", family="bulk")
    response = client.get(reverse("tasks:list"), {"family": "bulk"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body and 'id="task-table"' in body
    assert "30 tasks" in body and "page 1 of 2" in body
    assert "family=bulk&amp;page=2" in body
    second = client.get(reverse("tasks:list"), {"family": "bulk", "page": 2}).context["page"]
    assert len(second.object_list) == 5


def test_list_costs_the_same_queries_for_many_tasks(client, writer, snapshot, django_assert_max_num_queries):
    others = [author(), author()]
    for n in range(4):
        task_make(user=others[n % 2], snapshot=snapshot, title=f"Few {n}")
    client.force_login(admin())
    with django_assert_max_num_queries(9) as few:
        client.get(reverse("tasks:list"))
    for n in range(30):
        task_make(user=others[n % 2], snapshot=snapshot, title=f"Many {n}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(reverse("tasks:list"))
    assert len(response.context["page"].object_list) == 25


def test_reviewers_see_no_new_task_button_and_cannot_open_the_editor(client, snapshot):
    client.force_login(reviewer())
    assert b'id="new-task"' not in client.get(reverse("tasks:list")).content
    response = client.get(reverse("tasks:create"))
    assert response.status_code == 403
    assert b"only authors and admins create tasks" in response.content.lower()


def test_anonymous_users_are_sent_to_log_in(client, snapshot):
    task = task_make(snapshot=snapshot)
    for url in (
        reverse("tasks:list"),
        reverse("tasks:create"),
        reverse("tasks:detail", args=[task.pk]),
        reverse("tasks:edit", args=[task.pk]),
        reverse("tasks:playground", args=[task.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url


# --- create ----------------------------------------------------------------------------------------------


def test_create_page_offers_the_latest_snapshot_and_every_kind(client, writer):
    WorldSnapshotFactory(version=1)
    latest = WorldSnapshotFactory(version=2)
    response = client.get(reverse("tasks:create"))
    body = response.content.decode()
    assert response.status_code == 200
    assert f'<option value="{latest.pk}" selected>' in body
    for kind in ("llm", "state", "tool_call", "response"):
        assert f'<option value="{kind}">' in body
    assert 'id="add-criterion"' in body and ">Save</button>" in body
    assert 'id="lookup-q"' in body  # the world look-up side panel


def test_create_saves_the_task_with_one_criterion_of_each_kind(client, writer, snapshot):
    response = client.post(reverse("tasks:create"), task_post())
    assert response.status_code == 302
    task = Task.objects.get(title="Backorder the GPU order")
    assert response.status_code == 302 and response.url == reverse("tasks:detail", args=[task.pk])
    assert (task.author, task.status, task.tags, task.current_version.snapshot) == (
        writer,
        TaskStatus.DRAFT,
        ["gpu", "orders"],
        snapshot,
    )
    criteria = list(task.current_version.criteria.order_by("position"))
    assert [c.kind for c in criteria] == ["llm", "state", "tool_call", "response"]
    assert criteria[1].spec == {
        "entity_type": "order",
        "filters": [{"field": "id", "op": "eq", "value": "ord-f00001"}],
        "field": "status",
        "op": "eq",
        "value": "backorder",
        "quantifier": "all",
    }
    assert criteria[1].required and criteria[1].weight == 2
    assert criteria[2].spec["expect"] == "not_called"
    assert criteria[2].spec["arguments"] == {"order_id": {"op": "eq", "value": "ord-f00001"}}
    assert criteria[3].spec == {"op": "number", "value": "549.98", "tolerance": 0.01, "case_sensitive": False}


def test_create_with_errors_keeps_everything_typed_and_saves_nothing(client, writer, snapshot):
    data = task_post(title="  ", **{"c1-field": "colour", "c3-response_value": "", "c0-weight": "heavy"})
    response = client.post(reverse("tasks:create"), data)
    body = response.content.decode()
    assert response.status_code == 200 and not Task.objects.exists()
    assert "Nothing was saved yet" in body and "Criteria 1, 2 and 4 need attention" in body
    assert "This field is required." in body  # the title
    slot = body[body.index('id="err-c1-field"') :]
    assert slot.index("order has no field &#x27;colour&#x27;") < slot.index("</div>")  # next to its field
    assert "value: number needs a number" not in body and "number needs a number" in body
    # What was typed is all still there.
    assert "Supervisor: the GPU for ord-f00001 is out of stock." in body
    assert 'value="colour"' in body and 'value="heavy"' in body and 'value="ord-f00001"' in body
    assert "Apologises for the wait" in body and 'id="criterion-c3"' in body


def test_create_refuses_a_task_without_a_snapshot_choice_and_keeps_input(client, writer, snapshot):
    response = client.post(reverse("tasks:create"), task_post(snapshot="999999"))
    assert response.status_code == 200 and not Task.objects.exists()
    assert "Select a valid choice" in response.content.decode()


def test_editor_actions_add_move_and_remove_criteria_without_saving(client, writer, snapshot):
    url = reverse("tasks:create")
    added = client.post(url, task_post(action="add", new_kind="state"), **HTMX)
    body = added.content.decode()
    assert added.status_code == 200 and body.lstrip().startswith('<section id="criteria"')
    assert 'id="criterion-c4"' in body and 'data-kind="state"' in body
    assert 'id="id_c4-text" name="c4-text" rows="2" aria-describedby="err-c4-text" autofocus' in body
    moved = client.post(url, task_post(action="up:c2"), **HTMX).content.decode()
    order = [moved.index(f'id="criterion-{p}"') for p in ("c0", "c2", "c1", "c3")]
    assert order == sorted(order)
    assert 'aria-label="Move criterion 2 up" id="up-c2" autofocus' in moved  # the focus stays on the button
    removed = client.post(url, task_post(action="remove:c0")).content.decode()
    assert 'id="criterion-c0"' not in removed and "Supervisor: the GPU" in removed
    assert not Task.objects.exists()


def test_a_saved_order_follows_the_hidden_criterion_inputs(client, writer, snapshot):
    client.post(reverse("tasks:create"), task_post(criterion=["c3", "c0", "c2", "c1"]))
    kinds = list(Criterion.objects.order_by("position").values_list("kind", flat=True))
    assert kinds == ["response", "llm", "tool_call", "state"]


# --- inline validation of one criterion ---------------------------------------------------------------------


def test_validate_endpoint_returns_the_criterion_feedback_and_field_errors_out_of_band(client, writer):
    data = task_post(validate="c1", **{"c1-field": "colour", "c1-op": "count_eq", "c1-value": "many"})
    response = client.post(reverse("tasks:criterion_validate"), data, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<div class="criterion-feedback" id="feedback-c1"')
    assert "This criterion needs attention" in body
    # Each field's errors go to its own slot; the inputs (and whatever is being typed in them) are not sent back.
    field_slot = body[body.index('id="err-c1-field" hx-swap-oob="true"') :]
    assert field_slot.index("count_eq counts rows and takes no field") < field_slot.index("</div>")
    assert 'id="err-c1-value" hx-swap-oob="true"' in body and "<input" not in body
    # Field names of the chosen entity type are offered.
    assert '<datalist id="fields-c1" hx-swap-oob="true">' in body
    assert '<option value="status">' in body and '<option value="customer__email">' in body


def test_validate_endpoint_marks_a_valid_criterion_and_offers_tool_arguments(client, writer):
    response = client.post(reverse("tasks:criterion_validate"), task_post(validate="c2"), **HTMX)
    body = response.content.decode()
    assert "This criterion is valid" in body
    assert '<datalist id="args-c2" hx-swap-oob="true">' in body
    assert '<option value="payment_id">' in body  # create_refund's arguments, from the registry


def test_validate_endpoint_explains_unknown_tools_and_arguments(client, writer):
    data = task_post(validate="c2", **{"c2-arg_name": ["colour"], "c2-arg_op": ["eq"], "c2-arg_value": ["x"]})
    body = client.post(reverse("tasks:criterion_validate"), data, **HTMX).content.decode()
    assert "argument colour: create_refund takes no such argument" in body
    data = task_post(validate="c3", **{"c3-response_op": "regex", "c3-response_value": "(unclosed"})
    body = client.post(reverse("tasks:criterion_validate"), data, **HTMX).content.decode()
    assert "not a valid regular expression" in body


def test_validate_endpoint_refuses_reviewers(client):
    client.force_login(reviewer())
    response = client.post(reverse("tasks:criterion_validate"), task_post(validate="c0"), **HTMX)
    assert response.status_code == 403


# --- edit and conflicts -----------------------------------------------------------------------------------


def edit_post(task, **overrides) -> dict:
    data = task_post(base_revision=str(task.revision), base_version=str(task.current_version.number))
    data.update(snapshot=str(task.current_version.snapshot_id))
    data.update(overrides)
    return data


def test_edit_page_shows_the_current_version_in_the_structured_editors(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot, tags=["orders", "refunds"])
    body = client.get(reverse("tasks:edit", args=[task.pk])).content.decode()
    assert f'name="base_revision" value="{task.revision}"' in body
    assert 'value="orders, refunds"' in body
    assert 'id="criterion-c0"' in body and 'id="criterion-c1"' in body
    key = task.current_version.criteria.get(position=1).key
    assert f'name="c1-key" value="{key}"' in body
    assert '<option value="number" selected>' in body and 'value="549.98"' in body


def test_edit_saves_a_new_version_keeping_criterion_keys(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot)
    first = list(task.current_version.criteria.order_by("position"))
    data = edit_post(task, **{"criterion": ["c0", "c1"], "c0-kind": "llm", "c0-key": str(first[0].key)})
    data.update({"c1-kind": "state", "c1-key": ""})
    response = client.post(reverse("tasks:edit", args=[task.pk]), data)
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.current_version.number == 2 and task.revision == 2
    keys = list(task.current_version.criteria.order_by("position").values_list("key", flat=True))
    assert keys[0] == first[0].key and keys[1] not in {c.key for c in first}


def test_a_stale_save_is_a_conflict_that_names_the_other_editor_and_keeps_the_typing(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot)
    stale = edit_post(task, instruction="My careful rewrite of the instruction.")
    colleague = admin(username="mallory")
    task_update(task=task, user=colleague, base_revision=task.revision, title="Their title")
    response = client.post(reverse("tasks:edit", args=[task.pk]), stale)
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="conflict"' in body and "<strong>mallory</strong> saved version 2" in body
    assert reverse("tasks:diff", args=[task.pk, 1, 2]) in body
    assert "My careful rewrite of the instruction." in body
    task.refresh_from_db()
    assert task.current_version.number == 2 and task.title == "Their title"
    # "Save my version over theirs" saves on top of the version the conflict showed.
    response = client.post(reverse("tasks:edit", args=[task.pk]), {**stale, "overwrite_revision": "2"})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.current_version.number == 3 and task.current_version.instruction.startswith("My careful rewrite")


def test_an_edit_that_changes_nothing_makes_no_version(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot, criteria=[LLM_CRITERION])
    body = client.get(reverse("tasks:edit", args=[task.pk])).content.decode()
    assert "c0" in body
    key = str(task.current_version.criteria.get().key)
    version = task.current_version
    data = {
        "base_revision": "1",
        "base_version": "1",
        "title": version.title,
        "task_type": version.task_type,
        "difficulty": version.difficulty,
        "instruction": version.instruction,
        "snapshot": str(snapshot.pk),
        "family": version.family,
        "tags": ", ".join(version.tags),
        "reviewer_notes": version.reviewer_notes,
        "criterion": ["c0"],
        "c0-kind": "llm",
        "c0-key": key,
        "c0-text": LLM_CRITERION["text"],
        "c0-weight": "1",
        "c0-category": "tone",
        "action": "save",
    }
    response = client.post(reverse("tasks:edit", args=[task.pk]), data, follow=True)
    assert b"Nothing changed" in response.content
    task.refresh_from_db()
    assert task.current_version.number == 1


def test_edit_page_queries_do_not_grow_with_criteria(client, writer, snapshot, django_assert_max_num_queries):
    few = task_make(user=writer, snapshot=snapshot, criteria=[LLM_CRITERION])
    many = task_make(user=writer, snapshot=snapshot, criteria=[LLM_CRITERION, RESPONSE_CRITERION] * 10)
    with django_assert_max_num_queries(12) as baseline:
        client.get(reverse("tasks:edit", args=[few.pk]))
    with django_assert_max_num_queries(len(baseline.captured_queries)):
        response = client.get(reverse("tasks:edit", args=[many.pk]))
    assert response.content.count(b'class="criterion card') == 20


def test_nobody_edits_someone_elses_draft_but_admins(client, snapshot):
    task = task_make(snapshot=snapshot)
    url = reverse("tasks:edit", args=[task.pk])
    for user in (reviewer(), author()):
        client.force_login(user)
        assert client.get(url).status_code == 403
        response = client.post(url, edit_post(task))
        assert response.status_code == 403 and b"only the task&#x27;s author or an admin" in response.content.lower()
    client.force_login(admin())
    assert client.get(url).status_code == 200
    task.refresh_from_db()
    assert task.current_version.number == 1


def test_a_task_in_review_is_not_editable_and_the_page_says_so(client, writer, snapshot):
    task = task_in_review(user=writer, snapshot=snapshot)
    response = client.get(reverse("tasks:edit", args=[task.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("tasks:detail", args=[task.pk])
    assert b"can&#x27;t be edited" in response.content


# --- the task page ------------------------------------------------------------------------------------------


def test_task_page_shows_the_rubric_in_plain_language_comments_and_versions(client, writer, snapshot):
    task = task_in_review(user=writer, snapshot=snapshot)
    critic = reviewer(username="rita")
    criterion = task.current_version.criteria.get(position=1)
    comment_add(task=task, user=critic, body="Is shipping in this total?", criterion_key=criterion.key)
    comment_add(task=task, user=critic, body="Please name the customer.")
    body = client.get(reverse("tasks:detail", args=[task.pk])).content.decode()
    assert "The final answer states the number 549.98" in body
    assert "Is shipping in this total?" in body and "Please name the customer." in body
    # The criterion comment sits inside that criterion's item.
    item = body[body.index(f'id="criterion-{criterion.key}"') :]
    assert item.index("Is shipping in this total?") < item.index("</li>")
    assert 'id="submit-review"' not in body and 'id="edit-task"' not in body  # in review
    assert "History" in body  # the review helper's history partial


def test_task_page_actions_follow_the_users_permissions(client, snapshot):
    owner = author()
    task = task_make(user=owner, snapshot=snapshot)
    url = reverse("tasks:detail", args=[task.pk])
    client.force_login(owner)
    body = client.get(url).content.decode()
    assert 'id="edit-task"' in body and 'id="submit-review"' in body and 'id="retire-task"' not in body
    client.force_login(admin())
    body = client.get(url).content.decode()
    assert 'id="edit-task"' in body and 'id="retire-task"' in body
    client.force_login(user_with_role(None))
    assert client.get(url).status_code == 403
    client.force_login(reviewer())
    assert client.get(url).status_code == 403  # a draft is its author's: reviewers see what they review
    task_submit_for_review(task=task, user=owner)
    body = client.get(url).content.decode()
    assert 'id="edit-task"' not in body and 'id="submit-review"' not in body and 'id="open-playground"' in body


def test_each_role_lists_and_reads_only_its_tasks(client, snapshot):
    """Authors: their own tasks and approved ones outside any holdout; reviewers: what was submitted; a task
    held out by a frozen release only with eval:read (admins hold it), its rubric included."""
    owner, someone = author(), author()
    mine = task_make(user=owner, snapshot=snapshot, title="Mine, a draft")
    theirs = task_make(user=someone, snapshot=snapshot, title="Theirs, a draft")
    submitted = task_in_review(user=someone, snapshot=snapshot, title="Theirs, in review")
    approved = task_make(user=someone, snapshot=snapshot, title="Theirs, approved")
    held = task_make(user=owner, snapshot=snapshot, title="Mine, held out")
    Task.objects.filter(pk=approved.pk).update(status=TaskStatus.APPROVED)
    Task.objects.filter(pk=held.pk).update(status=TaskStatus.APPROVED, held_out=True)
    everyone = {mine, theirs, submitted, approved, held}
    seen = {
        owner: {mine, approved},
        reviewer(): {submitted, approved},
        admin(): everyone,
        user_with_role(None): set(),
    }
    for user, visible in seen.items():
        client.force_login(user)
        listed = {t.pk for t in client.get(reverse("tasks:list")).context["page"].object_list}
        assert listed == {t.pk for t in visible}, user
        for task in everyone:
            status = client.get(reverse("tasks:detail", args=[task.pk])).status_code
            assert status == (200 if task in visible else 403), (user, task.title)
    client.force_login(owner)
    refused = client.get(reverse("tasks:detail", args=[held.pk]))
    assert b"held out for evaluation" in refused.content and b"Where is my order" not in refused.content


def test_submit_and_retire_from_the_task_page(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot)
    response = client.post(reverse("tasks:submit", args=[task.pk]), follow=True)
    assert b"Submitted for review" in response.content
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW
    assert client.post(reverse("tasks:retire", args=[task.pk])).status_code == 403
    client.force_login(admin())
    client.post(reverse("tasks:retire", args=[task.pk]))
    task.refresh_from_db()
    assert task.status == TaskStatus.RETIRED


def test_submitting_without_criteria_explains_why_not(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot, criteria=[])
    response = client.post(reverse("tasks:submit", args=[task.pk]), follow=True)
    assert b"a task needs at least one criterion before review" in response.content
    task.refresh_from_db()
    assert task.status == TaskStatus.DRAFT


def test_someone_else_cannot_submit_my_task(client, snapshot):
    task = task_make(snapshot=snapshot)
    client.force_login(reviewer())
    assert client.post(reverse("tasks:submit", args=[task.pk])).status_code == 403


def test_task_page_queries_do_not_grow_with_versions_criteria_or_comments(
    client, writer, snapshot, django_assert_max_num_queries
):
    small = task_make(user=writer, snapshot=snapshot, criteria=[LLM_CRITERION])
    big = task_make(user=writer, snapshot=snapshot, criteria=[LLM_CRITERION, RESPONSE_CRITERION] * 5)
    for n in range(6):
        big = task_update(task=big, user=writer, base_revision=big.revision, title=f"Big {n}")
    for n in range(5):
        Comment.objects.create(task=big, version=big.current_version, author=writer, body=f"note {n}")
    with django_assert_max_num_queries(20) as baseline:
        client.get(reverse("tasks:detail", args=[small.pk]))
    with django_assert_max_num_queries(len(baseline.captured_queries)):
        response = client.get(reverse("tasks:detail", args=[big.pk]))
    assert response.status_code == 200 and b"note 4" in response.content


def test_diff_page_reads_what_changed(client, writer, snapshot):
    task = task_make(user=writer, snapshot=snapshot)
    task_update(task=task, user=writer, base_revision=1, instruction="A new instruction.", title="Renamed")
    body = client.get(reverse("tasks:diff", args=[task.pk, 1, 2])).content.decode()
    assert "Renamed" in body and "A new instruction." in body and "What changed from version 1 to 2" in body
    assert client.get(reverse("tasks:diff", args=[task.pk, 1, 9])).status_code == 404
    client.force_login(author())
    assert client.get(reverse("tasks:diff", args=[task.pk, 1, 2])).status_code == 403


def test_the_author_sees_the_requested_changes_on_the_task_page(client, writer, snapshot):
    from tasks_app.authoring.services.reviews import review_claim, review_request_changes

    task = task_in_review(user=writer, snapshot=snapshot)
    critic = reviewer(username="rita")
    review_claim(task=task, user=critic)
    review_request_changes(task=task, user=critic, comment="Say which carrier ships it.")
    body = client.get(reverse("tasks:detail", args=[task.pk])).content.decode()
    assert 'id="changes-requested"' in body and "Changes requested by rita" in body
    assert "Say which carrier ships it." in body and 'id="edit-task"' in body and 'id="submit-review"' in body


def test_the_editor_warns_about_a_compound_criterion_without_blocking_it(client, writer, snapshot):
    compound = "The reply states the total, the ETA and the reason for the delay"
    data = task_post(validate="c0", **{"c0-text": compound})
    body = client.post(reverse("tasks:criterion_validate"), data, **HTMX).content.decode()
    assert "Warning (saving is not blocked)" in body and "joins 3 checks" in body
    assert "This criterion is valid" in body
    response = client.post(reverse("tasks:create"), task_post(**{"c0-text": compound}))
    assert response.status_code == 302
    task = Task.objects.get(title="Backorder the GPU order")
    page = client.get(reverse("tasks:edit", args=[task.pk])).content.decode()
    assert "joins 3 checks" in page


def test_the_editor_saves_the_new_primitives(client, writer, snapshot):
    data = task_post(
        **{
            "c3-response_op": "amount",
            "c3-response_value": "549.98",
            "c3-subject": "total",
            "c2-expect": "saw",
            "c2-tool": "",
            "c2-arg_name": [""],
            "c2-arg_op": ["eq"],
            "c2-arg_value": [""],
            "c2-saw_ids": "ord-f00001",
            "c1-op": "only_changes",
            "c1-value": '[{"entity_type": "order", "id": "ord-f00001", "fields": ["status"]}]',
        }
    )
    response = client.post(reverse("tasks:create"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    criteria = list(Task.objects.get(title="Backorder the GPU order").current_version.criteria.order_by("position"))
    assert criteria[1].spec["op"] == "only_changes"
    assert criteria[1].spec["value"] == [{"entity_type": "order", "id": "ord-f00001", "fields": ["status"]}]
    assert criteria[2].spec == {"expect": "saw", "ids": ["ord-f00001"], "arguments": {}, "min_count": 1}
    assert criteria[3].spec["op"] == "amount" and criteria[3].spec["subject"] == "total"
    page = client.get(reverse("tasks:edit", args=[Task.objects.get().pk])).content.decode()
    assert 'value="total"' in page and "ord-f00001" in page
    refused = task_post(validate="c3", **{"c3-response_op": "regex", "c3-response_value": "^(a+)+$"})
    body = client.post(reverse("tasks:criterion_validate"), refused, **HTMX).content.decode()
    assert "backtrack catastrophically" in body
