"""The bearer-token authentication of every API (``REST_FRAMEWORK`` names it), and the log of each token use.

Apart from ``trainer_bridge.auth`` (scopes, views) because DRF imports its authentication classes while it
builds ``APIView``: this module imports no view.
"""

from __future__ import annotations

import hashlib

from django.db import transaction
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from trainer_bridge.models import ApiToken, ApiTokenUse
from world_app.credentials import Credential

KEYWORD = "Bearer"
# One answer for an unknown, revoked or orphaned token: the answer must not tell a guesser which it was.
INVALID_TOKEN = "Invalid token."  # noqa: S105 (a message, not a secret)


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def log_use(*, token: ApiToken, request, status: int, scope: str = "") -> None:
    now = timezone.now()
    # Outside the request's own transaction fate: a refused request (rolled back) is still logged.
    with transaction.atomic():
        ApiTokenUse.objects.create(
            token=token,
            method=request.method[:10],
            path=request.get_full_path()[:500],
            status=status,
            scope=scope[:20],
        )
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <secret>``; an unknown or revoked secret is a 401 (the same message for both)."""

    def authenticate(self, request: Request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != KEYWORD.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: send `Bearer <token>`.")
        try:
            secret = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN) from None
        token = ApiToken.objects.select_related("created_by").filter(secret_sha256=secret_digest(secret)).first()
        if token is None:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if token.revoked_at is not None:
            log_use(token=token, request=request, status=401)
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if token.created_by is None or not token.created_by.is_active:
            log_use(token=token, request=request, status=401)
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        request._api_token = token
        return token.created_by, token

    def authenticate_header(self, request: Request) -> str:
        return f'{KEYWORD} realm="api"'


def episode_credential_for_secret(secret: str) -> Credential | None:
    """The MCP server's check of a bearer secret: the token's credential, or None (unknown, revoked, orphaned).

    Every check is a logged use of the token, as an API request is.
    """
    token = ApiToken.objects.select_related("created_by").filter(secret_sha256=secret_digest(secret)).first()
    if token is None:
        return None
    usable = token.revoked_at is None and token.created_by is not None and token.created_by.is_active
    ApiTokenUse.objects.create(token=token, method="MCP", path="/mcp", status=200 if usable else 401)
    if not usable:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.episode_credential
