"""The bearer-token authentication of every API (``REST_FRAMEWORK`` names it), and the log of each token use.

Apart from ``trainer_bridge.auth`` (scopes, views) because DRF imports its authentication classes while it
builds ``APIView``: this module imports no view.
"""

from __future__ import annotations

import hashlib
import threading
import time

from django.conf import settings
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from trainer_bridge.models import ApiToken
from trainer_bridge.usage import usage_record
from world_app.credentials import Credential

KEYWORD = "Bearer"
# One answer for an unknown, revoked or orphaned token: the answer must not tell a guesser which it was.
INVALID_TOKEN = "Invalid token."  # noqa: S105 (a message, not a secret)


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def log_use(*, token: ApiToken, request, status: int, scope: str = "") -> None:
    """One use of ``token`` by ``request`` (refused ones included), written in batches (``trainer_bridge.usage``)."""
    usage_record(token=token, method=request.method, path=request.get_full_path(), status=status, scope=scope)


class _TokenCache:
    """Tokens by secret digest, each kept for ``API_TOKEN_CACHE_MS`` (at most 5 s) in this process.

    A request with a cached token reads no table. Revocation (or the owner's deactivation) by another process is
    therefore seen within ``API_TOKEN_CACHE_MS``; in the revoking process at once (``token_cache_forget``).
    Unknown secrets are never cached: a guesser's every try is a look-up, and cannot fill the memory.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[float, ApiToken]] = {}

    def get(self, digest: str) -> ApiToken | None:
        now = time.monotonic()
        with self._lock:
            found = self._tokens.get(digest)
        if found is not None and found[0] > now:
            return found[1]
        token = ApiToken.objects.select_related("created_by").filter(secret_sha256=digest).first()
        if token is None:
            return None
        with self._lock:
            if len(self._tokens) >= TOKEN_CACHE_SIZE:
                self._tokens = {k: v for k, v in self._tokens.items() if v[0] > now}
                if len(self._tokens) >= TOKEN_CACHE_SIZE:
                    self._tokens.clear()
            self._tokens[digest] = (now + settings.API_TOKEN_CACHE_MS / 1000, token)
        return token

    def forget(self, digest: str | None = None) -> None:
        with self._lock:
            if digest is None:
                self._tokens.clear()
            else:
                self._tokens.pop(digest, None)


TOKEN_CACHE_SIZE = 10_000
_token_cache = _TokenCache()


def token_for_secret(secret: str) -> ApiToken | None:
    """The token of ``secret`` (revoked ones included), from this process's short-lived cache."""
    return _token_cache.get(secret_digest(secret))


def token_cache_forget(token: ApiToken | None = None) -> None:
    """Drop ``token`` (None: every token) from this process's cache: its next use reads it again."""
    _token_cache.forget(None if token is None else token.secret_sha256)


def _token_usable(token: ApiToken) -> bool:
    return token.revoked_at is None and token.created_by is not None and token.created_by.is_active


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
        token = token_for_secret(secret)
        if token is None:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if not _token_usable(token):
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
    token = token_for_secret(secret)
    if token is None:
        return None
    usable = _token_usable(token)
    usage_record(token=token, method="MCP", path="/mcp", status=200 if usable else 401)
    return token.episode_credential if usable else None
