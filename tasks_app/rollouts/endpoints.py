"""Model endpoints: a ChatClient for one, and the "test connection" check."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from corecraft_site.llm import ChatClient, EndpointError, RetryPolicy, chat_client_shared
from tasks_app.models import ModelEndpoint
from tasks_app.rollouts.agent import request_sampling

CONNECTION_TEST_TIMEOUT_S = 15.0  # "Test connection" answers inside a page request: don't hold it for a minute


def endpoint_client(
    endpoint: ModelEndpoint,
    *,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
    timeout_s: float | None = None,
) -> ChatClient:
    """A client for ``endpoint``: its key read from the environment variable it names, its retries and timeout.

    With the default retry policy, sleep and timeout, the client is the process's shared one for the endpoint
    (``chat_client_shared``: the judge uses the same).
    """
    options: dict[str, Any] = {}
    if sleep is not None:
        options["sleep"] = sleep

    def make() -> ChatClient:
        return ChatClient(
            base_url=endpoint.base_url,
            model=endpoint.model,
            key_env=endpoint.api_key_env or None,
            timeout_s=timeout_s if timeout_s is not None else endpoint.timeout_s,
            retry=retry or RetryPolicy(max_attempts=endpoint.max_retries + 1),
            **options,
        )

    if retry is not None or sleep is not None or timeout_s is not None:
        return make()
    return chat_client_shared(
        base_url=endpoint.base_url,
        model=endpoint.model,
        key_env=endpoint.api_key_env or None,
        timeout_s=endpoint.timeout_s,
        max_attempts=endpoint.max_retries + 1,
    )


def model_endpoint_test(*, endpoint: ModelEndpoint) -> dict[str, Any]:
    """Ask the endpoint for a one-word reply and record the outcome on it (``last_check``, ``last_checked_at``).

    Returns ``{ok, latency_ms, reply | error, reason}``; never raises for the endpoint's own failures.
    """
    client = endpoint_client(
        endpoint, retry=RetryPolicy(max_attempts=1), timeout_s=min(endpoint.timeout_s, CONNECTION_TEST_TIMEOUT_S)
    )
    sampling = {**request_sampling(endpoint.sampling), "max_tokens": 8}
    started = time.monotonic()
    try:
        completion = client.complete(messages=[{"role": "user", "content": "Reply with the word: ready"}], **sampling)
        outcome: dict[str, Any] = {
            "ok": True,
            "latency_ms": round(completion.latency_ms, 1),
            "reply": (completion.content or "")[:200],
        }
    except EndpointError as error:
        outcome = {
            "ok": False,
            "latency_ms": round((time.monotonic() - started) * 1000, 1),
            "reason": error.reason,
            "error": str(error)[:500],
        }
    _endpoint_check_store(endpoint=endpoint, outcome=outcome)
    return outcome


@transaction.atomic
def _endpoint_check_store(*, endpoint: ModelEndpoint, outcome: dict[str, Any]) -> None:
    endpoint.last_check = outcome
    endpoint.last_checked_at = timezone.now()
    endpoint.save(update_fields=["last_check", "last_checked_at"])
