"""The tool playground's forms: one per tool, generated from its parameters' JSON schema."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from tasks_app.authoring.criterion_draft import comma_list


@dataclass
class ToolArgumentField:
    """One input of a tool's form: ``widget`` is text, number, integer, boolean, choice, list or json."""

    name: str
    widget: str
    required: bool
    description: str = ""
    choices: list[str] = dataclasses.field(default_factory=list)
    schema: str = ""  # the property's JSON schema, shown next to a JSON input
    value: str = ""
    error: str = ""


def tool_argument_fields(tool, typed: dict[str, str] | None = None, errors: dict[str, str] | None = None) -> list:
    """The inputs of ``tool``'s form from its params schema; nested arguments get a JSON input with the schema."""
    schema = tool.input_schema()
    required = set(schema.get("required") or [])
    typed, errors = typed or {}, errors or {}
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type")
        if "enum" in prop:
            widget = "choice"
        elif kind in ("string", "number", "integer", "boolean"):
            widget = {"string": "text"}.get(kind, kind)
        elif kind == "array" and (prop.get("items") or {}).get("type") in ("string", "integer", "number"):
            widget = "list"
        else:
            widget = "json"
        fields.append(
            ToolArgumentField(
                name=name,
                widget=widget,
                required=name in required,
                description=prop.get("description", ""),
                choices=[str(c) for c in prop.get("enum", [])],
                schema=json.dumps(prop, indent=2) if widget == "json" else "",
                value=typed.get(name, ""),
                error=errors.get(name, ""),
            )
        )
    return fields


def tool_arguments_from_post(tool, data) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """(arguments, errors by argument, what was typed) from the playground form.

    An empty input leaves the argument out. The "all arguments as JSON" box, when filled, is used instead of the
    single inputs. The tool itself checks the values (its error comes back as a result); only what cannot be
    read at all (a number that is not one, broken JSON) is an error here.
    """
    inputs = tool_argument_fields(tool)
    typed = {f.name: data.get(f"arg-{f.name}", "") for f in inputs}
    raw_json = (data.get("arguments_json") or "").strip()
    if raw_json:
        try:
            arguments = json.loads(raw_json)
        except ValueError as exc:
            return {}, {"arguments_json": f"not valid JSON: {exc}"}, typed
        if not isinstance(arguments, dict):
            return {}, {"arguments_json": "must be a JSON object of named arguments"}, typed
        return arguments, {}, typed
    arguments, errors = {}, {}
    for f in inputs:
        text = typed.get(f.name, "").strip()
        if text == "":
            continue
        try:
            if f.widget == "integer":
                arguments[f.name] = int(text)
            elif f.widget == "number":
                arguments[f.name] = float(text) if any(c in text for c in ".eE") else int(text)
            elif f.widget == "boolean":
                if text not in ("true", "false"):
                    raise ValueError("choose yes or no")
                arguments[f.name] = text == "true"
            elif f.widget == "list":
                arguments[f.name] = comma_list(text)
            elif f.widget == "json":
                arguments[f.name] = json.loads(text)
            else:
                arguments[f.name] = text
        except ValueError as exc:
            errors[f.name] = {
                "integer": "a whole number",
                "number": "a number",
                "json": f"not valid JSON: {exc}",
            }.get(f.widget, str(exc))
    return arguments, errors, typed
