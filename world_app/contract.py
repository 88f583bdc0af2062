"""The agent contract: what every agent working in this world is given, defined once and versioned.

The system prompt (its policy section rendered from ``world_app.policies``), the tool list (the registry's
schemas) and the limits (turns, tokens, wall time). Calibration rollouts, the trainer API's episode, the verl and
HF/TRL export rows and the MCP server all render it from here, so a pass rate measured in calibration is measured
under the contract a trainer trains with. ``version`` is a hash of all three: change any and it changes; it is
recorded on every rollout and frozen into every release.
"""

from __future__ import annotations

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
- When you are done, answer in plain text with what you found or did, including the numbers and ids that matter.
  Your reply without a tool call is your final answer: the conversation ends there.

Corecraft policies you must apply (the tools enforce some of them, you are responsible for all of them):
{POLICY_RULES}
- Loyalty discounts apply to merchandise, never to shipping: {LOYALTY_TEXT}.
- Ground shipping is free over ${FREE_GROUND_SHIPPING_OVER}.
"""


# Keys of an endpoint's ``sampling`` that set the limits instead of being sent to the model.
LIMIT_KEYS = ("max_turns", "max_total_tokens", "max_wall_s")


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
        """The contract's tools as ``format`` renders them (``openai``, ``mcp``, ...: the registry's renderings)."""
        if format == "openai":
            return [dict(schema) for schema in self.tools]
        from world_app.tools.registry import tool_schemas

        return tool_schemas(format)

    def frozen(self) -> dict[str, Any]:
        """What a release keeps of the contract (its tools are frozen beside it)."""
        return {"version": self.version, "system_prompt": self.system_prompt, "limits": self.limits.as_dict()}


def system_prompt_render() -> str:
    """The system prompt, its numbers filled from ``world_app.policies`` (the one source for them)."""
    from world_app import policies

    numbers: dict[str, Any] = {key: value for key, value in vars(policies).items() if key.isupper()}
    numbers["WARRANTY_EXCLUSIONS_TEXT"] = ", ".join(x.replace("_", " ") for x in policies.WARRANTY_EXCLUSIONS)
    # One line per rule of the rulebook (policies.RULES), the same statements world_rules --check runs.
    numbers["POLICY_RULES"] = "\n".join(f"- {rule.statement}" for rule in policies.RULES)
    numbers["LOYALTY_TEXT"] = ", ".join(f"{tier} {pct}%" for tier, pct in policies.LOYALTY_DISCOUNT_PCT.items())
    return SYSTEM_PROMPT_TEMPLATE.format_map(numbers)


def contract_version(*, system_prompt: str, tools: list[dict] | tuple[dict, ...], limits: ContractLimits) -> str:
    """The content version: the first 16 hex digits of the sha256 of the prompt, the tool schemas and the limits."""
    return canonical_sha256({"system_prompt": system_prompt, "tools": list(tools), "limits": limits.as_dict()})[:16]


@cache
def agent_contract() -> AgentContract:
    """The contract of this code: built once per process (policies and tools are code, not data)."""
    from world_app.tools.registry import tool_schemas

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
