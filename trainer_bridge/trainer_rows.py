"""What an episode's agent is given with a frozen release row: its tool schemas (and their digest), its turn budget,
and the agent contract the release was frozen under (system prompt, first messages, limits)."""

from __future__ import annotations

from trainer_bridge.models import Release, ReleaseRow
from trainer_bridge.selectors import ReleaseToolSets
from world_app.contract import agent_contract


def row_tools(row: ReleaseRow) -> list[dict]:
    """The OpenAI tool schemas frozen with the release, for the tools the row offers."""
    return row_tools_held(row)[0]


def row_tools_held(row: ReleaseRow) -> tuple[list[dict], str]:
    """The row's tool schemas and their digest (``canonical_sha256``), made once per row this process holds (a
    frozen row never changes): an open answers with the digest, and with the schemas only to a trainer that does
    not name them by it."""
    held = getattr(row, "_tools_held", None)
    if held is None:
        held = row._tools_held = ReleaseToolSets(row.release).of((row.content or {}).get("tools", []))
    return held


def row_max_turns(row: ReleaseRow) -> int:
    """The row's own turn budget if it sets one, else the release's agent contract's."""
    metadata = (row.content or {}).get("metadata") or {}
    value = metadata.get("max_turns") if isinstance(metadata, dict) else None
    if isinstance(value, int) and value > 0:
        return value
    return release_contract(row.release)["limits"]["max_turns"]


def release_contract(release: Release) -> dict:
    """The agent contract the release was frozen under (today's, for a release frozen before contracts)."""
    return release.contract or agent_contract().frozen()


def row_contract(row: ReleaseRow) -> dict:
    """What the episode's agent is given beside the instruction and tools: the contract's prompt and limits."""
    frozen = release_contract(row.release)
    return {
        "system_prompt": frozen["system_prompt"],
        "messages": [
            {"role": "system", "content": frozen["system_prompt"]},
            {"role": "user", "content": (row.content or {}).get("instruction", "")},
        ],
        "limits": frozen["limits"],
        "contract_version": frozen["version"],
    }
