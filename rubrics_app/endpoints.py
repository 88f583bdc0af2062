"""The registry of model endpoints: a ChatClient for one (the judge's and the rollouts' alike), the "test
connection" check, and the admins' save of an endpoint.

Endpoints live with the judgement because a judge configuration names one; rollouts (``tasks_app``) use the same
registry from above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from corecraft_site.llm import ChatClient, EndpointError, RetryPolicy, chat_client_shared
from corecraft_site.llm.sampling import sampling_kwargs
from corecraft_site.roles import is_admin
from rubrics_app.models import ModelEndpoint, Verdict
from world_app.contract import LIMIT_KEYS, TOOL_FORMAT_KEY

CONNECTION_TEST_TIMEOUT_S = 15.0  # "Test connection" answers inside a page request: don't hold it for a minute


def request_sampling(sampling: Mapping[str, Any]) -> dict[str, Any]:
    """An endpoint's ``sampling`` as ChatClient keyword arguments (the agent's limits and the tool rendering removed,
    extras in ``extra_body``)."""
    return sampling_kwargs(sampling, drop=(*LIMIT_KEYS, TOOL_FORMAT_KEY))


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


# --- the admins' registry of endpoints -------------------------------------------------------------------------

# Fields of an endpoint that change what a verdict says; frozen once a judge on it has verdicts.
ENDPOINT_VERDICT_FIELDS = ("model", "sampling")


def registry_admin_check(user) -> None:
    """Model endpoints and judge configurations are changed by admins only."""
    if not is_admin(user):
        raise PermissionDenied("Only admins change model endpoints and judge configurations.")


def _value(value: Any) -> Any:
    return value.pk if hasattr(value, "pk") else value


def frozen_fields_check(instance, fields: dict, frozen: tuple[str, ...], *, has_verdicts: bool, what: str) -> None:
    """Refuse a change of a ``frozen`` field of ``instance`` once it has verdicts (a cached verdict would lie)."""
    if instance is None or instance.pk is None or not has_verdicts:
        return
    changed = {
        name: f"{what} already has verdicts; this would change them. Make a new one instead."
        for name in frozen
        if name in fields and _value(fields[name]) != _value(getattr(instance, name))
    }
    if changed:
        raise ValidationError(changed)


@transaction.atomic
def model_endpoint_save(*, user, fields: dict, endpoint: ModelEndpoint | None = None) -> ModelEndpoint:
    """Create (``endpoint`` None) or update a ``ModelEndpoint`` from validated ``fields``; admins only.

    The model and sampling of an endpoint a judge configuration has verdicts with are frozen (a cached verdict
    would no longer say what that model thinks).
    """
    registry_admin_check(user)
    in_use = (
        endpoint is not None
        and endpoint.pk is not None
        and Verdict.objects.filter(judge_config__endpoint=endpoint).exists()
    )
    frozen_fields_check(endpoint, fields, ENDPOINT_VERDICT_FIELDS, has_verdicts=in_use, what="A judge on this endpoint")
    if endpoint is None:
        endpoint = ModelEndpoint(created_by=user)
    for name, value in fields.items():
        setattr(endpoint, name, value)
    base_url_check(endpoint.base_url)
    # Django's URL validator wants a dotted host; "http://vllm:8000/v1" (a compose service, a GPU box) is fine here.
    endpoint.full_clean(exclude=["base_url"])
    endpoint.save()
    return endpoint


def base_url_check(url: str) -> None:
    """An http(s) URL with a host: single-label hosts (``gpu1``, ``vllm``) allowed, as on private networks."""
    try:
        parts = urlsplit(url or "")
        parts.port  # noqa: B018 - raises on a junk port
    except ValueError:
        raise ValidationError({"base_url": "Enter a valid URL."}) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or " " in url:
        raise ValidationError({"base_url": "Enter a valid http(s) URL, e.g. http://gpu1:8000/v1."})
