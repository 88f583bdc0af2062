"""MCP task mode: an episode opened for a task serves its instruction, and a ``finish`` tool returns the judgement.

The server needs a provider of tasks; ``release_rows.ReleaseRowTasks`` is the one for frozen release rows. This
module defines what the server asks of one:

- ``open``: a new episode for a task named by the client's ``spec`` (``{"release", "row_id"}``), checked against the
  credential's scopes; raises ``TaskRefused`` (with the HTTP status to answer) otherwise;
- ``task_of``: the task an episode was opened for, as this credential may see it (None: a plain episode, or one
  it may not see);
- ``finish``: end the episode with a final answer and return the judgement as a JSON object (the trainer API's).

``settings.MCP_TASK_PROVIDER`` names the provider (an import path to a class or factory); None turns task mode off.
The tools of a task episode are the task's (the contract's tools frozen with it) plus ``finish``; its prompt
``task`` and its resources ``.../instruction`` and ``.../task`` carry the instruction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from world_app.credentials import Credential

FINISH_TOOL_NAME = "finish"
TASK_PROMPT_NAME = "task"
RESOURCE_SCHEME = "corecraft"

FINISH_TOOL: dict[str, Any] = {
    "name": FINISH_TOOL_NAME,
    "title": "Finish the task",
    "description": (
        "End the task with your final answer (what you would reply: what you found or did, with the numbers and ids "
        "that matter). The episode is judged against the task's rubric and closes: no tool calls after it. Returns "
        "the judgement: reward, passed and each criterion's verdict."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "final_answer": {"type": "string", "description": "Your final answer, in plain text.", "maxLength": 100000}
        },
        "required": ["final_answer"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
}


class TaskRefused(Exception):
    """The provider will not open (or finish) this task for this credential; ``status`` is the HTTP answer."""

    def __init__(self, message: str, *, status: int = 404, code: str = "task_not_found") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class EpisodeTask:
    """What an episode opened for a task serves beside the world's tools."""

    episode_id: uuid.UUID
    title: str
    instruction: str
    snapshot_version: int | None
    # OpenAI-format tool schemas the task offers (frozen with it); empty: the registry's.
    tools: tuple[dict, ...] = ()
    # Where the task comes from and its limits, as the task resource shows them (release, row_id, split, ...).
    ref: Mapping[str, Any] = field(default_factory=dict)
    finished: bool = False

    def instruction_uri(self) -> str:
        return f"{RESOURCE_SCHEME}://episodes/{self.episode_id}/instruction"

    def task_uri(self) -> str:
        return f"{RESOURCE_SCHEME}://episodes/{self.episode_id}/task"

    def summary(self) -> dict[str, Any]:
        """The task as ``POST /mcp/episodes`` answers it and the task resource reads."""
        return {
            "title": self.title,
            "instruction": self.instruction,
            "snapshot_version": self.snapshot_version,
            "finished": self.finished,
            **dict(self.ref),
            "prompt": TASK_PROMPT_NAME,
            "resources": [self.instruction_uri(), self.task_uri()],
            "finish_tool": FINISH_TOOL_NAME,
        }


class McpTaskProvider(Protocol):
    def open(self, *, credential: Credential, spec: Mapping[str, Any]) -> EpisodeTask: ...

    def task_of(self, *, credential: Credential, episode_id: uuid.UUID) -> EpisodeTask | None: ...

    def finish(self, *, credential: Credential, episode_id: uuid.UUID, final_answer: str) -> dict[str, Any]: ...


def mcp_tool_from_openai(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI ``tools`` entry as an MCP ``tools/list`` entry (same name, description and parameters)."""
    function = schema.get("function", schema)
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "inputSchema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def mcp_task_provider_load(path: str | None) -> McpTaskProvider | None:
    """The provider named by an import path (``settings.MCP_TASK_PROVIDER``), or None when task mode is off."""
    if not path:
        return None
    from django.utils.module_loading import import_string

    factory = import_string(path)
    return factory()
