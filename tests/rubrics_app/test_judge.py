"""The LLM judge against the scripted OpenAI-compatible server: verdicts, retries, errors, votes and the cache."""

from __future__ import annotations

import json

import pytest

from corecraft_site.llm.scripted_server import Fault, Reply, ScriptedLLMServer
from rubrics_app.judge import (
    JudgeOutputInvalid,
    judge_config_hash,
    judge_output_parse,
    majority,
    trajectory_render,
)
from rubrics_app.models import JudgeConfig, ModelEndpoint, Verdict
from tasks_app.calibration.rollouts.execute import rollout_judge as rollout_judgement
from tasks_app.models import Rollout
from tests.factories import small_world
from tests.tasks_app.factories import LLM_CRITERION, RESPONSE_CRITERION, task_make
from world_app.episodes import episode_close, episode_create
from world_app.snapshots import snapshot_publish
from world_app.tools.steps import call_tool

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

ANSWER = "Sorry for the delay! Your order total was $549.98 including shipping."


def rollout_judge(**kwargs) -> list[dict]:
    return rollout_judgement(**kwargs).verdicts


def verdict_json(met: bool, rationale: str = "it apologises", evidence: str = "Sorry for the delay") -> Reply:
    return Reply(content=json.dumps({"met": met, "rationale": rationale, "evidence": evidence}))


@pytest.fixture
def rollout():
    rows = small_world()
    snapshot = snapshot_publish(note="judge tests")
    task = task_make(snapshot=snapshot, criteria=[LLM_CRITERION, RESPONSE_CRITERION])
    episode = episode_create(snapshot=snapshot, label="judge test")
    result = call_tool(episode, "get_order_details", {"order_id": rows["order"].pk})
    episode_close(episode)
    return Rollout.objects.create(
        version=task.current_version,
        policy="reference",
        policy_label="reference",
        episode=episode,
        status="finished",
        tool_calls=[
            {
                "turn": 1,
                "name": "get_order_details",
                "arguments": {"order_id": rows["order"].pk},
                "result": result,
                "is_error": False,
                "latency_ms": 1.0,
            }
        ],
        final_answer=ANSWER,
    )


def judge_config(server: ScriptedLLMServer, **fields) -> JudgeConfig:
    endpoint = ModelEndpoint.objects.create(
        name=f"judge-{ModelEndpoint.objects.count()}",
        base_url=server.base_url,
        model="scripted",
        max_retries=0,
        timeout_s=5,
    )
    return JudgeConfig.objects.create(name=f"cfg-{endpoint.pk}", endpoint=endpoint, **fields)


def test_valid_verdict_with_the_task_criterion_and_trajectory_in_the_prompt(rollout):
    with ScriptedLLMServer([verdict_json(True)]) as server:
        config = judge_config(server, temperature=0.3)
        verdicts = rollout_judge(rollout=rollout, judge_config=config)

    assert [v["status"] for v in verdicts] == ["met", "met"]
    llm = verdicts[0]
    assert llm["kind"] == "llm" and llm["met"] is True and llm["rationale"] == "it apologises"
    assert llm["evidence"] == "Sorry for the delay" and llm["agreement"] == 1.0
    [request] = server.requests
    prompt = request["messages"][1]["content"]
    assert rollout.version.instruction in prompt and LLM_CRITERION["text"] in prompt and ANSWER in prompt
    assert "get_order_details" in prompt and request["temperature"] == 0.3
    rollout.refresh_from_db()
    assert rollout.reward == 1.0 and rollout.passed is True and rollout.judge_errors == 0 and rollout.judged_at
    assert rollout.verdicts == verdicts
    row = Verdict.objects.get(judge_config=config)
    assert (row.status, row.met, row.trajectory_hash) == ("met", True, rollout.trajectory_hash)
    assert config.config_hash == judge_config_hash(config)
    assert Verdict.objects.filter(judge_config__isnull=True, trajectory_hash=rollout.trajectory_hash).count() == 1


