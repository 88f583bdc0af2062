"""Rollouts: the agent loop against the scripted OpenAI-compatible server, faults, limits, and the replay policies."""

from __future__ import annotations

import json

import pytest

from corecraft_site.llm.scripted_server import Fault, Reply, ScriptedLLMServer, ScriptedToolCall
from rubrics_app.endpoints import endpoint_client, model_endpoint_test, request_sampling
from tasks_app.calibration.rollouts import rollout_create, rollout_execute
from tasks_app.calibration.rollouts.agent import AgentLimits, system_prompt
from tasks_app.calibration.rollouts.replays import perturbation_keys
from tasks_app.models import Rollout, RolloutPolicy, RolloutStatus
from tests.tasks_app.rollout_helpers import (
    ANSWER,
    RecordedSleep,
    backorder_task,
    endpoint_make,
    solving_script,
    world_make,
)
from world_app import store_rules
from world_app.models import Episode, EpisodeStep, Order
from world_app.tools.registry import tool_schemas

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def world():
    return world_make()


def run_model(server, version, *, sleep=None, **endpoint_fields) -> Rollout:
    endpoint = endpoint_make(server, **endpoint_fields)
    rollout = rollout_create(version=version, policy=RolloutPolicy.MODEL, endpoint=endpoint)
    client = endpoint_client(endpoint, sleep=sleep or RecordedSleep())
    return rollout_execute(rollout=rollout, client=client)


def test_the_system_prompt_states_the_policies_numbers():
    prompt = system_prompt()
    assert "Corecraft Computers" in prompt
    assert f"{store_rules.RETURN_WINDOW_DAYS} days" in prompt
    assert f"${store_rules.REFUND_APPROVAL_LIMIT}" in prompt
    assert f"{store_rules.RESTOCKING_FEE_PCT}%" in prompt
    assert "{" not in prompt  # every placeholder filled


def test_a_model_rollout_records_the_whole_conversation_and_is_judged(world, monkeypatch):
    monkeypatch.setenv("CORECRAFT_TEST_KEY", "sk-test-123")
    version = backorder_task(world).current_version
    with ScriptedLLMServer(solving_script(world.order.pk)) as server:
        rollout = run_model(server, version, api_key_env="CORECRAFT_TEST_KEY", sampling={"temperature": 0.2})
        requests = server.requests

    assert rollout.status == RolloutStatus.FINISHED and rollout.failure_reason == ""
    assert rollout.policy_label == "model:scripted" and rollout.policy == "model"
    assert rollout.final_answer == ANSWER
    assert (rollout.turns, rollout.prompt_tokens, rollout.completion_tokens) == (3, 300, 60)
    assert rollout.malformed_tool_calls == 0 and rollout.endpoint_retries == 0
    assert [m["role"] for m in rollout.messages] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                     "assistant"]  # fmt: skip
    assert rollout.messages[1]["content"] == version.instruction
    assert [(c["turn"], c["name"], c["is_error"]) for c in rollout.tool_calls] == [
        (1, "get_order_details", False),
        (2, "update_order_status", False),
    ]
    assert world.order.pk in json.dumps(rollout.tool_calls[0]["result"])
    assert all(c["latency_ms"] >= 0 for c in rollout.tool_calls) and rollout.latency_ms > 0
    assert json.loads(rollout.messages[3]["content"]) == rollout.tool_calls[0]["result"]
    # The model saw the contract's tools (23 world tools + ask_user), the system prompt and the instruction, and its
    # sampling parameters.
    assert len(requests) == 3
    assert requests[0]["tools"] == tool_schemas("openai") and len(requests[0]["tools"]) == 23 + 1
    assert [m["role"] for m in requests[0]["messages"]] == ["system", "user"]
    assert requests[0]["temperature"] == 0.2
    assert requests[2]["messages"][-1]["role"] == "tool"
    # What llama-cpp-python's server needs: tool_choice with the tools, and assistant turns resent with "" content.
    assert all(r["tool_choice"] == "auto" for r in requests)
    resent = [m for m in requests[2]["messages"] if m["role"] == "assistant"]
    assert len(resent) == 2 and all(m["content"] == "" and m["tool_calls"] for m in resent)
    # Judged from the episode's final world and the answer.
    assert [v["status"] for v in rollout.verdicts] == ["met", "met", "met"]
    assert rollout.reward == 1.0 and rollout.passed is True and rollout.judged_at is not None
    assert len(rollout.trajectory_hash) == 64
    episode = Episode.objects.get(pk=rollout.episode_id)
    assert episode.status == Episode.Status.CLOSED and episode.snapshot_id == version.snapshot_id
    assert list(EpisodeStep.objects.filter(episode=episode).values_list("name", flat=True)) == [
        "get_order_details",
        "update_order_status",
    ]
    assert Order.objects.get(pk=world.order.pk).status == "paid"  # the live world is untouched


