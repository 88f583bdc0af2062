"""The one registry of agent tools, and the ways to call them.

A tool is a plain function over the world's ORM that takes its validated Pydantic parameters and returns
JSON. The registry gives each tool its JSON Schema (OpenAI and MCP formats) and runs it so that nothing but a
result ever reaches the agent: bad arguments, refusals and crashes all come back as ``{"error": {...}}``.

- ``invoke_tool(name, arguments)`` runs a tool against whatever world the router points at (the live world
  outside an episode).
- ``call_tool(episode, name, arguments)`` (``steps``) runs it inside an episode and appends the call to its log;
  ``call_tool_step`` does the same and returns the logged step (its number and duration too).
The HTTP API and the MCP server are thin layers over ``tool_schemas`` and ``call_tool_step``/``call_tool``.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router, transaction
from pydantic import ValidationError
from pydantic.json_schema import GenerateJsonSchema

from world_app.routers import EPISODE_ALIAS
from world_app.tools.params import ToolParams
from world_app.tools.results import ErrorCode, ToolError, error_result
from world_app.tools.strict import strict_openai_tool

logger = logging.getLogger(__name__)

# The world tools' groups, then the agent contract's conversation tools (``ask_user``: not a world tool, it
# reads and writes nothing of the world; its answer comes from the episode's simulated user).
GROUPS = ("search", "read", "compute", "write", "conversation")
WORLD_GROUPS = ("search", "read", "compute", "write")
CONVERSATION_GROUP = "conversation"
ToolGroup = Literal["search", "read", "compute", "write", "conversation"]
SchemaFormat = Literal["registry", "openai", "openai-strict", "compact", "mcp"]
SCHEMA_FORMATS = ("registry", "openai", "openai-strict", "compact", "mcp")
# Importing a tool module registers its tools; within a group, the order here is the order of the list.
TOOL_MODULES = (
    "world_app.tools.search.commerce",
    "world_app.tools.search.catalog",
    "world_app.tools.search.tickets",
    "world_app.tools.search.fulfilment",
    "world_app.tools.search.staff",
    "world_app.tools.search.knowledge_base",
    "world_app.tools.search.builds",
    "world_app.tools.read",
    "world_app.tools.compute",
    "world_app.tools.write_commerce",
    "world_app.tools.write_orders",
    "world_app.tools.write_support",
    "world_app.tools.write_tickets",
    "world_app.tools.write_builds",
    "world_app.tools.conversation",
)


@dataclass(frozen=True)
class Tool:
    name: str
    group: str
    description: str
    params: type[ToolParams]
    fn: Callable[[Any], dict]

    def input_schema(self) -> dict:
        # Built once per tool; callers get their own copy to change as they like.
        return copy.deepcopy(params_schema(self.params))

    @property
    def summary(self) -> str:
        """The description's first paragraph, on one line."""
        return " ".join(self.description.split("\n\n", 1)[0].split())

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "group": self.group,
            "description": self.description,
            "input_schema": self.input_schema(),
        }

    def openai_schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema()},
        }

    def openai_strict_schema(self) -> dict:
        """OpenAI ``strict: true`` function calling: all arguments required, optionals nullable, no open maps."""
        return strict_openai_tool(name=self.name, description=self.description, parameters=params_schema(self.params))

    def mcp_schema(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema()}


_REGISTRY: dict[str, Tool] = {}


def tool(*, group: ToolGroup, params: type[ToolParams]) -> Callable:
    """Register ``fn(params) -> dict`` as a tool named after the function, described by its docstring."""
    if group not in GROUPS:
        raise ImproperlyConfigured(f"unknown tool group {group!r}")

    def register(fn: Callable[[Any], dict]) -> Callable[[Any], dict]:
        description = _with_policy_numbers(inspect.cleandoc(fn.__doc__ or ""), fn.__name__)
        if not description:
            raise ImproperlyConfigured(f"tool {fn.__name__} needs a docstring: it is the description the model reads")
        if fn.__name__ in _REGISTRY:
            raise ImproperlyConfigured(f"tool {fn.__name__} is registered twice")
        _REGISTRY[fn.__name__] = Tool(name=fn.__name__, group=group, description=description, params=params, fn=fn)
        return fn

    return register


