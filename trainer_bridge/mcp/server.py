"""The MCP ``Server``: ``tools/list`` from the tool registry, ``tools/call`` into an episode.

The registry's MCP schemas are served verbatim. A call runs ``call_tool`` (which logs it in the episode) in
Django's sync thread, never on the event loop. Its result comes back as JSON text and as
``structuredContent``; a result holding ``"error"`` is ``isError``. A closed episode answers with an error
result saying so; an unknown episode is a JSON-RPC error (the HTTP layer answers before that).

Task mode (``trainer_bridge.mcp.tasks``): an episode opened for a task also serves the prompt ``task``, two resources
(the instruction, the task as JSON) and the ``finish`` tool, whose result is the judgement the provider returns.
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

from trainer_bridge.mcp.tasks import (
    FINISH_TOOL,
    FINISH_TOOL_NAME,
    TASK_PROMPT_NAME,
    EpisodeTask,
    McpTaskProvider,
    TaskRefused,
    mcp_tool_from_openai,
)
from world_app.contract import agent_contract, mcp_instructions
from world_app.credentials import Credential
from world_app.episodes import EpisodeClosed, EpisodeNotFound
from world_app.tools import all_tools, call_tool
from world_app.tools.results import ErrorCode, error_result

logger = logging.getLogger(__name__)

SERVER_NAME = "corecraft-computers"
SERVER_VERSION = "1.0"
# Where the HTTP layer leaves the episode it resolved, in the ASGI scope's state (``request.state``).
EPISODE_STATE_KEY = "corecraft_episode_id"
# Where the HTTP layer leaves the request's verified credential.
CREDENTIAL_STATE_KEY = "corecraft_credential"
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
    if name == FINISH_TOOL_NAME:
        return FINISH_TOOL["inputSchema"]
    return next((t.input_schema for t in _mcp_tools() if t.name == name), None)


@cache
def _finish_tool() -> types.Tool:
    return types.Tool.model_validate(FINISH_TOOL)


def _task_tools(task: EpisodeTask) -> list[types.Tool]:
    """A task episode's tools: those frozen with the task (else the registry's), then ``finish``."""
    if not task.tools:
        return [*_mcp_tools(), _finish_tool()]
    groups = {t.name: t.group for t in all_tools()}
    tools = []
    for schema in task.tools:
        entry = mcp_tool_from_openai(schema)
        hint = {"readOnlyHint": groups.get(entry["name"]) != "write", "openWorldHint": False}
        tools.append(types.Tool.model_validate({**entry, "annotations": hint}))
    return [*tools, _finish_tool()]


def _task_lookup(tasks: McpTaskProvider, credential: Credential, episode_id: uuid.UUID) -> EpisodeTask | None:
    close_old_connections()
    try:
        return tasks.task_of(credential=credential, episode_id=episode_id)
    finally:
        close_old_connections()


def _task_finish(tasks: McpTaskProvider, credential: Credential, episode_id: uuid.UUID, arguments: Any) -> dict:
    """The finish tool: the judgement as the provider returns it, or an error result the agent can read."""
    extra = sorted(set(arguments or {}) - {"final_answer"}) if isinstance(arguments, dict) else []
    answer = arguments.get("final_answer") if isinstance(arguments, dict) else None
    if not isinstance(answer, str) or extra:
        detail = f"unknown arguments {extra}" if extra else "final_answer (a string) is required"
        return error_result(ErrorCode.INVALID_ARGUMENTS, f"finish: {detail}")
    close_old_connections()
    try:
        return tasks.finish(credential=credential, episode_id=episode_id, final_answer=answer)
    except TaskRefused as exc:
        return error_result(exc.code, str(exc))
    finally:
        close_old_connections()


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


def mcp_server_build(
    *,
    episode_id: uuid.UUID | None = None,
    tasks: McpTaskProvider | None = None,
    credential: Credential | None = None,
) -> Server:
    """The SDK server for the agent contract's tools (23 world tools and ask_user).

    With ``episode_id`` (stdio) every call goes to that episode; without it (HTTP) each request names its
    episode through the HTTP layer (``EPISODE_STATE_KEY`` in the request state). With ``tasks`` an episode
    opened for a task (``trainer_bridge.mcp.tasks``) also serves its prompt, its resources and the ``finish`` tool,
    for the request's credential (HTTP: ``CREDENTIAL_STATE_KEY`` in the request state; stdio: ``credential``).
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

    def request_credential(ctx: ServerRequestContext) -> Credential | None:
        if credential is not None:
            return credential
        return getattr(getattr(ctx.request, "state", None), CREDENTIAL_STATE_KEY, None)

    async def request_task(ctx: ServerRequestContext) -> EpisodeTask | None:
        """The task the request's episode was opened for (None: a plain episode, or task mode off)."""
        who = request_credential(ctx)
        if tasks is None or who is None:
            return None
        target = request_episode(ctx)
        return await sync_to_async(_task_lookup, thread_sensitive=True)(tasks, who, target)

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        task = await request_task(ctx)
        return types.ListToolsResult(tools=_task_tools(task) if task else list(_mcp_tools()))

    async def list_prompts(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        task = await request_task(ctx)
        if task is None:
            return types.ListPromptsResult(prompts=[])
        prompt = types.Prompt(name=TASK_PROMPT_NAME, title=task.title, description=_prompt_description(task))
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        task = await request_task(ctx)
        if task is None or params.name != TASK_PROMPT_NAME:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no prompt {params.name!r} in this episode")
        message = types.PromptMessage(role="user", content=types.TextContent(text=task.instruction))
        return types.GetPromptResult(description=_prompt_description(task), messages=[message])

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        task = await request_task(ctx)
        if task is None:
            return types.ListResourcesResult(resources=[])
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="instruction",
                    title=f"Instruction: {task.title}",
                    uri=task.instruction_uri(),
                    mime_type="text/plain",
                    description="The task's instruction: what the customer or colleague asks.",
                ),
                types.Resource(
                    name="task",
                    title=f"Task: {task.title}",
                    uri=task.task_uri(),
                    mime_type="application/json",
                    description="Where the task comes from (release, row, split), its snapshot and its limits.",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        task = await request_task(ctx)
        uri = str(params.uri)
        if task is not None and uri == task.instruction_uri():
            contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=task.instruction)
        elif task is not None and uri == task.task_uri():
            text = json.dumps(task.summary(), cls=DjangoJSONEncoder, ensure_ascii=False)
            contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        else:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no resource {uri[:200]} in this episode")
        return types.ReadResourceResult(contents=[contents])

    async def call(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        target = request_episode(ctx)
        if params.name == FINISH_TOOL_NAME and await request_task(ctx) is not None:
            who = request_credential(ctx)
            result = await sync_to_async(_task_finish, thread_sensitive=True)(tasks, who, target, params.arguments)
            return tool_result(result)
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
        on_list_prompts=list_prompts if tasks is not None else None,
        on_get_prompt=get_prompt if tasks is not None else None,
        on_list_resources=list_resources if tasks is not None else None,
        on_read_resource=read_resource if tasks is not None else None,
    )


def _prompt_description(task: EpisodeTask) -> str:
    return (
        f"The task of this episode ({task.title}): the instruction to work on with the tools; call "
        f"{FINISH_TOOL_NAME} with your final answer to be judged."
    )
