"""The MCP ``Server``: ``tools/list`` from the tool registry, ``tools/call`` into an episode.

The registry's MCP schemas are served verbatim. A call runs ``call_tool`` (which logs it in the episode) in
Django's sync thread, never on the event loop. Its result comes back as JSON text and as
``structuredContent``; a result holding ``"error"`` is ``isError``. A closed episode answers with an error
result saying so; an unknown episode is a JSON-RPC error (the HTTP layer answers 404 before that).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from world_app.contract import agent_contract, mcp_instructions
from world_app.episodes import EpisodeClosed, EpisodeNotFound
from world_app.tools import all_tools, call_tool
from world_app.tools.results import ErrorCode, error_result

logger = logging.getLogger(__name__)

SERVER_NAME = "corecraft-computers"
SERVER_VERSION = "1.0"
# Where the HTTP layer leaves the episode it resolved, in the ASGI scope's state (``request.state``).
EPISODE_STATE_KEY = "corecraft_episode_id"
EPISODE_CLOSED_CODE = "episode_closed"


@cache
def _mcp_tools() -> tuple[types.Tool, ...]:
    """The registry's MCP tool entries as SDK models (schemas untouched), with read-only hints by group."""
    groups = {t.name: t.group for t in all_tools()}
    return tuple(
        types.Tool.model_validate(
            {**entry, "annotations": {"readOnlyHint": groups[entry["name"]] != "write", "openWorldHint": False}}
        )
        for entry in agent_contract().tool_list("mcp")
    )


def _input_schema(name: str) -> Mapping[str, Any] | None:
    return next((t.input_schema for t in _mcp_tools() if t.name == name), None)


def _episode_call(episode_id: uuid.UUID, name: str, arguments: dict[str, Any] | None) -> dict:
    """One tool call in the episode, as Django runs a request: stale connections dropped before and after."""
    close_old_connections()
    try:
        return call_tool(episode_id, name, arguments)
    except EpisodeClosed as exc:
        return error_result(EPISODE_CLOSED_CODE, f"{exc}; open a new episode to go on")
    finally:
        close_old_connections()


def tool_result(result: dict) -> types.CallToolResult:
    """A tool's JSON answer as MCP content: the JSON text for the model, the object for programs."""
    text = json.dumps(result, cls=DjangoJSONEncoder, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=json.loads(text),
        is_error=isinstance(result, dict) and "error" in result,
    )


def episode_unknown_error(episode_id: object) -> MCPError:
    return MCPError(
        code=types.INVALID_REQUEST,
        message=f"no episode {episode_id}: create one with POST /mcp/episodes and use its mcp_url",
        data={"episode_id": str(episode_id)},
    )


def mcp_server_build(*, episode_id: uuid.UUID | None = None) -> Server:
    """The SDK server for the 23 tools.

    With ``episode_id`` (stdio) every call goes to that episode; without it (HTTP) each request names its
    episode through the HTTP layer (``EPISODE_STATE_KEY`` in the request state).
    """

    def request_episode(ctx: ServerRequestContext) -> uuid.UUID:
        if episode_id is not None:
            return episode_id
        state = getattr(getattr(ctx.request, "state", None), EPISODE_STATE_KEY, None)
        if state is None:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="no episode named: use /mcp/episodes/<id> or the X-Corecraft-Episode header",
            )
        return state

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(_mcp_tools()))

    async def call(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        target = request_episode(ctx)
        try:
            result = await sync_to_async(_episode_call, thread_sensitive=True)(target, params.name, params.arguments)
        except EpisodeNotFound:
            raise episode_unknown_error(target) from None
        except Exception:
            # The engine logs nothing for a call that raised; the agent gets a result, the server log the traceback.
            logger.exception("MCP call %s in episode %s failed", params.name, target)
            result = error_result(ErrorCode.INTERNAL_ERROR, f"{params.name} could not run on the server; try again")
        return tool_result(result)

    _mcp_tools()  # load the registry now, not in the event loop of the first request
    # The agent contract's system prompt (world_app.contract): the words a rollout and a trainer's episode get.
    instructions = mcp_instructions(episode_id)
    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        title="Corecraft Computers support tools",
        instructions=instructions,
        get_tool_input_schema=_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call,
    )
