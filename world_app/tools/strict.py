"""The strict OpenAI rendering of a tool's JSON Schema (``"strict": true`` function calling, Structured Outputs).

OpenAI's strict mode accepts a subset of JSON Schema: every object lists all its properties in ``required`` and
sets ``additionalProperties: false``; an optional property is written as nullable instead of left out; open maps
(``additionalProperties`` with a schema) and keywords outside the subset are refused. This module renders our
tool schemas into that subset without changing what the tools mean:

- an optional property becomes required and nullable; the tools read ``null`` as "not given" (see
  :class:`world_app.tools.params.ToolParams`), so a strict call and the same call with the nulls left out do the
  same thing;
- an open map such as ``search_products.specs`` ({"socket": "AM5"}) becomes an array of ``{name, value}``
  entries ([{"name": "socket", "value": "AM5"}]), which the tools accept as well;
- keywords strict mode does not support (``default``, ``minLength``, ``maxLength``, ...) are dropped from the
  rendering only; the tools still enforce them and answer with an error result the model can read.

It is a rendering of the agent contract's tools (``world_app.contract.agent_contract().tool_list("openai-strict")``,
``tool_schemas("openai-strict")``): the same tools, descriptions and meaning, under the contract's version.
"""

from __future__ import annotations

import copy
from typing import Any

# The keywords OpenAI documents for strict schemas (Structured Outputs, "Supported schemas").
STRICT_KEYWORDS = {
    "common": frozenset({"type", "description", "enum", "const", "anyOf", "$ref", "$defs"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "string": frozenset({"pattern", "format"}),
    "number": frozenset({"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"}),
}
STRICT_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_ALLOWED = frozenset().union(*STRICT_KEYWORDS.values())
MAP_ENTRY_DESCRIPTION = (
    'Given as a list of {name, value} entries: {"socket": "AM5"} is [{"name": "socket", "value": "AM5"}].'
)


def strict_parameters(schema: dict) -> dict:
    """``schema`` (a tool's ``input_schema``, refs inlined) in OpenAI's strict subset."""
    return _strict(copy.deepcopy(schema))


def strict_openai_tool(*, name: str, description: str, parameters: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "strict": True,
            "parameters": strict_parameters(parameters),
        },
    }


def _strict(node: dict) -> dict:
    if "anyOf" in node:
        out = {key: value for key, value in node.items() if key in ("description",)}
        out["anyOf"] = [_strict(option) for option in node["anyOf"]]
        return out
    if isinstance(node.get("additionalProperties"), dict):
        return _map_as_entries(node)
    if node.get("type") == "object" or "properties" in node:
        return _object(node)
    out = {key: value for key, value in node.items() if key in _ALLOWED}
    if "items" in out:
        out["items"] = _strict(out["items"])
    if out.get("format") is not None and out["format"] not in STRICT_STRING_FORMATS:
        out.pop("format")
    return out


def _object(node: dict) -> dict:
    properties = node.get("properties", {})
    required = set(node.get("required", ()))
    out: dict[str, Any] = {"type": "object"}
    if "description" in node:
        out["description"] = node["description"]
    out["properties"] = {
        name: (_strict(sub) if name in required else nullable(_strict(sub))) for name, sub in properties.items()
    }
    out["required"] = list(properties)
    out["additionalProperties"] = False
    return out


def _map_as_entries(node: dict) -> dict:
    value_schema = _strict(node["additionalProperties"])
    value_schema.pop("description", None)
    entry = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": value_schema},
        "required": ["name", "value"],
        "additionalProperties": False,
    }
    out: dict[str, Any] = {"type": "array", "items": entry}
    description = node.get("description")
    out["description"] = f"{description} {MAP_ENTRY_DESCRIPTION}" if description else MAP_ENTRY_DESCRIPTION
    return out


def nullable(node: dict) -> dict:
    """``node`` that also admits ``null``."""
    if "anyOf" in node:
        if not any(option.get("type") == "null" for option in node["anyOf"]):
            node["anyOf"] = [*node["anyOf"], {"type": "null"}]
        return node
    kind = node.get("type")
    if kind is None:
        return {"anyOf": [node, {"type": "null"}]}
    kinds = kind if isinstance(kind, list) else [kind]
    if "null" not in kinds:
        node["type"] = [*kinds, "null"]
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
    if "const" in node:
        node["enum"] = [node.pop("const"), None]
    return node


def strict_violations(schema: Any, path: str = "$") -> list[str]:
    """Where ``schema`` breaks OpenAI's strict rules (empty when it keeps them): for tests and for ``list_tools``."""
    problems: list[str] = []
    if not isinstance(schema, dict):
        return [f"{path}: not a schema object"]
    for key in schema:
        if key not in _ALLOWED:
            problems.append(f"{path}: keyword {key!r} is not supported in strict mode")
    if "format" in schema and schema["format"] not in STRICT_STRING_FORMATS:
        problems.append(f"{path}: format {schema['format']!r} is not supported")
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if sorted(schema.get("required", [])) != sorted(properties):
            problems.append(f"{path}: every property must be required")
        for name, sub in properties.items():
            problems.extend(strict_violations(sub, f"{path}.{name}"))
    if "items" in schema:
        problems.extend(strict_violations(schema["items"], f"{path}[]"))
    for index, option in enumerate(schema.get("anyOf", ())):
        problems.extend(strict_violations(option, f"{path}|{index}"))
    if "enum" in schema and "null" in kinds and None not in schema["enum"]:
        problems.append(f"{path}: a nullable enum must list null")
    return problems
