"""The task library loader (fixture files -> tasks through the real workflow), load_tasks and task_stats."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from tasks_app.authoring.services.tasks import task_update
from tasks_app.library.selectors import task_library_stats
from tasks_app.library.services.library_files import TaskLibraryError
from tasks_app.library.services.task_library import LIBRARY_AUTHOR, LIBRARY_REVIEWER, task_library_load
from tasks_app.models import Review, Task, TaskStatus
from tests.tasks_app.factories import WorldSnapshotFactory, admin

pytestmark = pytest.mark.django_db

TASK = {
    "key": "where-is-order-017",
    "title": "Where is my order?",
    "task_type": "information_retrieval",
    "difficulty": "easy",
    "family": "shipping",
    "tags": ["orders", "shipping"],
    "instruction": "Hi, my order ord-250812-017 hasn't arrived. Where is it?\n",
    "reviewer_notes": "Tracking is on the shipment.",
    "criteria": [
        {
            "kind": "response",
            "text": "Gives the tracking number.",
            "spec": {"op": "contains", "value": "1Z999"},
            "weight": 2,
            "category": "correctness",
            "required": True,
        },
        {"kind": "llm", "text": "Polite and clear.", "spec": {}, "weight": 1, "category": "tone", "required": False},
    ],
    "reference_solution": {
        "calls": [{"tool": "search_shipments", "arguments": {"order_id": "ord-250812-017"}}],
        "final_answer": "It is on its way: tracking 1Z999.",
    },
}


def write(root: Path, data: dict, name: str | None = None, task_type: str = "information_retrieval") -> Path:
    path = root / task_type / f"{name or data['key']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def snapshot():
    return WorldSnapshotFactory()


@pytest.fixture(autouse=True)
def red_team_passes(monkeypatch, request):
    """The snapshot of these tests is no real world, so the loader tests that are not about the gate arrange the red
    team's result as passing (as the review tests do with ``gate_stored``); the gate's own tests below, marked
    ``real_gate``, read a gate file or play the real red team."""
    if "real_gate" in request.keywords:
        return
    from tasks_app.calibration.services import gates
    from tests.tasks_app.factories import gate_stored

    monkeypatch.setattr(gates, "rubric_gate_compute", lambda *, version, replay=None: gate_stored(version))


def test_loads_a_file_as_an_approved_task_with_an_honest_history(tmp_path, snapshot):
    write(tmp_path, TASK)
    report = task_library_load(path=tmp_path, snapshot=snapshot)
    assert report.created == ["starter:where-is-order-017"] and not report.errors
    task = Task.objects.get(source_key="starter:where-is-order-017")
    assert task.status == TaskStatus.APPROVED
    assert task.author.username == LIBRARY_AUTHOR and not task.author.has_usable_password()
    version = task.current_version
    assert version.snapshot == snapshot and version.number == 1
    assert version.instruction == TASK["instruction"].strip()
    assert version.reference_solution == TASK["reference_solution"]
    assert [c.text for c in version.criteria.order_by("position")] == [
        "Gives the tracking number.",
        "Polite and clear.",
    ]
    review = Review.objects.get(task=task)
    assert review.decision == "approve" and review.reviewer.username == LIBRARY_REVIEWER
    assert "reviewed in the repository" in review.comment


def test_a_second_load_changes_nothing(tmp_path, snapshot, django_assert_max_num_queries):
    write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot)
    with django_assert_max_num_queries(20):
        report = task_library_load(path=tmp_path, snapshot=snapshot)
    assert report.unchanged == ["starter:where-is-order-017"] and not report.created and not report.updated
    task = Task.objects.get(source_key="starter:where-is-order-017")
    assert task.versions.count() == 1 and Review.objects.filter(task=task).count() == 1


def test_a_changed_file_makes_a_new_version_keeping_criterion_keys_and_is_approved_again(tmp_path, snapshot):
    path = write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot)
    first = Task.objects.get(source_key="starter:where-is-order-017").current_version
    keys = list(first.criteria.order_by("position").values_list("key", flat=True))
    changed = {**TASK, "title": "Where is my order, really?", "criteria": [{**TASK["criteria"][0], "weight": 3}]}
    path.write_text(yaml.safe_dump(changed))
    newer = WorldSnapshotFactory()
    report = task_library_load(path=tmp_path, snapshot=newer)
    assert report.updated == ["starter:where-is-order-017"]
    task = Task.objects.get(source_key="starter:where-is-order-017")
    assert task.status == TaskStatus.APPROVED and task.title == "Where is my order, really?"
    current = task.current_version
    assert current.number == 2 and current.snapshot == newer
    assert list(current.criteria.values_list("key", flat=True)) == keys[:1]
    assert Review.objects.filter(task=task, decision="approve").count() == 2


def test_a_task_edited_in_the_studio_is_kept(tmp_path, snapshot):
    path = write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot)
    task = Task.objects.get(source_key="starter:where-is-order-017")
    task_update(task=task, user=admin(), base_revision=task.revision, title="An expert's better title")
    path.write_text(yaml.safe_dump({**TASK, "difficulty": "hard"}))
    report = task_library_load(path=tmp_path, snapshot=snapshot)
    assert report.kept == ["starter:where-is-order-017"]
    task.refresh_from_db()
    assert task.title == "An expert's better title" and task.difficulty == "easy"


def test_draft_status_then_approved(tmp_path, snapshot):
    write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot, status="draft")
    assert Task.objects.get(source_key="starter:where-is-order-017").status == TaskStatus.DRAFT
    report = task_library_load(path=tmp_path, snapshot=snapshot)
    assert report.approved == ["starter:where-is-order-017"] and report.unchanged == report.approved
    assert Task.objects.get(source_key="starter:where-is-order-017").status == TaskStatus.APPROVED


def test_errors_name_the_file_and_the_field_and_good_files_still_load(tmp_path, snapshot):
    write(tmp_path, TASK)
    bad_criteria = {**TASK, "key": "bad-criteria"}
    bad_criteria["criteria"] = [{**TASK["criteria"][0], "spec": {"op": "number", "value": "many"}}]
    write(tmp_path, bad_criteria, task_type="reasoning")
    bad_tool = {**TASK, "key": "bad-tool", "reference_solution": {"calls": [{"tool": "teleport"}], "final_answer": ""}}
    write(tmp_path, bad_tool, task_type="reasoning")
    write(tmp_path, {**TASK, "task_type": "poetry", "surprise": 1}, name="odd", task_type="reasoning")
    write(tmp_path, TASK, name="same-key-again", task_type="reasoning")
    (tmp_path / "reasoning" / "broken.yaml").write_text("key: [unclosed\n")
    report = task_library_load(path=tmp_path, snapshot=snapshot)
    errors = "\n".join(report.errors)
    assert "reasoning/bad-criteria.yaml: criteria[0].spec.value: number needs a number" in errors
    assert "reasoning/bad-tool.yaml: reference_solution.calls[0].tool: no tool named 'teleport'" in errors
    assert "reasoning/odd.yaml: surprise: unknown field" in errors
    assert "reasoning/odd.yaml: task_type: one of" in errors
    assert "reasoning/same-key-again.yaml: key: 'where-is-order-017' is also the key of" in errors
    assert "reasoning/broken.yaml: not valid YAML" in errors
    assert report.created == ["starter:where-is-order-017"]
    assert Task.objects.count() == 1


def test_no_snapshot_or_no_directory_is_a_clear_error(tmp_path):
    write(tmp_path, TASK)
    with pytest.raises(TaskLibraryError, match="no world snapshot is published"):
        task_library_load(path=tmp_path)
    with pytest.raises(TaskLibraryError, match="is not a directory"):
        task_library_load(path=tmp_path / "missing", snapshot=WorldSnapshotFactory())


def test_load_tasks_and_task_stats_commands(tmp_path, snapshot):
    write(tmp_path, TASK)
    write(tmp_path, {**TASK, "key": "second", "task_type": "reasoning", "family": "returns"}, task_type="reasoning")
    out = StringIO()
    call_command("load_tasks", path=str(tmp_path), stdout=out)
    assert "2 created" in out.getvalue()
    out = StringIO()
    call_command("load_tasks", "--json", path=str(tmp_path), stdout=out)
    assert json.loads(out.getvalue())["unchanged"] == 2
    out = StringIO()
    call_command("task_stats", "--json", "--no-library", stdout=out)
    stats = json.loads(out.getvalue())
    assert stats["total"] == 2
    assert stats["by_type"] == {"information_retrieval": 1, "reasoning": 1}
    assert stats["by_status"] == {"approved": 2}
    assert stats["by_family"] == {"returns": 1, "shipping": 1}
    assert stats["by_source"] == {"starter": 2}
    assert stats["starter_by_type"] == stats["by_type"]
    assert task_library_stats() == stats
    out = StringIO()
    call_command("task_stats", "--no-library", stdout=out)
    assert "information_retrieval" in out.getvalue()
    (tmp_path / "reasoning" / "broken.yaml").write_text("key: [unclosed\n")
    with pytest.raises(CommandError, match="could not be loaded"):
        call_command("load_tasks", path=str(tmp_path), stdout=StringIO(), stderr=StringIO())


def test_entity_ids_named_finds_world_ids_but_not_tool_made_ids_or_patterns():
    from tasks_app.library.services.task_library import entity_ids_named

    named = entity_ids_named(
        {
            "instruction": "Order ord-250914-001 (line li-250914-001-1) of cus-00001; rule cr-001; SKU GPU-KES-0016.",
            "criteria": [{"spec": {"op": "regex", "value": "emp-000[345]"}}, {"spec": {"value": "ref-w00001"}}],
            "calls": [{"arguments": {"parts": [{"product_id": "prd-00001"}]}}],
        }
    )
    assert named == {"ord-250914-001", "li-250914-001-1", "cus-00001", "cr-001", "prd-00001"}


def test_a_task_sent_back_by_a_reviewer_is_not_approved_over_the_objection(tmp_path, snapshot):
    from tasks_app.authoring.services.reviews import review_claim, review_request_changes
    from tasks_app.authoring.services.tasks import task_submit_for_review

    write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot, status="draft")
    task = Task.objects.get(source_key="starter:where-is-order-017")
    task_submit_for_review(task=task, user=task.author)
    expert = admin()
    review_claim(task=task, user=expert)
    review_request_changes(task=task, user=expert, comment="The tracking number is not in the world.")
    report = task_library_load(path=tmp_path, snapshot=snapshot)
    assert report.kept == ["starter:where-is-order-017"] and not report.approved
    task.refresh_from_db()
    assert task.status == TaskStatus.CHANGES_REQUESTED


# --- the gate on load ------------------------------------------------------------------------------------------


def gate_file_entries(path: Path, snapshot, *, passes: bool) -> dict:
    """A gate file's entries for the tasks under ``path`` on ``snapshot``, under their keys."""
    from tasks_app.calibration.services.gates import gate_entry, gate_key_of
    from tasks_app.library.services.library_files import starter_tasks_read

    gameable = [] if passes else [{"policy": "dump", "why": "passes: no required criterion fails it",
                                   "criteria": ["Gives the tracking number."]}]  # fmt: skip
    entry = gate_entry({"reference_passes": True, "gameable": gameable, "over_specified": [],
                        "policies": [{"key": "dump", "expect": "must_fail", "passed": not passes,
                                      "partial_reward": 1.0}]})  # fmt: skip
    tasks, _ = starter_tasks_read(path)
    return {gate_key_of(instruction=t.fields["instruction"], criteria_hashes=t.criteria_hashes(),
                        reference_solution=t.fields["reference_solution"], snapshot=snapshot): entry
            for t in tasks}  # fmt: skip


