from datetime import timedelta

import pytest

from tests.factories import SupportTicketFactory, TicketMessageFactory
from tests.world_app.tools.shop import NOW, make_order, ok, refused

pytestmark = pytest.mark.django_db


def test_get_order_details_shows_everything_about_an_order(shop):
    details = ok("get_order_details", order_id=shop.recent.id)
    assert details["order"]["id"] == shop.recent.id and details["order"]["status"] == "fulfilled"
    assert details["customer"] == {
        "id": shop.customer.id,
        "name": "Dana Reyes",
        "email": "dana.reyes@example.com",
        "loyalty_tier": "gold",
    }
    gpu_line, cable_line = details["line_items"]
    assert gpu_line["product_id"] == shop.gpu.id and gpu_line["line_total"] == "549.99"
    assert gpu_line["warranty_expires_on"] == "2027-09-05" and gpu_line["warranty_status"] == "active"
    assert cable_line["quantity"] == 2 and cable_line["warranty_expires_on"] == "2026-09-05"
    assert [p["amount"] for p in details["payments"]] == ["599.96"]
    assert details["shipments"][0]["status"] == "delivered"
    assert details["delivered_at"] == "2025-09-05T14:00:00-05:00"
    assert details["return_window"] == {
        "delivered_on": "2025-09-05",
        "days_since_delivery": 10,
        "window_days": 30,
        "last_day": "2025-10-05",
        "is_open": True,
    }
    assert details["refund_summary"] == {
        "paid_total": "599.96",
        "refunded_total": "0.00",
        "shipping_not_refundable": "9.99",
        "refundable_remaining": "589.97",
    }
    assert details["tickets"] == [{"id": shop.ticket.id, "status": "open", "subject": "GPU artifacts in games"}]
    assert details["shipping_address"]["city"] == "Portland"


def test_get_order_details_follows_refunds_and_undelivered_orders(shop):
    cable_line = shop.recent.line_items.get(product=shop.cable)
    ok(
        "create_refund",
        order_id=shop.recent.id,
        reason="customer_remorse",
        opened=False,
        lines=[{"line_item_id": cable_line.id, "quantity": 1}],
    )
    details = ok("get_order_details", order_id=shop.recent.id)
    assert [li["refunded_quantity"] for li in details["line_items"]] == [0, 1]
    assert details["refund_summary"]["refunded_total"] == "19.99"
    assert details["refunds"][0]["line_items"] == [{"line_item_id": cable_line.id, "quantity": 1}]

    transit = ok("get_order_details", order_id=shop.transit.id)
    assert transit["delivered_at"] is None
    assert transit["return_window"]["is_open"] is False and transit["return_window"]["delivered_on"] is None
    assert transit["line_items"][0]["warranty_status"] == "not_started"


def test_get_order_details_refuses_unknown_or_missing_ids(shop):
    error = refused("get_order_details", "not_found", order_id="ord-nope")
    assert error == {"code": "not_found", "message": "no order with id 'ord-nope'", "field": "order_id"}
    assert refused("get_order_details", "invalid_arguments", order_id="")["field"] == "order_id"


def test_get_product_by_id_or_sku(shop):
    product = ok("get_product", product_id=shop.gpu.id)
    assert product["name"] == "RTX 4070 Windforce" and product["price"] == "549.99"
    assert product["specs"]["length_mm"] == 300 and product["warranty_months"] == 24
    assert product["articles"] == [
        {"id": shop.manual.id, "slug": shop.manual.slug, "title": shop.manual.title, "kind": "manual"}
    ]
    assert [a["id"] for a in product["category_articles"]] == [shop.gpu_guide.id]
    assert product["bundles"] == []  # the GPU bundle ended on 2025-08-31
    assert ok("get_product", sku=shop.cpu.sku.lower())["id"] == shop.cpu.id
    assert ok("get_product", product_id=shop.cpu.id)["bundles"] == [
        {"id": shop.bundle.id, "name": "AM5 starter bundle", "price": "489.00"}
    ]
    old = ok("get_product", product_id=shop.old_gpu.id)
    assert (old["lifecycle"], old["in_stock"], old["stock_quantity"]) == ("discontinued", False, 0)


