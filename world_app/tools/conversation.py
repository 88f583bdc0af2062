"""The contract's conversation tool: ask the person who sent the request, and read their reply.

Not a world tool: it reads and writes nothing of the world. Its answer comes from the episode's simulated user
(``world_app.conversation``), bound by whoever serves the call (``call_tool_step`` binds the episode's; the red
team's replay binds the task's). With no one on the other end it answers with a ``no_user`` error result.
"""

from __future__ import annotations

from pydantic import Field

from world_app.conversation import NO_USER_CODE, NO_USER_MESSAGE, simulated_user_current
from world_app.tools.params import ToolParams
from world_app.tools.registry import tool
from world_app.tools.results import error_result

QUESTION_MAX = 2000


class AskUserParams(ToolParams):
    message: str = Field(
        min_length=1,
        max_length=QUESTION_MAX,
        description="Your question, as you would write it in the chat: one message, one or more questions.",
    )


@tool(group="conversation", params=AskUserParams)
def ask_user(p: AskUserParams) -> dict:
    """Send a message to the person who made the request (the customer or colleague) and wait for their reply.

    Use it when the request leaves out something you need and cannot look up (which order they mean, the dates,
    the email on their account, a choice that is theirs to make): ask instead of guessing. Their reply comes back as
    this tool's result (its "reply"); the conversation goes on after it. Your final answer (a reply without
    a tool call) still ends the conversation. Ask only what the tools cannot tell you."""
    user = simulated_user_current()
    if user is None:
        return error_result(NO_USER_CODE, NO_USER_MESSAGE)
    return {"reply": user.reply(p.message).text}


__all__ = ["AskUserParams", "ask_user"]