@pytest.mark.real_gate
def test_a_version_the_gate_refuses_stays_in_review_with_the_reason_until_an_admin_approves_over_it(tmp_path, snapshot):
    from tasks_app.authoring.services.reviews import review_approve, review_claim
    from tasks_app.calibration.services.gates import rubric_gate_current

    write(tmp_path, TASK)
    refusing = gate_file_entries(tmp_path, snapshot, passes=False)
    report = task_library_load(path=tmp_path, snapshot=snapshot, gates=refusing)
    assert report.created == ["starter:where-is-order-017"] and not report.approved and not report.errors
    assert report.refused and "dump: passes" in report.refused[0]
    assert report.gate_sources == {"file": 1}
    task = Task.objects.get(source_key="starter:where-is-order-017")
    assert task.status == TaskStatus.IN_REVIEW and task.claimed_by is None
    gate = rubric_gate_current(task.current_version)
    assert gate is not None and not gate.passes and gate.source.startswith("library gate file")
    (comment,) = task.comments.all()
    assert comment.author.username == LIBRARY_REVIEWER and "the gate refuses this version" in comment.body
    assert not Review.objects.filter(task=task).exists()

    again = task_library_load(path=tmp_path, snapshot=snapshot, gates=refusing)
    assert again.unchanged == ["starter:where-is-order-017"] and again.refused and not again.approved
    assert again.gate_sources == {"stored": 1} and task.comments.count() == 1

    expert = admin()
    review_claim(task=task, user=expert)
    review = review_approve(task=task, user=expert, override_reason="Kept for the demo: the dump is a known gap.")
    assert review.gate_override_reason and review.gate["passes"] is False
    third = task_library_load(path=tmp_path, snapshot=snapshot, gates=refusing)
    assert third.unchanged == ["starter:where-is-order-017"] and not third.refused
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED


