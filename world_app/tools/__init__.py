"""The agent tools (23 world tools and the contract's conversation tool ask_user): one registry, served in
process, over HTTP and over MCP. See ``registry``."""

from world_app.tools.registry import (
    GROUPS,
    Tool,
    all_tools,
    get_tool,
    invoke_tool,
    tool_schemas,
    world_tools,
)
from world_app.tools.steps import call_tool

__all__ = ["GROUPS", "Tool", "all_tools", "call_tool", "get_tool", "invoke_tool", "tool_schemas", "world_tools"]