def _with_policy_numbers(text: str, name: str) -> str:
    """Fill ``{RETURN_WINDOW_DAYS}``-style placeholders from ``world_app.store_rules``: one source for every number."""
    from world_app import store_rules

    numbers = {key: value for key, value in vars(store_rules).items() if key.isupper()}
    try:
        return text.format_map(numbers)
    except (KeyError, IndexError, ValueError) as exc:
        raise ImproperlyConfigured(f"tool {name}: bad policy placeholder in its description: {exc}") from None


@cache
def _load_tool_modules() -> None:
    # Once per process: every call of a tool asks, and the answer never changes.
    for module in TOOL_MODULES:
        importlib.import_module(module)


def all_tools() -> list[Tool]:
    """Every tool of the agent contract: the 23 world tools by group (search, read, compute, write) and then in
    the order its module defines them, then the conversation tools."""
    _load_tool_modules()
    return sorted(_REGISTRY.values(), key=_list_position)


def _list_position(found: Tool) -> tuple[int, int]:
    # By group, then by module in TOOL_MODULES' order (whichever was imported first), then as the module defines
    # them (the sort keeps the registration order of equal keys).
    module = found.fn.__module__
    return GROUPS.index(found.group), TOOL_MODULES.index(module) if module in TOOL_MODULES else len(TOOL_MODULES)


def world_tools() -> list[Tool]:
    """The 23 world tools (every tool but the conversation ones)."""
    return [t for t in all_tools() if t.group != CONVERSATION_GROUP]


def conversation_tools() -> list[Tool]:
    """The contract's conversation tools (``ask_user``)."""
    return [t for t in all_tools() if t.group == CONVERSATION_GROUP]


def is_conversation_tool(name: str) -> bool:
    found = get_tool(name) if isinstance(name, str) else None
    return found is not None and found.group == CONVERSATION_GROUP


def get_tool(name: str) -> Tool | None:
    _load_tool_modules()
    return _REGISTRY.get(name)


def tool_schemas(format: SchemaFormat = "openai") -> list[dict]:
    """The tool list as an LLM API wants it (OpenAI ``tools``, OpenAI strict ``tools`` or MCP ``tools/list``
    entries), or as the registry lists it (name, group, description, input_schema): the agent contract's tools,
    the 23 world tools and then the conversation tools."""
    if format == "registry":
        return [t.as_dict() for t in all_tools()]
    if format == "openai":
        return [t.openai_schema() for t in all_tools()]
    if format == "openai-strict":
        return [t.openai_strict_schema() for t in all_tools()]
    if format == "compact":
        from world_app.contract import compact_tools

        return compact_tools([t.openai_schema() for t in all_tools()])
    if format == "mcp":
        return [t.mcp_schema() for t in all_tools()]
    raise ValueError(f"unknown schema format {format!r} ({', '.join(SCHEMA_FORMATS)})")


class _ToolJsonSchema(GenerateJsonSchema):
    """Schemas a model reads easily: no titles, and an optional field is just its type (not "X or null")."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def nullable_schema(self, schema):
        return self.generate_inner(schema["schema"])


@cache
def params_schema(params: type[ToolParams]) -> dict:
    raw = params.model_json_schema(schema_generator=_ToolJsonSchema)
    defs = raw.pop("$defs", {})
    schema = _inline(raw, defs)
    schema.pop("description", None)  # the params class docstring is for developers; the tool has its own
    schema = _drop_titles(schema)
    properties = schema.setdefault("properties", {})
    # Paging arguments come last: the filters are what a model reads first.
    for name in ("offset", "limit"):
        if name in properties:
            properties[name] = properties.pop(name)
    schema["additionalProperties"] = False
    return schema


def _inline(node: Any, defs: dict) -> Any:
    if isinstance(node, list):
        return [_inline(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**_inline(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
        return merged
    return {k: _inline(v, defs) for k, v in node.items()}


def _drop_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_titles(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {name: _drop_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _drop_titles(value)
    return out


def invoke_tool(name: str, arguments: Any) -> dict:
    """Validate ``arguments`` and run tool ``name`` on the world the router points at; never raises."""
    found = get_tool(name)
    if found is None:
        known = [t.name for t in all_tools()]
        return error_result(
            ErrorCode.UNKNOWN_TOOL,
            f"there is no tool named {name!r}; the tools are: {', '.join(known)}",
            field="name",
        )
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return error_result(
            ErrorCode.INVALID_ARGUMENTS, "arguments must be a JSON object of named arguments", field="arguments"
        )
    try:
        params = found.params.model_validate(arguments)
    except ValidationError as exc:
        return validation_error_result(found, exc)
    return execute_tool(found, params)


def execute_tool(found: Tool, params: ToolParams) -> dict:
    """Run a tool in a transaction of the world's database: a refusal or a crash leaves no write behind."""
    from world_app.models import Order

    alias = router.db_for_write(Order)
    # Inside an episode's step (its SQLite transaction is open) a tool that writes nothing needs no savepoint of
    # its own: there is nothing to undo, and a failed SQLite read leaves the transaction usable. Two statements
    # and an atomic block less on every read.
    wrapper = connections[alias]
    writes = found.group == "write" or alias != EPISODE_ALIAS or not wrapper.in_atomic_block
    try:
        if not writes:
            return found.fn(params)
        raw = _step_sqlite(wrapper) if alias == EPISODE_ALIAS else None
        if raw is not None:
            return _in_savepoint(wrapper, raw, found, params)
        with transaction.atomic(using=alias):
            return found.fn(params)
    except ToolError as refusal:
        return refusal.result
    except Exception:
        # Whatever went wrong, the agent gets a result, never a traceback; the server log keeps the traceback.
        logger.exception("tool %s failed with arguments %s", found.name, params.model_dump(mode="json"))
        return error_result(
            ErrorCode.INTERNAL_ERROR,
            f"{found.name} failed unexpectedly and changed nothing; try again or use another tool",
        )