def test_invalid_output_is_retried_with_the_problem_then_accepted(rollout):
    with ScriptedLLMServer([Reply(content="I think it is fine."), verdict_json(False, "no apology")]) as server:
        verdicts = rollout_judge(rollout=rollout, judge_config=judge_config(server, max_retries=2))

    assert verdicts[0]["status"] == "not_met" and verdicts[0]["rationale"] == "no apology"
    assert len(server.requests) == 2
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I think it is fine."}
    assert "not usable" in retry[-1]["content"]
    assert Verdict.objects.get(judge_config__isnull=False).samples[0]["attempts"] == 2


def test_invalid_output_past_max_retries_is_a_judge_error_not_a_verdict(rollout):
    script = [Reply(content="not json"), Reply(content='{"met": "yes", "rationale": "x", "evidence": "y"}')]
    with ScriptedLLMServer(script) as server:
        config = judge_config(server, max_retries=1)
        verdicts = rollout_judge(rollout=rollout, judge_config=config)

    assert len(server.requests) == 2
    llm = verdicts[0]
    assert llm["status"] == "error" and llm["met"] is None and "invalid judge output" in llm["rationale"]
    rollout.refresh_from_db()
    assert rollout.reward is None and rollout.judge_errors == 1
    assert Verdict.objects.get(judge_config=config).status == "error"

    # An error is recorded but not served from the cache: judging again asks again.
    with ScriptedLLMServer([verdict_json(True)]) as server:
        config.endpoint.base_url = server.base_url
        config.endpoint.save()
        again = rollout_judge(rollout=rollout, judge_config=config)
    assert len(server.requests) == 1 and again[0]["status"] == "met"
    rollout.refresh_from_db()
    assert rollout.reward == 1.0 and rollout.judge_errors == 0


def test_endpoint_failure_is_a_judge_error(rollout):
    with ScriptedLLMServer([Fault(status=500)]) as server:
        verdicts = rollout_judge(rollout=rollout, judge_config=judge_config(server))
    assert verdicts[0]["status"] == "error" and "endpoint failed" in verdicts[0]["rationale"]
    assert verdicts[1]["status"] == "met"  # programmatic verdicts do not depend on the judge


def test_majority_vote_over_samples(rollout):
    with ScriptedLLMServer([verdict_json(True), verdict_json(False, "rude"), verdict_json(True)]) as server:
        config = judge_config(server, samples=3, temperature=0.7)
        verdicts = rollout_judge(rollout=rollout, judge_config=config)
    assert len(server.requests) == 3
    assert verdicts[0]["status"] == "met" and verdicts[0]["agreement"] == pytest.approx(2 / 3)
    assert verdicts[0]["samples"] == 3
    assert [s["met"] for s in Verdict.objects.get(judge_config=config).samples] == [True, False, True]


def test_one_failed_sample_makes_the_vote_an_error(rollout):
    with ScriptedLLMServer([verdict_json(True), Reply(content="??"), verdict_json(True)]) as server:
        verdicts = rollout_judge(rollout=rollout, judge_config=judge_config(server, samples=3, max_retries=0))
    assert verdicts[0]["status"] == "error" and "1 of 3" in verdicts[0]["rationale"]


def test_cache_hit_makes_no_model_call(rollout):
    with ScriptedLLMServer([verdict_json(True)]) as server:
        config = judge_config(server)
        first = rollout_judge(rollout=rollout, judge_config=config)
        second = rollout_judge(rollout=rollout, judge_config=config)
        # Another rollout with the very same trajectory is judged from the cache too.
        twin = Rollout.objects.create(
            version=rollout.version,
            policy="model",
            policy_label="model:x",
            episode=rollout.episode,
            status="finished",
            tool_calls=rollout.tool_calls,
            final_answer=rollout.final_answer,
            sample=1,
        )
        third = rollout_judge(rollout=twin, judge_config=config)
    assert len(server.requests) == 1
    assert first == second == third
    assert Verdict.objects.count() == 2


def test_a_changed_configuration_is_judged_again(rollout):
    with ScriptedLLMServer([verdict_json(True), verdict_json(False, "now strict")]) as server:
        config = judge_config(server)
        rollout_judge(rollout=rollout, judge_config=config)
        config.temperature = 0.9
        config.save()
        again = rollout_judge(rollout=rollout, judge_config=config)
    assert len(server.requests) == 2 and again[0]["status"] == "not_met"