@pytest.mark.real_gate
def test_a_changed_file_replaces_the_version_the_gate_held_back(tmp_path, snapshot):
    path = write(tmp_path, TASK)
    task_library_load(path=tmp_path, snapshot=snapshot, gates=gate_file_entries(tmp_path, snapshot, passes=False))
    fixed = {**TASK, "criteria": [{**TASK["criteria"][0], "weight": 3}, TASK["criteria"][1]]}
    path.write_text(yaml.safe_dump(fixed))
    report = task_library_load(path=tmp_path, snapshot=snapshot,
                               gates=gate_file_entries(tmp_path, snapshot, passes=True))  # fmt: skip
    assert report.updated == ["starter:where-is-order-017"] and report.approved == report.updated
    task = Task.objects.get(source_key="starter:where-is-order-017")
    assert task.status == TaskStatus.APPROVED and task.current_version.number == 2


@pytest.mark.real_gate
@pytest.mark.django_db(databases=["default", "episode"])
def test_a_stale_or_foreign_gate_is_computed_again_never_trusted(tmp_path, seeded_world):
    """An entry of the gate file under another key (another snapshot, another gate code) is never looked up, and a
    stored gate whose key is not the version's current one is stale: the real red team decides, and refuses a
    task a no-call reply passes."""
    from tasks_app.calibration.services.gates import gate_entry, gate_key, rubric_gate_current
    from tasks_app.library.services.library_files import starter_tasks_read
    from world_app.snapshots import snapshot_publish

    snapshot = snapshot_publish(note="library gate")
    weak = {**TASK, "key": "weak-warranty", "instruction": "A customer asks about the warranty on their GPU.",
            "criteria": [{"kind": "response", "text": "Mentions the warranty", "spec": {"op": "contains",
                          "value": "warranty"}, "weight": 1, "category": "correctness", "required": True}],
            "reference_solution": {"calls": [], "final_answer": "Your GPU has a 3-year warranty."}}  # fmt: skip
    write(tmp_path, weak)
    (task,), _ = starter_tasks_read(tmp_path)
    passing = gate_entry({"reference_passes": True, "gameable": [], "over_specified": [], "policies": []})
    foreign = {"0" * 64: passing, "f" * 64: passing}
    report = task_library_load(path=tmp_path, snapshot=snapshot, gates=foreign)
    assert report.gate_sources == {"computed": 1} and report.refused and not report.approved
    loaded = Task.objects.get(source_key="starter:weak-warranty")
    gate = rubric_gate_current(loaded.current_version)
    assert gate.source == "red team check" and "no_call" in {c["policy"] for c in gate.gameable}
    # A stored result under another key (as if the gate's code had changed since) is stale.
    type(gate).objects.filter(pk=gate.pk).update(gate_key="e" * 64, passes=True)
    assert rubric_gate_current(loaded.current_version) is None
    assert gate_key(loaded.current_version) != "e" * 64
    assert task.criteria_hashes() == list(
        loaded.current_version.criteria.order_by("position").values_list("content_hash", flat=True)
    )
