"""The streamable-HTTP ASGI app: episode creation, and the MCP endpoint of each episode.

- ``POST /mcp/episodes`` (JSON ``{"snapshot_version"?, "label"?}``) -> 201 ``{"episode_id", "mcp_url",
  "snapshot_version"}``; ``mcp_url`` is ``/mcp/episodes/<uuid>/mcp``. Task mode (``trainer_bridge.mcp.tasks``):
  ``{"release": "<slug>", "row_id": <id>}`` opens the episode for a frozen release row, scoped like the trainer
  API, and the answer carries ``task`` (instruction, prompt, resources, the finish tool).
- ``/mcp/episodes/<uuid>/mcp`` (and ``/mcp/episodes/<uuid>``): the MCP endpoint of that episode. The form
  ending in ``/mcp`` is for clients that insist on it (the MCP Inspector rewrites a URL's end to ``/mcp``).
- ``/mcp`` with header ``X-Corecraft-Episode: <uuid>``: the same, for clients with a fixed URL.
- ``/.well-known/oauth-protected-resource[/mcp]``: the protected-resource metadata (RFC 9728).

Every request but the metadata carries ``Authorization: Bearer <token>`` (the same scoped tokens as the API;
``episodes`` needed), as the MCP authorization spec asks of a resource server: none, or a bad one, is a 401 whose
``WWW-Authenticate`` names the metadata document; tokens are issued by the studio (admin, ``manage.py
api_token``), there is no authorization server here. An episode is reachable only by the credential that opened
it (another's is a 404, like an unknown one). Host and Origin are checked on every request against the
configured public URL, and ``mcp_url`` is built from that URL, never from the request.

The SDK's session manager runs stateless: the episode named by the request is the only state, and it lives
in Postgres. A request to an unknown episode is answered before any MCP handling with a JSON-RPC error for
that request's id (HTTP 200), which MCP clients raise with its message. Not a 404: for streamable HTTP a 404
means "session expired", and MCP 1.x clients replace the message with "Session terminated".
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from trainer_bridge.mcp.episodes import (
    SnapshotVersionUnknown,
    mcp_episode_create,
    mcp_episode_reachable,
)
from trainer_bridge.mcp.server import CREDENTIAL_STATE_KEY, EPISODE_STATE_KEY, mcp_server_build
from trainer_bridge.mcp.tasks import McpTaskProvider, TaskRefused
from world_app.credentials import EPISODES_SCOPE, Credential
from world_app.snapshots import SnapshotNotPublished

EPISODE_HEADER = "x-corecraft-episode"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
METADATA_PATH = "/.well-known/oauth-protected-resource"
# Verifies a bearer secret: the credential it stands for, or None for an unknown or revoked one (sync, ORM).
CredentialVerifier = Callable[[str], Credential | None]


@dataclass(frozen=True)
class McpSite:
    """Where this server is reached from outside (configuration, never a request header), and what it accepts."""

    public_url: str
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @classmethod
    def build(cls, *, public_url: str, extra_hosts: tuple[str, ...] = ()) -> McpSite:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the MCP public URL must be an http(s) URL with a host, not {public_url!r}")
        public_url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        hosts = {parts.netloc, *extra_hosts}
        origins = {f"{parts.scheme}://{parts.netloc}"}
        if parts.hostname in LOOPBACK_HOSTS:
            hosts |= {"127.0.0.1:*", "localhost:*", "[::1]:*"}
            origins |= {"http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"}
        return cls(public_url=public_url, allowed_hosts=tuple(sorted(hosts)), allowed_origins=tuple(sorted(origins)))

    @property
    def resource(self) -> str:
        return f"{self.public_url}/mcp"

    @property
    def metadata_url(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path}"

    def episode_url(self, episode_id: uuid.UUID) -> str:
        return f"{self.public_url}/mcp/episodes/{episode_id}/mcp"

    def transport_security(self) -> TransportSecuritySettings:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(self.allowed_hosts),
            allowed_origins=list(self.allowed_origins),
        )


class EpisodeCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    snapshot_version: int | None = Field(None, ge=1)
    label: str = Field("", max_length=200)
    # Task mode: the release row to open the episode for (both, or neither).
    release: str | None = Field(None, min_length=1, max_length=100)
    row_id: int | None = Field(None, ge=1, le=2**62)

    @model_validator(mode="after")
    def _task_fields(self) -> EpisodeCreateInput:
        if (self.release is None) != (self.row_id is None):
            raise ValueError("task mode needs both release and row_id")
        if self.release is not None and self.snapshot_version is not None:
            raise ValueError("a release row brings its own snapshot version: send release and row_id without it")
        return self

    def task_spec(self) -> dict | None:
        return None if self.release is None else {"release": self.release, "row_id": self.row_id}


def _jsonrpc_error(status: int, message: str, *, code: int = types.INVALID_REQUEST) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


async def _refusal(request: Request, message: str, *, data: dict) -> Response:
    """A JSON-RPC error answering each request in the body (by its id), so that clients show ``message``; a
    body without requests (notifications, a GET for the event stream) gets a 400 with the same error."""
    payload = None
    if request.method == "POST":
        try:
            payload = json.loads(await request.body() or b"null")
        except ValueError:
            payload = None
    messages = payload if isinstance(payload, list) else [payload]
    ids = [m["id"] for m in messages if isinstance(m, dict) and "method" in m and m.get("id") is not None]
    error = {"code": types.INVALID_REQUEST, "message": message, "data": data}
    if not ids:
        return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
    errors = [{"jsonrpc": "2.0", "id": i, "error": error} for i in ids]
    return JSONResponse(errors if isinstance(payload, list) else errors[0], status_code=200)


def _scope_credential(scope: Scope) -> Credential:
    return scope["state"][CREDENTIAL_STATE_KEY]


class BearerGuard:
    """Host/Origin, then the bearer token, on every request but the metadata document; the credential goes on."""

    def __init__(self, app: ASGIApp, *, site: McpSite, verify: CredentialVerifier) -> None:
        self.app = app
        self.site = site
        self.verify = verify
        self.security = TransportSecurityMiddleware(site.transport_security())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = await self.security.validate_request(request, is_post=request.method == "POST")
        if refused is not None:
            await refused(scope, receive, send)
            return
        if scope["path"].startswith(METADATA_PATH):
            await self.app(scope, receive, send)
            return
        header = request.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            await self._challenge("invalid_request", "send Authorization: Bearer <token> (an API token)", 401)(
                scope, receive, send
            )
            return
        credential = await sync_to_async(self.verify, thread_sensitive=True)(secret.strip())
        if credential is None:
            await self._challenge("invalid_token", "Invalid token.", 401)(scope, receive, send)
            return
        if not credential.may_open_episodes:
            await self._challenge("insufficient_scope", f"this token lacks the scope: needs {EPISODES_SCOPE}", 403)(
                scope, receive, send
            )
            return
        scope = {**scope, "state": {**scope.get("state", {}), CREDENTIAL_STATE_KEY: credential}}
        await self.app(scope, receive, send)

    def _challenge(self, error: str, description: str, status: int) -> Response:
        challenge = (
            f'Bearer error="{error}", error_description="{description}", '
            f'resource_metadata="{self.site.metadata_url}", scope="{EPISODES_SCOPE}"'
        )
        body = {"error": error, "error_description": description, "resource_metadata": self.site.metadata_url}
        return JSONResponse(body, status_code=status, headers={"WWW-Authenticate": challenge})


class EpisodeMcpEndpoint:
    """Resolves the episode a request names, then hands the request to the SDK's stateless transport."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        named = scope.get("path_params", {}).get("episode_id")
        if named is None:
            named = Request(scope).headers.get(EPISODE_HEADER)
        if not named:
            message = "name the episode: POST /mcp/episodes, then use its mcp_url (or the X-Corecraft-Episode header)"
            await _jsonrpc_error(400, message)(scope, receive, send)
            return
        try:
            episode_id = uuid.UUID(named)
        except ValueError:
            episode_id = None
        reachable = episode_id is not None and await sync_to_async(mcp_episode_reachable, thread_sensitive=True)(
            episode_id, _scope_credential(scope)
        )
        if not reachable:
            # Another user's episode is answered like an unknown one.
            message = f"no episode {named[:60]}: create one with POST /mcp/episodes and use its mcp_url"
            response = await _refusal(Request(scope, receive), message, data={"episode_id": named[:60]})
            await response(scope, receive, send)
            return
        scope = {**scope, "state": {**scope.get("state", {}), EPISODE_STATE_KEY: episode_id}}
        await self.manager.handle_request(scope, receive, send)


