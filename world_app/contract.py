"""The agent contract: what every agent working in this world is given, defined once and versioned.

The system prompt (its policy section rendered from ``world_app.store_rules``), the tool list (the registry's schemas:
the 23 world tools and the conversation tools, ``CONVERSATION_TOOLS``, whose answers come from the episode's simulated
user, ``world_app.conversation``) and the limits (turns, tokens, wall time). Calibration rollouts, the trainer API's
episode, the verl and HF/TRL export rows and the MCP server all render it from here, so a pass rate measured in
calibration is measured under the contract a trainer trains with. ``version`` is a hash of all three: change any and
it changes; it is recorded on every rollout and frozen into every release.

The compact rendering (``tool_list("compact")``, ``compact_tools``) is the same tools for a model with a short
context: same names, parameters, types, enums, bounds and required lists, the tool descriptions in full (their
rules are the contract), shorter parameter descriptions (paging and dates said once the same way) and none of the
keywords the tools enforce anyway (lengths, bounds, ``format``, ``additionalProperties: false``: a value out of
them is an error result the model reads). Its rules are
versioned (``COMPACT_RENDERING``) inside the contract's version.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from corecraft_site.canonical import canonical_sha256

SYSTEM_PROMPT_TEMPLATE = """\
You are a customer support agent for Corecraft Computers, an online store for PC components and custom-built \
computers. You help customers and colleagues with orders, returns, refunds, warranty claims, shipping, \
compatibility questions and support tickets.

How to work:
- Use the tools to look things up and to make changes. Never guess an id, a price, a date or a status: read it.
- Searches return pages of results: while a result says has_more, call again with offset + limit; read further \
pages when the answer may be on them.
- Make only the changes the request needs, and check each tool result (a result with "error" changed nothing).
- When the request leaves out something you need that the tools cannot tell you (which order, which dates, a \
choice that is theirs), ask the person who sent it with ask_user instead of guessing; their reply is its result.
- When you are done, answer in plain text with what you found or did, including the numbers and ids that matter.
  Your reply without a tool call is your final answer: the conversation ends there.

Corecraft policies you must apply (the tools enforce some of them, you are responsible for all of them):
{POLICY_RULES}
- Loyalty discounts apply to merchandise, never to shipping: {LOYALTY_TEXT}.
- Ground shipping is free over ${FREE_GROUND_SHIPPING_OVER}.
"""


# The contract's conversation tools: asking the person who sent the request is a turn of the conversation, served
# as a tool on every surface (rollouts, the trainer API, MCP), answered by the episode's simulated user.
CONVERSATION_TOOLS = ("ask_user",)


# The compact rendering's rules: bump when ``compact_tools`` changes what it writes (it is part of the version).
COMPACT_RENDERING = 1
# Keywords the compact rendering leaves out: the tools enforce them and answer a bad value with an error result.
COMPACT_DROPPED_KEYWORDS = frozenset(
    {"maxLength", "minLength", "format", "title", "examples", "maxItems", "minItems", "maximum", "minimum"}
)
# Parameter descriptions said the same short way in every tool (the system prompt explains paging).
COMPACT_PARAMETER_TEXT = {
    "offset": "Results to skip (paging: next page at offset + limit while has_more).",
    "limit": "Page size",
}
# A filter's description that only restates its name ("Only tickets in this status.", "Only this carrier."): the
# compact rendering drops it (dates, amounts and anything longer keep theirs).
_RESTATED_FILTER = re.compile(r"^Only (this [\w ]+'s \w+|this [\w ]+|\w+ (in|of) this \w+)\.$")
_DATE_EXAMPLE = re.compile(r"\s*\(ISO 8601, e\.g\. [^)]*\)")
_SPACES = re.compile(r"\s+")

# Keys of an endpoint's ``sampling`` that set the limits instead of being sent to the model.
LIMIT_KEYS = ("max_turns", "max_total_tokens", "max_wall_s")
# The key of an endpoint's ``sampling`` that picks the tools' rendering (``openai``, the default, or ``compact``
# for a model with a short context); not sent to the model either.
TOOL_FORMAT_KEY = "tool_format"
TOOL_FORMATS = ("openai", "compact")


@dataclass(frozen=True)
class ContractLimits:
    """When an agent's episode ends without a final answer."""

    max_turns: int = 30
    max_total_tokens: int = 200_000
    max_wall_s: float = 900.0

    def as_dict(self) -> dict[str, Any]:
        return {"max_turns": self.max_turns, "max_total_tokens": self.max_total_tokens, "max_wall_s": self.max_wall_s}


