"""A multi-turn task through the trainer API and MCP task mode: the frozen row carries its scripted user, the episode
answers ask_user with it, and the frozen rubric's asked criterion pays for the question."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tasks_app.models import Task, TaskStatus
from tests.factories import small_world
from tests.tasks_app.factories import admin, author, task_make
from tests.tasks_app.test_multi_turn import ANSWER, QUESTION, criteria, reference, user_spec
from tests.trainer_bridge.conftest import distinct_instruction
from tests.trainer_bridge.trainer_fixtures import body
from trainer_bridge.services import api_token_create, release_create, release_freeze
from world_app.contract import agent_contract
from world_app.snapshots import snapshot_publish

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def release_world():
    world = small_world()
    order = world["order"].pk
    snapshot = snapshot_publish(note="multi-turn release")
    writer = author()
    for n in range(6):
        task = task_make(
            user=writer,
            snapshot=snapshot,
            title=f"Backorder the customer's order {n}",
            instruction=distinct_instruction(700 + n),
            task_type="multi_step_workflow",
            difficulty="medium",
            criteria=criteria(order),
            reference_solution=reference(order),
            simulated_user=user_spec(order),
        )
        Task.objects.filter(pk=task.pk).update(status=TaskStatus.APPROVED, source_key=f"bridge:multi:{n}")
    boss = admin(username="admin-multi")
    release = release_create(slug="multi-r1", name="Multi-turn", seed=7, sizes={"train": 4, "holdout": 2}, user=boss)
    release = release_freeze(release=release, user=boss)
    secret = api_token_create(name="t", scopes=["train:read", "episodes", "reward"], created_by=boss).secret
    return order, release, secret


def post(client, path: str, data) -> tuple[int, dict]:
    response = client.post(path, data=json.dumps(data), content_type="application/json")
    assert response.status_code != 500, response.content
    return response.status_code, body(response)


def test_a_trainer_episode_answers_ask_user_from_the_frozen_row_and_pays_for_asking(release_world):
    order, release, secret = release_world
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    row = release.rows.filter(split="train").order_by("position").first()
    assert row.content["simulated_user"] == {"kind": "scripted", **user_spec(order)}
    rows = client.get(f"/api/v1/releases/{release.slug}/rows/?split=train")
    assert rows.status_code == 200 and body(rows)["results"][0]["simulated_user"]["facts"][0]["key"] == "order_number"

    scores = []
    for ask in (True, False):
        status, opened = post(client, "/api/v1/rollouts/episodes/", {"release": release.slug, "row_id": row.pk})
        assert status == 201, opened
        names = [t["function"]["name"] for t in opened["tools"]]
        assert names == [t["function"]["name"] for t in agent_contract().tools] and names[-1] == "ask_user"
        episode = opened["episode_id"]
        base = f"/api/v1/rollouts/episodes/{episode}"
        if ask:
            status, step = post(client, f"{base}/tools/ask_user/", {"arguments": {"message": QUESTION}})
            assert (
                status == 200 and step["is_error"] is False and step["result"] == {"reply": f"Oh right, it's {order}."}
            )
        for call in reference(order)["calls"][1:]:
            status, step = post(client, f"{base}/tools/{call['tool']}/", {"arguments": call["arguments"]})
            assert status == 200 and step["is_error"] is False, step
        status, result = post(client, f"{base}/finish/", {"final_answer": ANSWER})
        assert status == 200, result
        scores.append(result)
    asked, guessed = scores
    assert asked["passed"] is True and asked["reward"] == 1.0
    assert guessed["passed"] is False and guessed["reward"] < 1.0


def test_mcp_task_mode_offers_the_contract_tools_and_answers_from_the_row(release_world):
    from trainer_bridge.mcp.release_rows import ReleaseRowTasks
    from trainer_bridge.mcp.server import _task_tools, tool_result
    from world_app.credentials import Credential
    from world_app.tools.steps import call_tool

    order, release, _secret = release_world
    row = release.rows.filter(split="train").order_by("position").first()
    boss = release.created_by
    credential = Credential(key=f"user:{boss.pk}", user_id=boss.pk, scopes=frozenset({"train:read", "episodes"}),
                            any_episode=True)  # fmt: skip
    task = ReleaseRowTasks().open(credential=credential, spec={"release": release.slug, "row_id": row.pk})
    names = [t.name for t in _task_tools(task)]
    assert names == [t["function"]["name"] for t in agent_contract().tools] + ["finish"]
    answer = tool_result(call_tool(task.episode_id, "ask_user", {"message": "Which order is it?"}))
    assert not answer.is_error and answer.structured_content == {"reply": f"Oh right, it's {order}."}
