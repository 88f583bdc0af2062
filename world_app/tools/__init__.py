"""The 23 agent tools: one registry, served in process, over HTTP and over MCP. See ``registry``."""

from world_app.tools.registry import (
    GROUPS,
    Tool,
    all_tools,
    call_tool,
    get_tool,
    invoke_tool,
    tool_schemas,
)

__all__ = ["GROUPS", "Tool", "all_tools", "call_tool", "get_tool", "invoke_tool", "tool_schemas"]
