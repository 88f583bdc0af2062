"""The agent loop: a Corecraft Computers support agent, a task's instruction and the contract's tools (23 world
tools and ask_user, a question to the person who sent the request), over a chat endpoint.

``agent_loop`` asks the model for a turn, runs each tool call it makes in the episode, shows it the results and
asks again, until the model answers without a tool call (the final answer) or a limit of turns, tokens or wall time
is reached. Everything is recorded as it happens: the conversation (OpenAI message format), each tool call with
its result, error flag and latency, token counts and retries, so a failure part-way keeps what came before.

A malformed tool call (an unknown tool, arguments that are not JSON, or arguments the tool's schema refuses)
never reaches the world: it becomes an error result the model sees, like any refusal, and is counted.
Endpoint faults are retried by :class:`~corecraft_site.llm.ChatClient` (backoff with jitter); when it gives up,
the loop stops with ``stop_reason="endpoint_error"`` and the error, and the caller fails the rollout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from corecraft_site.llm import ChatClient, EndpointError
from world_app import contract
from world_app.tools.registry import all_tools, get_tool, validation_error_result
from world_app.tools.results import ErrorCode, error_result

# The prompt, tools and limits are the agent contract (world_app.contract), the same for every consumer.
SYSTEM_PROMPT_TEMPLATE = contract.SYSTEM_PROMPT_TEMPLATE


def system_prompt() -> str:
    """The agent's system prompt: the contract's."""
    return contract.agent_contract().system_prompt


def initial_messages(instruction: str) -> list[dict[str, Any]]:
    """The conversation a rollout starts from: the contract's system prompt and the instruction as the user."""
    return contract.agent_contract().messages(instruction)


_LIMITS = contract.ContractLimits()


@dataclass(frozen=True)
class AgentLimits:
    """When the loop gives up without a final answer (the contract's limits unless an endpoint sets others)."""

    max_turns: int = _LIMITS.max_turns
    max_total_tokens: int = _LIMITS.max_total_tokens
    max_wall_s: float = _LIMITS.max_wall_s

    # Keys of an endpoint's ``sampling`` that set these limits instead of being sent to the model.
    KEYS = contract.LIMIT_KEYS

    @classmethod
    def from_sampling(cls, sampling: Mapping[str, Any]) -> AgentLimits:
        return cls(**{key: sampling[key] for key in cls.KEYS if sampling.get(key) is not None})


