"""The simulated user and the contract's conversation tool (ask_user): replies, episodes, and every surface's list."""

from __future__ import annotations

import json

import pytest
import yaml

from world_app.contract import CONVERSATION_TOOLS, agent_contract
from world_app.conversation import (
    DEFAULT_REPLY,
    NO_USER_CODE,
    ScriptedUser,
    SimulatedUserSpec,
    facts_disclosed,
    simulated_user_validate,
)
from world_app.tools.registry import all_tools, invoke_tool, tool_schemas, world_tools
from world_app.tools.steps import call_tool, call_tool_step

SPEC = {
    "facts": [
        {"key": "order_number", "topics": ["order number", "order id", "which order"], "reply": "It's ord-250808-002."},
        {"key": "email", "topics": ["email", "e-mail"], "reply": "m.phillips@example.com"},
    ],
    "default_reply": "Sorry, what do you need?",
}


def user() -> ScriptedUser:
    return ScriptedUser(SimulatedUserSpec.model_validate(SPEC))


def test_a_question_gets_the_reply_of_every_fact_it_asks_for():
    assert user().reply("Could you give me your order number?").text == "It's ord-250808-002."
    assert user().reply("Which ORDER is it, please?").facts == ("order_number",)
    both = user().reply("What's the order ID, and the e-mail on your account?")
    assert both.text == "It's ord-250808-002. m.phillips@example.com" and both.facts == ("order_number", "email")


def test_a_question_about_nothing_held_back_gets_the_default_reply():
    reply = user().reply("How is the weather where you are?")
    assert reply.text == "Sorry, what do you need?" and reply.facts == ()
    # A topic is matched as words, not inside another word ("emails" is not "email").
    assert user().reply("Do you get our emails?").facts == ()
    spec = simulated_user_validate({"facts": SPEC["facts"]})
    assert spec["default_reply"] == DEFAULT_REPLY


def test_the_same_question_always_gets_the_same_reply():
    question = "Hi! Which order do you mean? And your email?"
    replies = {user().reply(question) for _ in range(5)}
    assert len(replies) == 1
    # Stateless: what was asked before changes nothing.
    scripted = user()
    scripted.reply("order number?")
    assert scripted.reply(question) == user().reply(question)
    assert facts_disclosed(SPEC, question) == ("order_number", "email")
    assert facts_disclosed({}, question) == ()


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"facts": []}, "simulated_user.facts: List should have at least 1 item"),
        ({"facts": [{"key": "Bad Key", "topics": ["order"], "reply": "x"}]}, "simulated_user.facts.0.key"),
        ({"facts": [{"key": "a", "topics": ["ab"], "reply": "x"}]}, "at least 3 characters"),
        ({"facts": [{"key": "a", "topics": ["order"], "reply": " "}]}, "simulated_user.facts.0.reply"),
        (
            {
                "facts": [
                    {"key": "a", "topics": ["order"], "reply": "x"},
                    {"key": "a", "topics": ["mail"], "reply": "y"},
                ]
            },
            "appear more than once",
        ),
        ({"facts": [{"key": "a", "topics": ["order"], "reply": "x"}], "persona": "grumpy"}, "simulated_user.persona"),
        ({"kind": "llm", "facts": [{"key": "a", "topics": ["order"], "reply": "x"}]}, "simulated_user.kind"),
        ("ask me", "a mapping"),
    ],
)
def test_a_bad_spec_is_refused_with_the_field(spec, problem):
    with pytest.raises(ValueError, match="simulated_user") as caught:
        simulated_user_validate(spec)
    assert problem in str(caught.value)


def test_the_contract_offers_the_world_tools_and_the_conversation_tools_on_every_surface():
    from trainer_bridge.configs.build import VERL_TOOL_CONFIG
    from trainer_bridge.mcp.server import _mcp_tools
    from trainer_bridge.trl_env import bundled_tool_schemas

    contract = agent_contract()
    names = [schema["function"]["name"] for schema in contract.tools]
    assert len(world_tools()) == 23 and CONVERSATION_TOOLS == ("ask_user",)
    assert names == [t.name for t in world_tools()] + list(CONVERSATION_TOOLS)
    assert names == [t.name for t in all_tools()] == [s["function"]["name"] for s in tool_schemas("openai")]
    assert [t.name for t in _mcp_tools()] == names  # MCP tools/list
    assert [e["name"] for e in contract.tool_list("mcp")] == names
    assert [s["function"]["name"] for s in contract.tool_list("compact")] == names
    assert [s["function"]["name"] for s in tool_schemas("openai-strict")] == names
    assert bundled_tool_schemas() == list(contract.tools)  # TRL's methods
    verl = yaml.safe_load(VERL_TOOL_CONFIG.read_text(encoding="utf-8"))
    assert [t["tool_schema"]["function"]["name"] for t in verl["tools"]] == names
    assert "ask_user" in contract.system_prompt


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_ask_user_in_an_episode_is_a_logged_turn_answered_by_its_user_and_no_one_answers_without_one():
    from tests.factories import small_world
    from world_app.episodes import episode_close, episode_create, episode_diff
    from world_app.snapshots import snapshot_publish

    small_world()
    snapshot = snapshot_publish(note="conversation")
    episode = episode_create(snapshot=snapshot, simulated_user=SPEC)
    step = call_tool_step(episode, "ask_user", {"message": "Can I have your order number?"})
    assert step.result == {"reply": "It's ord-250808-002."} and not step.is_error and step.changes == []
    assert step.name == "ask_user" and step.arguments == {"message": "Can I have your order number?"}
    # Served by id too (another process, the trainer API, MCP), with the same reply.
    assert call_tool(episode.pk, "ask_user", {"message": "Can I have your order number?"}) == step.result
    assert call_tool(episode.pk, "ask_user", {"message": "Nice day?"}) == {"reply": "Sorry, what do you need?"}
    assert call_tool(episode.pk, "ask_user", {})["error"]["field"] == "message"
    assert episode_diff(episode) == {"created": [], "updated": [], "deleted": []}
    episode_close(episode)

    alone = episode_create(snapshot=snapshot)
    refused = call_tool(alone, "ask_user", {"message": "Which order?"})
    assert refused["error"]["code"] == NO_USER_CODE and "No one is on the other end" in refused["error"]["message"]
    episode_close(alone)
    assert invoke_tool("ask_user", {"message": "Anyone?"})["error"]["code"] == NO_USER_CODE
    with pytest.raises(ValueError, match=r"simulated_user\.facts"):
        episode_create(snapshot=snapshot, simulated_user={"facts": []})


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_mcp_serves_ask_user_in_the_episode():
    """What the MCP server's tools/call runs (``_episode_call`` is ``call_tool`` between connection clean-ups, which
    a test's transaction cannot take) and how it answers."""
    from tests.factories import small_world
    from trainer_bridge.mcp.server import tool_result
    from world_app.episodes import episode_create
    from world_app.snapshots import snapshot_publish

    small_world()
    episode = episode_create(snapshot=snapshot_publish(note="mcp conversation"), simulated_user=SPEC)
    answer = tool_result(call_tool(episode.pk, "ask_user", {"message": "What is your email?"}))
    assert not answer.is_error and json.loads(answer.content[0].text) == {"reply": "m.phillips@example.com"}
    plain = episode_create(snapshot=episode.snapshot)
    refused = tool_result(call_tool(plain.pk, "ask_user", {"message": "What is your email?"}))
    assert refused.is_error and refused.structured_content["error"]["code"] == NO_USER_CODE