@dataclass(frozen=True)
class AgentContract:
    system_prompt: str
    tools: tuple[dict, ...]
    limits: ContractLimits
    version: str

    def messages(self, instruction: str) -> list[dict[str, Any]]:
        """The conversation an episode starts from: the system prompt and the instruction as the user."""
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": instruction}]

    def tool_list(self, format: str = "openai") -> list[dict]:
        """The contract's tools as ``format`` renders them (``openai``, ``compact``, ``mcp``, ...: the registry's
        renderings; ``compact`` is this module's)."""
        if format == "openai":
            return [dict(schema) for schema in self.tools]
        if format == "compact":
            return compact_tools(self.tools)  # of the contract's own tools, not the registry's of the moment
        from world_app.tools.registry import tool_schemas

        return tool_schemas(format)

    def frozen(self) -> dict[str, Any]:
        """What a release keeps of the contract (its tools are frozen beside it)."""
        return {"version": self.version, "system_prompt": self.system_prompt, "limits": self.limits.as_dict()}


def system_prompt_render() -> str:
    """The system prompt, its numbers filled from ``world_app.store_rules`` (the one source for them)."""
    from world_app import store_rules

    numbers: dict[str, Any] = {key: value for key, value in vars(store_rules).items() if key.isupper()}
    numbers["WARRANTY_EXCLUSIONS_TEXT"] = ", ".join(x.replace("_", " ") for x in store_rules.WARRANTY_EXCLUSIONS)
    # One line per rule of the rulebook (store_rules.RULES), the same statements world_rules --check runs.
    numbers["POLICY_RULES"] = "\n".join(f"- {rule.statement}" for rule in store_rules.RULES)
    numbers["LOYALTY_TEXT"] = ", ".join(f"{tier} {pct}%" for tier, pct in store_rules.LOYALTY_DISCOUNT_PCT.items())
    return SYSTEM_PROMPT_TEMPLATE.format_map(numbers)


def contract_version(*, system_prompt: str, tools: list[dict] | tuple[dict, ...], limits: ContractLimits) -> str:
    """The content version: the first 16 hex digits of the sha256 of the prompt, the tool schemas, the limits and
    the version of the compact rendering's rules."""
    content = {
        "system_prompt": system_prompt,
        "tools": list(tools),
        "limits": limits.as_dict(),
        "renderings": {"compact": COMPACT_RENDERING},
    }
    return canonical_sha256(content)[:16]


def compact_tools(tools: list[dict] | tuple[dict, ...]) -> list[dict]:
    """OpenAI-format tools (the contract's, or a release's frozen ones) in the compact rendering: same tools and
    meaning, fewer tokens. Pure: the same tools always render the same."""
    return [_compact_tool(schema) for schema in tools]


def _compact_tool(schema: dict) -> dict:
    function = schema["function"]
    parameters = _compact_schema(copy.deepcopy(function.get("parameters") or {"type": "object", "properties": {}}))
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": _SPACES.sub(" ", function.get("description", "")).strip(),
            "parameters": parameters,
        },
    }


def _compact_schema(node: Any, name: str | None = None) -> Any:
    if isinstance(node, list):
        return [_compact_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in COMPACT_DROPPED_KEYWORDS or (key == "additionalProperties" and value is False):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {prop: _compact_schema(sub, prop) for prop, sub in value.items()}
        elif key == "description" and isinstance(value, str):
            out[key] = _compact_description(value, name, node)
        else:
            out[key] = _compact_schema(value)
    if "default" in out and (name in COMPACT_PARAMETER_TEXT or "default" in str(out.get("description", ""))):
        out.pop("default")  # said in the text
    enum = out.get("enum")
    if out.get("type") == "string" and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        out.pop("type")  # an enum of strings says it
    if isinstance(out.get("description"), str) and _RESTATED_FILTER.match(out["description"]):
        out.pop("description")
    return out


def _compact_description(text: str, name: str | None, node: dict) -> str:
    if name in COMPACT_PARAMETER_TEXT:
        text = COMPACT_PARAMETER_TEXT[name]
        if name == "limit" and "minimum" in node and "maximum" in node:
            text += f" {node['minimum']}-{node['maximum']}, default {node.get('default')}."
        return text
    if node.get("format") == "date-time":
        text = _DATE_EXAMPLE.sub(" (ISO 8601 date-time)", text)
    return _SPACES.sub(" ", text).strip()


@cache
def agent_contract() -> AgentContract:
    """The contract of this code: built once per process (policies and tools are code, not data)."""
    from django.core.exceptions import ImproperlyConfigured

    from world_app.tools.registry import conversation_tools, tool_schemas

    if tuple(t.name for t in conversation_tools()) != CONVERSATION_TOOLS:
        raise ImproperlyConfigured("the registry's conversation tools are not the contract's CONVERSATION_TOOLS")
    prompt = system_prompt_render()
    tools = tuple(tool_schemas("openai"))
    limits = ContractLimits()
    return AgentContract(
        system_prompt=prompt,
        tools=tools,
        limits=limits,
        version=contract_version(system_prompt=prompt, tools=tools, limits=limits),
    )


def mcp_instructions(episode_id: Any = None) -> str:
    """The MCP server's instructions: the contract's system prompt, with the episode named when there is one."""
    prompt = agent_contract().system_prompt
    return prompt if episode_id is None else f"{prompt}\nEpisode: {episode_id}."