def test_get_product_refusals(shop):
    assert refused("get_product", "not_found", sku="NOPE-1")["field"] == "sku"
    assert refused("get_product", "not_found", product_id="prd-nope")["field"] == "product_id"
    assert refused("get_product", "invalid_arguments")["details"] == [
        {"reason": "give exactly one of product_id or sku"}
    ]


def test_get_customer_ticket_history_with_messages_and_paging(shop):
    TicketMessageFactory(ticket=shop.ticket, body="Artifacts started after a driver update.")
    TicketMessageFactory(
        ticket=shop.ticket,
        author_kind="employee",
        employee=shop.agent,
        body="Asked for a screenshot.",
        is_internal=True,
        sent_at=NOW - timedelta(hours=2),
    )
    ok(
        "create_escalation",
        ticket_id=shop.ticket.id,
        escalation_type="technical",
        notes="Artifacts on a new card after a driver update; needs an engineer.",
    )
    history = ok("get_customer_ticket_history", customer_id=shop.customer.id)
    assert history["customer"]["id"] == shop.customer.id
    assert [t["id"] for t in history["items"]] == [shop.closed_ticket.id, shop.ticket.id]
    ticket = history["items"][1]
    assert [m["body"] for m in ticket["messages"]] == [
        "Artifacts started after a driver update.",
        "Asked for a screenshot.",
    ]
    assert [m["is_internal"] for m in ticket["messages"]] == [False, True]
    assert [e["escalation_type"] for e in ticket["escalations"]] == ["technical"]
    assert ticket["resolutions"] == [] and ticket["warranty_claims"] == []

    closed = ok("get_customer_ticket_history", customer_id=shop.customer.id, status="closed")
    assert [t["id"] for t in closed["items"]] == [shop.closed_ticket.id]
    SupportTicketFactory.create_batch(21, customer=shop.customer, created_at=NOW - timedelta(days=30))
    pages = [ok("get_customer_ticket_history", customer_id=shop.customer.id, offset=o) for o in (0, 10, 20, 30)]
    assert [(len(p["items"]), p["has_more"], p["total"]) for p in pages] == [
        (10, True, 23),
        (10, True, 23),
        (3, False, 23),
        (0, False, 23),
    ]
    assert refused("get_customer_ticket_history", "not_found", customer_id="cus-nope")["field"] == "customer_id"


def test_check_warranty_status_active_expired_and_not_started(shop):
    psu_line = shop.old.line_items.get(product=shop.psu)
    active = ok("check_warranty_status", line_item_id=psu_line.id)
    assert active["status"] == "active" and active["expires_on"] == "2030-07-02"
    assert active["delivered_on"] == "2025-07-02" and active["days_left"] == 1751
    assert active["exclusions"] == [
        "physical_damage",
        "liquid_damage",
        "overclocking",
        "improper_installation",
        "wear_and_tear",
    ]
    assert active["return_window"]["is_open"] is False

    expired = ok("check_warranty_status", order_id=shop.old.id, product_id=shop.mouse.id)
    assert (expired["status"], expired["expires_on"], expired["days_since_expiry"]) == ("expired", "2025-08-02", 44)
    assert expired["explanation"] == (
        "delivered 2025-07-02 with a 1-month warranty running through 2025-08-02; it expired 44 days ago"
    )
    waiting = ok("check_warranty_status", order_id=shop.transit.id, product_id=shop.cpu.id)
    assert waiting["status"] == "not_started" and waiting["expires_on"] is None


def test_check_warranty_status_refusals(shop):
    assert refused("check_warranty_status", "not_found", line_item_id="li-nope")["field"] == "line_item_id"
    error = refused("check_warranty_status", "not_found", order_id=shop.old.id, product_id=shop.gpu.id)
    assert error["field"] == "product_id"
    twice = make_order(shop.other, [(shop.cable, 1), (shop.cable, 3)], delivered_days_ago=2)
    error = refused("check_warranty_status", "invalid_arguments", order_id=twice.id, product_id=shop.cable.id)
    assert error["field"] == "line_item_id" and "2 lines" in error["message"]
    error = refused("check_warranty_status", "invalid_arguments", order_id=shop.old.id)
    assert error["details"] == [{"reason": "give line_item_id, or both order_id and product_id"}]
    other_line = shop.recent.line_items.first()
    error = refused("check_warranty_status", "invalid_arguments", line_item_id=other_line.id, order_id=shop.old.id)
    assert error["field"] == "order_id"