def endpoint_tools(sampling: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The contract's tools in the rendering the endpoint's ``sampling`` names (``tool_format``: ``openai`` by
    default, ``compact`` for a model with a short context: the same tools in fewer tokens)."""
    wanted = sampling.get(contract.TOOL_FORMAT_KEY) or "openai"
    if wanted not in contract.TOOL_FORMATS:
        raise ValueError(f"sampling.tool_format must be one of {contract.TOOL_FORMATS}, not {wanted!r}")
    return contract.agent_contract().tool_list(wanted)


STOP_FINAL_ANSWER = "final_answer"
STOP_ENDPOINT_ERROR = "endpoint_error"
LIMIT_STOPS = ("max_turns", "max_total_tokens", "max_wall_s")


@dataclass
class AgentRun:
    """What one run of the loop produced; filled as it goes, so a failure keeps everything before it."""

    messages: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str = ""
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed_tool_calls: int = 0
    endpoint_retries: int = 0
    model_latency_ms: float = 0.0
    latency_ms: float = 0.0
    stop_reason: str = ""
    error: EndpointError | None = None

    @property
    def failure_reason(self) -> str:
        """Why the run did not end with a final answer ("" when it did)."""
        if self.stop_reason == STOP_ENDPOINT_ERROR and self.error is not None:
            return f"endpoint_error: {self.error}"
        if self.stop_reason in LIMIT_STOPS:
            return f"{self.stop_reason}: stopped without a final answer"
        return ""


# Runs a tool in the episode: (name, arguments) -> (result, episode step seq or None).
ToolRunner = Callable[[str, dict[str, Any]], tuple[dict[str, Any], int | None]]


def _malformed(code: str, message: str, *, field: str | None = None, details: list | None = None) -> dict[str, Any]:
    return error_result(code, message, field=field, details=details)


def tool_call_check(name: str, arguments_raw: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """Parse and validate a tool call: (arguments, None, "") when it can run, else (arguments or None, error
    result for the model, malformed kind: ``unknown_tool`` | ``invalid_json`` | ``invalid_arguments``)."""
    found = get_tool(name)
    if found is None:
        names = ", ".join(t.name for t in all_tools())
        message = f"there is no tool named {name!r}; the tools are: {names}"
        return None, _malformed(ErrorCode.UNKNOWN_TOOL, message, field="name"), "unknown_tool"
    text = (arguments_raw or "").strip() or "{}"
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        message = f"the arguments of {name} are not valid JSON ({exc}); send a JSON object of named arguments"
        return None, _malformed(ErrorCode.INVALID_ARGUMENTS, message, field="arguments"), "invalid_json"
    if not isinstance(arguments, dict):
        message = f"the arguments of {name} must be a JSON object of named arguments"
        return None, _malformed(ErrorCode.INVALID_ARGUMENTS, message, field="arguments"), "invalid_arguments"
    try:
        found.params.model_validate(arguments)
    except ValidationError as exc:
        return arguments, validation_error_result(found, exc), "invalid_arguments"
    return arguments, None, ""


def _assistant_message(completion) -> dict[str, Any]:
    # "" rather than null: llama-cpp-python's server answers 500 to an assistant message whose content is null.
    message: dict[str, Any] = {"role": "assistant", "content": completion.content or ""}
    if completion.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_raw}}
            for call in completion.tool_calls
        ]
    return message


def agent_loop(
    *,
    client: ChatClient,
    instruction: str,
    run_tool: ToolRunner,
    tools: Sequence[Mapping[str, Any]] | None = None,
    sampling: Mapping[str, Any] | None = None,
    limits: AgentLimits | None = None,
    messages: list[dict[str, Any]] | None = None,
    clock: Callable[[], float] = time.monotonic,
    before_model_call: Callable[[], None] | None = None,
) -> AgentRun:
    """Run the model on ``instruction`` with the tools until a final answer or a limit; never raises for the
    endpoint (its failure is ``stop_reason="endpoint_error"`` with ``error`` set).

    ``before_model_call`` runs before each wait on the model (the rollout hands its database connection back
    to the pool there, so many concurrent rollouts need few connections)."""
    limits = limits or AgentLimits()
    tools = list(tools) if tools is not None else contract.agent_contract().tool_list()
    sampling = dict(sampling or {})
    run = AgentRun(messages=list(messages) if messages is not None else initial_messages(instruction))
    started = clock()
    try:
        while True:
            if run.turns >= limits.max_turns:
                run.stop_reason = "max_turns"
                break
            if run.prompt_tokens + run.completion_tokens >= limits.max_total_tokens:
                run.stop_reason = "max_total_tokens"
                break
            if clock() - started >= limits.max_wall_s:
                run.stop_reason = "max_wall_s"
                break
            if before_model_call is not None:
                before_model_call()
            try:
                completion = client.complete(messages=run.messages, tools=tools, **sampling)
            except EndpointError as error:
                run.endpoint_retries += max(error.attempts - 1, 0)
                run.error = error
                run.stop_reason = STOP_ENDPOINT_ERROR
                break
            run.turns += 1
            run.endpoint_retries += completion.attempts - 1
            run.prompt_tokens += completion.prompt_tokens or 0
            run.completion_tokens += completion.completion_tokens or 0
            run.model_latency_ms += completion.latency_ms
            run.messages.append(_assistant_message(completion))
            if not completion.tool_calls:
                run.final_answer = completion.content or ""
                run.stop_reason = STOP_FINAL_ANSWER
                break
            for call in completion.tool_calls:
                run.tool_calls.append(_tool_call(run, call, turn=run.turns, run_tool=run_tool, clock=clock))
    finally:
        run.latency_ms = (clock() - started) * 1000
    return run


def _tool_call(run: AgentRun, call, *, turn: int, run_tool: ToolRunner, clock) -> dict[str, Any]:
    began = clock()
    arguments, refusal, malformed = tool_call_check(call.name, call.arguments_raw)
    seq = None
    if refusal is None:
        result, seq = run_tool(call.name, arguments)
    else:
        result = refusal
        run.malformed_tool_calls += 1
    latency_ms = (clock() - began) * 1000
    run.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, sort_keys=True)})
    return {
        "turn": turn,
        "id": call.id,
        "name": call.name,
        "arguments": arguments if arguments is not None else call.arguments_raw,
        "result": result,
        "is_error": isinstance(result, dict) and "error" in result,
        "malformed": malformed,
        "latency_ms": round(latency_ms, 3),
        "step": seq,
    }
