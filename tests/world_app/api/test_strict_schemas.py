"""The strict OpenAI rendering of the 23 tools: OpenAI's strict rules, and calls sent in that form work as sent."""

from __future__ import annotations

import io
import json
import re

import jsonschema
import pytest
from django.core.management import call_command

from world_app.contract import agent_contract
from world_app.episodes import episode_create, episode_world
from world_app.models import Episode
from world_app.tool_examples import example_arguments
from world_app.tools import call_tool, get_tool, invoke_tool, tool_schemas, world_tools
from world_app.tools.strict import strict_violations

pytestmark = pytest.mark.django_db(databases=["default", "episode"])

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def strict_tools() -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in tool_schemas("openai-strict")}


def as_strict_call(arguments: dict, schema: dict) -> dict:
    """``arguments`` as a strict client sends them: every property present (null when unused), maps as entries."""
    out = {}
    for name, sub in schema["properties"].items():
        value = arguments.get(name)
        kinds = sub.get("type") if isinstance(sub.get("type"), list) else [sub.get("type")]
        if isinstance(value, dict) and "array" in kinds:
            value = [{"name": key, "value": item} for key, item in value.items()]
        elif isinstance(value, list) and isinstance(sub.get("items"), dict) and "properties" in sub["items"]:
            value = [as_strict_call(item, sub["items"]) for item in value]
        out[name] = value
    return out


def test_all_23_keep_openais_strict_rules():
    plain = {t["function"]["name"]: t["function"] for t in tool_schemas("openai")}
    strict = strict_tools()
    assert list(strict) == list(plain) and len(strict) == 23 + 1
    for name, function in strict.items():
        assert function["strict"] is True
        assert function["description"] == plain[name]["description"]
        parameters = function["parameters"]
        assert parameters["type"] == "object"  # the root is an object, never anyOf
        assert strict_violations(parameters) == [], name
        assert list(parameters["properties"]) == list(plain[name]["parameters"]["properties"])
        jsonschema.Draft202012Validator.check_schema(parameters)
    # No open maps anywhere: search_products' spec filters are lists of {name, value}.
    specs = strict["search_products"]["parameters"]["properties"]["specs"]
    assert specs["type"] == ["array", "null"]
    assert specs["items"]["required"] == ["name", "value"] and specs["items"]["additionalProperties"] is False
    assert '[{"name": "socket", "value": "AM5"}]' in specs["description"]


def test_the_strict_rendering_is_a_rendering_of_the_agent_contract():
    contract = agent_contract()
    strict = contract.tool_list("openai-strict")
    assert strict == tool_schemas("openai-strict")
    # The same tools, in the same order, with the same descriptions: only the schema's form differs.
    assert [(t["function"]["name"], t["function"]["description"]) for t in strict] == [
        (t["function"]["name"], t["function"]["description"]) for t in contract.tools
    ]


def test_optionals_are_nullable_and_required_ones_are_not():
    for name, function in strict_tools().items():
        required = set(get_tool(name).input_schema().get("required", ()))
        for prop, sub in function["parameters"]["properties"].items():
            kinds = sub.get("type") if isinstance(sub.get("type"), list) else [sub.get("type")]
            admits_null = "null" in kinds or any(o.get("type") == "null" for o in sub.get("anyOf", ()))
            assert admits_null == (prop not in required), f"{name}.{prop}"


def test_date_time_examples_are_accepted_by_their_own_format():
    checked = 0
    for function in strict_tools().values():
        for prop, sub in function["parameters"]["properties"].items():
            if sub.get("format") != "date-time":
                continue
            examples = re.findall(r"e\.g\. (\S+?)[);,]", sub["description"])
            assert examples, prop
            for example in examples:
                assert RFC3339.match(example), f"{prop}: {example}"
                checked += 1
    assert checked >= 16


def test_null_for_every_optional_is_the_same_as_leaving_it_out(snapshot):
    reads = episode_create(snapshot=snapshot, label="strict schemas")
    with episode_world(reads):
        arguments = example_arguments()
    arguments["search_products"] = {**arguments["search_products"], "spec_min": {"vram_gb": 8}, "in_stock": None}
    strict = strict_tools()
    used = [reads.pk]
    try:
        # The world tools (ask_user has no optional argument; its answers are tests/world_app/test_conversation.py's).
        for found in world_tools():
            plain = {k: v for k, v in arguments.get(found.name, {}).items() if v is not None}
            sent = as_strict_call(plain, strict[found.name]["parameters"])
            assert set(sent) == set(strict[found.name]["parameters"]["properties"])
            jsonschema.validate(sent, strict[found.name]["parameters"], format_checker=jsonschema.FormatChecker())
            # The same parameters, the same arguments given (null = not given)...
            parsed_plain = found.params.model_validate(plain)
            parsed_sent = found.params.model_validate(sent)
            assert parsed_sent == parsed_plain and parsed_sent.model_fields_set == parsed_plain.model_fields_set
            # ...and the same answer, in fresh episodes of the same snapshot.
            episodes = [reads, reads]
            if found.group == "write":
                episodes = [episode_create(snapshot=snapshot, label="strict schemas") for _ in range(2)]
                used.extend(e.pk for e in episodes)
            first = call_tool(episodes[0], found.name, plain)
            second = call_tool(episodes[1], found.name, sent)
            assert "error" not in first, (found.name, first)
            assert second == first, found.name
    finally:
        Episode.objects.filter(pk__in=used).delete()


def test_map_entries_are_checked_like_the_map(seeded_world):
    as_map = invoke_tool("search_products", {"category": "gpu", "spec_min": {"vram_gb": 12}, "limit": 5})
    as_entries = invoke_tool("search_products", {"category": "gpu", "spec_min": [{"name": "vram_gb", "value": 12}]})
    assert "error" not in as_map and as_map["items"] and as_entries["items"][:5] == as_map["items"]
    unknown = invoke_tool("search_products", {"category": "gpu", "spec_min": [{"name": "warp_drive", "value": 1}]})
    assert unknown["error"]["field"] == "spec_min.warp_drive"
    twice = invoke_tool("search_products", {"specs": [{"name": "socket", "value": "AM5"}] * 2})
    assert twice["error"]["code"] == "invalid_arguments" and "given twice" in twice["error"]["message"]
    malformed = invoke_tool("search_products", {"specs": [{"key": "socket"}]})
    assert "list of {name, value} entries" in malformed["error"]["message"]


def test_null_for_a_required_argument_is_still_refused(seeded_world):
    result = invoke_tool("get_order_details", {"order_id": None})
    assert result["error"]["code"] == "invalid_arguments" and result["error"]["field"] == "order_id"


def test_list_tools_prints_the_strict_rendering():
    out = io.StringIO()
    call_command("list_tools", "--format", "openai-strict", stdout=out)
    listed = json.loads(out.getvalue())
    assert listed == tool_schemas("openai-strict") and len(listed) == 23 + 1
