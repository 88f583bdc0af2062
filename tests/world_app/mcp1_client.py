"""An MCP 1.x SDK client (run by ``.venv-mcp1``'s Python, never imported by the suite): prints what it sees.

    MCP_TOKEN=cc_... python tests/world_app/mcp1_client.py UNKNOWN_URL CLOSED_URL OPEN_URL

Prints one JSON line: the error an unknown episode raises, a tool call in a closed episode, and the tool count
and one call in an open episode.
"""

import asyncio
import json
import os
import sys
from datetime import timedelta

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

TIMEOUT = timedelta(seconds=30)
# The bearer token every MCP request carries (MCP_TOKEN in the environment).
HEADERS = {"Authorization": f"Bearer {os.environ.get('MCP_TOKEN', '')}"}


def mcp_error(exc: BaseException) -> McpError | None:
    if isinstance(exc, McpError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = mcp_error(inner)
        if found is not None:
            return found
    return None


async def session_call(url: str, name: str, arguments: dict) -> dict:
    async with (
        streamablehttp_client(url, headers=HEADERS) as (read, write, _),
        ClientSession(read, write, TIMEOUT) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool(name, arguments)
        return {"tools": len(tools.tools), "is_error": result.isError, "text": result.content[0].text}


async def main(unknown_url: str, closed_url: str, open_url: str) -> dict:
    out: dict = {}
    try:
        async with (
            streamablehttp_client(unknown_url, headers=HEADERS) as (read, write, _),
            ClientSession(read, write, TIMEOUT) as s,
        ):
            await s.initialize()
        out["unknown"] = None
    except (McpError, BaseExceptionGroup) as exc:  # the SDK may wrap it in its task groups
        found = mcp_error(exc)
        out["unknown"] = found.error.message if found else f"{type(exc).__name__}: {exc}"
    out["closed"] = await session_call(closed_url, "search_tickets", {"limit": 1})
    out["open"] = await session_call(open_url, "search_tickets", {"limit": 1})
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:4]))))
