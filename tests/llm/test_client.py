"""ChatClient against the real scripted OpenAI-compatible server over loopback: replies, tool calls, retries, faults."""

import json
import random

import openai
import pytest

from corecraft_site.llm import ChatClient, EndpointError, RetryPolicy
from corecraft_site.llm.client import parse_retry_after
from corecraft_site.llm.scripted_server import Fault, Reply, ScriptedLLMServer, ScriptedToolCall, script_from_json

MESSAGES = [{"role": "system", "content": "You are Corecraft support."}, {"role": "user", "content": "Order status?"}]
LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "order_lookup",
        "description": "Look up an order by id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
}


class RecordedSleep:
    """Stands in for time.sleep so retry tests take no wall time and show the waits chosen."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make_client(server: ScriptedLLMServer, sleep: RecordedSleep, *, model: str = "scripted", **retry) -> ChatClient:
    policy = RetryPolicy(**{"max_attempts": 3, "base_s": 0.1, "cap_s": 1.0, **retry})
    return ChatClient(
        base_url=server.base_url, model=model, timeout_s=0.3, retry=policy, sleep=sleep, rng=random.Random(1)
    )


def test_plain_reply_with_usage_and_latency():
    sleep = RecordedSleep()
    with ScriptedLLMServer([Reply(content="Your order shipped.", prompt_tokens=42, completion_tokens=4)]) as server:
        completion = make_client(server, sleep).complete(messages=MESSAGES)

    assert completion.content == "Your order shipped."
    assert completion.tool_calls == ()
    assert completion.finish_reason == "stop"
    assert (completion.prompt_tokens, completion.completion_tokens) == (42, 4)
    assert completion.latency_ms > 0
    assert completion.attempts == 1
    assert sleep.calls == []


def test_tool_call_parsed_with_raw_arguments():
    raw_arguments = '{"order_id": "ord_00017"}'
    script = [Reply(tool_calls=[ScriptedToolCall(name="order_lookup", arguments=raw_arguments, id="call_1")])]
    with ScriptedLLMServer(script) as server:
        completion = make_client(server, RecordedSleep()).complete(messages=MESSAGES, tools=[LOOKUP_TOOL])

    assert completion.finish_reason == "tool_calls"
    assert completion.content is None
    [call] = completion.tool_calls
    assert (call.id, call.name, call.arguments_raw) == ("call_1", "order_lookup", raw_arguments)


def test_invalid_tool_arguments_are_kept_raw():
    script = [Reply(tool_calls=[ScriptedToolCall(name="order_lookup", arguments='{"order_id": ')])]
    with ScriptedLLMServer(script) as server:
        completion = make_client(server, RecordedSleep()).complete(messages=MESSAGES, tools=[LOOKUP_TOOL])

    assert completion.tool_calls[0].arguments_raw == '{"order_id": '


def test_request_records_tools_and_sampling_passed_through():
    with ScriptedLLMServer([Reply(content="ok")]) as server:
        make_client(server, RecordedSleep(), model="qwen-7b").complete(
            messages=MESSAGES, tools=[LOOKUP_TOOL], temperature=0.2, top_p=0.9, max_tokens=64, seed=7
        )

    [request] = server.requests
    assert request["model"] == "qwen-7b"
    assert request["messages"] == MESSAGES
    assert request["tools"] == [LOOKUP_TOOL]
    assert (request["temperature"], request["top_p"], request["max_tokens"], request["seed"]) == (0.2, 0.9, 64, 7)
    assert request["tool_choice"] == "auto"  # llama-cpp-python's server drops tools sent without it


def test_the_same_tools_list_is_sent_every_turn_and_another_list_as_it_is():
    script = [Reply(content="one"), Reply(content="two"), Reply(content="three")]
    other = [{**LOOKUP_TOOL, "function": {**LOOKUP_TOOL["function"], "name": "order_find"}}]
    with ScriptedLLMServer(script) as server:
        client = make_client(server, RecordedSleep())
        tools = [LOOKUP_TOOL]
        client.complete(messages=MESSAGES, tools=tools)
        client.complete(messages=MESSAGES, tools=tools)
        client.complete(messages=MESSAGES, tools=other)

    sent = [request["tools"] for request in server.requests]
    assert sent == [[LOOKUP_TOOL], [LOOKUP_TOOL], other]
    assert all(request["tool_choice"] == "auto" and request["model"] == "scripted" for request in server.requests)


def test_tool_choice_only_with_tools_and_the_callers_choice_wins():
    with ScriptedLLMServer([Reply(content="a"), Reply(content="b")]) as server:
        client = make_client(server, RecordedSleep())
        client.complete(messages=MESSAGES)
        client.complete(messages=MESSAGES, tools=[LOOKUP_TOOL], tool_choice="required")

    plain, forced = server.requests
    assert "tool_choice" not in plain and "tools" not in plain
    assert forced["tool_choice"] == "required"


def test_429_then_success_honours_retry_after():
    sleep = RecordedSleep()
    with ScriptedLLMServer([Fault(status=429, retry_after=3), Reply(content="ok")]) as server:
        completion = make_client(server, sleep).complete(messages=MESSAGES)

    assert completion.content == "ok"
    assert completion.attempts == 2
    assert sleep.calls == [3.0]
    assert len(server.requests) == 2


def test_retry_after_is_capped():
    sleep = RecordedSleep()
    with ScriptedLLMServer([Fault(status=429, retry_after=3600), Reply(content="ok")]) as server:
        make_client(server, sleep, retry_after_cap_s=5.0).complete(messages=MESSAGES)

    assert sleep.calls == [5.0]


def test_server_errors_exhaust_retries_with_jittered_backoff():
    sleep = RecordedSleep()
    script = [Fault(status=500), Fault(status=503), Fault(status=500)]
    with ScriptedLLMServer(script) as server, pytest.raises(EndpointError) as caught:
        make_client(server, sleep).complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.status, caught.value.attempts) == ("server_error", 500, 3)
    assert "server_error (HTTP 500) after 3 attempt(s)" in str(caught.value)
    assert len(server.requests) == 3
    # Full jitter: each wait lies in [0, min(cap, base * 2**(n-1))].
    assert len(sleep.calls) == 2
    assert 0 <= sleep.calls[0] <= 0.1
    assert 0 <= sleep.calls[1] <= 0.2


def test_timeout_is_retried_then_succeeds():
    sleep = RecordedSleep()
    with ScriptedLLMServer([Fault(delay_s=1.0), Reply(content="late but fine")]) as server:
        completion = make_client(server, sleep).complete(messages=MESSAGES)

    assert completion.content == "late but fine"
    assert completion.attempts == 2
    assert len(sleep.calls) == 1


def test_timeouts_exhausted_raise_timeout():
    with ScriptedLLMServer([Fault(delay_s=1.0), Fault(delay_s=1.0)]) as server, pytest.raises(EndpointError) as caught:
        make_client(server, RecordedSleep(), max_attempts=2).complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.status, caught.value.attempts) == ("timeout", None, 2)


def test_malformed_then_truncated_then_success():
    sleep = RecordedSleep()
    with ScriptedLLMServer([Fault(malformed=True), Fault(truncated=True), Reply(content="ok")]) as server:
        completion = make_client(server, sleep).complete(messages=MESSAGES)

    assert completion.content == "ok"
    assert completion.attempts == 3


def test_malformed_exhausted_raises_malformed_response():
    with ScriptedLLMServer([Fault(malformed=True)] * 3) as server, pytest.raises(EndpointError) as caught:
        make_client(server, RecordedSleep()).complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.attempts) == ("malformed_response", 3)


def test_400_is_not_retried():
    sleep = RecordedSleep()
    script = [Fault(status=400), Reply(content="never reached")]
    with ScriptedLLMServer(script) as server, pytest.raises(EndpointError) as caught:
        make_client(server, sleep).complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.status, caught.value.attempts) == ("client_error", 400, 1)
    assert caught.value.detail == "Error code: 400 - scripted fault 400"  # the server's own words
    assert sleep.calls == []
    assert server.remaining() == 1


def test_connection_refused_is_retried_then_raised():
    server = ScriptedLLMServer([])
    with server:
        base_url = server.base_url
    client = ChatClient(
        base_url=base_url, model="scripted", timeout_s=0.3, retry=RetryPolicy(max_attempts=2), sleep=RecordedSleep()
    )

    with pytest.raises(EndpointError) as caught:
        client.complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.attempts) == ("connection_error", 2)


def test_scripts_per_model_share_one_server():
    script = {"agent": [Reply(content="agent turn")], "judge": [Reply(content="PASS")]}
    with ScriptedLLMServer(script) as server:
        judge = make_client(server, RecordedSleep(), model="judge").complete(messages=MESSAGES)
        agent = make_client(server, RecordedSleep(), model="agent").complete(messages=MESSAGES)
        with pytest.raises(EndpointError) as caught:
            make_client(server, RecordedSleep(), model="other").complete(messages=MESSAGES)
        models = openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0).models.list()

    assert (judge.content, agent.content) == ("PASS", "agent turn")
    assert (caught.value.reason, caught.value.status) == ("client_error", 404)
    assert [model.id for model in models] == ["agent", "judge"]


def test_exhausted_script_answers_410():
    with ScriptedLLMServer([]) as server, pytest.raises(EndpointError) as caught:
        make_client(server, RecordedSleep()).complete(messages=MESSAGES)

    assert (caught.value.reason, caught.value.status) == ("client_error", 410)


def test_script_from_json_round_trip(tmp_path):
    data = [
        {"fault": {"status": 429, "retry_after": "0"}},
        {"reply": {"tool_calls": [{"name": "order_lookup", "arguments": {"order_id": "ord_1"}}]}},
    ]
    script = script_from_json(json.loads(json.dumps(data)))
    with ScriptedLLMServer(script) as server:
        completion = make_client(server, RecordedSleep()).complete(messages=MESSAGES)

    assert completion.attempts == 2
    assert json.loads(completion.tool_calls[0].arguments_raw) == {"order_id": "ord_1"}


def test_fault_needs_exactly_one_kind():
    with pytest.raises(ValueError, match="exactly one"):
        Fault(status=500, malformed=True)
    with pytest.raises(ValueError, match="HTTP error"):
        Fault(status=200)


def test_parse_retry_after_forms():
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
