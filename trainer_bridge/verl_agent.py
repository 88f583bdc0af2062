"""verl adapters: a per-episode agent loop, a ``compute_score`` for ``custom_reward_function``, and the tool class.

No Django here, and verl is imported only when verl asks for one of its classes (``CorecraftAgentLoop``,
``CorecraftTool`` are built on first attribute access), so this module imports anywhere.

Why an agent loop of our own: verl's stock ``ToolAgentLoop`` (``verl/experimental/agent_loop/tool_agent_loop.py``)
calls ``tool.create()``, ``tool.execute()`` and ``tool.release()`` around *every* tool call, so a tool instance
lives for one call and cannot hold an episode's state; the rows of a GRPO group also share one ``tools_kwargs``.
Our state lives in a Corecraft episode on the server instead: ``CorecraftAgentLoop.run`` (``AgentLoopBase``,
registered as ``corecraft_agent`` through ``configs/verl_agent_loop.yaml``, which verl reads from
``actor_rollout_ref.rollout.agent.agent_loop_config_path``) opens one episode per rollout from the row's
``extra_info`` (``release``, ``row_id``, as the verl-parquet export writes them), runs every tool call of every turn
in it, finishes it with the final assistant message and returns ``reward_score``. The tools go into the prompt in
the rendering the verl config names (``corecraft.tool_format``: ``compact``, the contract's compact rendering,
as ``configs/verl_grpo.yaml`` sets it so prompts fit; ``full`` without it). ``compute_score`` scores a
rollout for verl's reward manager (and reads back the loop's reward when the loop already finished the episode).

The logic that does not need verl (``EpisodeDriver``, ``final_answer_from_text``, ``parse_tool_calls``,
``compute_score``) is plain Python and tested without verl.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainer_bridge.client import CorecraftClient, EpisodeOpened, Reward
from world_app.contract import compact_tools

__all__ = [
    "AGENT_NAME",
    "EpisodeDriver",
    "compute_score",
    "final_answer_from_text",
    "parse_tool_calls",
    "prompt_tools",
    "token_ids",
]
TOOL_FORMATS = ("full", "compact")


def prompt_tools(tools: list[dict], config: Any = None) -> list[dict]:
    """The tools as the prompt renders them: the verl config's ``corecraft.tool_format`` (``compact``: the agent
    contract's compact rendering, same tools and meaning in fewer tokens; ``full`` or absent: as the release froze
    them). Tool calls and rewards are the same either way."""
    section = _config_get(config, "corecraft")
    wanted = str(_config_get(section, "tool_format") or "full")
    if wanted not in TOOL_FORMATS:
        raise ValueError(f"corecraft.tool_format must be one of {TOOL_FORMATS}, not {wanted!r}")
    return compact_tools(tools) if wanted == "compact" else list(tools)


def _config_get(node: Any, key: str) -> Any:
    if node is None:
        return None
    if isinstance(node, Mapping):
        return node.get(key)
    return getattr(node, key, None)


logger = logging.getLogger(__name__)

AGENT_NAME = "corecraft_agent"
EPISODE_KEY = "corecraft_episode_id"
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_BLOCKS = re.compile(r"<(think|tool_call|tool_response)>.*?</\1>", re.DOTALL)
_SPECIAL = re.compile(r"<\|[^|>]{1,40}\|>")
_ASSISTANT_TURN = re.compile(r"<\|im_start\|>assistant\s*")


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict
    error: str = ""


def parse_tool_calls(text: str) -> list[ParsedCall]:
    """Hermes-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks in a model's text.

    A malformed block is kept as a call with ``error`` set, so the model is told what was wrong.
    """
    calls = []
    for body in _TOOL_CALL.findall(text):
        try:
            payload = json.loads(body)
        except ValueError as exc:
            calls.append(ParsedCall("", {}, f"the tool call is not valid JSON: {exc}"))
            continue
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            calls.append(ParsedCall("", {}, 'a tool call is {"name": ..., "arguments": {...}}'))
            continue
        arguments = payload.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                calls.append(ParsedCall(payload["name"], {}, "the arguments are not valid JSON"))
                continue
        calls.append(ParsedCall(payload["name"], arguments if isinstance(arguments, dict) else {"value": arguments}))
    return calls


def final_answer_from_text(text: str) -> str:
    """The final answer in a decoded response: the last assistant turn, without reasoning, tool blocks or
    chat-template tokens."""
    turns = _ASSISTANT_TURN.split(text)
    last = turns[-1] if turns else text
    last = _BLOCKS.sub("", last)
    last = _SPECIAL.sub("", last)
    return last.strip()


@dataclass
class EpisodeDriver:
    """One rollout's episode on the server: open it, run tool calls, finish it. The state lives server-side, so
    any process (a verl worker, a reward worker) can drive it by id."""

    client: CorecraftClient
    release: str
    row_id: int
    on_pending: str = "partial"
    reward_options: dict | None = None  # None: the client's (CORECRAFT_RUBRIC_DROPOUT / _SEED by default)
    episode: EpisodeOpened | None = None
    outcome: Reward | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    transcript: list[dict] = field(default_factory=list)

    def open(self) -> EpisodeOpened:
        self.episode = self.client.create_episode(release=self.release, row_id=self.row_id)
        return self.episode

    def call(self, call: ParsedCall) -> str:
        """Run one parsed call; the text the model reads back (an error result included)."""
        if self.episode is None:
            raise RuntimeError("open() the episode first")
        self.tool_calls += 1
        if call.error:
            self.tool_errors += 1
            text = json.dumps({"error": {"code": "malformed_tool_call", "message": call.error}})
        else:
            outcome = self.client.call_tool(self.episode.episode_id, call.name, call.arguments)
            self.tool_errors += outcome.is_error
            text = outcome.as_text()
        self.transcript.append({"role": "tool", "name": call.name, "content": text})
        return text

    def finish(self, final_answer: str, messages: list[dict] | None = None) -> Reward:
        if self.episode is None:
            raise RuntimeError("open() the episode first")
        options = {} if self.reward_options is None else {"reward_options": self.reward_options}
        self.outcome = self.client.finish(
            self.episode.episode_id, final_answer=final_answer, messages=messages, **options
        )
        return self.outcome

    def reward_value(self) -> float | None:
        return None if self.outcome is None else self.outcome.value(on_pending=self.on_pending)


# --- compute_score (custom_reward_function) --------------------------------------------------------------------

_default_client: CorecraftClient | None = None


def _client() -> CorecraftClient:
    global _default_client
    if _default_client is None:
        _default_client = CorecraftClient.from_env()
    return _default_client


def _score(outcome: Reward, on_pending: str) -> dict:
    value = outcome.value(on_pending=on_pending)
    return {
        "score": 0.0 if value is None else value,
        "passed": 1.0 if outcome.passed else 0.0,
        "reward_final": 1.0 if outcome.final else 0.0,
    }


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    **kwargs: Any,
) -> dict:
    """verl ``custom_reward_function``: the rollout's reward from our API, as ``{"score", "passed", "reward_final"}``.

    When ``extra_info`` names the episode the agent loop ran (``corecraft_episode_id``), its judgement is read
    back (finishing it with the response's final answer if the loop did not). Otherwise (a rollout without our
    agent loop) an episode is opened for ``extra_info``'s ``release`` / ``row_id`` and finished with the final
    answer at once: only the answer and the untouched world are judged then. ``ground_truth`` is not used: the
    rubric frozen in the release is the ground truth, and it stays on the server.
    """
    info = dict(extra_info or {})
    on_pending = os.environ.get("CORECRAFT_ON_PENDING", "partial")
    client = kwargs.get("client") or _client()
    answer = final_answer_from_text(solution_str or "")
    episode_id = info.get(EPISODE_KEY) or kwargs.get(EPISODE_KEY)
    if episode_id:
        current = client.episode(str(episode_id))
        if current.status == "finished":
            return _score(current, on_pending)
        return _score(client.finish(str(episode_id), final_answer=answer), on_pending)
    release, row_id = info.get("release"), info.get("row_id")
    if not release or row_id is None:
        raise ValueError("extra_info needs `release` and `row_id` (the verl-parquet export writes them)")
    opened = client.create_episode(release=str(release), row_id=int(row_id))
    return _score(client.finish(opened.episode_id, final_answer=answer), on_pending)


# --- verl classes, built when verl asks for them --------------------------------------------------------------


def token_ids(encoded: Any) -> list[int]:
    """Token ids from whatever ``apply_chat_template(tokenize=True)`` returns: a list of ids, a batch of one, or
    (transformers 5) a ``BatchEncoding``, a mapping whose iteration gives its keys, not ids."""
    if isinstance(encoded, Mapping) or hasattr(encoded, "keys"):
        encoded = encoded["input_ids"]
    if hasattr(encoded, "tolist"):
        encoded = encoded.tolist()
    encoded = list(encoded)
    if encoded and isinstance(encoded[0], list | tuple):
        if len(encoded) != 1:
            raise ValueError(f"expected the ids of one conversation, got a batch of {len(encoded)}")
        encoded = list(encoded[0])
    if not all(isinstance(i, int) for i in encoded):
        raise TypeError(f"not token ids: {encoded[:3]!r}")
    return encoded


class PromptTooLong(ValueError):
    """The rendered prompt (instruction, tool schemas, system prompt) does not fit ``rollout.prompt_length``."""


def _build_agent_loop() -> type:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

    class CorecraftAgentLoop(AgentLoopBase):
        """Multi-turn tool use in one Corecraft episode per rollout; the reward comes from our finish endpoint."""

        client: CorecraftClient | None = None

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
            rollout = self.config.actor_rollout_ref.rollout
            multi_turn = getattr(rollout, "multi_turn", None)
            max_turns = int(getattr(multi_turn, "max_assistant_turns", None) or 0)
            response_length = int(rollout.response_length)
            info = dict(kwargs.get("extra_info") or {})
            driver = EpisodeDriver(
                type(self).client or _client(),
                release=str(info["release"]),
                row_id=int(info["row_id"]),
                on_pending=os.environ.get("CORECRAFT_ON_PENDING", "partial"),
            )
            opened = await self.loop.run_in_executor(None, driver.open)
            max_turns = max_turns or opened.max_turns or 30
            messages = list(kwargs.get("raw_prompt") or [{"role": "user", "content": opened.instruction}])
            tools = prompt_tools(opened.tools, self.config)
            prompt_ids = await self._template(messages, tools=tools, add_generation_prompt=True)
            prompt_length = int(getattr(rollout, "prompt_length", 0) or 0)
            if prompt_length and len(prompt_ids) > prompt_length:
                # verl pads every prompt to prompt_length and concatenates the batch: a longer one would crash the
                # step, and cutting it would cut the tool schemas or the system prompt. Say which setting to raise.
                raise PromptTooLong(
                    f"release {opened.release} row {opened.row_id}: the prompt is {len(prompt_ids)} tokens "
                    f"(instruction and {len(opened.tools)} tool schemas), over actor_rollout_ref.rollout.prompt_length="
                    f"{prompt_length}; raise it and data.max_prompt_length (see trainer_bridge/configs/verl_grpo.yaml)"
                )
            sequence = list(prompt_ids)
            response_mask: list[int] = []
            final_answer, turns = "", 0
            while True:
                output = await self.server_manager.generate(
                    request_id=opened.episode_id, prompt_ids=sequence, sampling_params=sampling_params
                )
                response_ids = list(getattr(output, "token_ids", output))
                sequence += response_ids
                response_mask += [1] * len(response_ids)
                turns += 1
                text = self.tokenizer.decode(response_ids, skip_special_tokens=False)
                calls = parse_tool_calls(text)
                messages.append({"role": "assistant", "content": text})
                if not calls or turns >= max_turns or len(response_mask) >= response_length:
                    final_answer = final_answer_from_text(text)
                    break
                results = []
                for call in calls:
                    results.append(await self.loop.run_in_executor(None, driver.call, call))
                tool_messages = [{"role": "tool", "content": r} for r in results]
                messages.extend(tool_messages)
                tool_ids = await self._tool_suffix(tool_messages)
                if len(response_mask) + len(tool_ids) >= response_length:
                    final_answer = final_answer_from_text(text)
                    break
                sequence += tool_ids
                response_mask += [0] * len(tool_ids)
            outcome = await self.loop.run_in_executor(None, driver.finish, final_answer, messages)
            response_ids = sequence[len(prompt_ids) :]
            return AgentLoopOutput(
                prompt_ids=list(prompt_ids),
                response_ids=response_ids[:response_length],
                response_mask=response_mask[:response_length],
                reward_score=driver.reward_value(),
                num_turns=turns * 2 + 1,
                metrics={},
                extra_fields={
                    EPISODE_KEY: opened.episode_id,
                    "corecraft_passed": bool(outcome.passed),
                    "corecraft_reward_final": outcome.final,
                    "corecraft_tool_calls": driver.tool_calls,
                    "corecraft_tool_errors": driver.tool_errors,
                },
            )

        async def _template(self, messages: list[dict], **kwargs: Any) -> list[int]:
            encoded = await self.loop.run_in_executor(
                None, lambda: self.tokenizer.apply_chat_template(messages, tokenize=True, **kwargs)
            )
            return token_ids(encoded)

        async def _tool_suffix(self, tool_messages: list[dict]) -> list[int]:
            # The template of tool messages alone, minus the template of nothing: just the tool turn's tokens.
            base = await self._template([{"role": "system", "content": ""}], add_generation_prompt=False)
            full = await self._template([{"role": "system", "content": ""}, *tool_messages], add_generation_prompt=True)
            return full[len(base) :]

    # Built inside a function, but registered (and found by hydra) under its module-level name: verl's
    # ``register`` records ``__module__.__qualname__``, and a ``<locals>`` target cannot be instantiated.
    CorecraftAgentLoop.__module__ = __name__
    CorecraftAgentLoop.__qualname__ = "CorecraftAgentLoop"
    register(AGENT_NAME)(CorecraftAgentLoop)
    return CorecraftAgentLoop


def _build_tool() -> type:
    from verl.tools.base_tool import BaseTool

    class CorecraftTool(BaseTool):
        """One Corecraft tool for verl's tool interface. Its state is the episode named in ``create_kwargs``
        (``episode_id``): verl's stock loop creates and releases a tool per call, so the episode must outlive it."""

        client: CorecraftClient | None = None

        def __init__(self, config: dict, tool_schema: Any):
            super().__init__(config, tool_schema)
            self._episodes: dict[str, str] = {}

        async def create(self, instance_id: str | None = None, **kwargs: Any) -> Any:
            create_kwargs = kwargs.get("create_kwargs") or kwargs
            episode_id = create_kwargs.get("episode_id")
            if not episode_id:
                raise ValueError(
                    f"CorecraftTool needs create_kwargs.episode_id; run rollouts with agent_name {AGENT_NAME!r}"
                )
            instance_id = instance_id or str(episode_id)
            self._episodes[instance_id] = str(episode_id)
            return instance_id, None

        async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> Any:
            client = type(self).client or _client()
            outcome = client.call_tool(self._episodes[instance_id], self.name, parameters)
            try:
                from verl.tools.schemas import ToolResponse

                return ToolResponse(text=outcome.as_text()), 0.0, {"is_error": outcome.is_error}
            except ImportError:
                return outcome.as_text(), 0.0, {"is_error": outcome.is_error}

        async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
            client = type(self).client or _client()
            value = client.episode(self._episodes[instance_id]).value(on_pending="none")
            return 0.0 if value is None else value

        async def release(self, instance_id: str, **kwargs: Any) -> None:
            # The episode is the rollout's, not the call's: it is finished by the agent loop, never here.
            self._episodes.pop(instance_id, None)

    return CorecraftTool


_BUILDERS = {"CorecraftAgentLoop": _build_agent_loop, "CorecraftTool": _build_tool}
_built: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        if name not in _built:
            _built[name] = _BUILDERS[name]()
        return _built[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
