"""A chat client for any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, OpenAI), with our own retries.

The SDK's retries are off (``max_retries=0``) so that one policy, tested here, decides: 429, 5xx, timeouts,
connection errors and malformed bodies are retried with exponential backoff and full jitter (``Retry-After``
wins when the server sends it); other 4xx fail at once. Failures surface as :class:`EndpointError`.

A completion is one POST of the body, encoded once, on the SDK's HTTP client (its connection pool, timeout and
key): the SDK's request pipeline (options, transforms, headers, URL merging) cost 1.2 ms of CPU per completion of
a rollout's 70 KB body, a third of a rollout's CPU, and 64 rollouts answered at once queue for that CPU.
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

import httpx2
import openai

TOOLS_JSON_KEPT = 128  # tool lists a client keeps the JSON of (one per rollout running on it, at most)
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
        self._http: httpx2.Client = self._sdk._client
        self._url = f"{str(self._sdk.base_url).rstrip('/')}/chat/completions"
        self._timeout_s = timeout_s
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self._sdk.user_agent,
        }
        # The tools' JSON by the identity of the list passed (a rollout passes the same one every turn): 0.6 ms
        # to encode the contract's 23 tools, six times a rollout. The list is kept, so its id is not reused.
        self._tools_json: dict[int, tuple[Sequence[Mapping[str, Any]], bytes]] = {}
        self._tools_json_lock = threading.Lock()

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
        # The body as the server reads it: the model, the sampling, extras (``extra_body``) over them, then the
        # messages and tools, already wire-format JSON; encoded once for every attempt.
        extra = sampling.pop("extra_body", None) or {}
        body: dict[str, Any] = {"model": self.model, **sampling, **extra, "messages": messages}
        if tools:
            body.pop("tools", None)  # the argument's, appended below
        # llama-cpp-python's server drops `tools` unless `tool_choice` comes with them; "auto" is what OpenAI
        # assumes anyway, so sending it changes nothing elsewhere. A caller's own choice wins.
        if tools and "tool_choice" not in body:
            body["tool_choice"] = "auto"
        content = json.dumps(body, separators=(",", ":")).encode()
        if tools:
            content = content[:-1] + b',"tools":' + self._tools_encoded(tools) + b"}"
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(content, attempt=attempt)
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

    def _tools_encoded(self, tools: Sequence[Mapping[str, Any]]) -> bytes:
        """The tools as JSON, encoded once per list object (a list passed must not change afterwards)."""
        cached = self._tools_json.get(id(tools))
        if cached is not None and cached[0] is tools:
            return cached[1]
        encoded = json.dumps(tools, separators=(",", ":")).encode()
        with self._tools_json_lock:  # rollouts in other threads share the client
            if len(self._tools_json) >= TOOLS_JSON_KEPT:
                self._tools_json.pop(next(iter(self._tools_json)))
            self._tools_json[id(tools)] = (tools, encoded)
        return encoded

    def _attempt(self, content: bytes, *, attempt: int) -> Completion:
        started = time.monotonic()
        try:
            response = self._http.post(self._url, content=content, headers=self._headers, timeout=self._timeout_s)
        except httpx2.TimeoutException as error:
            raise _Retryable(reason="timeout", status=None, detail=f"Request timed out: {error}") from error
        except httpx2.HTTPError as error:  # refused, reset, a broken or half-read response
            raise _Retryable(reason="connection_error", status=None, detail=f"Connection error: {error}") from error
        status = response.status_code
        if status >= 400:
            detail = _error_detail(response)
            if status == 429:
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                raise _Retryable(reason="rate_limited", status=429, detail=detail, retry_after_s=retry_after)
            if status >= 500:
                raise _Retryable(reason="server_error", status=status, detail=detail)
            raise EndpointError(reason="client_error", status=status, attempts=attempt, detail=detail)
        latency_ms = (time.monotonic() - started) * 1000
        return _completion_from_body(response.content, latency_ms=latency_ms, attempts=attempt, status=status)


def _error_detail(response: httpx2.Response) -> str:
    """An error answer in a line: its ``error.message`` when the body is OpenAI's error shape, else its start."""
    text = response.content[:2000].decode("utf-8", errors="replace")
    try:
        message = json.loads(response.content)["error"]["message"]
        if isinstance(message, str) and message:
            return f"Error code: {response.status_code} - {message}"
    except (ValueError, KeyError, TypeError):
        pass
    return f"Error code: {response.status_code} - {text[:200]}"


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


def _completion_from_body(text: str | bytes, *, latency_ms: float, attempts: int, status: int) -> Completion:
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
            reason="malformed_response", status=status, detail=f"{type(error).__name__}: {_start(text)!r}"
        ) from error


def _start(text: str | bytes) -> str:
    return text[:200].decode("utf-8", errors="replace") if isinstance(text, bytes) else text[:200]
