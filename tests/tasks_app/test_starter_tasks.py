"""The starter library (tasks_app/fixtures/starter_tasks): what every hand-written task must meet, checked
over every fixture file present."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks_app.library.services.library_files import STARTER_DIR, starter_files, starter_tasks_read
from tasks_app.library.services.task_library import entities_missing, entity_ids_named, task_library_load
from tasks_app.library.similarity import near_duplicate_pairs
from tasks_app.models import Task, TaskStatus
from tasks_app.perturbations import SnapshotReplay, rubric_check
from world_app.snapshots import snapshot_publish

MINIMUM_PER_TYPE = {"information_retrieval": 30, "communication": 30, "reasoning": 30, "multi_step_workflow": 40}
PROGRAMMATIC = {"state", "tool_call", "response"}


@pytest.fixture(scope="module")
def starter():
    tasks, errors = starter_tasks_read()
    return tasks, errors


def test_the_library_holds_the_tasks_issue_7_asks_for(starter):
    tasks, _ = starter
    per_type = Counter(t.fields["task_type"] for t in tasks)
    assert len(tasks) >= 150, per_type
    assert all(per_type[kind] >= n for kind, n in MINIMUM_PER_TYPE.items()), per_type


def test_every_file_is_valid_and_well_formed(starter):
    tasks, errors = starter
    assert errors == []
    assert len(starter_files()) == len(tasks)
    for path, task in zip(starter_files(), tasks, strict=True):
        where = str(path.relative_to(STARTER_DIR))
        assert where == f"{task.fields['task_type']}/{task.source_key.removeprefix('starter:')}.yaml"
        kinds = [c["kind"] for c in task.criteria]
        assert 4 <= len(kinds) <= 16, where  # one fact per criterion (REWARD.md), plus format and no-other-changes
        assert PROGRAMMATIC & set(kinds), where
        if task.fields["task_type"] == "communication":
            assert "llm" in kinds, f"{where}: a communication task has llm criteria on tone and format"
        assert task.fields["reference_solution"]["final_answer"], where


def test_no_two_starter_tasks_are_near_duplicates(starter):
    tasks, _ = starter
    pairs = near_duplicate_pairs([t.fields["instruction"] for t in tasks])
    assert [(tasks[i].source_key, tasks[j].source_key, round(s, 2)) for i, j, s in pairs] == []


@pytest.mark.django_db(databases=["default", "episode"])
def test_every_reference_passes_every_rubric_catches_a_fault_and_every_entity_exists(starter, seeded_world):
    tasks, _ = starter
    snapshot = snapshot_publish(note="starter tasks")
    problems = []
    with SnapshotReplay(snapshot) as replay:
        for task in tasks:
            solution = task.fields["reference_solution"]
            result = rubric_check(criteria=task.criteria, solution=solution, replay=replay,
                                  simulated_user=task.fields["simulated_user"])  # fmt: skip
            if not result.reference_passes:
                problems.append(f"{task.source_key}: reference fails {result.unmet}")
            if result.blind:
                problems.append(f"{task.source_key}: no perturbed copy fails ({len(result.undetected)} tried)")
            # Inside the replay, world queries read the snapshot's world.
            missing = entities_missing(entity_ids_named([task.fields["instruction"], task.criteria, solution]))
            if missing:
                problems.append(f"{task.source_key}: names entities missing from the world: {missing}")
    assert problems == []


@pytest.mark.django_db(databases=["default", "episode"])
def test_the_whole_library_loads_approved_and_reloads_as_unchanged(starter, seeded_world):
    tasks, _ = starter
    snapshot = snapshot_publish(note="starter load")
    report = task_library_load(snapshot=snapshot)
    assert not report.errors and len(report.created) == len(tasks)
    # Every task went through the gate (from the library's gate file when it is current, else computed); the few
    # it refuses stay in review with the reason, the rest are approved.
    assert sum(report.gate_sources.values()) == len(tasks)
    assert len(report.approved) + len(report.refused) == len(tasks) and len(report.refused) <= 2, report.refused
    loaded = Task.objects.filter(source_key__startswith="starter:")
    assert loaded.count() == len(tasks)
    statuses = {key: status for key, status in loaded.values_list("source_key", "status")}
    assert {k for k, s in statuses.items() if s == TaskStatus.APPROVED} == set(report.approved)
    assert {k for k, s in statuses.items() if s != TaskStatus.APPROVED} == {r.split(": ")[0] for r in report.refused}
    again = task_library_load(snapshot=snapshot)
    assert len(again.unchanged) == len(tasks) and not again.created and not again.updated
