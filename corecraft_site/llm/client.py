"""A chat client for any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, OpenAI), with our own retries.

The SDK's retries are off (``max_retries=0``) so that one policy, tested here, decides: 429, 5xx, timeouts,
connection errors and malformed bodies are retried with exponential backoff and full jitter (``Retry-After``
wins when the server sends it); other 4xx fail at once. Failures surface as :class:`EndpointError`.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import openai

RETRYABLE_REASONS = frozenset({"rate_limited", "server_error", "timeout", "connection_error", "malformed_response"})


class EndpointError(Exception):
    """The endpoint could not give a usable completion.

    ``reason`` is one of ``rate_limited``, ``server_error``, ``timeout``, ``connection_error``,
    ``malformed_response`` (all retried before raising) or ``client_error`` (a 4xx other than 429, not retried).
    """

    def __init__(self, *, reason: str, status: int | None = None, attempts: int, detail: str = "") -> None:
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.detail = detail
        status_text = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{reason}{status_text} after {attempts} attempt(s): {detail}".rstrip(": "))


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it; ``arguments_raw`` is the unparsed JSON string (it may be invalid)."""

    id: str
    name: str
    arguments_raw: str


@dataclass(frozen=True)
class Completion:
    """One assistant turn. ``latency_ms`` is the successful attempt's round trip; ``attempts`` counts all tries."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    attempts: int


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: try ``n`` sleeps uniform(0, min(cap_s, base_s * 2**(n-1)))."""

    max_attempts: int = 4
    base_s: float = 0.5
    cap_s: float = 8.0
    retry_after_cap_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_s < 0 or self.cap_s < 0 or self.retry_after_cap_s < 0:
            raise ValueError("max_attempts must be >= 1 and delays must be >= 0")

    def backoff_s(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))


class _Retryable(Exception):
    def __init__(self, *, reason: str, status: int | None, detail: str, retry_after_s: float | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.status = status
        self.detail = detail
        self.retry_after_s = retry_after_s


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent or junk."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class ChatClient:
    """Chat completions against one model on one OpenAI-compatible base URL."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        # Local servers (vLLM, llama.cpp) ignore the key, but the SDK insists on one.
        api_key = (os.environ.get(key_env) if key_env else None) or "not-needed"
        self.model = model
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._sdk = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)

    def complete(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        **sampling: Any,
    ) -> Completion:
        """Ask for one assistant turn; ``sampling`` (temperature, top_p, max_tokens, seed, ...) passes through.

        Raises :class:`EndpointError` when the endpoint fails for good.
        """
        # Messages and tools travel in extra_body, which the SDK sends as it is: they are already wire-format
        # JSON, and the SDK's own transform walked the 23 tool schemas on every turn (about a third of a
        # rollout's client CPU, measured with cProfile in bench/rollouts.py).
        body: dict[str, Any] = {**(sampling.pop("extra_body", None) or {}), "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
            # llama-cpp-python's server drops `tools` unless `tool_choice` comes with them; "auto" is what
            # OpenAI assumes anyway, so sending it changes nothing elsewhere. A caller's own choice wins.
            if "tool_choice" not in sampling and "tool_choice" not in body:
                body["tool_choice"] = "auto"
        request: dict[str, Any] = {"model": self.model, "messages": [], **sampling, "extra_body": body}
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(request, attempt=attempt)
            except _Retryable as failure:
                if attempt >= self.retry.max_attempts:
                    raise EndpointError(
                        reason=failure.reason, status=failure.status, attempts=attempt, detail=failure.detail
                    ) from failure
                if failure.retry_after_s is not None:
                    delay = min(failure.retry_after_s, self.retry.retry_after_cap_s)
                else:
                    delay = self.retry.backoff_s(attempt, self._rng)
                self._sleep(delay)
            except openai.APIStatusError as error:
                raise EndpointError(
                    reason="client_error", status=error.status_code, attempts=attempt, detail=str(error.message)
                ) from error

    def _attempt(self, request: dict[str, Any], *, attempt: int) -> Completion:
        started = time.monotonic()
        try:
            raw = self._sdk.chat.completions.with_raw_response.create(**request)
            text = raw.text
        except openai.APITimeoutError as error:
            raise _Retryable(reason="timeout", status=None, detail=str(error)) from error
        except openai.APIConnectionError as error:
            raise _Retryable(reason="connection_error", status=None, detail=str(error)) from error
        except openai.APIStatusError as error:
            if error.status_code == 429:
                retry_after = parse_retry_after(error.response.headers.get("retry-after"))
                raise _Retryable(
                    reason="rate_limited", status=429, detail=str(error.message), retry_after_s=retry_after
                ) from error
            if error.status_code >= 500:
                raise _Retryable(reason="server_error", status=error.status_code, detail=str(error.message)) from error
            raise
        latency_ms = (time.monotonic() - started) * 1000
        return _completion_from_body(text, latency_ms=latency_ms, attempts=attempt, status=raw.status_code)


# Clients by everything that makes them differ (the key's value included, so a rotated key takes effect). Making one
# costs 20-60 ms (the SDK's HTTP client and TLS context); they are thread-safe and pool their connections, so the
# rollouts and the judge of a process share one per endpoint.
_shared: dict[tuple, ChatClient] = {}
_shared_lock = threading.Lock()
SHARED_CLIENTS = 64


def chat_client_shared(
    *, base_url: str, model: str, key_env: str | None, timeout_s: float, max_attempts: int
) -> ChatClient:
    """The process's one client for this endpoint (default sleep and jitter), made on first use."""
    key_value = os.environ.get(key_env) if key_env else None
    key = (base_url, model, key_env, key_value, float(timeout_s), int(max_attempts))
    with _shared_lock:
        client = _shared.get(key)
        if client is None:
            if len(_shared) >= SHARED_CLIENTS:
                _shared.pop(next(iter(_shared)))
            client = _shared[key] = ChatClient(
                base_url=base_url,
                model=model,
                key_env=key_env,
                timeout_s=timeout_s,
                retry=RetryPolicy(max_attempts=max_attempts),
            )
    return client


def _completion_from_body(text: str, *, latency_ms: float, attempts: int, status: int) -> Completion:
    """Parse a chat completion body by hand, so a broken one is a retryable ``malformed_response``."""
    try:
        body = json.loads(text)
        choice = body["choices"][0]
        message = choice["message"]
        tool_calls = tuple(
            ToolCall(id=call["id"], name=call["function"]["name"], arguments_raw=call["function"]["arguments"])
            for call in message.get("tool_calls") or ()
        )
        usage = body.get("usage") or {}
        return Completion(
            content=message.get("content"),
            tool_calls=tool_calls,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_ms=latency_ms,
            attempts=attempts,
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
        raise _Retryable(
            reason="malformed_response", status=status, detail=f"{type(error).__name__}: {text[:200]!r}"
        ) from error
