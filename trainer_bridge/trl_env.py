"""TRL adapters: an environment class for ``GRPOTrainer(environment_factory=...)`` and a plain reward function.

No Django and no TRL import here: TRL calls into these, so a training job imports them next to TRL.

The interface followed (TRL's "OpenEnv Integration" guide, ``docs/source/openenv.md``, section "How
environment_factory works", and ``GRPOTrainer``'s docstring, ``trl/trainer/grpo_trainer.py``, TRL 1.16):

- ``environment_factory`` is a class the trainer instantiates with no arguments, one instance per rollout of a
  batch; instances are pooled and reused, so ``reset(**kwargs)`` is called at the start of every episode with the
  dataset row's columns as keyword arguments. It returns ``None`` or a string appended to the last user message.
- Every public method other than ``reset`` and ``get_reward`` is exposed to the model as a tool; its schema comes
  from its type hints and its Google-style docstring (``Args:``), via ``transformers.utils.get_json_schema``. The
  trainer calls a tool with the model's arguments as keywords and feeds ``str(result)`` back as the tool message;
  an exception becomes ``{"error": ...}``.
- Reward functions are called as ``f(prompts=..., completions=..., <dataset columns as lists>, environments=...,
  trainer_state=..., ...)`` and return one float (or None) per completion.
- When the environment defines ``get_reward()`` (no argument), it owns the reward: the trainer adds it as an extra
  reward source (weight 1).

Here: ``CorecraftEnv`` opens a Corecraft episode for the row (dataset columns ``release`` and ``row_id``, as the
HF/TRL export writes them) in ``reset``; the contract's tools (23 world tools and ask_user) are generated as
methods from their schemas; the final answer
is the model's last assistant message, so the reward comes from ``corecraft_reward`` (``reward_funcs``), which
finishes the group's episodes in one ``/api/v1/rewards/batch/`` call. ``CorecraftSubmitEnv`` instead gives the model a
``submit_answer`` tool and owns its reward through ``get_reward`` (our finish endpoint).
"""

from __future__ import annotations

import inspect
import json
import keyword
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from trainer_bridge.client import CorecraftClient, EpisodeOpened, Reward

__all__ = [
    "CorecraftEnv",
    "CorecraftEnvBase",
    "CorecraftSubmitEnv",
    "bundled_tool_schemas",
    "completion_final_answer",
    "corecraft_env_class",
    "corecraft_reward",
    "make_corecraft_reward",
]

logger = logging.getLogger(__name__)

TOOL_SCHEMAS_FILE = Path(__file__).resolve().parent / "configs" / "tool_schemas.json"
RESERVED = frozenset({"reset", "get_reward", "submit_answer"})
JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}


def bundled_tool_schemas() -> list[dict]:
    """The agent contract's OpenAI tool schemas shipped with this package (the 23 world tools and ask_user,
    generated from the server's registry)."""
    return json.loads(TOOL_SCHEMAS_FILE.read_text(encoding="utf-8"))


# --- tools as methods -----------------------------------------------------------------------------------------


def _annotation(schema: dict) -> Any:
    kind = schema.get("type")
    if kind == "array":
        item = JSON_TYPES.get((schema.get("items") or {}).get("type"), Any)
        return list[item]
    if "anyOf" in schema and kind is None:
        return str
    return JSON_TYPES.get(kind, str)


def _describe(name: str, schema: dict) -> str:
    text = " ".join((schema.get("description") or f"The {name.replace('_', ' ')}.").split())
    items = schema.get("items") or {}
    if items.get("type") == "object" and items.get("properties"):
        fields = ", ".join(f"{k}: {v.get('type', 'value')}" for k, v in items["properties"].items())
        text += f" Each item is an object {{{fields}}}."
    if "default" in schema:
        text += f" Default: {json.dumps(schema['default'])}."
    if "enum" in schema:
        text += f" (choices: {json.dumps(schema['enum'])})"
    return text


def _tool_method(schema: dict) -> Callable:
    """A method that calls the tool in this environment's episode; its signature and docstring are the schema's."""
    function = schema["function"]
    name = function["name"]
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_lines = []
    for arg, arg_schema in properties.items():
        if not arg.isidentifier() or keyword.iskeyword(arg):
            raise ValueError(f"tool {name}: argument {arg!r} cannot be a Python parameter")
        annotation = _annotation(arg_schema)
        if arg in required:
            parameter = inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)
        else:
            annotation = annotation | None
            parameter = inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=None)
        signature.append(parameter)
        annotations[arg] = annotation
        arg_lines.append(f"    {arg}: {_describe(arg, arg_schema)}")
    annotations["return"] = str

    def method(self: CorecraftEnvBase, **arguments: Any) -> str:
        # An argument the model left out (None) takes the tool's own default on the server.
        return self._call_tool(name, {k: v for k, v in arguments.items() if v is not None})

    description = (function.get("description") or name).strip()
    args_block = ("\n\nArgs:\n" + "\n".join(arg_lines)) if arg_lines else ""
    method.__doc__ = f"{description}{args_block}\n\nReturns:\n    The tool's result as JSON text."
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(signature, return_annotation=str)
    method.__annotations__ = annotations
    return method


