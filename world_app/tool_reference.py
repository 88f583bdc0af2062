"""What the tools page shows: every tool from the registry, its parameters read off its JSON Schema, its example."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from world_app.models import WorldSnapshot
from world_app.tool_examples import ToolExample, tool_examples_get
from world_app.tools import GROUPS, all_tools

_CODE = re.compile(r"`([^`]+)`")
# Docstring lines shorter than this that end a sentence are deliberate line breaks.
_WRAP_WIDTH = 90
GROUP_TITLES = {
    "search": "Search: find records, a page at a time",
    "read": "Read: one record and what hangs off it",
    "compute": "Compute: prices, refunds and compatibility, without writing",
    "write": "Write: change the episode's world, by the business rules",
    "conversation": "Conversation: ask the person who sent the request (answered by the task's simulated user)",
}


@dataclass(frozen=True)
class ParameterRow:
    name: str
    type: str
    required: bool
    description: str
    default: str
    constraints: str
    depth: int = 0


@dataclass(frozen=True)
class ToolEntry:
    name: str
    group: str
    summary: str
    details: list[SafeString]
    parameters: list[ParameterRow]
    example_arguments: str = ""
    example_result: str = ""
    example_is_error: bool = False
    has_example: bool = False


@dataclass(frozen=True)
class ToolGroup:
    name: str
    title: str
    tools: list[ToolEntry] = field(default_factory=list)


def _type_of(schema: dict) -> str:
    if "anyOf" in schema:
        return " | ".join(_type_of(option) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object (name → {_type_of(schema['additionalProperties'])})"
    if kind == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    return kind


def _constraints(schema: dict) -> str:
    parts = []
    if "enum" in schema:
        parts.append("one of: " + ", ".join(str(v) for v in schema["enum"]))
    if schema.get("minLength") == 1:
        parts.append("not empty")
    bounds = (
        ("minimum", "≥ {}"),
        ("maximum", "≤ {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
    )
    shown = {key: value for key, value in schema.items() if not (key == "minLength" and value == 1)}
    parts.extend(text.format(shown[key]) for key, text in bounds if key in shown)
    items = schema.get("items", {})
    if "enum" in items:
        parts.append("each one of: " + ", ".join(str(v) for v in items["enum"]))
    return "; ".join(parts)


def parameter_rows(schema: dict, *, prefix: str = "", depth: int = 0) -> list[ParameterRow]:
    """One row per argument, in schema order; an array of objects lists its items' fields below it."""
    rows = []
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        rows.append(
            ParameterRow(
                name=f"{prefix}{name}",
                type=_type_of(prop),
                required=name in required,
                description=prop.get("description", ""),
                default=json.dumps(prop["default"]) if "default" in prop else "",
                constraints=_constraints(prop),
                depth=depth,
            )
        )
        items = prop.get("items", {})
        if prop.get("type") == "array" and items.get("properties"):
            rows.extend(parameter_rows(items, prefix=f"{prefix}{name}[].", depth=depth + 1))
    return rows


def _paragraphs(text: str) -> list[SafeString]:
    """The description's paragraphs with `code` as code. Docstrings are hard-wrapped, so lines are joined, except
    after a short line that ends a sentence: there the author started a new line on purpose."""
    paragraphs = []
    for block in text.split("\n\n"):
        lines = [" ".join(line.split()) for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        html = escape(lines[0])
        for previous, line in pairwise(lines):
            deliberate = previous.endswith((".", ":", ";")) and len(previous) < _WRAP_WIDTH
            html += ("<br>" if deliberate else " ") + escape(line)
        paragraphs.append(mark_safe(_CODE.sub(r"<code>\1</code>", html)))  # noqa: S308 - built from escaped text
    return paragraphs


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def tool_reference(*, snapshot: WorldSnapshot | None) -> list[ToolGroup]:
    """Every tool, grouped, with its parameter table and, given a snapshot, its example call and real result."""
    examples: dict[str, ToolExample] = tool_examples_get(snapshot=snapshot) if snapshot is not None else {}
    groups = {name: ToolGroup(name=name, title=GROUP_TITLES[name]) for name in GROUPS}
    for found in all_tools():
        example = examples.get(found.name)
        entry = ToolEntry(
            name=found.name,
            group=found.group,
            summary=found.summary,
            details=_paragraphs(found.description)[1:],
            parameters=parameter_rows(found.input_schema()),
            example_arguments=_pretty(example.arguments) if example else "",
            example_result=_pretty(example.result) if example else "",
            example_is_error=example.is_error if example else False,
            has_example=example is not None,
        )
        groups[found.group].tools.append(entry)
    return [group for group in groups.values() if group.tools]
