"""Multi-turn tasks: a fact held back from the first message, asked for with ask_user and answered by the task's
scripted user, in the rollout loop, the judgement, the red-team gate, the YAML library and the trainer API."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer, ScriptedToolCall
from rubrics_app.endpoints import endpoint_client
from rubrics_app.judgement import Trajectory, rubric_of, trajectory_judge
from tasks_app.calibration.rollouts import rollout_create, rollout_execute
from tasks_app.library.services.library_files import library_task_validate
from tasks_app.models import RolloutPolicy, RolloutStatus
from tasks_app.perturbations import SnapshotReplay
from tasks_app.red_team import red_team_check
from tests.tasks_app.factories import task_make
from tests.tasks_app.rollout_helpers import RecordedSleep, endpoint_make, world_make

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

QUESTION = "Sorry to hear that! Which order is it? Could you give me the order number?"
ANSWER = "Done: your order is now on backorder until the graphics card is back in stock; nothing was charged again."


def user_spec(order_id: str) -> dict:
    return {
        "facts": [
            {"key": "order_number", "topics": ["order number", "order id", "which order"],
             "reply": f"Oh right, it's {order_id}."},
        ],
        "default_reply": "Sorry, what do you need from me?",
    }  # fmt: skip


def criteria(order_id: str) -> list[dict]:
    return [
        {"kind": "state", "text": "The order is backordered", "category": "correctness", "required": True,
         "spec": {"entity_type": "order", "filters": [{"field": "id", "value": order_id}], "field": "status",
                  "op": "eq", "value": "backorder"}},
        {"kind": "tool_call", "text": "Asked which order before changing it", "category": "constraint",
         "required": True, "weight": 2,
         "spec": {"expect": "asked", "fact": "order_number", "before": ["update_order_status"]}},
        {"kind": "response", "text": "Says the order is on backorder", "category": "correctness", "required": True,
         "spec": {"op": "affirms", "value": "backorder"}},
        {"kind": "response", "text": "A reply in prose", "category": "format", "required": True,
         "spec": {"op": "prose"}},
    ]  # fmt: skip


def reference(order_id: str) -> dict:
    return {
        "calls": [
            {"tool": "ask_user", "arguments": {"message": QUESTION}},
            {"tool": "get_order_details", "arguments": {"order_id": order_id}},
            {"tool": "update_order_status",
             "arguments": {"order_id": order_id, "status": "backorder", "reason": "GPU out of stock"}},
        ],
        "final_answer": ANSWER,
    }  # fmt: skip


@pytest.fixture
def world():
    return world_make("multi-turn")


@pytest.fixture
def version(world):
    order = world.order.pk
    task = task_make(
        snapshot=world.snapshot,
        title="Backorder the order the customer means",
        task_type="multi_step_workflow",
        instruction="Customer on chat: the graphics card I ordered is out of stock, so please just put my order on "
        "backorder instead of cancelling it.",
        criteria=criteria(order),
        reference_solution=reference(order),
        simulated_user=user_spec(order),
    )
    return task.current_version


def asking_script(order_id: str, *, ask: bool = True) -> list[Reply]:
    replies = []
    if ask:
        replies.append(Reply(tool_calls=[ScriptedToolCall(name="ask_user", arguments={"message": QUESTION}, id="a1")]))
    replies += [
        Reply(tool_calls=[ScriptedToolCall(name="get_order_details", arguments={"order_id": order_id}, id="c1")]),
        Reply(tool_calls=[ScriptedToolCall(name="update_order_status", id="c2", arguments={
            "order_id": order_id, "status": "backorder", "reason": "GPU out of stock"})]),
        Reply(content=ANSWER),
    ]  # fmt: skip
    return replies


def run_model(server, version):
    endpoint = endpoint_make(server)
    rollout = rollout_create(version=version, policy=RolloutPolicy.MODEL, endpoint=endpoint)
    return rollout_execute(rollout=rollout, client=endpoint_client(endpoint, sleep=RecordedSleep()))


def test_the_version_keeps_its_simulated_user_and_the_hash_of_a_version_without_one_is_unchanged(world, version):
    from tasks_app.authoring.services.tasks import _version_hash

    assert version.simulated_user["facts"][0]["key"] == "order_number"
    fields = {name: getattr(version, name) for name in ("title", "task_type", "difficulty", "family", "tags",
              "instruction", "snapshot", "reviewer_notes", "reference_solution")}  # fmt: skip
    without = _version_hash({**fields, "simulated_user": {}}, [])
    assert without == _version_hash(fields, []) != _version_hash({**fields, "simulated_user": user_spec("x")}, [])
    with pytest.raises(ValidationError, match="no simulated_user"):
        task_make(snapshot=world.snapshot, reference_solution=reference(world.order.pk), criteria=criteria("x")[:1])


def test_a_model_that_asks_gets_the_scripted_reply_as_a_turn_and_passes(world, version):
    order = world.order.pk
    with ScriptedLLMServer(asking_script(order)) as server:
        rollout = run_model(server, version)
        requests = server.requests
    assert rollout.status == RolloutStatus.FINISHED and rollout.passed is True, rollout.verdicts
    assert [c["name"] for c in rollout.tool_calls] == ["ask_user", "get_order_details", "update_order_status"]
    assert rollout.tool_calls[0]["result"] == {"reply": f"Oh right, it's {order}."}
    # The question is the assistant's turn, the reply the next message the model reads.
    assert rollout.messages[2]["tool_calls"][0]["function"]["name"] == "ask_user"
    assert json.loads(rollout.messages[3]["content"]) == {"reply": f"Oh right, it's {order}."}
    assert json.loads(requests[1]["messages"][-1]["content"])["reply"].endswith(f"{order}.")
    assert [t["function"]["name"] for t in requests[0]["tools"]][-1] == "ask_user" and len(requests[0]["tools"]) == 24
    asked = next(v for v in rollout.verdicts if v["text"].startswith("Asked which order"))
    assert asked["status"] == "met" and asked["evidence"]["drew_fact"] == [1]


def test_a_model_that_guesses_the_order_fails_the_asked_criterion(world, version):
    with ScriptedLLMServer(asking_script(world.order.pk, ask=False)) as server:
        rollout = run_model(server, version)
    assert rollout.status == RolloutStatus.FINISHED and rollout.passed is False
    asked = next(v for v in rollout.verdicts if v["text"].startswith("Asked which order"))
    assert asked["status"] == "not_met" and "none of the 0 question" in asked["rationale"]


def test_the_judgement_sees_the_conversation_turn_and_when_it_came(world, version):
    order = world.order.pk
    rubric = rubric_of(criteria(order))
    spec = version.simulated_user
    ask = {"name": "ask_user", "arguments": {"message": "What's your order ID?"}, "result": {"reply": "it's x"}}
    write = {"name": "update_order_status", "arguments": {"order_id": order, "status": "backorder"}, "result": {}}
    read = {"name": "get_order_details", "arguments": {"order_id": order}, "result": {}}

    def judged(calls):
        trajectory = Trajectory.of(instruction="i", snapshot_version=1, tool_calls=calls, final_answer=ANSWER,
                                   episode=None, simulated_user=spec)  # fmt: skip
        asked = rubric[1]
        from rubrics_app.programmatic import calls_as_steps
        from rubrics_app.programmatic.tool_calls import tool_call_verdict

        return trajectory, tool_call_verdict(asked, calls_as_steps(calls), simulated_user=spec)

    trajectory, verdict = judged([read, ask, write])
    assert trajectory.conversation() == [
        {"call": 1, "question": "What's your order ID?", "reply": "it's x", "facts": ["order_number"]}
    ]
    assert verdict["status"] == "met"
    # The LLM judge reads the question and the reply as a turn of the conversation.
    from rubrics_app.judge import trajectory_render

    rendered = trajectory_render(trajectory.tool_call_dicts())
    assert "[2] the agent asked the user (ask_user): What's your order ID?\n  -> the user replied: it's x" in rendered
    # Asked only after acting: the agent acted on a guess.
    assert judged([read, write, ask])[1]["status"] == "not_met"
    # A question that asks for something else draws nothing out.
    off = {**ask, "arguments": {"message": "Is there anything else?"}}
    assert judged([off, write])[1]["status"] == "not_met"
    # Without a simulated user no question draws out a fact; and the user is part of the trajectory's hash.
    from rubrics_app.judgement import trajectory_hash

    bare = Trajectory.of(instruction="i", snapshot_version=1, tool_calls=[ask], final_answer="", episode=None)
    assert trajectory_hash(bare) != trajectory_hash(judged([ask])[0])
    assert trajectory_judge(rubric=rubric, trajectory=bare).verdicts[1]["status"] == "error"  # no episode


def test_the_red_team_gate_on_a_multi_turn_task(world, version):
    order = world.order.pk
    with SnapshotReplay(world.snapshot) as replay:
        report = red_team_check(criteria=criteria(order), instruction=version.instruction,
                                solution=reference(order), replay=replay, simulated_user=user_spec(order))  # fmt: skip
        # Without its user the reference's question is answered by no one: the reference fails.
        alone = red_team_check(criteria=criteria(order), instruction=version.instruction,
                               solution=reference(order), replay=replay)  # fmt: skip
    outcomes = {o.key: o for o in report.outcomes}
    assert report.reference.passed and not alone.reference.passed
    assert outcomes["guess"].expect == "must_fail" and outcomes["guess"].passed is False
    assert "Asked which order before changing it" in outcomes["guess"].unmet
    for key in ("dump", "no_call", "echo"):
        assert outcomes[key].passed is False, key
    assert all(o.passed for o in report.outcomes if o.expect == "must_pass"), report.over_specified
    assert report.gameable == [] and report.over_specified == [] and report.gate_passes


def test_the_gate_of_a_version_is_computed_with_its_user(world, version):
    from tasks_app.calibration.services.gates import gate_key, rubric_gate_compute

    gate = rubric_gate_compute(version=version)
    assert gate.passes, (gate.gameable, gate.over_specified)
    assert any(p["key"] == "guess" and not p["passed"] for p in gate.policies)
    assert gate.gate_key == gate_key(version)


def library_task(**changes) -> dict:
    data = {
        "key": "multi-turn-demo",
        "title": "Backorder the order the customer means",
        "task_type": "multi_step_workflow",
        "difficulty": "medium",
        "instruction": "Customer on chat: please put my order on backorder.",
        "reviewer_notes": "The customer has one open order; the reply names it.",
        "criteria": criteria("ord-250808-002"),
        "reference_solution": reference("ord-250808-002"),
        "simulated_user": user_spec("ord-250808-002"),
    }
    data.update(changes)
    return data


def test_the_yaml_carries_the_scripted_user_and_refuses_a_bad_one():
    task = library_task_validate(library_task(), where="t.yaml")
    assert task.fields["simulated_user"]["facts"][0]["reply"] == "Oh right, it's ord-250808-002."
    bad = [
        ({"simulated_user": {"facts": [{"key": "order_number", "topics": [], "reply": "x"}]}},
         "t.yaml: simulated_user.facts.0.topics"),
        ({"simulated_user": {"facts": "ord-1"}}, "t.yaml: simulated_user.facts"),
        ({"simulated_user": None}, "t.yaml: reference_solution: it asks the user (ask_user) but there is no"),
        ({"simulated_user": {"facts": [{"key": "email", "topics": ["email"], "reply": "a@b.c"}]}},
         "t.yaml: criteria[1].spec.fact: 'order_number' is no fact of the simulated_user (email)"),
        ({"reference_solution": {**reference("ord-250808-002"), "calls": [
            {"tool": "ask_user", "arguments": {"message": "How are you?"}}]}},
         "t.yaml: criteria[1].spec.fact: the reference never asks for 'order_number'"),
        ({"criteria": [{"kind": "tool_call", "text": "asked", "category": "constraint",
                        "spec": {"expect": "asked"}}]}, "fact: asked needs"),
        ({"criteria": [{"kind": "tool_call", "text": "asked", "category": "constraint",
                        "spec": {"expect": "asked", "fact": "x", "before": ["refund_everything"]}}]},
         "before: no tool named 'refund_everything'"),
    ]  # fmt: skip
    for change, problem in bad:
        with pytest.raises(ValidationError) as caught:
            library_task_validate(library_task(**change), where="t.yaml")
        assert any(problem in m for m in caught.value.messages), (problem, caught.value.messages)


def test_task_stats_count_a_task_whose_question_is_needed(world):
    from tasks_app.library.services.library_shape import task_shape

    order = world.order.pk
    task = {"key": "k", "criteria": criteria(order), "instruction": "i", "solution": reference(order)}
    with SnapshotReplay(world.snapshot) as replay:
        shape = task_shape(replay=replay, simulated_user=user_spec(order), **task)
        alone = task_shape(replay=replay, **task)
    assert shape.reference_passes and shape.multi_turn and shape.needed_tools[0] == "ask_user"
    assert not alone.reference_passes  # no one answers the question
