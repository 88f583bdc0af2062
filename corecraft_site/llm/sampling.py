"""An endpoint's sampling settings as ChatClient keyword arguments: SDK parameters by name, the rest in extra_body."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Chat completion parameters the OpenAI SDK takes by name; any other sampling key (top_k, min_p,
# repetition_penalty... understood by vLLM and SGLang) travels in ``extra_body``.
SDK_SAMPLING_KEYS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "tool_choice", "parallel_tool_calls",
    "reasoning_effort", "user", "extra_body",
})  # fmt: skip


def sampling_kwargs(sampling: Mapping[str, Any], *, drop: Iterable[str] = ()) -> dict[str, Any]:
    """``sampling`` as ChatClient keyword arguments, the keys in ``drop`` left out (they are not for the model)."""
    dropped = set(drop)
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in sampling.items():
        if key in dropped:
            continue
        (known if key in SDK_SAMPLING_KEYS else extra)[key] = value
    if extra:
        known["extra_body"] = {**known.get("extra_body", {}), **extra}
    return known
