"""The one judgement: the same trajectory gets the same judgement through every path that scores one."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from rubrics_app.judgement import (
    JudgeOptions,
    Trajectory,
    judgement_fold,
    rubric_dropout,
    rubric_of,
    rubric_of_version,
    trajectory_hash,
    trajectory_judge,
)
from rubrics_app.models import Verdict
from tasks_app.authoring.services.reference_solution import reference_solution_run
from tasks_app.calibration.rollouts.execute import rollout_create, rollout_execute
from tasks_app.models import ReferenceRun, Rollout, TaskVersion
from tasks_app.perturbations import SnapshotReplay, rubric_check
from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

TRAINER = ("train:read", "episodes", "reward")
COMPARED = ("key", "kind", "content_hash", "status", "met", "rationale", "evidence", "weight", "required")


def _post(client: APIClient, path: str, data: dict) -> dict:
    response = client.post(path, data=json.dumps(data), content_type="application/json")
    assert response.status_code in (200, 201), response.content
    return json.loads(response.content)


def _trainer_run(client: APIClient, tw, row, calls: list[dict]) -> str:
    opened = _post(client, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": row.pk})
    for call in calls:
        _post(client, f"/api/v1/rollouts/episodes/{opened['episode_id']}/tools/{call['tool']}/", call)
    return opened["episode_id"]


def _seen(verdicts: list[dict], reward, passed, digest: str) -> dict:
    return {"verdicts": [{k: v.get(k) for k in COMPARED} for v in verdicts], "reward": reward, "passed": passed,
            "hash": digest}  # fmt: skip


@pytest.mark.parametrize("with_llm", [False, True])
def test_the_same_trajectory_gets_the_same_judgement_through_every_path(client, with_llm):
    tw = trainer_world_make()
    row = tw.rows("train", llm=with_llm)[0]
    version = TaskVersion.objects.select_related("snapshot", "task").get(pk=row.version_id)
    calls = [
        {"tool": "get_order_details", "arguments": {"order_id": tw.order_id}},
        {"tool": "update_order_status", "arguments": {"order_id": tw.order_id, "status": "backorder", "reason": "GPU"}},
    ]
    solution = {"calls": calls, "final_answer": GOOD_ANSWER}
    TaskVersion.objects.filter(pk=version.pk).update(reference_solution=solution)
    version.refresh_from_db()
    seen: dict[str, dict] = {}

    # Each path decides its verdicts itself (the cache emptied before it), and must come to the same judgement.
    Verdict.objects.all().delete()
    rollout = rollout_execute(rollout=rollout_create(version=version, policy="reference"))
    seen["calibration rollout"] = _seen(rollout.verdicts, rollout.reward, rollout.passed, rollout.trajectory_hash)

    Verdict.objects.all().delete()
    run = reference_solution_run(version=version, user=tw.admin)
    seen["reference run"] = _seen(run.verdicts, run.reward, run.passed, run.outcome["trajectory_hash"])

    Verdict.objects.all().delete()
    client.force_login(tw.admin)
    client.post(reverse("tasks:playground_run", args=[version.task_id]), HTTP_HX_REQUEST="true")
    played = ReferenceRun.objects.order_by("-pk").first()
    assert played.pk != run.pk
    seen["playground"] = _seen(played.verdicts, played.reward, played.passed, played.outcome["trajectory_hash"])

    Verdict.objects.all().delete()
    with SnapshotReplay(version.snapshot) as replay:
        check = rubric_check(
            criteria=row.content["rubric"], solution=solution, replay=replay, instruction=row.content["instruction"]
        )
    judged = check.reference_judgement
    seen["library check"] = _seen(judged.verdicts, judged.final_reward, judged.passed, judged.trajectory_hash)

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tw.token(*TRAINER)}")
    Verdict.objects.all().delete()
    episode_id = _trainer_run(api, tw, row, calls)
    finished = _post(api, f"/api/v1/rollouts/episodes/{episode_id}/finish/", {"final_answer": GOOD_ANSWER})
    seen["trainer finish"] = _seen(
        finished["verdicts"], finished["reward"], finished["passed"], finished["trajectory_hash"]
    )

    Verdict.objects.all().delete()
    episode_id = _trainer_run(api, tw, row, calls)
    batch = _post(api, "/api/v1/rewards/batch/", {"items": [{"episode_id": episode_id, "final_answer": GOOD_ANSWER}]})
    item = batch["results"][0]
    seen["trainer batch"] = _seen(item["verdicts"], item["reward"], item["passed"], item["trajectory_hash"])

    expected = seen["calibration rollout"]
    assert expected["passed"] is True  # the llm criterion (pending offline) is optional
    assert expected["reward"] == (None if with_llm else 1.0)
    for path, judgement in seen.items():
        assert judgement == expected, path

    # With the cache kept, a second path judges from it: no new verdict row, the same verdict ids.
    before = Verdict.objects.count()
    again = reference_solution_run(version=version, user=tw.admin)
    assert Verdict.objects.count() == before
    stored = set(Verdict.objects.values_list("pk", flat=True))
    assert all(v["verdict_id"] in stored for v in again.verdicts if v["kind"] != "llm")


def test_reward_counts_pending_as_not_met_and_partial_reward_only_the_decided():
    verdicts = [
        {"status": "met", "weight": 2.0, "required": True},
        {"status": "pending", "weight": 1.0, "required": False},
        {"status": "not_met", "weight": 1.0, "required": False},
    ]
    judged = judgement_fold(verdicts, trajectory_hash="x")
    assert judged.reward == pytest.approx(0.5)
    assert judged.partial_reward == pytest.approx(2 / 3)
    assert judged.passed is True and judged.final is False and judged.final_reward is None
    verdicts[0]["status"] = "error"
    judged = judgement_fold(verdicts, trajectory_hash="x")
    assert judged.passed is None and judged.errors == 1 and judged.reward == 0.0


def test_one_hash_for_calls_named_either_way_and_for_the_row_and_the_version():
    one = Trajectory.of(
        instruction="i", snapshot_version=3, final_answer="a",
        tool_calls=[{"tool": "t", "arguments": {"b": 1, "a": 2}, "result": {"x": 1}, "is_error": False}],
    )  # fmt: skip
    two = Trajectory.of(
        instruction="i", snapshot_version=3, final_answer="a",
        tool_calls=[{"name": "t", "arguments": {"a": 2, "b": 1}, "result": {"x": 1}, "turn": 4, "latency_ms": 9}],
    )  # fmt: skip
    assert trajectory_hash(one) == trajectory_hash(two)
    other = Trajectory.of(instruction="i", snapshot_version=4, final_answer="a", tool_calls=[])
    assert trajectory_hash(other) != trajectory_hash(one)


def test_a_version_and_its_frozen_row_are_the_same_rubric():
    tw = trainer_world_make()
    row = tw.rows("train")[0]
    version = TaskVersion.objects.get(pk=row.version_id)
    assert rubric_of(row.content["rubric"]) == rubric_of_version(version)


def test_rubric_dropout_is_seeded_keeps_required_criteria_and_is_recorded():
    tw = trainer_world_make()
    row = tw.rows("train", llm=True)[0]
    rubric = rubric_of(row.content["rubric"])
    kept = [rubric_dropout(rubric, rate=0.5, seed=s) for s in range(30)]
    assert all(any(c.required for c in k) for k in kept)
    assert kept[3] == rubric_dropout(rubric, rate=0.5, seed=3)
    assert len({tuple(c.key for c in k) for k in kept}) > 1
    trajectory = Trajectory.of(instruction="i", snapshot_version=None, tool_calls=[], final_answer="no")
    judged = trajectory_judge(rubric=rubric, trajectory=trajectory, options=JudgeOptions(dropout=0.5, dropout_seed=3))
    recorded = judged.options["dropout"]
    assert recorded["seed"] == 3 and recorded["kept"] == [c.key for c in kept[3]]
    assert [v["key"] for v in judged.verdicts] == recorded["kept"]
    assert set(recorded["kept"]) | set(recorded["dropped"]) == {c.key for c in rubric}
    with pytest.raises(ValueError, match="seed"):
        JudgeOptions(dropout=0.3)


def test_a_rollout_judged_again_reads_the_cache(client):
    tw = trainer_world_make()
    row = tw.rows("train", llm=False)[0]
    version = TaskVersion.objects.get(pk=row.version_id)
    TaskVersion.objects.filter(pk=version.pk).update(
        reference_solution={"calls": [], "final_answer": "It is on backorder."}
    )
    version.refresh_from_db()
    rollout = rollout_execute(rollout=rollout_create(version=version, policy="reference"))
    rows = Verdict.objects.filter(trajectory_hash=rollout.trajectory_hash).count()
    assert rows == len(rollout.verdicts)
    twin = rollout_execute(rollout=rollout_create(version=version, policy="reference", sample=1))
    assert Rollout.objects.get(pk=twin.pk).trajectory_hash == rollout.trajectory_hash
    assert Verdict.objects.count() == rows


def test_a_criterion_that_cannot_be_evaluated_keeps_its_reason_and_is_not_cached(monkeypatch):
    from rubrics_app import judgement

    tw = trainer_world_make()
    rubric = rubric_of(tw.rows("train", llm=False)[0].content["rubric"])

    def evaluate(*, criteria, **_):
        return [
            {"status": "error", "met": None, "rationale": "the pattern took longer than 50 ms", "evidence": None}
            for _ in criteria
        ]

    monkeypatch.setattr(judgement, "criteria_evaluate", evaluate)
    trajectory = Trajectory.of(
        instruction="i", snapshot_version=None, tool_calls=[], final_answer="no", episode=judgement.OPEN_WORLD
    )
    judged = trajectory_judge(rubric=rubric, trajectory=trajectory)
    assert judged.errors == len(rubric) and judged.final is False
    assert {v["rationale"] for v in judged.verdicts} == {"the pattern took longer than 50 ms"}
    assert not Verdict.objects.filter(trajectory_hash=judged.trajectory_hash).exists()
