"""Bearer-token authentication with scopes for the export and trainer-time APIs, and the log of every use.

A view opts in with::

    class ReleaseRowsApi(TokenApiView):
        permission_classes = [HasScope("train:read", "eval:read")]   # any one of them

``request.auth`` is then the ``ApiToken`` (``request.auth.scopes``), ``request.api_scope`` the scope that let the
request in, and ``TokenApiView`` writes one ``ApiTokenUse`` per request when it answers (refusals included).
A session (the Swagger UI page) holds the scopes its user was granted as permissions (``SESSION_SCOPE_PERMISSIONS``;
admins hold them all, staff status none); its requests are not token uses.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_bridge.authentication import ApiTokenAuthentication, log_use, secret_digest
from trainer_bridge.models import SCOPES, ApiToken, Scope

__all__ = ["ApiTokenAuthentication", "HasScope", "TokenApiView", "secret_digest", "session_scopes", "token_scopes"]

# The permission that grants each scope to a user's session; staff status alone grants none.
SESSION_SCOPE_PERMISSIONS = {
    Scope.TRAIN_READ: "trainer_bridge.scope_train_read",
    Scope.EVAL_READ: "tasks_app.read_holdout",
    Scope.EPISODES: "world_app.open_episode",
    Scope.REWARD: "trainer_bridge.scope_reward",
}


def session_scopes(user) -> set[str]:
    """The scopes a logged-in user holds without a token: those they were granted as permissions."""
    if not (user and user.is_authenticated and user.is_active):
        return set()
    return {str(scope) for scope, permission in SESSION_SCOPE_PERMISSIONS.items() if user.has_perm(permission)}


def token_scopes(request: Request) -> set[str]:
    """The scopes this request holds: its token's, or a session user's granted ones."""
    if isinstance(request.auth, ApiToken):
        return set(request.auth.scopes or [])
    return session_scopes(request.user)


def HasScope(*scopes: str) -> type[permissions.BasePermission]:
    """A permission class that lets a request in when it holds any one of ``scopes``."""
    unknown = set(scopes) - set(Scope.values)
    if unknown or not scopes:
        raise ValueError(f"unknown scopes {sorted(unknown)}; known: {Scope.values}")

    class _HasScope(permissions.BasePermission):
        required = scopes
        message = f"This token lacks the scope: needs one of {', '.join(scopes)}."

        def has_permission(self, request, view) -> bool:
            if not (request.user and request.user.is_authenticated):
                return False
            held = token_scopes(request)
            for scope in scopes:
                if scope in held:
                    request.api_scope = scope
                    return True
            return False

    _HasScope.__name__ = _HasScope.__qualname__ = "HasScope_" + "_".join(s.replace(":", "_") for s in scopes)
    return _HasScope


require_scopes = HasScope


class TokenApiView(APIView):
    """An API view for trainers: bearer tokens (and staff sessions), and one logged use per token request."""

    authentication_classes = [ApiTokenAuthentication, authentication.SessionAuthentication]
    permission_classes = [permissions.IsAuthenticated]

    def finalize_response(self, request: Request, response: Response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        token = getattr(request, "_api_token", None)
        if token is not None:
            log_use(token=token, request=request, status=response.status_code, scope=getattr(request, "api_scope", ""))
        return response


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The bearer token in the OpenAPI document (and Swagger UI's Authorize button)."""

    target_class = "trainer_bridge.authentication.ApiTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API token (scopes: " + ", ".join(SCOPES) + ")."}
