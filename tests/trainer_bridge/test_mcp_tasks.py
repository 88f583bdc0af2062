"""MCP task mode with the official ``mcp`` SDK client against a real ``manage.py mcp_server`` process.

An MCP episode opened for a frozen release row serves the row's instruction as a prompt and a resource, the row's
tools and ``finish``; ``finish`` returns the judgement, equal to the trainer API's finish for the same trajectory.
Scoped like the trainer API: a training token never opens a holdout row.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from rest_framework.test import APIClient

from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from tests.world_app.test_mcp import CALL_TIMEOUT_S, bearer, call, mcp_client, mcp_server, run_async
from trainer_bridge.trainer_models import TrainerEpisode, TrainerEpisodeStatus

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.slow,
    pytest.mark.usefixtures("fresh_episode_state"),
]

LAZY_ANSWER = "I looked at your order; nothing else to do."


def trajectory(order_id: str, *, act: bool) -> list[tuple[str, dict]]:
    calls = [("get_order_details", {"order_id": order_id})]
    if act:
        calls.append(("update_order_status", {"order_id": order_id, "status": "backorder", "reason": "GPU"}))
    return calls


def api_run(secret: str, release: str, row_id: int, calls: list[tuple[str, dict]], answer: str) -> dict:
    """The same trajectory through the trainer API: open, the calls, finish."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def post(path: str, data: dict) -> dict:
        response = client.post(path, data=json.dumps(data), content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return json.loads(response.content)

    episode_id = post("/api/v1/rollouts/episodes/", {"release": release, "row_id": row_id})["episode_id"]
    for name, arguments in calls:
        post(f"/api/v1/rollouts/episodes/{episode_id}/tools/{name}/", {"arguments": arguments})
    return post(f"/api/v1/rollouts/episodes/{episode_id}/finish/", {"final_answer": answer})


async def mcp_run(base: str, secret: str, release: str, row_id: int, calls, answer: str) -> dict:
    async with httpx2.AsyncClient(headers=bearer(secret), timeout=CALL_TIMEOUT_S) as http:
        response = await http.post(f"{base}/mcp/episodes", json={"release": release, "row_id": row_id})
        assert response.status_code == 201, response.text
        opened = response.json()
    out: dict = {"opened": opened}
    async with mcp_client(opened["mcp_url"], secret) as client:
        prompts = await client.list_prompts()
        out["prompts"] = [p.name for p in prompts.prompts]
        prompt = await client.get_prompt("task")
        out["prompt_text"] = prompt.messages[0].content.text
        resources = await client.list_resources()
        out["resources"] = {str(r.uri): r.mime_type for r in resources.resources}
        read = await client.read_resource(opened["task"]["resources"][0])
        out["resource_text"] = read.contents[0].text
        task_json = await client.read_resource(opened["task"]["resources"][1])
        out["task_resource"] = json.loads(task_json.contents[0].text)
        out["tools"] = [t.name for t in (await client.list_tools()).tools]
        out["calls"] = [await call(client, name, arguments) for name, arguments in calls]
        out["bad_finish"] = await call(client, "finish", {"answer": answer})
        out["finish"] = await call(client, "finish", {"final_answer": answer})
        out["after"] = await call(client, "get_order_details", {"order_id": calls[0][1]["order_id"]})
        out["again"] = await call(client, "finish", {"final_answer": answer})
        out["other_answer"] = await call(client, "finish", {"final_answer": answer + " More."})
    return out


async def refusals(base: str, tokens: dict, release: str, train_row: int, holdout_row: int) -> dict:
    out = {}
    async with httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http:

        async def open_as(token: str, body: dict) -> tuple[int, dict]:
            answer = await http.post(f"{base}/mcp/episodes", json=body, headers=bearer(tokens[token]))
            return answer.status_code, answer.json()

        out["train_token_holdout"] = await open_as("trainer", {"release": release, "row_id": holdout_row})
        out["eval_token_holdout"] = await open_as("evaluator", {"release": release, "row_id": holdout_row})
        out["no_read_scope"] = await open_as("episodes_only", {"release": release, "row_id": train_row})
        out["half_spec"] = await open_as("trainer", {"release": release})
        out["unknown_release"] = await open_as("trainer", {"release": "nope", "row_id": train_row})
        out["plain_status"], plain = await open_as("trainer", {})
    async with mcp_client(plain["mcp_url"], tokens["trainer"]) as client:
        out["plain_prompts"] = [p.name for p in (await client.list_prompts()).prompts]
        out["plain_tools"] = len((await client.list_tools()).tools)
        out["plain_finish"] = await call(client, "finish", {"final_answer": "done"})
    return out


def test_mcp_task_mode_serves_the_row_and_finish_pays_what_the_trainer_api_pays():
    tw = trainer_world_make("mcp-tasks")
    [row, lazy_row, *_] = tw.rows("train", llm=False) * 2
    holdout = tw.rows("holdout")[0]
    tokens = {
        "trainer": tw.token("train:read", "episodes", "reward"),
        "evaluator": tw.token("eval:read", "episodes"),
        "episodes_only": tw.token("episodes"),
    }
    slug, order_id = tw.release.slug, tw.order_id
    good, lazy = trajectory(order_id, act=True), trajectory(order_id, act=False)
    with mcp_server() as base:
        solved = run_async(mcp_run, base, tokens["trainer"], slug, row.pk, good, GOOD_ANSWER)
        lazy_mcp = run_async(mcp_run, base, tokens["trainer"], slug, lazy_row.pk, lazy, LAZY_ANSWER)
        refused = run_async(refusals, base, tokens, slug, row.pk, holdout.pk)

    instruction = row.content["instruction"]
    task = solved["opened"]["task"]
    assert task["instruction"] == instruction and task["release"] == slug and task["row_id"] == row.pk
    assert task["split"] == "train" and task["finish_tool"] == "finish"
    assert solved["prompts"] == ["task"] and solved["prompt_text"] == instruction
    assert solved["resource_text"] == instruction
    assert set(solved["resources"].values()) == {"text/plain", "application/json"}
    assert solved["task_resource"]["contract_version"] == tw.release.contract["version"]
    assert solved["tools"] == [*row.content["tools"], "finish"]
    assert all(not c["is_error"] for c in solved["calls"]), solved["calls"]
    assert solved["bad_finish"]["is_error"] and solved["bad_finish"]["result"]["error"]["code"] == "invalid_arguments"

    judged = solved["finish"]
    assert not judged["is_error"]
    assert judged["result"]["reward"] == 1.0 and judged["result"]["passed"] is True and judged["result"]["final"]
    assert solved["after"]["is_error"] and solved["after"]["result"]["error"]["code"] == "episode_closed"
    assert solved["again"]["result"] == judged["result"]  # a retried finish answers the same judgement
    assert solved["other_answer"]["is_error"]
    assert solved["other_answer"]["result"]["error"]["code"] == "episode_finished"
    stored = TrainerEpisode.objects.get(pk=solved["opened"]["episode_id"])
    assert stored.status == TrainerEpisodeStatus.FINISHED and stored.final_answer == GOOD_ANSWER

    # The same trajectories through the trainer API earn the same judgement (reward, passed, verdicts, hash).
    for mcp_answer, row_id, calls, answer in (
        (judged["result"], row.pk, good, GOOD_ANSWER),
        (lazy_mcp["finish"]["result"], lazy_row.pk, lazy, LAZY_ANSWER),
    ):
        api = api_run(tokens["trainer"], slug, row_id, calls, answer)
        for key in ("reward", "partial_reward", "passed", "final", "pending", "verdicts", "trajectory_hash"):
            assert mcp_answer[key] == api[key], key
    assert lazy_mcp["finish"]["result"]["reward"] < 1.0  # it looked the order up and did nothing else

    assert refused["train_token_holdout"][0] == 404  # like a missing row: nothing about the holdout leaks
    assert refused["eval_token_holdout"][0] == 201
    assert refused["eval_token_holdout"][1]["task"]["split"] == "holdout"
    assert refused["no_read_scope"][0] == 404
    assert refused["half_spec"][0] == 400
    assert refused["unknown_release"][0] == 404
    assert refused["plain_status"] == 201
    assert refused["plain_prompts"] == [] and refused["plain_tools"] == 23 + 1  # 23 world tools + ask_user
    assert refused["plain_finish"]["result"]["error"]["code"] == "unknown_tool"
