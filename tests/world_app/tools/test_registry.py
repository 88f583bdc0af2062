import io
import json
import re

import pytest
from django.core.management import call_command
from pydantic import Field

from tests.world_app.tools.shop import ok
from world_app.models import Customer
from world_app.tools import all_tools, get_tool, invoke_tool, tool_schemas, world_tools
from world_app.tools.params import ToolParams
from world_app.tools.registry import Tool, execute_tool

EXPECTED = {
    "search": {
        "search_customers",
        "search_orders",
        "search_products",
        "search_tickets",
        "search_shipments",
        "search_payments",
        "search_employees",
        "search_knowledge_base",
        "search_builds",
    },
    "read": {"get_order_details", "get_product", "get_customer_ticket_history", "check_warranty_status"},
    "compute": {"calculate_price", "validate_build_compatibility"},
    "write": {
        "create_build",
        "update_build",
        "create_refund",
        "create_resolution",
        "create_escalation",
        "create_warranty_claim",
        "update_order_status",
        "update_ticket_status",
    },
}


def test_there_are_exactly_23_world_tools_in_four_groups_and_the_conversation_tool():
    tools = all_tools()
    world = world_tools()
    assert len(world) == 23 and len(tools) == 23 + 1
    assert len({t.name for t in world}) == 23
    by_group = {group: {t.name for t in world if t.group == group} for group in EXPECTED}
    assert by_group == EXPECTED
    assert [t.name for t in tools if t not in world] == ["ask_user"] and tools[-1].group == "conversation"
    # Listed by group, search first, the conversation tool last.
    order = ["search", "read", "compute", "write", "conversation"]
    assert [t.group for t in tools] == sorted((t.group for t in tools), key=order.index)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", t.name) for t in tools)


def _walk(schema):
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from _walk(sub)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"])


@pytest.mark.parametrize("name", sorted(set().union(*EXPECTED.values())))
def test_every_tool_has_a_usable_schema_and_description(name):
    found = get_tool(name)
    assert len(found.description) > 60
    schema = found.input_schema()
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for prop_name, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{prop_name} has no description"
    for node in _walk(schema):
        assert "$ref" not in node and "title" not in node and "$defs" not in node
        assert "anyOf" not in node or all(option.get("type") != "null" for option in node["anyOf"])
    if found.group == "search":
        assert schema["properties"]["limit"] == {
            "default": 10,
            "description": "Results per page, 1-50 (default 10).",
            "maximum": 50,
            "minimum": 1,
            "type": "integer",
        }
        assert schema["properties"]["offset"]["default"] == 0
        assert list(schema["properties"])[-2:] == ["offset", "limit"]


def test_schemas_in_openai_and_mcp_formats():
    openai = tool_schemas("openai")
    mcp = tool_schemas("mcp")
    assert len(openai) == len(mcp) == 23 + 1  # 23 world tools + ask_user
    first = get_tool("search_customers")
    assert openai[0] == {
        "type": "function",
        "function": {"name": first.name, "description": first.description, "parameters": first.input_schema()},
    }
    assert mcp[0] == {"name": first.name, "description": first.description, "inputSchema": first.input_schema()}
    json.dumps([openai, mcp])  # plain JSON
    with pytest.raises(ValueError, match="unknown schema format"):
        tool_schemas("yaml")


def test_unknown_tool_is_a_result_naming_the_tools():
    result = invoke_tool("refund_everything", {})
    assert result["error"]["code"] == "unknown_tool"
    assert result["error"]["field"] == "name"
    assert "search_customers" in result["error"]["message"] and "create_refund" in result["error"]["message"]


@pytest.mark.django_db
def test_bad_arguments_name_the_field_and_the_reason():
    result = invoke_tool("search_orders", {"limit": 51})
    assert result["error"]["code"] == "invalid_arguments"
    assert result["error"]["field"] == "limit"
    assert result["error"]["details"] == [{"field": "limit", "reason": "Input should be less than or equal to 50"}]

    result = invoke_tool("search_orders", {"stauts": "paid"})
    assert result["error"]["field"] == "stauts"
    assert result["error"]["details"][0]["reason"].startswith("unknown argument; search_orders takes: offset, limit")

    result = invoke_tool("search_orders", {"status": "shipped", "offset": -1})
    assert "field" not in result["error"]  # two fields at fault: both in details
    assert {d["field"] for d in result["error"]["details"]} == {"status", "offset"}

    result = invoke_tool("get_order_details", {})
    assert result["error"]["details"] == [{"field": "order_id", "reason": "required"}]

    result = invoke_tool("create_build", {"customer_id": "c", "name": "x", "parts": [{"product_id": "p", "qty": 2}]})
    assert result["error"]["details"] == [{"field": "parts[0].qty", "reason": "unknown argument"}]

    result = invoke_tool("get_product", {"product_id": "a", "sku": "b"})
    assert result["error"]["details"] == [{"reason": "give exactly one of product_id or sku"}]

    result = invoke_tool("search_orders", ["paid"])
    assert result["error"] == {
        "code": "invalid_arguments",
        "message": "arguments must be a JSON object of named arguments",
        "field": "arguments",
    }
    assert invoke_tool("search_orders", None)["total"] == 0  # no arguments: defaults


