"""The agent contract: one system prompt, tool list and limits, rendered the same into every consumer."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer
from rubrics_app.models import ModelEndpoint
from tasks_app.calibration.rollouts.execute import rollout_create, rollout_execute
from tests.tasks_app.rollout_helpers import backorder_task, world_make
from tests.trainer_bridge.trainer_fixtures import trainer_world_make
from trainer_bridge.exports import export_write
from trainer_bridge.mcp.server import _mcp_tools, mcp_server_build
from world_app import store_rules
from world_app.contract import ContractLimits, agent_contract, compact_tools, contract_version, mcp_instructions
from world_app.tools import tool_schemas

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


def test_the_prompt_carries_the_policies_from_world_app():
    prompt = agent_contract().system_prompt
    assert all(f"- {rule.statement}" in prompt for rule in store_rules.RULES)
    assert f"within {store_rules.RETURN_WINDOW_DAYS} days" in prompt
    assert f"{store_rules.RESTOCKING_FEE_PCT}% restocking fee" in prompt
    assert f"${store_rules.REFUND_APPROVAL_LIMIT}" in prompt and "{" not in prompt


def test_changing_any_part_of_the_contract_changes_its_version():
    contract = agent_contract()
    same = contract_version(system_prompt=contract.system_prompt, tools=contract.tools, limits=contract.limits)
    assert same == contract.version
    assert (
        contract_version(system_prompt=contract.system_prompt + " ", tools=contract.tools, limits=contract.limits)
        != same
    )
    assert (
        contract_version(system_prompt=contract.system_prompt, tools=contract.tools[1:], limits=contract.limits) != same
    )
    fewer_turns = ContractLimits(max_turns=contract.limits.max_turns - 1)
    assert contract_version(system_prompt=contract.system_prompt, tools=contract.tools, limits=fewer_turns) != same


def test_every_consumer_gets_the_same_contract():
    contract = agent_contract()
    tools = [schema["function"]["name"] for schema in contract.tools]

    # Calibration: a model rollout sends the contract's prompt and tools, and records the contract's version.
    world = world_make("contract")
    task = backorder_task(world)
    with ScriptedLLMServer([Reply(content="Nothing to do.")]) as server:
        endpoint = ModelEndpoint.objects.create(name="m", base_url=server.base_url, model="scripted", timeout_s=5)
        rollout = rollout_execute(
            rollout=rollout_create(version=task.current_version, policy="model", endpoint=endpoint)
        )
    sent = server.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": contract.system_prompt}
    assert sent["tools"] == contract.tool_list()
    assert rollout.contract_version == contract.version

    # The trainer API's episode: the same prompt, tools and limits, and the release's recorded version.
    tw = trainer_world_make("contract-r1")
    assert tw.release.contract_version == contract.version
    assert tw.release.tools == contract.tool_list()
    row = tw.rows("train")[0]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tw.token('train:read', 'episodes')}")
    response = api.post(
        "/api/v1/rollouts/episodes/",
        data=json.dumps({"release": tw.release.slug, "row_id": row.pk}),
        content_type="application/json",
    )
    opened = response.json()
    assert opened["system_prompt"] == contract.system_prompt
    assert opened["messages"] == contract.messages(row.content["instruction"])
    assert opened["limits"] == contract.limits.as_dict() and opened["max_turns"] == contract.limits.max_turns
    assert opened["contract_version"] == contract.version
    assert [t["function"]["name"] for t in opened["tools"]] == [
        n for n in tools if n in {t["function"]["name"] for t in opened["tools"]}
    ]

    # The verl and HF/TRL export rows.
    for format in ("verl-parquet", "hf"):
        out = io.BytesIO()
        export_write(release=tw.release, split="train", format=format, out=out)
        first = pq.read_table(io.BytesIO(out.getvalue())).to_pylist()[0]
        assert first["prompt"] == contract.messages(first["prompt"][1]["content"]), format
        assert first["prompt"][0]["content"] == contract.system_prompt

    # The MCP server: the same prompt as its instructions, the same tools (its own rendering of them).
    server = mcp_server_build()
    assert server.instructions == contract.system_prompt == mcp_instructions()
    assert [t.name for t in _mcp_tools()] == tools
    mcp_schemas = {t.name: t.input_schema for t in _mcp_tools()}
    assert all(mcp_schemas[s["function"]["name"]] == s["function"]["parameters"] for s in contract.tools)


def _shape(schema):
    """What a schema means to a caller: property names, required lists, enums and types (an enum of strings is a
    string), recursively; descriptions and enforced bounds left out."""
    if isinstance(schema, list):
        return [_shape(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type") or ("string" if "enum" in schema else None)
    shape = {"type": kind, "enum": schema.get("enum"), "required": schema.get("required")}
    for key in ("properties",):
        if key in schema:
            shape[key] = {name: _shape(sub) for name, sub in schema[key].items()}
    for key in ("items", "anyOf"):
        if key in schema:
            shape[key] = _shape(schema[key])
    if isinstance(schema.get("additionalProperties"), dict):
        shape["additionalProperties"] = _shape(schema["additionalProperties"])
    return shape


def test_the_compact_rendering_is_the_same_tools_in_fewer_characters():
    contract = agent_contract()
    full, compact = contract.tool_list("openai"), contract.tool_list("compact")
    assert [t["function"]["name"] for t in compact] == [t["function"]["name"] for t in full]
    for long, short in zip(full, compact, strict=True):
        assert " ".join(long["function"]["description"].split()) == short["function"]["description"]
        assert _shape(short["function"]["parameters"]) == _shape(long["function"]["parameters"])
    text = json.dumps(compact)
    assert len(text) < 0.9 * len(json.dumps(full))
    assert "maxLength" not in text and '"additionalProperties": false' not in text
    assert tool_schemas("compact") == compact  # the registry renders the same
    search = next(t for t in compact if t["function"]["name"] == "search_orders")["function"]["parameters"]
    assert search["properties"]["limit"]["description"] == "Page size 1-50, default 10."
    assert "ISO 8601" in search["properties"]["created_after"]["description"]


def test_the_compact_rendering_is_versioned_with_the_contract(monkeypatch):
    from world_app import contract as module

    before = agent_contract().version
    monkeypatch.setattr(module, "COMPACT_RENDERING", module.COMPACT_RENDERING + 1)
    after = contract_version(
        system_prompt=agent_contract().system_prompt, tools=agent_contract().tools, limits=agent_contract().limits
    )
    assert after != before


def test_verl_renders_the_tools_the_config_names():
    from trainer_bridge.verl_agent import prompt_tools

    tools = agent_contract().tool_list("openai")
    assert prompt_tools(tools, {"corecraft": {"tool_format": "compact"}}) == compact_tools(tools)
    assert prompt_tools(tools, {"corecraft": {"tool_format": "full"}}) == tools
    assert prompt_tools(tools, {}) == tools and prompt_tools(tools, None) == tools
    with pytest.raises(ValueError, match="tool_format"):
        prompt_tools(tools, {"corecraft": {"tool_format": "tiny"}})
