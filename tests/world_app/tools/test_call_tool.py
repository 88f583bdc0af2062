"""call_tool: tools run inside an episode's private SQLite world, and every call is logged as a step."""

import json

import pytest

from world_app.episodes import EpisodeClosed, episode_close, episode_create, episode_world
from world_app.models import EpisodeStep, Order, Refund
from world_app.snapshots import snapshot_publish
from world_app.tools import call_tool, invoke_tool
from world_app.tools.steps import call_tool_step

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def published(shop):
    shop.snapshot = snapshot_publish(note="tool tests")
    return shop


def test_each_call_is_logged_with_name_arguments_result_and_duration(published):
    episode = episode_create(label="log")
    result = call_tool(episode, "search_orders", {"customer_id": published.customer.id, "limit": 2})
    assert result["total"] == 4 and len(result["items"]) == 2 and result["has_more"] is True

    refusal = call_tool(episode, "search_orders", {"limit": 500})
    assert refusal["error"]["field"] == "limit"
    unknown = call_tool(episode, "drop_tables", {})
    assert unknown["error"]["code"] == "unknown_tool"

    steps = list(EpisodeStep.objects.filter(episode=episode).order_by("seq"))
    assert [(s.seq, s.name, s.is_error) for s in steps] == [
        (1, "search_orders", False),
        (2, "search_orders", True),
        (3, "drop_tables", True),
    ]
    assert steps[0].arguments == {"customer_id": published.customer.id, "limit": 2}
    assert steps[0].result == result
    assert steps[1].result == refusal
    assert all(s.duration_ms >= 0 for s in steps)
    assert steps[0].changes == []


def test_a_write_is_visible_in_its_episode_only(published):
    first, second = episode_create(label="a"), episode_create(label="b")
    order_id = published.pending.id

    result = call_tool(first, "update_order_status", {"order_id": order_id, "status": "cancelled", "reason": "asked"})
    assert result["order"]["status"] == "cancelled"
    assert result["payments_voided"] == [published.pending.payments.get().id]

    assert call_tool(first, "get_order_details", {"order_id": order_id})["order"]["status"] == "cancelled"
    assert call_tool(second, "get_order_details", {"order_id": order_id})["order"]["status"] == "pending"
    assert Order.objects.get(pk=order_id).status == "pending"  # the live world is untouched

    step = EpisodeStep.objects.get(episode=first, seq=1)
    assert {(c["table"], c["pk"]) for c in step.changes} >= {("world_app_order", order_id)}

    # Cancelling twice: the second call is refused by the state machine, in that episode's world.
    again = call_tool(first, "update_order_status", {"order_id": order_id, "status": "cancelled"})
    assert again["error"]["code"] == "invalid_transition"


def test_writes_chain_inside_an_episode(published):
    episode = episode_create(label="refund flow")
    line = published.bulk.line_items.get()
    refund = call_tool(
        episode,
        "create_refund",
        {
            "order_id": published.bulk.id,
            "reason": "defective",
            "opened": True,
            "lines": [{"line_item_id": line.id, "quantity": 2}],
        },
    )
    assert refund["refund"]["id"] == "ref-w00001"
    assert refund["refund"]["status"] == "approved"
    resolution = call_tool(
        episode,
        "create_resolution",
        {
            "ticket_id": published.new_ticket.id,
            "outcome": "refund_issued",
            "summary": "Two PSUs were dead on arrival; refunded both.",
            "resolved_by": published.agent.id,
            "refund_id": refund["refund"]["id"],
        },
    )
    assert resolution["resolution"]["refund_id"] == "ref-w00001"
    resolved = call_tool(
        episode,
        "update_ticket_status",
        {"ticket_id": published.new_ticket.id, "status": "resolved", "assignee_id": published.agent.id},
    )
    assert resolved["ticket"]["status"] == "resolved"
    assert resolved["ticket"]["resolved_at"] == "2025-09-15T14:00:00-05:00"  # the snapshot's clock
    with episode_world(episode):
        assert Refund.objects.filter(id="ref-w00001").exists()
    assert not Refund.objects.filter(id="ref-w00001").exists()


def test_a_refused_write_logs_the_refusal_and_writes_nothing(published):
    episode = episode_create(label="refusal")
    result = call_tool(episode, "update_order_status", {"order_id": published.transit.id, "status": "cancelled"})
    assert result["error"]["code"] == "policy_violation"
    assert "shipped" in result["error"]["message"]
    step = EpisodeStep.objects.get(episode=episode, seq=1)
    assert step.is_error and step.changes == []


def test_denied_warranty_claim_is_recorded_in_the_episode(published):
    episode = episode_create(label="warranty")
    mouse_line = published.old.line_items.get(product=published.mouse)
    result = call_tool(
        episode,
        "create_warranty_claim",
        {
            "line_item_id": mouse_line.id,
            "issue_description": "The scroll wheel stopped working.",
            "defect_category": "manufacturing_defect",
            "remedy": "replacement",
        },
    )
    assert result["error"]["code"] == "policy_violation"
    assert result["claim"]["status"] == "denied"
    step = EpisodeStep.objects.get(episode=episode, seq=1)
    assert step.is_error
    assert [c["table"] for c in step.changes] == ["world_app_warrantyclaim"]


