"""MCP over stdio: one process, one episode, for local agents that spawn their tools."""

from __future__ import annotations

import uuid

from mcp.server.stdio import stdio_server

from trainer_bridge.mcp.server import mcp_server_build


async def mcp_stdio_serve(*, episode_id: uuid.UUID) -> None:
    """Serve the tools of ``episode_id`` on stdin/stdout until the client closes them."""
    server = mcp_server_build(episode_id=episode_id)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