class _Boom(ToolParams):
    name: str = Field(description="a name")


@pytest.mark.django_db
def test_a_crash_is_an_internal_error_result_and_its_writes_are_rolled_back(caplog):
    def crash(p: _Boom) -> dict:
        Customer.objects.create(id="cus-boom", first_name=p.name, last_name="X", email="boom@example.com")
        raise RuntimeError("database on fire")

    broken = Tool(name="broken", group="write", description="breaks", params=_Boom, fn=crash)
    result = execute_tool(broken, _Boom(name="Bo"))
    assert result == {
        "error": {
            "code": "internal_error",
            "message": "broken failed unexpectedly and changed nothing; try again or use another tool",
        }
    }
    assert not Customer.objects.filter(id="cus-boom").exists()
    assert "database on fire" in caplog.text  # the traceback is logged server-side only
    assert "Traceback" not in json.dumps(result)


@pytest.mark.django_db
def test_a_refusal_rolls_back_writes_made_before_it(shop):
    # create_build refuses an unknown part after looking up the customer: nothing is written.
    before = shop.customer.builds.count()
    result = invoke_tool(
        "create_build",
        {"customer_id": shop.customer.id, "name": "X", "parts": [{"product_id": shop.cpu.id}, {"product_id": "nope"}]},
    )
    assert result["error"]["code"] == "not_found"
    assert result["error"]["field"] == "parts[1].product_id"
    assert shop.customer.builds.count() == before


@pytest.mark.django_db
def test_results_are_deterministic_json(shop):
    calls = [
        ("search_orders", {"customer_id": shop.customer.id}),
        ("get_order_details", {"order_id": shop.recent.id}),
        ("get_product", {"product_id": shop.gpu.id}),
        ("validate_build_compatibility", {"build_id": shop.build.id}),
    ]
    for name, arguments in calls:
        first = ok(name, **arguments)
        assert json.loads(json.dumps(first)) == first
        assert json.dumps(ok(name, **arguments)) == json.dumps(first)


def test_list_tools_command_prints_the_registry():
    out = io.StringIO()
    call_command("list_tools", "--json", stdout=out)
    listed = json.loads(out.getvalue())
    assert len(listed) == 23 + 1  # 23 world tools + ask_user
    assert set(listed[0]) == {"name", "group", "description", "input_schema"}
    assert {t["name"] for t in listed} == set().union(*EXPECTED.values(), {"ask_user"})

    for fmt, key in (("openai", "function"), ("mcp", "inputSchema")):
        out = io.StringIO()
        call_command("list_tools", "--json", "--format", fmt, stdout=out)
        entries = json.loads(out.getvalue())
        assert len(entries) == 23 + 1 and key in entries[0]

    out = io.StringIO()
    call_command("list_tools", stdout=out)
    table = out.getvalue()
    assert table.strip().endswith("24 tools (23 world tools, 1 conversation)")
    assert "write    create_refund" in table


WRONG_VALUE = {"string": 123, "integer": "many", "number": "lots", "boolean": "maybe", "array": "x", "object": "x"}


def _cases():
    for found in all_tools():
        for prop, schema in found.input_schema()["properties"].items():
            wrong = "not-a-choice" if "enum" in schema else WRONG_VALUE[schema["type"]]
            yield pytest.param(found.name, prop, wrong, id=f"{found.name}.{prop}")


@pytest.mark.parametrize(("name", "prop", "wrong"), list(_cases()))
def test_every_argument_is_validated_and_named(name, prop, wrong):
    result = invoke_tool(name, {prop: wrong})
    assert result["error"]["code"] == "invalid_arguments"
    assert prop in {d.get("field", "").split("[")[0].split(".")[0] for d in result["error"]["details"]}
    assert all(d["reason"] for d in result["error"]["details"])


@pytest.mark.parametrize("name", sorted(set().union(*EXPECTED.values())))
def test_every_tool_refuses_unknown_arguments(name):
    result = invoke_tool(name, {"bogus_argument": 1})
    bogus = [d for d in result["error"]["details"] if d.get("field") == "bogus_argument"]
    assert bogus and bogus[0]["reason"].startswith(f"unknown argument; {name} takes: ")


def test_storable_replaces_only_what_postgres_json_cannot_keep():
    from world_app.tools.steps import storable

    clean = [{"role": "tool", "content": '{"a": "caf\u00e9"}', "n": 1.5, "k": None}]
    assert storable(clean) is clean  # nothing to replace: no walk, no copy
    assert storable(["\U0001f600", {"e": "\U0001f600"}]) == ["\U0001f600", {"e": "\U0001f600"}]  # walked, kept
    dirty = [{"content": "a\x00b", "bad\udc80key": ["ok", "\ud800"], "nested": {"deep": ["x\x00"]}}, "plain"]
    assert storable(dirty) == [
        {
            "content": repr("a\x00b"),
            repr("bad\udc80key"): ["ok", repr("\ud800")],
            "nested": {"deep": [repr("x\x00")]},
        },
        "plain",
    ]
    assert storable("a\x00") == repr("a\x00") and storable(3) == 3