def test_closed_episode_raises_to_the_caller(published):
    episode = episode_create(label="closing")
    episode_close(episode)
    with pytest.raises(EpisodeClosed):
        call_tool(episode, "search_customers", {})


READ_CALLS = [
    ("search_customers", {"query": "okafor SAM"}),
    ("search_customers", {"loyalty_tier": "gold", "sort": "newest"}),
    ("search_orders", {"customer_id": "{customer}", "sort": "total_desc"}),
    ("search_orders", {"product_id": "{psu}", "created_after": "2025-09-01"}),
    ("search_products", {"category": "gpu", "spec_min": {"vram_gb": 12}, "sort": "price_desc"}),
    ("search_products", {"specs": {"sockets": "AM5"}}),
    ("search_products", {"specs": {"socket": "LGA1700", "wifi": True}}),
    ("search_products", {"specs": {"radiator_support_mm": 360}}),
    ("search_products", {"sort": "newest", "limit": 50}),
    ("search_tickets", {"sort": "priority"}),
    ("search_shipments", {"sort": "oldest", "limit": 50}),
    ("search_payments", {"customer_id": "{customer}"}),
    ("search_employees", {"permission": "approve_refunds_over_limit"}),
    ("search_knowledge_base", {"query": "gpu artifacts"}),
    ("search_knowledge_base", {"tag": "installation"}),
    ("search_builds", {"product_id": "{gpu}"}),
    ("get_order_details", {"order_id": "ord-t-disc"}),
    ("get_product", {"product_id": "{gpu}"}),
    ("get_customer_ticket_history", {"customer_id": "{customer}"}),
    ("check_warranty_status", {"order_id": "ord-t-old", "product_id": "{mouse}"}),
    (
        "calculate_price",
        {"items": [{"product_id": "{gpu}"}], "customer_id": "{customer}", "shipping_service": "ground"},
    ),
    ("calculate_price", {"mode": "refund", "order_id": "ord-t-recent", "opened": True}),
    ("validate_build_compatibility", {"build_id": "{build}"}),
]


def _fill(value, shop):
    if isinstance(value, str) and value.startswith("{"):
        return getattr(shop, value.strip("{}")).id
    if isinstance(value, dict):
        return {k: _fill(v, shop) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, shop) for v in value]
    return value


def test_reads_answer_the_same_on_postgres_and_in_an_episode(published):
    """The tools' ORM is portable: the live world (Postgres) and an episode (SQLite) give identical JSON."""
    episode = episode_create(label="parity")
    for name, template in READ_CALLS:
        arguments = _fill(template, published)
        live = invoke_tool(name, arguments)
        assert "error" not in live, (name, live)
        in_episode = call_tool(episode, name, arguments)
        assert in_episode == live, name


def test_call_tool_step_returns_the_logged_step(published):
    episode = episode_create(label="step")
    step = call_tool_step(episode, "get_product", {"product_id": published.gpu.id})
    assert (step.seq, step.name, step.is_error) == (1, "get_product", False)
    assert step.result["name"] == "RTX 4070 Windforce" and step.duration_ms > 0
    stored = EpisodeStep.objects.get(pk=step.pk)
    assert (stored.seq, stored.result, stored.arguments) == (1, step.result, {"product_id": published.gpu.id})
    assert call_tool(episode, "get_product", {"product_id": published.gpu.id}) == step.result
    assert EpisodeStep.objects.filter(episode=episode).count() == 2


@pytest.mark.parametrize(
    ("arguments", "field", "logged"),
    [
        ({"query": "dana\x00"}, "query", {"query": repr("dana\x00")}),
        ({"query": "\ud800 lone"}, "query", {"query": repr("\ud800 lone")}),
        ({"items": [{"product_id": "prd-1"}, {"product_id": "x\udfff"}]}, "items[1].product_id", None),
        ({"bad\x00key": 1}, repr("bad\x00key"), {repr("bad\x00key"): 1}),
    ],
)
def test_text_postgres_cannot_store_is_refused_and_the_call_logged_storably(published, arguments, field, logged):
    episode = episode_create(label="unstorable")
    result = call_tool(episode, "search_customers", arguments)
    assert result["error"]["code"] == "invalid_arguments"
    assert result["error"]["field"] == field
    assert field in result["error"]["message"]
    step = EpisodeStep.objects.get(episode=episode, seq=1)
    assert step.is_error and step.result == result and step.changes == []
    if logged is not None:
        assert step.arguments == logged
    assert "\x00" not in json.dumps(step.arguments)
    # The episode goes on: the next call is logged as step 2.
    assert call_tool_step(episode, "search_customers", {"query": "dana"}).seq == 2


def test_an_emoji_is_stored_as_is(published):
    episode = episode_create(label="emoji")
    result = call_tool(episode, "search_customers", {"query": "Dana 😀"})
    assert "error" not in result
    assert EpisodeStep.objects.get(episode=episode, seq=1).arguments == {"query": "Dana 😀"}


def test_an_unstorable_tool_name_is_an_unknown_tool(published):
    episode = episode_create(label="name")
    result = call_tool(episode, "drop\x00tables" + "x" * 200, {})
    assert result["error"]["code"] == "unknown_tool"
    step = EpisodeStep.objects.get(episode=episode, seq=1)
    assert step.name.startswith("'drop\\x00tables") and len(step.name) == 100
