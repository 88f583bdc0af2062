"""The streamable-HTTP ASGI app: episode creation, and the MCP endpoint of each episode.

- ``POST /mcp/episodes`` (JSON ``{"snapshot_version"?, "label"?}``) -> 201 ``{"episode_id", "mcp_url",
  "snapshot_version"}``.
- ``/mcp/episodes/<uuid>``: the MCP endpoint of that episode.
- ``/mcp`` with header ``X-Corecraft-Episode: <uuid>``: the same, for clients with a fixed URL.

The SDK's session manager runs stateless: the episode named by the request is the only state, and it lives
in Postgres. An unknown episode is answered 404 (a JSON-RPC error body) before any MCP handling.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from world_app.mcp.episodes import SnapshotVersionUnknown, mcp_episode_create, mcp_episode_status
from world_app.mcp.server import EPISODE_STATE_KEY, mcp_server_build
from world_app.snapshots import SnapshotNotPublished

EPISODE_HEADER = "x-corecraft-episode"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class EpisodeCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    snapshot_version: int | None = Field(None, ge=1)
    label: str = Field("", max_length=200)


def _jsonrpc_error(status: int, message: str, *, code: int = types.INVALID_REQUEST) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


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
        if episode_id is None or await sync_to_async(mcp_episode_status, thread_sensitive=True)(episode_id) is None:
            message = f"no episode {named}: create one with POST /mcp/episodes and use its mcp_url"
            await _jsonrpc_error(404, message)(scope, receive, send)
            return
        scope = {**scope, "state": {**scope.get("state", {}), EPISODE_STATE_KEY: episode_id}}
        await self.manager.handle_request(scope, receive, send)


def mcp_http_app(*, host: str = "127.0.0.1", snapshot_version: int | None = None) -> Starlette:
    """The ASGI app; ``snapshot_version`` is what ``POST /mcp/episodes`` uses when the body names none."""
    # As the SDK does for its own apps: on a loopback address, refuse other Host/Origin headers (DNS rebinding).
    security = None
    if host in LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(
        app=mcp_server_build(), stateless=True, json_response=True, security_settings=security
    )
    endpoint = EpisodeMcpEndpoint(manager)

    async def create_episode(request: Request) -> Response:
        raw = await request.body()
        try:
            data = EpisodeCreateInput.model_validate_json(raw or b"{}")
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False, include_input=False)
            return JSONResponse({"error": errors}, status_code=400)
        wanted = data.snapshot_version if data.snapshot_version is not None else snapshot_version
        try:
            episode_id, version = await sync_to_async(mcp_episode_create, thread_sensitive=True)(
                snapshot_version=wanted, label=data.label
            )
        except SnapshotVersionUnknown as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except SnapshotNotPublished as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        url = str(request.url_for("mcp_episode", episode_id=str(episode_id)))
        body = {"episode_id": str(episode_id), "mcp_url": url, "snapshot_version": version}
        return JSONResponse(body, status_code=201, headers={"Location": url})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[
            Route("/mcp/episodes", create_episode, methods=["POST"], name="mcp_episode_create"),
            Route("/mcp/episodes/{episode_id}", endpoint, name="mcp_episode"),
            Route("/mcp", endpoint, name="mcp"),
        ],
        lifespan=lifespan,
    )
