"""The red team's policy kinds (must fail, must pass), a policy, and what the policy builders share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corecraft_site.canonical import sorted_json
from tasks_app.perturbations import (
    CHANGE_ARGUMENT,
    DROP_FACT,
    DROP_WRITE,
    FIRST_PAGE_ONLY,
)
from world_app.tools.ids import ENTITY_ID
from world_app.tools.registry import get_tool

MUST_FAIL, MUST_PASS = "must_fail", "must_pass"
REFERENCE = "reference"
DUMP, SPRAY, NO_CALL, ECHO, OVER_ACT, GUESS = "dump", "spray", "no_call", "echo", "over_act", "guess"
REORDER_READS, EXTRA_READ, BIGGER_PAGE, FORMATS, REWORD = (
    "reorder_reads",
    "extra_read",
    "bigger_page",
    "formats",
    "reword",
)
BLUNT_KINDS = (DUMP, SPRAY, NO_CALL, ECHO)
MUST_FAIL_KINDS = (*BLUNT_KINDS, OVER_ACT, GUESS, DROP_WRITE, DROP_FACT, CHANGE_ARGUMENT, FIRST_PAGE_ONLY)
MUST_PASS_KINDS = (REORDER_READS, EXTRA_READ, BIGGER_PAGE, FORMATS, REWORD)
POLICY_KINDS = (*MUST_FAIL_KINDS, *MUST_PASS_KINDS)
# A blunt policy earning more than this partial reward games the rubric even when a required criterion fails it.
GAMEABLE_PARTIAL_REWARD = 0.7

Replay = Callable[[list[dict]], list]


@dataclass(frozen=True)
class RedTeamPolicy:
    """One red-team trajectory for a task: ``solution`` has the shape of a reference solution."""

    key: str
    kind: str
    expect: str
    description: str
    solution: dict


def policy_kind(key: str) -> str:
    """``drop_fact[2]`` -> ``drop_fact``; ``over_act[create_refund]`` -> ``over_act``."""
    return key.split("[", 1)[0]


def policy_expect(key: str) -> str:
    """``must_fail`` or ``must_pass`` for a policy key (``reference`` must pass)."""
    kind = policy_kind(key)
    if kind in MUST_FAIL_KINDS:
        return MUST_FAIL
    if kind in MUST_PASS_KINDS or kind == REFERENCE:
        return MUST_PASS
    raise ValueError(f"unknown red-team policy {key!r}")


def registry_tool(name: str):
    return get_tool(name)


CONVERSATION = "conversation"  # the registry's group of the contract's conversation tools (ask_user)


def tool_group(name: str) -> str:
    found = registry_tool(name)
    return found.group if found is not None else ""


def solution_calls(solution: dict) -> list[dict]:
    return [
        {"tool": c.get("tool", ""), "arguments": dict(c.get("arguments") or {})} for c in solution.get("calls") or []
    ]


def entity_ids_in(value: Any) -> list[str]:
    """Entity ids in a value, in order of first appearance."""
    text = value if isinstance(value, str) else sorted_json(value)
    return list(dict.fromkeys(ENTITY_ID.findall(text)))