def test_without_a_judge_config_llm_criteria_stay_pending(rollout):
    verdicts = rollout_judge(rollout=rollout)
    assert [v["status"] for v in verdicts] == ["pending", "met"]
    rollout.refresh_from_db()
    assert rollout.reward is None and rollout.passed is True


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "empty"),
        ("the reply is yes", "not a JSON object"),
        ("[1, 2]", "not an object"),
        ('{"met": true}', "lacks rationale, evidence"),
        ('{"met": 1, "rationale": "r", "evidence": "e"}', '"met" must be true or false'),
        ('{"met": true, "rationale": "r", "evidence": ["e"]}', '"evidence" must be a string'),
        ('{"met": true, "rationale": "r", "evidence": "e"', "not a JSON object"),
    ],
)
def test_output_parse_refuses_invalid_output(text, problem):
    with pytest.raises(JudgeOutputInvalid, match=problem):
        judge_output_parse(text)


def test_output_parse_accepts_fenced_and_wrapped_json():
    body = '{"met": false, "rationale": "r", "evidence": "e", "extra": 1}'
    expected = {"met": False, "rationale": "r", "evidence": "e"}
    assert judge_output_parse(body) == expected
    assert judge_output_parse(f"```json\n{body}\n```") == expected
    assert judge_output_parse(f"Here you go: {body} Hope it helps.") == expected


def test_majority_ties_are_not_met():
    assert majority([{"met": True}, {"met": False}]) == (False, 0.5)
    assert majority([{"met": True}] * 3) == (True, 1.0)
    assert majority([{"met": False}, {"met": False}, {"met": True}]) == (False, pytest.approx(2 / 3))


def test_trajectory_render_clips_results_and_leaves_out_middle_calls():
    calls = [{"name": f"tool_{i}", "arguments": {"i": i}, "result": {"text": "x" * 5000}} for i in range(40)]
    text = trajectory_render(calls, limit=8000)
    assert len(text) <= 8000
    assert "tool_0(" in text and "tool_39(" in text and "left out here" in text
    assert "more characters cut" in text
    assert trajectory_render([]) == "(no tool calls)"
    assert "ERROR" in trajectory_render([{"name": "t", "arguments": {}, "result": {"error": {}}, "is_error": True}])


def test_programmatic_verdicts_are_served_from_the_cache_once_made(rollout):
    first = rollout_judge(rollout=rollout)
    row = Verdict.objects.get(judge_config__isnull=True)
    assert first[1]["verdict_id"] == row.pk and first[1]["status"] == "met"
    # Without its episode the rollout's trajectory is still known: the cached verdict decides it.
    Rollout.objects.filter(pk=rollout.pk).update(episode=None)
    rollout.refresh_from_db()
    again = rollout_judge(rollout=rollout)
    assert again == first and Verdict.objects.count() == 1


def test_without_an_episode_or_verdicts_programmatic_criteria_are_errors(rollout):
    Rollout.objects.filter(pk=rollout.pk).update(episode=None)
    rollout.refresh_from_db()
    verdicts = rollout_judge(rollout=rollout)
    assert verdicts[1]["status"] == "error" and "no episode" in verdicts[1]["rationale"]
    rollout.refresh_from_db()
    assert rollout.passed is None and rollout.reward is None and rollout.judge_errors == 1
    assert not Verdict.objects.exists()


def test_the_judge_and_the_rollouts_share_one_client_per_endpoint(monkeypatch):
    # One registry of endpoints (rubrics_app.endpoints): the judgement and the rollouts both call it.
    from rubrics_app import judgement
    from rubrics_app.endpoints import endpoint_client as judge_client
    from rubrics_app.endpoints import endpoint_client as rollout_client
    from tasks_app.calibration.rollouts import execute

    assert judgement.endpoint_client is judge_client and execute.endpoint_client is rollout_client

    endpoint = ModelEndpoint(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="CORECRAFT_SHARED_KEY")
    monkeypatch.setenv("CORECRAFT_SHARED_KEY", "sk-one")
    first = judge_client(endpoint)
    assert judge_client(endpoint) is first and rollout_client(endpoint) is first  # built once, not per judgement
    monkeypatch.setenv("CORECRAFT_SHARED_KEY", "sk-two")  # a rotated key takes effect: another client
    assert judge_client(endpoint) is not first and judge_client(endpoint)._sdk.api_key == "sk-two"
