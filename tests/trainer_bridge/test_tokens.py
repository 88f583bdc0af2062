"""API tokens: the secret shown once and stored only as a hash, scopes enforced, revocation, every use logged."""

from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.test import APIClient

from trainer_bridge.models import ApiToken, ApiTokenUse
from trainer_bridge.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def test_create_returns_the_secret_once_and_stores_only_its_hash(admin_user):
    issued = api_token_create(name="grpo job", scopes="train:read,reward", created_by=admin_user)
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert token.scopes == ["train:read", "reward"]
    assert token.secret_sha256 == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert issued.secret.startswith(token.prefix)
    stored = [str(v) for v in ApiToken.objects.filter(pk=token.pk).values().first().values()]
    assert issued.secret not in stored


@pytest.mark.parametrize(
    ("name", "scopes", "field"),
    [
        ("", ["train:read"], "name"),
        ("x", [], "scopes"),
        ("x", ["train:write"], "scopes"),
        ("x" * 101, "reward", "name"),
    ],
)
def test_bad_input_is_a_validation_error(admin_user, name, scopes, field):
    with pytest.raises(ValidationError) as caught:
        api_token_create(name=name, scopes=scopes, created_by=admin_user)
    assert field in caught.value.message_dict


def test_no_token_or_a_bad_one_is_401(frozen_release):
    assert APIClient().get("/api/v1/releases/").status_code == 401
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer cc_not-a-real-token")
    response = client.get("/api/v1/releases/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_revoked_token_is_401_and_the_attempt_is_logged(frozen_release, token_client):
    client = token_client("train:read")
    assert client.get("/api/v1/releases/").status_code == 200
    api_token_revoke(token=client.token)
    response = client.get("/api/v1/releases/r1/")
    assert response.status_code == 401
    # The same answer as a secret that never existed: a guesser learns nothing from it.
    assert response.json()["error"]["message"] == "Invalid token."
    uses = list(ApiTokenUse.objects.filter(token=client.token).order_by("at", "pk").values_list("path", "status"))
    assert uses == [("/api/v1/releases/", 200), ("/api/v1/releases/r1/", 401)]


def test_every_use_is_logged_with_its_status_and_scope(frozen_release, token_client):
    client = token_client("train:read")
    client.get("/api/v1/releases/r1/rows/?split=train")
    client.get("/api/v1/releases/r1/rows/?split=holdout")
    client.get("/api/v1/releases/nope/")
    uses = list(ApiTokenUse.objects.filter(token=client.token).order_by("pk").values_list("method", "status", "scope"))
    assert uses == [("GET", 200, "train:read"), ("GET", 403, "train:read"), ("GET", 404, "train:read")]
    client.token.refresh_from_db()
    assert client.token.last_used_at is not None


def test_a_token_without_a_read_scope_is_403(frozen_release, token_client):
    response = token_client("episodes", "reward").get("/api/v1/releases/")
    assert response.status_code == 403
    assert ApiTokenUse.objects.filter(status=403).count() == 1


def test_management_command_prints_the_secret_that_then_works(frozen_release, admin_user, capsys):
    user = admin_user.username
    call_command(
        "api_token", "create", "--name", "cli", "--scopes", "train:read,episodes", "--user", user, "--secret-only"
    )
    secret = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/releases/").status_code == 200
    token = ApiToken.objects.get(name="cli")
    call_command("api_token", "revoke", "--prefix", token.prefix)
    assert client.get("/api/v1/releases/").status_code == 401


def test_revoke_is_idempotent(admin_user):
    token = api_token_create(name="t", scopes=["reward"], created_by=admin_user).token
    first = api_token_revoke(token=token).revoked_at
    assert api_token_revoke(token=token).revoked_at == first


def test_admin_creates_a_token_showing_the_secret_once_and_revokes_it(client, admin_user, frozen_release):
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    response = client.post(
        "/admin/trainer_bridge/apitoken/add/", {"name": "from admin", "scopes": ["train:read", "reward"]}, follow=True
    )
    assert response.status_code == 200
    token = ApiToken.objects.get(name="from admin")
    assert token.scopes == ["train:read", "reward"] and token.created_by == admin_user
    shown = [str(m) for m in response.context["messages"]]
    secret = next(
        part for m in shown for part in m.replace("<", " ").replace(">", " ").split() if part.startswith("cc_")
    )
    assert hashlib.sha256(secret.encode()).hexdigest() == token.secret_sha256
    # The change page never shows it again.
    page = client.get(f"/admin/trainer_bridge/apitoken/{token.pk}/change/").content.decode()
    assert secret not in page and token.prefix in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/api/v1/releases/").status_code == 200
    client.post("/admin/trainer_bridge/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True)
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert api.get("/api/v1/releases/").status_code == 401
    uses = client.get("/admin/trainer_bridge/apitokenuse/")
    assert uses.status_code == 200 and b"/api/v1/releases/" in uses.content
    assert client.get("/admin/trainer_bridge/apitokenuse/add/").status_code == 403