# --- the environment ------------------------------------------------------------------------------------------


class CorecraftEnvBase:
    """One rollout's Corecraft episode. Subclasses made by ``corecraft_env_class`` carry the tools as methods.

    Configuration is class-level (TRL builds instances without arguments): ``client`` (default: from
    ``CORECRAFT_API_URL`` / ``CORECRAFT_API_TOKEN``), ``on_pending`` ("partial" | "none" | "raise": what a reward
    is while llm criteria wait for a judge), ``observation`` ("none": the dataset prompt already holds the
    instruction; "instruction": ``reset`` returns it).
    """

    client: ClassVar[CorecraftClient | None] = None
    on_pending: ClassVar[str] = "partial"
    observation: ClassVar[str] = "none"
    # Training-time reward options for the finish call (None: the client's, from the environment by default).
    reward_options: ClassVar[dict | None] = None

    def __init__(self) -> None:
        self._client = type(self).client or CorecraftClient.from_env()
        self._episode: EpisodeOpened | None = None
        self._outcome: Reward | None = None
        self._submitted: str | None = None
        self.reward: float | None = None
        self.tool_calls = 0
        self.tool_errors = 0

    def reset(self, **kwargs: Any) -> str | None:
        """Open a fresh episode for the dataset row (its ``release`` and ``row_id`` columns)."""
        release, row_id = kwargs.get("release"), kwargs.get("row_id")
        if not release or row_id is None:
            raise ValueError(
                "CorecraftEnv.reset needs the dataset columns `release` and `row_id` (the HF/TRL export has them)"
            )
        self._episode = self._client.create_episode(release=str(release), row_id=int(row_id))
        self._outcome = None
        self._submitted = None
        self.reward = None
        self.tool_calls = 0
        self.tool_errors = 0
        return self._episode.instruction if type(self).observation == "instruction" else None

    @property
    def episode_id(self) -> str | None:
        return self._episode.episode_id if self._episode else None

    @property
    def outcome(self) -> Reward | None:
        """The judgement once finished (verdicts, passed, final...)."""
        return self._outcome

    def _call_tool(self, name: str, arguments: dict) -> str:
        if self._episode is None:
            raise RuntimeError("no episode: reset() was not called")
        if self._outcome is not None:
            raise RuntimeError("the episode is finished: no more tool calls")
        outcome = self._client.call_tool(self._episode.episode_id, name, arguments)
        self.tool_calls += 1
        self.tool_errors += outcome.is_error
        return outcome.as_text()

    def _finish(self, final_answer: str, messages: list[dict] | None = None) -> float | None:
        """Finish the episode with ``final_answer`` through our finish endpoint; returns the reward as a float."""
        if self._episode is None:
            raise RuntimeError("no episode: reset() was not called")
        if self._outcome is None:
            # Options only when set: a client of the caller's own need not know the keyword.
            options = {} if type(self).reward_options is None else {"reward_options": type(self).reward_options}
            self._outcome = self._client.finish(
                self._episode.episode_id, final_answer=final_answer, messages=messages, **options
            )
        self._record(self._outcome)
        return self.reward

    def _record(self, outcome: Reward) -> None:
        self._outcome = outcome
        self.reward = outcome.value(on_pending=type(self).on_pending)
        if not outcome.final:
            _warn_partial(outcome)


def _submit_answer(self: CorecraftEnvBase, answer: str) -> str:
    """Submit your final answer to the customer's request; call it once, when you are done with the tools.

    Args:
        answer: The final answer, as you would write it to the customer.

    Returns:
        A confirmation.
    """
    if self._episode is None:
        raise RuntimeError("no episode: reset() was not called")
    if self._submitted is not None:
        raise ValueError("an answer was already submitted")
    self._submitted = answer
    return "Answer received."


def _get_reward(self: CorecraftEnvBase) -> float:
    """The episode's reward from our finish endpoint, with the submitted answer (empty if none was)."""
    value = self._finish(self._submitted or "")
    return 0.0 if value is None else value