def test_the_key_comes_from_the_environment_variable_the_endpoint_names(world, monkeypatch):
    monkeypatch.setenv("CORECRAFT_TEST_KEY", "sk-from-env")
    with ScriptedLLMServer([]) as server:
        endpoint = endpoint_make(server, api_key_env="CORECRAFT_TEST_KEY")
        assert endpoint_client(endpoint)._sdk.api_key == "sk-from-env"
        monkeypatch.delenv("CORECRAFT_TEST_KEY")
        assert endpoint_client(endpoint)._sdk.api_key == "not-needed"


def test_malformed_tool_calls_become_error_results_the_model_sees_and_are_counted(world):
    version = backorder_task(world).current_version
    order = world.order.pk
    script = [
        Reply(tool_calls=[
            ScriptedToolCall(name="teleport_order", arguments={"order_id": order}, id="bad1"),
            ScriptedToolCall(name="get_order_details", arguments='{"order_id": ', id="bad2"),
            ScriptedToolCall(name="get_order_details", arguments={"order": order}, id="bad3"),
            ScriptedToolCall(name="get_order_details", arguments="[1, 2]", id="bad4"),
            ScriptedToolCall(name="get_order_details", arguments={"order_id": order}, id="good"),
        ]),
        Reply(content="I could not change anything."),
    ]  # fmt: skip
    with ScriptedLLMServer(script) as server:
        rollout = run_model(server, version)
        second_request = server.requests[1]

    assert rollout.status == RolloutStatus.FINISHED
    assert rollout.malformed_tool_calls == 4
    assert [c["malformed"] for c in rollout.tool_calls] == [
        "unknown_tool", "invalid_json", "invalid_arguments", "invalid_arguments", "",
    ]  # fmt: skip
    assert [c["is_error"] for c in rollout.tool_calls] == [True, True, True, True, False]
    codes = [c["result"]["error"]["code"] for c in rollout.tool_calls[:4]]
    assert codes == ["unknown_tool", "invalid_arguments", "invalid_arguments", "invalid_arguments"]
    assert rollout.tool_calls[1]["arguments"] == '{"order_id": '  # kept as sent
    assert "order_id: required" in rollout.tool_calls[2]["result"]["error"]["message"]
    # The model is shown every error, answered to the call it made.
    tool_messages = [m for m in second_request["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["bad1", "bad2", "bad3", "bad4", "good"]
    assert "no tool named 'teleport_order'" in json.loads(tool_messages[0]["content"])["error"]["message"]
    # Malformed calls never reach the world; the good one does.
    assert list(EpisodeStep.objects.filter(episode_id=rollout.episode_id).values_list("name", flat=True)) == [
        "get_order_details"
    ]
    assert rollout.passed is False  # the order was never backordered


def test_endpoint_faults_are_retried_and_nothing_is_lost_or_counted_twice(world):
    version = backorder_task(world).current_version
    replies = solving_script(world.order.pk)
    script = [
        Fault(status=429, retry_after=0),
        Fault(status=500),
        replies[0],
        Fault(malformed=True),
        Fault(truncated=True),
        replies[1],
        Fault(status=503),
        replies[2],
    ]
    sleep = RecordedSleep()
    with ScriptedLLMServer(script) as server:
        rollout = run_model(server, version, sleep=sleep, max_retries=3)
        requests = server.requests

    assert rollout.status == RolloutStatus.FINISHED
    assert rollout.endpoint_retries == 5 and len(requests) == 8
    assert rollout.turns == 3
    assert (rollout.prompt_tokens, rollout.completion_tokens) == (300, 60)  # only the replies that arrived
    assert len(rollout.tool_calls) == 2 and rollout.passed is True
    assert sleep.calls[0] == 0.0  # Retry-After: 0 is honoured
    # Each retry resent the same conversation.
    assert requests[0]["messages"] == requests[1]["messages"] == requests[2]["messages"]
    assert requests[3]["messages"] == requests[4]["messages"] == requests[5]["messages"]


def test_an_endpoint_that_keeps_failing_fails_the_rollout_with_its_reason_and_keeps_what_came_before(world):
    version = backorder_task(world).current_version
    script = [solving_script(world.order.pk)[0], *[Fault(status=500)] * 3]
    with ScriptedLLMServer(script) as server:
        rollout = run_model(server, version, max_retries=2)
        assert server.remaining() == 0

    assert rollout.status == RolloutStatus.FAILED
    assert rollout.failure_reason.startswith("endpoint_error: server_error (HTTP 500) after 3 attempt(s)")
    assert rollout.endpoint_retries == 2
    assert rollout.turns == 1 and len(rollout.tool_calls) == 1
    assert [m["role"] for m in rollout.messages] == ["system", "user", "assistant", "tool"]
    assert rollout.reward is None and rollout.passed is None and rollout.verdicts == []
    assert Episode.objects.get(pk=rollout.episode_id).status == Episode.Status.CLOSED


def test_timeouts_are_retried_then_fail_the_rollout(world):
    version = backorder_task(world).current_version
    with ScriptedLLMServer([Fault(delay_s=1.0), Fault(delay_s=1.0)]) as server:
        rollout = run_model(server, version, max_retries=1, timeout_s=0.2)
    assert rollout.status == RolloutStatus.FAILED
    assert rollout.failure_reason.startswith("endpoint_error: timeout after 2 attempt(s)")
    assert rollout.endpoint_retries == 1 and rollout.turns == 0


def test_the_turn_limit_stops_a_model_that_never_answers_and_limits_are_not_sent(world):
    version = backorder_task(world).current_version
    lookup = ScriptedToolCall(name="get_order_details", arguments={"order_id": world.order.pk})
    script = [Reply(tool_calls=[lookup])] * 3
    sampling = {"max_turns": 2, "temperature": 0.0, "top_k": 20}
    with ScriptedLLMServer(script) as server:
        rollout = run_model(server, version, sampling=sampling)
        requests = server.requests

    assert rollout.status == RolloutStatus.FINISHED
    assert rollout.failure_reason == "max_turns: stopped without a final answer"
    assert rollout.turns == 2 and rollout.final_answer == "" and len(requests) == 2
    assert "max_turns" not in requests[0] and requests[0]["top_k"] == 20  # extras travel in extra_body
    assert rollout.passed is False  # judged: the job was not done


def test_sampling_splits_limits_from_request_parameters():
    sampling = {"temperature": 0.7, "max_tokens": 512, "min_p": 0.1, "max_turns": 5, "max_wall_s": 60}
    assert request_sampling(sampling) == {"temperature": 0.7, "max_tokens": 512, "extra_body": {"min_p": 0.1}}
    assert AgentLimits.from_sampling(sampling) == AgentLimits(max_turns=5, max_wall_s=60)


def test_an_endpoint_can_ask_for_the_compact_rendering_of_the_tools(world):
    version = backorder_task(world).current_version
    with ScriptedLLMServer(solving_script(world.order.pk)) as server:
        rollout = run_model(server, version, sampling={"tool_format": "compact", "temperature": 0.1})
        requests = server.requests
    assert requests[0]["tools"] == tool_schemas("compact") and "tool_format" not in requests[0]
    assert rollout.reward == 1.0  # the same tools: the same calls solve it
    assert request_sampling({"tool_format": "compact", "top_k": 5}) == {"extra_body": {"top_k": 5}}


def test_the_reference_policy_replays_the_solution_in_a_fresh_episode(world):
    version = backorder_task(world).current_version
    rollout = rollout_execute(rollout=rollout_create(version=version, policy=RolloutPolicy.REFERENCE))

    assert rollout.status == RolloutStatus.FINISHED
    assert rollout.policy_label == "reference" and rollout.endpoint is None
    assert [c["name"] for c in rollout.tool_calls] == ["get_order_details", "update_order_status"]
    assert rollout.final_answer == ANSWER and rollout.turns == 3
    assert rollout.prompt_tokens == 0 and rollout.completion_tokens == 0  # no model ran
    assert [m["role"] for m in rollout.messages][-1] == "assistant"
    assert rollout.reward == 1.0 and rollout.passed is True

    again = rollout_execute(rollout=rollout_create(version=version, policy=RolloutPolicy.REFERENCE))
    assert again.episode_id != rollout.episode_id
    assert again.trajectory_hash == rollout.trajectory_hash  # the same behaviour hashes the same


def test_a_perturbed_reference_records_its_fault_and_the_rubric_catches_it(world):
    version = backorder_task(world).current_version
    keys = perturbation_keys(version)
    drop = next(k for k in keys if k.startswith("drop_write"))
    rollout = rollout_execute(
        rollout=rollout_create(version=version, policy=RolloutPolicy.PERTURBED_REFERENCE, perturbation_key=drop)
    )
    assert rollout.status == RolloutStatus.FINISHED
    assert rollout.policy_label == f"perturbed_reference:{drop}"
    assert rollout.perturbation["key"] == drop and rollout.perturbation["description"]
    assert [c["name"] for c in rollout.tool_calls] == ["get_order_details"]
    assert rollout.verdicts[0]["status"] == "not_met" and rollout.passed is False


def test_an_unknown_perturbation_fails_the_rollout_with_its_reason(world):
    version = backorder_task(world).current_version
    rollout = rollout_execute(
        rollout=rollout_create(version=version, policy=RolloutPolicy.PERTURBED_REFERENCE, perturbation_key="nope[9]")
    )
    assert rollout.status == RolloutStatus.FAILED
    assert "no perturbation 'nope[9]'" in rollout.failure_reason
    assert Episode.objects.get(pk=rollout.episode_id).status == Episode.Status.CLOSED


def test_a_finished_rollout_is_never_run_again(world):
    version = backorder_task(world).current_version
    rollout = rollout_execute(rollout=rollout_create(version=version, policy=RolloutPolicy.REFERENCE))
    episodes = Episode.objects.count()
    again = rollout_execute(rollout=rollout)
    assert again.episode_id == rollout.episode_id and Episode.objects.count() == episodes


def test_test_connection_records_the_outcome_on_the_endpoint(world):
    with ScriptedLLMServer([Reply(content="ready"), Fault(status=401)]) as server:
        endpoint = endpoint_make(server)
        ok = model_endpoint_test(endpoint=endpoint)
        refused = model_endpoint_test(endpoint=endpoint)
        assert server.requests[0]["max_tokens"] == 8
    assert ok["ok"] is True and ok["reply"] == "ready"
    assert refused == {**refused, "ok": False, "reason": "client_error"}
    endpoint.refresh_from_db()
    assert endpoint.last_check["ok"] is False and endpoint.last_checked_at is not None
