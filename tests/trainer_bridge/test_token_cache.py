"""Tokens cached per process (a revocation elsewhere takes effect within API_TOKEN_CACHE_MS) and their uses written
in batches, one statement per batch."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from trainer_bridge import usage
from trainer_bridge.models import ApiToken, ApiTokenUse

pytestmark = pytest.mark.django_db


def test_a_revocation_by_another_process_takes_effect_within_the_cache_ttl(frozen_release, token_client, settings):
    settings.API_TOKEN_CACHE_MS = 300
    client = token_client("train:read")
    assert client.get("/api/v1/releases/").status_code == 200
    # Another process revokes it (as `manage.py api_token revoke` does there): this process's cache is not told.
    ApiToken.objects.filter(pk=client.token.pk).update(revoked_at=timezone.now())
    with CaptureQueriesContext(connection) as cached:
        client.get("/api/v1/releases/")
    assert not any(
        "trainer_bridge_apitoken" in q["sql"] and "secret_sha256" in q["sql"] for q in cached.captured_queries
    )
    time.sleep(0.35)
    response = client.get("/api/v1/releases/")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."


def test_the_cache_ttl_cannot_be_set_above_five_seconds(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from corecraft_site.env import env_int

    monkeypatch.setenv("API_TOKEN_CACHE_MS", "5001")
    with pytest.raises(ImproperlyConfigured):
        env_int("API_TOKEN_CACHE_MS", 5000, minimum=0, maximum=5000)


def test_deactivating_the_owner_refuses_the_token_at_once_in_this_process(frozen_release, token_client, admin_user):
    client = token_client("train:read")
    assert client.get("/api/v1/releases/").status_code == 200
    admin_user.is_active = False
    admin_user.save()
    assert client.get("/api/v1/releases/").status_code == 401


def test_uses_are_buffered_then_written_in_one_statement_with_their_request_times(
    frozen_release, token_client, settings, monkeypatch
):
    settings.API_USAGE_FLUSH_MS = 60_000
    recorder = usage.UsageRecorder(background=False)  # this test writes the batch itself, on its own connection
    monkeypatch.setattr(usage, "recorder", recorder)
    client = token_client("train:read")
    before = timezone.now()
    client.get("/api/v1/releases/")
    client.get("/api/v1/releases/nope/")
    after = timezone.now()
    assert recorder.pending() == 2
    assert not ApiTokenUse.objects.filter(token=client.token).exists()  # nothing on the request path

    with CaptureQueriesContext(connection) as flushed:
        assert usage.usage_flush() == 2
    assert len(flushed.captured_queries) == 1
    uses = list(ApiTokenUse.objects.filter(token=client.token).order_by("at", "pk").values_list("path", "status", "at"))
    assert [(path, status) for path, status, _ in uses] == [("/api/v1/releases/", 200), ("/api/v1/releases/nope/", 404)]
    assert all(before <= at <= after for _, _, at in uses)  # when the request answered, not when the batch was written
    client.token.refresh_from_db()
    assert client.token.last_used_at == uses[-1][2]


def test_last_used_never_moves_backwards_and_uses_of_a_deleted_token_are_dropped(admin_user):
    from trainer_bridge.services import api_token_create

    kept = api_token_create(name="kept", scopes=["reward"], created_by=admin_user).token
    gone = api_token_create(name="gone", scopes=["reward"], created_by=admin_user).token
    now = timezone.now()
    ApiToken.objects.filter(pk=kept.pk).update(last_used_at=now)
    gone_id = gone.pk
    gone.delete()
    usage.usage_write(
        [
            usage.Use(kept.pk, now - timedelta(seconds=5), "GET", "/old", 200, ""),
            usage.Use(gone_id, now, "GET", "/x", 200, ""),
        ]
    )
    kept.refresh_from_db()
    assert kept.last_used_at == now
    assert list(ApiTokenUse.objects.filter(token_id__in=[kept.pk, gone_id]).values_list("path", flat=True)) == ["/old"]