def corecraft_env_class(
    tools: Sequence[dict] | None = None,
    *,
    client: CorecraftClient | None = None,
    name: str = "CorecraftEnv",
    submit_answer: bool = False,
    on_pending: str = "partial",
    observation: str = "none",
    reward_options: dict | None = None,
) -> type[CorecraftEnvBase]:
    """An environment class for ``environment_factory`` with one method per tool schema (OpenAI format).

    ``tools``: default the bundled 23 schemas (``configs/tool_schemas.json``); pass a release's frozen
    ``tools`` to match it exactly. ``submit_answer=True`` adds the ``submit_answer`` tool and ``get_reward``
    (the environment then owns its reward; no reward function is needed).
    """
    if on_pending not in ("partial", "none", "raise"):
        raise ValueError("on_pending is one of partial, none, raise")
    namespace: dict[str, Any] = {
        "client": client,
        "on_pending": on_pending,
        "observation": observation,
        "reward_options": reward_options,
        "__module__": __name__,
        "__doc__": CorecraftEnvBase.__doc__,
    }
    for schema in bundled_tool_schemas() if tools is None else tools:
        method = _tool_method(schema)
        if method.__name__ in RESERVED or method.__name__.startswith("_") or hasattr(CorecraftEnvBase, method.__name__):
            raise ValueError(f"a tool cannot be named {method.__name__!r}")
        namespace[method.__name__] = method
    if submit_answer:
        namespace["submit_answer"] = _submit_answer
        namespace["get_reward"] = _get_reward
    return type(name, (CorecraftEnvBase,), namespace)


CorecraftEnv = corecraft_env_class()
CorecraftSubmitEnv = corecraft_env_class(name="CorecraftSubmitEnv", submit_answer=True)


# --- the reward function ---------------------------------------------------------------------------------------


_warned = threading.Event()


def _warn_partial(outcome: Reward) -> None:
    if not _warned.is_set():
        _warned.set()
        logger.warning("Corecraft rewards are partial (llm criteria pending, no judge configured): %s", outcome.note)


def completion_final_answer(completion: Any) -> str:
    """The final answer in a TRL completion: the last assistant message's text (conversational), or the text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                return content or ""
    return ""


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _column(kwargs: dict, key: str, index: int) -> Any:
    value = kwargs.get(key)
    if isinstance(value, list | tuple):
        return value[index] if index < len(value) else None
    return value


def make_corecraft_reward(
    client: CorecraftClient | None = None,
    *,
    on_pending: str = "partial",
    send_messages: bool = True,
    reward_options: dict | None = None,
) -> Callable[..., list[float | None]]:
    """A reward function for ``GRPOTrainer(reward_funcs=...)`` that scores through our API.

    With ``environments`` (``environment_factory=CorecraftEnv``) it finishes each rollout's episode with the
    completion's final answer; without, it opens an episode per completion from the ``release`` / ``row_id``
    columns (a rollout without tools) and finishes it. Either way the whole batch is scored in one
    ``/api/v1/rewards/batch/`` call. A failed item scores None (TRL then ignores that reward for that sample) and
    is logged. ``reward_options`` (e.g. ``{"rubric_dropout": 0.3, "seed": 7}``; default the client's) go with it.
    """

    def corecraft_reward(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        environments = kwargs.get("environments")
        api = client
        if api is None and environments:
            api = getattr(environments[0], "_client", None)
        api = api or CorecraftClient.from_env()
        episode_ids: list[str] = []
        items: list[dict] = []
        for index, completion in enumerate(completions):
            answer = completion_final_answer(completion)
            if environments:
                episode_id = environments[index].episode_id
            else:
                opened = api.create_episode(
                    release=str(_column(kwargs, "release", index)), row_id=int(_column(kwargs, "row_id", index))
                )
                episode_id = opened.episode_id
            item: dict[str, Any] = {"episode_id": episode_id, "final_answer": answer}
            if send_messages and isinstance(completion, list):
                prompt = prompts[index] if isinstance(prompts[index], list) else []
                item["messages"] = _jsonable(list(prompt) + list(completion))
            episode_ids.append(episode_id)
            items.append(item)
        options = {} if reward_options is None else {"reward_options": reward_options}
        results = api.batch_rewards(items, **options)
        rewards: list[float | None] = []
        for index, result in enumerate(results):
            if not result.ok or result.reward is None:
                logger.error("Corecraft reward for episode %s failed: %s", episode_ids[index], result.error)
                rewards.append(None)
                continue
            if environments:
                environments[index]._outcome = result.reward
                environments[index]._record(result.reward)
            elif not result.reward.final:
                _warn_partial(result.reward)
            rewards.append(result.reward.value(on_pending=on_pending))
        return rewards

    corecraft_reward.__name__ = "corecraft_reward"
    return corecraft_reward


def corecraft_reward(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
    """The reward function with the default client (``CORECRAFT_API_URL`` / ``CORECRAFT_API_TOKEN``)."""
    return make_corecraft_reward()(prompts, completions, **kwargs)