# The savepoint a write tool runs in inside an episode's step: SQLite's names are scoped to the connection, and
# a tool's own atomic blocks nest theirs (Django's, named by thread and count) inside it.
_TOOL_SAVEPOINT = "tool_call"


def _step_sqlite(wrapper) -> sqlite3.Connection | None:
    """The episode's sqlite3 connection when a write tool's savepoint may be set on it directly (inside the step's
    atomic block, nothing listening to Django's cursor); None: Django's nested atomic block sets it."""
    raw = wrapper.connection
    if (
        not isinstance(raw, sqlite3.Connection)
        or not wrapper.in_atomic_block
        or wrapper.needs_rollback
        or wrapper.execute_wrappers
        or wrapper.queries_logged
    ):
        return None
    return raw


def _in_savepoint(wrapper, raw: sqlite3.Connection, found: Tool, params: ToolParams) -> dict:
    """``found.fn(params)`` as ``transaction.atomic`` nested in the step's block runs it, without Django's
    bookkeeping (a fifth of a status change's engine time): on a raise, or when the call marked the transaction
    for rollback (a database error it caught), its writes are rolled back to the savepoint and the mark cleared,
    as the nested block's exit does; else the savepoint is released."""
    raw.execute(f"SAVEPOINT {_TOOL_SAVEPOINT}")
    try:
        result = found.fn(params)
    except BaseException:
        _savepoint_undo(wrapper, raw)
        raise
    if wrapper.needs_rollback:
        _savepoint_undo(wrapper, raw)
    else:
        raw.execute(f"RELEASE SAVEPOINT {_TOOL_SAVEPOINT}")
    return result


def _savepoint_undo(wrapper, raw: sqlite3.Connection) -> None:
    """Roll the call back to its savepoint; if that fails the step's transaction is marked for rollback."""
    wrapper.needs_rollback = False
    try:
        raw.execute(f"ROLLBACK TO SAVEPOINT {_TOOL_SAVEPOINT}")
        raw.execute(f"RELEASE SAVEPOINT {_TOOL_SAVEPOINT}")
    except sqlite3.Error:
        wrapper.needs_rollback = True


def validation_error_result(found: Tool, exc: ValidationError) -> dict:
    details = []
    for err in exc.errors(include_url=False):
        field = _field_path(err["loc"])
        reason = _reason(found, err, top_level=len(err["loc"]) == 1)
        details.append({"field": field, "reason": reason} if field else {"reason": reason})
    summary = "; ".join(f"{d['field']}: {d['reason']}" if "field" in d else d["reason"] for d in details)
    fields = {d.get("field") for d in details}
    single_field = next(iter(fields)) if len(fields) == 1 else None
    return error_result(
        ErrorCode.INVALID_ARGUMENTS,
        f"invalid arguments for {found.name}: {summary}",
        field=single_field,
        details=details,
    )


def _field_path(loc: tuple) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _reason(found: Tool, err: dict, *, top_level: bool) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required"
    if kind == "extra_forbidden":
        if top_level:
            return f"unknown argument; {found.name} takes: {', '.join(found.params.model_fields)}"
        return "unknown argument"
    message = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message
