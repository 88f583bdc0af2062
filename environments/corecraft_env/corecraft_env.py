"""Corecraft Studio as a verifiers environment (classic API, verifiers 0.3.1): ``vf-eval corecraft-env``.

Each example is a row of a frozen release, read through the export API; each rollout opens its own episode for
the row through the trainer API (a private copy of the world on the row's snapshot), the model's tool calls run in
it, and the reward is the row's frozen rubric judging the episode with the model's last message as the final
answer: exactly what ``POST /api/v1/rollouts/episodes/<id>/finish/`` returns to any trainer for that trajectory.

    vf-eval corecraft-env -a '{"release": "r1"}' -m <model> -b http://127.0.0.1:8080/v1 -n 5 -r 4

Environment arguments: ``release`` (slug, required), ``split`` (train; holdout needs an eval:read token),
``api_url`` / ``token`` (default ``CORECRAFT_API_URL`` / ``CORECRAFT_API_TOKEN``; the token needs train:read,
episodes and reward), ``num_examples`` (-1: all), ``max_turns`` (default: each row's, as the contract sets it),
``on_pending`` (``partial``: a reward whose llm criteria had no judge is its partial reward; ``zero``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.types import ToolMessage
from verifiers.utils.message_utils import normalize_messages

from trainer_bridge.client import CorecraftClient, EpisodeOpened, Reward

EPISODE_KEY = "corecraft_episode"
OUTCOME_KEY = "corecraft_outcome"


def tool_def(schema: dict) -> dict:
    """An OpenAI ``tools`` entry as verifiers' provider-agnostic tool definition."""
    function = schema.get("function", schema)
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "parameters": function["parameters"],
    }


def message_text(message: Any) -> str:
    content = getattr(message, "content", None) if not isinstance(message, dict) else message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else getattr(p, "text", "") for p in content]
        return "".join(parts)
    return ""


def final_answer(completion: Any) -> str:
    """The model's final answer: its last assistant message's text."""
    for message in reversed(completion or []):
        role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
        if role == "assistant":
            return message_text(message)
    return ""


class CorecraftEnv(vf.MultiTurnEnv):
    """One Corecraft episode per rollout; tools run in it; the rubric is the row's, judged by the server."""

    def __init__(self, client: CorecraftClient, *, on_pending: str = "partial", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.on_pending = on_pending

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"]
        opened: EpisodeOpened = await asyncio.to_thread(
            self.client.create_episode, release=info["release"], row_id=int(info["row_id"])
        )
        state[EPISODE_KEY] = opened.episode_id
        if opened.messages:
            # The agent contract's conversation, as the trainer API opens it: its system prompt, then the instruction.
            state["prompt"] = normalize_messages(opened.messages, field_name="input.prompt")
        return state

    @vf.stop
    async def no_tools_called(self, state: vf.State) -> bool:
        if not state["trajectory"]:
            return False
        last = state["trajectory"][-1]["completion"][-1]
        return getattr(last, "role", None) == "assistant" and not getattr(last, "tool_calls", None)

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        replies = []
        for call in getattr(messages[-1], "tool_calls", None) or []:
            try:
                arguments = json.loads(call.arguments or "{}")
            except ValueError as exc:
                text = json.dumps(
                    {"error": {"code": "malformed_tool_call", "message": f"arguments are not JSON: {exc}"}}
                )
            else:
                outcome = await asyncio.to_thread(self.client.call_tool, state[EPISODE_KEY], call.name, arguments)
                text = outcome.as_text()
            replies.append(ToolMessage(role="tool", content=text, tool_call_id=call.id))
        return replies


def corecraft_rubric(client: CorecraftClient, on_pending: str) -> vf.Rubric:
    async def corecraft_reward(completion, state, **kwargs) -> float:
        """Finish the episode with the final answer: the row's frozen rubric judges it on the server."""
        episode_id = state.get(EPISODE_KEY)
        if not episode_id:
            return 0.0
        outcome: Reward = await asyncio.to_thread(client.finish, episode_id, final_answer=final_answer(completion))
        state[OUTCOME_KEY] = {
            "episode_id": episode_id,
            "reward": outcome.reward,
            "partial_reward": outcome.partial_reward,
            "passed": outcome.passed,
            "final": outcome.final,
            "trajectory_hash": outcome.trajectory_hash,
        }
        value = outcome.value(on_pending=on_pending)
        return 0.0 if value is None else float(value)

    return vf.Rubric(funcs=[corecraft_reward], weights=[1.0])


def load_environment(
    release: str,
    split: str = "train",
    api_url: str | None = None,
    token: str | None = None,
    num_examples: int = -1,
    max_turns: int | None = None,
    on_pending: str = "partial",
    **kwargs: Any,
) -> vf.Environment:
    client = CorecraftClient(api_url, token) if api_url or token else CorecraftClient.from_env()
    rows = []
    for row in client.rows(release, split=split):
        rows.append(row)
        if 0 < num_examples <= len(rows):
            break
    if not rows:
        raise ValueError(f"release {release!r} has no {split} rows this token can read")
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": row.instruction}],
                "answer": "",
                "task": "corecraft",
                # A JSON string: rows offer different tools, and verifiers parses it back per rollout.
                "info": json.dumps(
                    {
                        "release": release,
                        "row_id": row.row_id,
                        "split": row.split,
                        "tool_defs": [tool_def(t) for t in row.tools],
                    }
                ),
            }
            for row in rows
        ]
    )
    turns = max_turns or max(int((row.metadata or {}).get("max_turns") or 0) for row in rows) or 30
    return CorecraftEnv(
        client,
        on_pending=on_pending,
        dataset=dataset,
        eval_dataset=dataset,
        rubric=corecraft_rubric(client, on_pending),
        max_turns=turns,
        **kwargs,
    )
