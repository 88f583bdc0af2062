"""The streamable-HTTP ASGI app: episode creation, and the MCP endpoint of each episode.

- ``POST /mcp/episodes`` (JSON ``{"snapshot_version"?, "label"?}``) -> 201 ``{"episode_id", "mcp_url",
  "snapshot_version"}``; ``mcp_url`` is ``/mcp/episodes/<uuid>/mcp``.
- ``/mcp/episodes/<uuid>/mcp`` (and ``/mcp/episodes/<uuid>``): the MCP endpoint of that episode. The form
  ending in ``/mcp`` is for clients that insist on it (the MCP Inspector rewrites a URL's end to ``/mcp``).
- ``/mcp`` with header ``X-Corecraft-Episode: <uuid>``: the same, for clients with a fixed URL.

The SDK's session manager runs stateless: the episode named by the request is the only state, and it lives
in Postgres. A request to an unknown episode is answered before any MCP handling with a JSON-RPC error for
that request's id (HTTP 200), which MCP clients raise with its message. Not a 404: for streamable HTTP a 404
means "session expired", and MCP 1.x clients replace the message with "Session terminated".
"""

from __future__ import annotations

import contextlib
import json
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
            response = await _refusal(Request(scope, receive), message, data={"episode_id": named})
            await response(scope, receive, send)
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
        url = str(request.url_for("mcp_episode_mcp", episode_id=str(episode_id)))
        body = {"episode_id": str(episode_id), "mcp_url": url, "snapshot_version": version}
        return JSONResponse(body, status_code=201, headers={"Location": url})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[
            Route("/mcp/episodes", create_episode, methods=["POST"], name="mcp_episode_create"),
            Route("/mcp/episodes/{episode_id}/mcp", endpoint, name="mcp_episode_mcp"),
            Route("/mcp/episodes/{episode_id}", endpoint, name="mcp_episode"),
            Route("/mcp", endpoint, name="mcp"),
        ],
        lifespan=lifespan,
    )
