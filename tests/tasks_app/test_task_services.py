"""Task writes: versions on every save, conflicts, validation, the status rules of editing and submitting."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from corecraft_site.service_errors import error_lines
from tasks_app.authoring.selectors import task_version_diff
from tasks_app.authoring.services.tasks import TaskConflict, task_retire, task_submit_for_review, task_update
from tasks_app.models import Criterion, TaskStatus, TaskVersion
from tests.tasks_app.factories import LLM_CRITERION, admin, author, reviewer, task_make

pytestmark = pytest.mark.django_db


def messages(exc: pytest.ExceptionInfo) -> str:
    return " | ".join(error_lines(exc.value))


def test_create_makes_a_draft_with_version_one_and_its_criteria():
    task = task_make(tags=["orders", " refunds", "orders"])
    version = task.current_version
    assert (task.status, task.revision, version.number) == (TaskStatus.DRAFT, 1, 1)
    assert version.tags == task.tags == ["orders", "refunds"]
    criteria = list(version.criteria.order_by("position"))
    assert [c.kind for c in criteria] == ["llm", "response"]
    assert criteria[1].spec == {"op": "number", "value": 549.98, "tolerance": 0.01, "case_sensitive": False}
    assert all(len(c.content_hash) == 64 for c in criteria) and len(version.content_hash) == 64


def test_create_refuses_bad_fields_naming_each():
    with pytest.raises(ValidationError) as exc:
        task_make(title=" ", task_type="poetry", instruction="", criteria=[{"kind": "llm", "category": "style"}])
    text = messages(exc)
    for expected in ("title: required", "task_type: one of", "instruction: required"):
        assert expected in text


def test_create_refuses_a_bad_criterion_naming_its_index_and_field():
    with pytest.raises(ValidationError) as exc:
        task_make(criteria=[LLM_CRITERION, {"kind": "llm", "text": "x", "category": "style", "weight": 0}])
    text = messages(exc)
    assert "criteria[1].category" in text and "criteria[1].weight" in text


def test_update_makes_a_new_version_and_keeps_criterion_keys():
    task = task_make()
    v1 = task.current_version
    old = list(v1.criteria.order_by("position"))
    total = {"op": "number", "value": 549.98, "tolerance": 0.5}
    carrier = {"op": "contains", "value": "UPS"}
    edited = [
        {
            "key": str(old[1].key),
            "kind": "response",
            "text": "States the total.",
            "category": "correctness",
            "spec": total,
        },
        {"key": str(old[0].key), **LLM_CRITERION},
        {"kind": "response", "text": "Names the carrier.", "category": "completeness", "spec": carrier},
    ]
    task = task_update(
        task=task, user=task.author, base_revision=1, instruction="Where is ord-f00001?", criteria=edited
    )
    v2 = task.current_version
    assert (v2.number, task.revision, task.status) == (2, 2, TaskStatus.DRAFT)
    assert v2.reviewer_notes == v1.reviewer_notes  # left out: kept
    new = list(v2.criteria.order_by("position"))
    assert [c.key for c in new[:2]] == [old[1].key, old[0].key]
    assert new[1].content_hash == old[0].content_hash  # moved, not changed
    assert new[0].content_hash != old[1].content_hash
    # Version 1 is untouched.
    assert TaskVersion.objects.get(pk=v1.pk).instruction == v1.instruction
    assert Criterion.objects.filter(version=v1).count() == 2

    diff = task_version_diff(v1, v2)
    assert "-Hi, my order ord-f00001" in diff["instruction"] and "+Where is ord-f00001?" in diff["instruction"]
    assert [a["text"] for a in diff["criteria"]["added"]] == ["Names the carrier."]
    assert diff["criteria"]["removed"] == []
    changed = diff["criteria"]["changed"]
    assert len(changed) == 1 and {c["field"] for c in changed[0]["changes"]} == {"text", "check", "weight", "required"}
    # in words, not raw dicts: the sentence each spec checks, and each value that changed
    check = next(c for c in changed[0]["changes"] if c["field"] == "check")
    assert check["before"].startswith("The final answer") and "{" not in check["before"] + check["after"]
    assert check["details"] and all("→" in d and "{" not in d for d in check["details"])
    required = next(c for c in changed[0]["changes"] if c["field"] == "required")
    assert {required["before"], required["after"]} == {"required", "optional"}
    assert set(diff["criteria"]["moved"]) == {str(old[0].key), str(old[1].key)}


def test_a_second_editor_on_the_same_revision_gets_a_conflict_not_an_overwrite():
    task = task_make()
    colleague_view = task.revision
    first = task_update(task=task, user=task.author, base_revision=colleague_view, title="First save")
    with pytest.raises(TaskConflict) as exc:
        task_update(task=task, user=task.author, base_revision=colleague_view, title="Second save")
    assert exc.value.current_version.pk == first.current_version.pk
    assert "reload" in str(exc.value)
    task.refresh_from_db()
    assert (task.title, task.current_version.number) == ("First save", 2)


def test_a_save_that_changes_nothing_makes_no_version():
    task = task_make()
    task = task_update(task=task, user=task.author, base_revision=1, title=task.title)
    assert (task.current_version.number, task.revision) == (1, 1)


def test_unknown_criterion_key_is_refused():
    task = task_make()
    with pytest.raises(ValidationError) as exc:
        task_update(
            task=task,
            user=task.author,
            base_revision=1,
            criteria=[{**LLM_CRITERION, "key": "00000000-0000-0000-0000-000000000001"}],
        )
    assert "criteria[0].key" in messages(exc)


def test_reference_solution_is_validated_on_save():
    bad = {
        "calls": [
            {"tool": "get_order_details", "arguments": {}},
            {"tool": "teleport", "arguments": {}},
            {"tool": "get_order_details", "arguments": {"order_id": "ord-1", "colour": "red"}},
        ],
        "final_answer": "done",
    }
    with pytest.raises(ValidationError) as exc:
        task_make(reference_solution=bad)
    text = messages(exc)
    assert "reference_solution.calls[0].arguments.order_id: required" in text
    assert "reference_solution.calls[1].tool: no tool named 'teleport'" in text
    assert "reference_solution.calls[2].arguments.colour" in text
    good = {"calls": [{"tool": "get_order_details", "arguments": {"order_id": "ord-1"}}], "final_answer": "ok"}
    assert task_make(reference_solution=good).current_version.reference_solution == good


def test_status_rules_of_editing_and_submitting():
    task = task_make(criteria=[])
    with pytest.raises(ValidationError, match="at least one criterion"):
        task_submit_for_review(task=task, user=task.author)
    task = task_update(task=task, user=task.author, base_revision=1, criteria=[LLM_CRITERION])
    task = task_submit_for_review(task=task, user=task.author)
    assert task.status == TaskStatus.IN_REVIEW and task.submitted_at is not None
    with pytest.raises(ValidationError, match="can't be edited"):
        task_update(task=task, user=task.author, base_revision=task.revision, title="Sneaky")
    with pytest.raises(ValidationError, match="only a draft"):
        task_submit_for_review(task=task, user=task.author)


def test_editing_an_approved_task_sends_it_back_to_draft():
    task = task_make()
    task.status = TaskStatus.APPROVED
    task.save()
    task = task_update(task=task, user=task.author, base_revision=1, title="Reworded")
    assert task.status == TaskStatus.DRAFT


def test_retire_is_for_admins_only():
    task = task_make()
    with pytest.raises(PermissionDenied):
        task_retire(task=task, user=task.author)
    with pytest.raises(PermissionDenied):
        task_retire(task=task, user=reviewer())
    assert task_retire(task=task, user=admin()).status == TaskStatus.RETIRED
    with pytest.raises(ValidationError):
        task_update(task=task, user=task.author, base_revision=1, title="After retirement")


def test_other_authors_cannot_edit():
    task = task_make()
    with pytest.raises(PermissionDenied):
        task_update(task=task, user=author(), base_revision=1, title="Mine now")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_saves_of_the_same_revision_make_one_version_and_one_conflict():
    task = task_make()
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def save(title: str) -> None:
        try:
            barrier.wait()
            task_update(task=task, user=task.author, base_revision=1, title=title)
            outcomes.append("saved")
        except TaskConflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(title,)) for title in ("Mine", "Theirs")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict", "saved"]
    assert TaskVersion.objects.filter(task=task).count() == 2