def _task_open(tasks: McpTaskProvider, credential: Credential, spec: dict):
    close_old_connections()
    try:
        return tasks.open(credential=credential, spec=spec)
    finally:
        close_old_connections()


def mcp_http_app(
    *,
    site: McpSite,
    verify: CredentialVerifier,
    snapshot_version: int | None = None,
    tasks: McpTaskProvider | None = None,
) -> ASGIApp:
    """The ASGI app; ``snapshot_version`` is what ``POST /mcp/episodes`` uses when the body names none; ``tasks``
    (None: task mode off) opens episodes for tasks and serves their prompt, resources and finish tool."""
    # Host/Origin are checked by BearerGuard before anything (DNS rebinding); the SDK's own check would repeat it.
    manager = StreamableHTTPSessionManager(app=mcp_server_build(tasks=tasks), stateless=True, json_response=True)
    endpoint = EpisodeMcpEndpoint(manager)

    async def create_episode(request: Request) -> Response:
        raw = await request.body()
        try:
            data = EpisodeCreateInput.model_validate_json(raw or b"{}")
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False, include_input=False)
            return JSONResponse({"error": errors}, status_code=400)
        spec = data.task_spec()
        if spec is not None:
            return await open_task(request, spec)
        wanted = data.snapshot_version if data.snapshot_version is not None else snapshot_version
        try:
            episode_id, version = await sync_to_async(mcp_episode_create, thread_sensitive=True)(
                snapshot_version=wanted, label=data.label, credential=_scope_credential(request.scope)
            )
        except SnapshotVersionUnknown as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except SnapshotNotPublished as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        url = site.episode_url(episode_id)
        body = {"episode_id": str(episode_id), "mcp_url": url, "snapshot_version": version}
        return JSONResponse(body, status_code=201, headers={"Location": url})

    async def open_task(request: Request, spec: dict) -> Response:
        if tasks is None:
            return JSONResponse({"error": "task mode is off on this server (MCP_TASK_PROVIDER)"}, status_code=400)
        try:
            task = await sync_to_async(_task_open, thread_sensitive=True)(tasks, _scope_credential(request.scope), spec)
        except TaskRefused as exc:
            return JSONResponse({"error": str(exc), "code": exc.code}, status_code=exc.status)
        url = site.episode_url(task.episode_id)
        body = {
            "episode_id": str(task.episode_id),
            "mcp_url": url,
            "snapshot_version": task.snapshot_version,
            "task": task.summary(),
        }
        return JSONResponse(body, status_code=201, headers={"Location": url})

    async def resource_metadata(request: Request) -> Response:
        # RFC 9728. No authorization_servers: tokens are issued by the studio itself (admin, manage.py api_token).
        body = {
            "resource": site.resource,
            "bearer_methods_supported": ["header"],
            "scopes_supported": [EPISODES_SCOPE],
            "resource_name": "Corecraft Computers support tools (Corecraft Studio)",
        }
        return JSONResponse(body, headers={"Cache-Control": "public, max-age=300"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(
        routes=[
            Route(METADATA_PATH, resource_metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}/mcp", resource_metadata, methods=["GET"]),
            Route("/mcp/episodes", create_episode, methods=["POST"], name="mcp_episode_create"),
            Route("/mcp/episodes/{episode_id}/mcp", endpoint, name="mcp_episode_mcp"),
            Route("/mcp/episodes/{episode_id}", endpoint, name="mcp_episode"),
            Route("/mcp", endpoint, name="mcp"),
        ],
        lifespan=lifespan,
    )
    return BearerGuard(app, site=site, verify=verify)
