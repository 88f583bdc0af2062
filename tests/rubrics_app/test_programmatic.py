"""Programmatic judgement on a real episode: each kind met and not met, and the reward of the verdicts."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from rubrics_app.criteria import criteria_validate, criterion_content_hash
from rubrics_app.programmatic import criteria_evaluate, reward
from tests.factories import small_world
from world_app.episodes import episode_close, episode_create
from world_app.episodes.cache import episode_cache
from world_app.models import Order
from world_app.snapshots import snapshot_publish
from world_app.tools.steps import call_tool

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def world():
    rows = small_world()
    rows["snapshot"] = snapshot_publish(note="programmatic criteria")
    return SimpleNamespace(**rows)


@pytest.fixture
def backordered(world):
    """An episode where the agent looked the order up and backordered it."""
    episode = episode_create(snapshot=world.snapshot, label="test")
    assert "error" not in call_tool(episode, "get_order_details", {"order_id": world.order.pk})
    call_tool(episode, "update_order_status", {"order_id": "ord-nope", "status": "backorder"})  # an error
    result = call_tool(episode, "update_order_status", {"order_id": world.order.pk, "status": "backorder",
                                                        "reason": "GPU out of stock"})  # fmt: skip
    assert "error" not in result, result
    return episode


def criteria(*items: dict, weights=None, required=()) -> list[SimpleNamespace]:
    """Validated criteria as rows would hold them."""
    rows = []
    for index, item in enumerate(criteria_validate([{"text": "t", "category": "correctness", **i} for i in items])):
        weight = weights[index] if weights else item.weight
        fields = {"kind": item.kind, "text": item.text, "spec": item.spec, "weight": weight,
                  "category": item.category, "required": index in required}  # fmt: skip
        rows.append(SimpleNamespace(key=uuid.uuid4(), content_hash=criterion_content_hash(**fields), **fields))
    return rows


def judge(episode, *items: dict, answer: str = "") -> list[dict]:
    return criteria_evaluate(criteria=criteria(*items), episode=episode, final_answer=answer)


def statuses(verdicts: list[dict]) -> list[str]:
    return [v["status"] for v in verdicts]


def state(**spec) -> dict:
    return {"kind": "state", "spec": spec}


def call(**spec) -> dict:
    return {"kind": "tool_call", "spec": spec}


def test_state_criteria_read_the_episodes_final_world_not_the_live_one(world, backordered):
    order = world.order.pk
    this = [{"field": "id", "value": order}]
    verdicts = judge(
        backordered,
        state(entity_type="order", filters=this, field="status", op="eq", value="backorder"),
        state(entity_type="order", filters=this, field="status", op="eq", value="paid"),
        state(entity_type="order", filters=[{"field": "customer__email", "value": world.customer.email}],
              field="notes", op="icontains", value="gpu out of stock"),
        state(entity_type="order", filters=[{"field": "status", "op": "in", "value": ["backorder", "cancelled"]}],
              op="count_eq", value=1),
        state(entity_type="order", filters=[{"field": "status", "value": "cancelled"}], op="count_gte", value=1),
        state(entity_type="order", filters=[{"field": "id", "value": "ord-none"}], field="status", op="eq",
              value="paid"),
        state(entity_type="order", filters=this, field="total", op="gte", value="549.98"),
        state(entity_type="orderlineitem", filters=[{"field": "order", "value": order}], field="order__status",
              op="ne", value="paid"),
        # A date without an offset is read in the world's zone; the tool stamped the world clock (2025-09-15 14:00).
        state(entity_type="order", filters=this, field="updated_at", op="gte", value="2025-09-15"),
        state(entity_type="order", filters=[*this, {"field": "updated_at", "op": "lt", "value": "2025-09-15T12:00"}],
              op="count_eq", value=1),
    )  # fmt: skip
    assert statuses(verdicts) == ["met", "not_met", "met", "met", "not_met", "not_met", "met", "met", "met", "not_met"]
    assert verdicts[0]["evidence"]["rows"] == [{"id": order, "status": "backorder", "holds": True}]
    assert "no order rows matching" in verdicts[5]["rationale"]
    assert Order.objects.get(pk=order).status == "paid"  # the live world never moved
    # A closed episode is judged the same (its world is rebuilt from the log).
    episode_close(backordered)
    episode_cache.clear()
    assert statuses(judge(backordered, state(entity_type="order", filters=this, field="status", op="eq",
                                             value="backorder"))) == ["met"]  # fmt: skip


def test_state_quantifier_all_and_any(world, backordered):
    from tests.factories import OrderFactory  # a second order, only in a world published after it exists

    assert OrderFactory(customer=world.customer).pk
    episode = episode_create(snapshot=snapshot_publish(note="two orders"))
    call_tool(episode, "update_order_status", {"order_id": world.order.pk, "status": "backorder"})
    mine = [{"field": "customer", "value": world.customer.pk}]
    verdicts = judge(
        episode,
        state(entity_type="order", filters=mine, field="status", op="eq", value="backorder"),
        state(entity_type="order", filters=mine, field="status", op="eq", value="backorder", quantifier="any"),
    )
    assert statuses(verdicts) == ["not_met", "met"]
    assert verdicts[0]["evidence"]["matched"] == 2 and verdicts[0]["evidence"]["held"] == 1


def test_tool_call_criteria_match_logged_calls_and_arguments(world, backordered):
    order = world.order.pk
    update = "update_order_status"
    verdicts = judge(
        backordered,
        call(tool=update, arguments={"order_id": {"value": order}, "reason": {"op": "contains", "value": "stock"}}),
        call(tool=update, arguments={"status": {"value": "cancelled"}}),
        call(tool="create_refund", expect="not_called"),
        call(tool="get_order_details", expect="not_called"),
        call(tool=update, max_count=1),
        call(tool=update, min_count=2),
        call(tool=update, arguments={"reason": {"op": "regex", "value": "^GPU"}}),
    )
    assert statuses(verdicts) == ["met", "not_met", "met", "not_met", "met", "not_met", "met"]
    # The refused call to a missing order is an error: it counts for nothing.
    assert verdicts[4]["evidence"] == {"matching_steps": [3], "calls_of_tool": 2, "errors": 1}


def test_response_criteria_read_the_final_answer(backordered):
    answer = "Your order total was $549.98; the GPU is on backorder (ref ORD-F00001)."
    verdicts = judge(
        backordered,
        {"kind": "response", "spec": {"op": "number", "value": 549.98}},
        {"kind": "response", "spec": {"op": "number", "value": 500, "tolerance": 10}},
        {"kind": "response", "spec": {"op": "contains", "value": "BACKORDER"}},
        {"kind": "response", "spec": {"op": "contains", "value": "BACKORDER", "case_sensitive": True}},
        {"kind": "response", "spec": {"op": "not_contains", "value": "refund"}},
        {"kind": "response", "spec": {"op": "regex", "value": r"ord-f\d{5}"}},
        {"kind": "response", "spec": {"op": "regex", "value": r"ord-f\d{5}", "case_sensitive": True}},
        answer=answer,
    )
    assert statuses(verdicts) == ["met", "not_met", "met", "not_met", "met", "met", "not_met"]
    assert "549.98" in verdicts[0]["evidence"]["numbers"]


def test_a_number_check_reads_signed_amounts_with_a_currency_sign(backordered):
    verdicts = judge(
        backordered,
        {"kind": "response", "spec": {"op": "number", "value": -94.35}},
        {"kind": "response", "spec": {"op": "number", "value": 1200.5}},
        answer="The adjustment is -$94.35 on a balance of $1,200.50.",
    )
    assert statuses(verdicts) == ["met", "met"]


def test_llm_criteria_are_pending_and_hold_the_reward_back(backordered):
    rows = criteria(
        {"kind": "response", "spec": {"op": "contains", "value": "backorder"}},
        {"kind": "response", "spec": {"op": "contains", "value": "refund"}},
        {"kind": "llm"},
        weights=[3, 1, 1],
        required=(0,),
    )
    verdicts = criteria_evaluate(criteria=rows, episode=backordered, final_answer="It is on backorder.")
    assert statuses(verdicts) == ["met", "not_met", "pending"]
    assert verdicts[2]["met"] is None and verdicts[0]["content_hash"] == rows[0].content_hash
    outcome = reward(verdicts)
    assert outcome["final"] is False and outcome["reward"] is None and outcome["passed"] is True
    assert outcome["partial_reward"] == 0.75 and outcome["pending"] == 1


def test_reward_is_the_weighted_fraction_and_pass_needs_every_required():
    def verdict(status, weight, required=False):
        return {"status": status, "met": status == "met", "weight": weight, "required": required}

    outcome = reward([verdict("met", 3, True), verdict("not_met", 1)])
    assert outcome["final"] and outcome["reward"] == 0.75 and outcome["passed"] is True
    outcome = reward([verdict("met", 3), verdict("not_met", 1, True)])
    assert outcome["reward"] == 0.75 and outcome["passed"] is False
    # A failed required criterion fails the rollout even while others wait for the judge.
    pending = {"status": "pending", "met": None, "weight": 1, "required": True}
    assert reward([verdict("not_met", 1, True), pending])["passed"] is False
    assert reward([verdict("met", 1, True), pending])["passed"] is None
    assert reward([])["reward"] == 0.0
