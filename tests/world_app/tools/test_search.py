from datetime import timedelta
from decimal import Decimal

import pytest

from tests.factories import (
    BuildFactory,
    CustomerFactory,
    EmployeeFactory,
    KnowledgeBaseArticleFactory,
    OrderFactory,
    PaymentFactory,
    ProductFactory,
    ShipmentFactory,
    SupportTicketFactory,
)
from tests.world_app.tools.shop import NOW, ok, refused
from world_app.tools import invoke_tool

pytestmark = pytest.mark.django_db


def _customers():
    CustomerFactory.create_batch(23, last_name="Zebulon")
    return {"query": "zebulon"}


def _orders():
    customer = CustomerFactory()
    OrderFactory.create_batch(23, customer=customer)  # same placed time: the id breaks the tie
    return {"customer_id": customer.id}


def _products():
    ProductFactory.create_batch(23, brand="Pagecraft")
    return {"brand": "pagecraft"}


def _tickets():
    customer = CustomerFactory()
    SupportTicketFactory.create_batch(23, customer=customer)
    return {"customer_id": customer.id}


def _shipments():
    order = OrderFactory()
    ShipmentFactory.create_batch(23, order=order)
    return {"order_id": order.id}


def _payments():
    order = OrderFactory()
    PaymentFactory.create_batch(23, order=order)
    return {"order_id": order.id}


def _employees():
    EmployeeFactory.create_batch(23, department="finance")
    return {"department": "finance"}


def _articles():
    KnowledgeBaseArticleFactory.create_batch(23, tags=["paging", "policy"])
    return {"tag": "paging"}


def _builds():
    customer = CustomerFactory()
    BuildFactory.create_batch(23, customer=customer)
    return {"customer_id": customer.id}


SEARCHES = {
    "search_customers": _customers,
    "search_orders": _orders,
    "search_products": _products,
    "search_tickets": _tickets,
    "search_shipments": _shipments,
    "search_payments": _payments,
    "search_employees": _employees,
    "search_knowledge_base": _articles,
    "search_builds": _builds,
}


@pytest.mark.parametrize("name", list(SEARCHES))
def test_paging_first_middle_last_and_past_the_end(name):
    filters = SEARCHES[name]()
    first = ok(name, **filters)
    middle = ok(name, **filters, offset=10)
    last = ok(name, **filters, offset=20)
    past = ok(name, **filters, offset=30)
    assert (first["total"], first["offset"], first["limit"], len(first["items"]), first["has_more"]) == (
        23,
        0,
        10,
        10,
        True,
    )
    assert (len(middle["items"]), middle["has_more"]) == (10, True)
    assert (len(last["items"]), last["has_more"], last["total"]) == (3, False, 23)
    assert (past["items"], past["has_more"], past["total"]) == ([], False, 23)
    # The pages partition the result in one fixed order: the same as one big page.
    paged_ids = [item["id"] for result in (first, middle, last) for item in result["items"]]
    assert len(set(paged_ids)) == 23
    assert paged_ids == [item["id"] for item in ok(name, **filters, limit=50)["items"]]


@pytest.mark.parametrize("name", list(SEARCHES))
def test_paging_arguments_are_validated(name):
    for bad, field in (({"limit": 0}, "limit"), ({"limit": 51}, "limit"), ({"offset": -1}, "offset")):
        error = refused(name, "invalid_arguments", **bad)
        assert error["field"] == field
    error = refused(name, "invalid_arguments", colour="red")
    assert error["field"] == "colour"


def ids(result):
    return [item["id"] for item in result["items"]]


def test_search_customers_filters(shop):
    assert ids(ok("search_customers", query="Reyes dana")) == [shop.customer.id]
    assert ids(ok("search_customers", email="DANA.REYES@example.com")) == [shop.customer.id]
    assert ids(ok("search_customers", loyalty_tier="gold")) == [shop.customer.id]
    assert ids(ok("search_customers", query="austin 78701")) == [shop.other.id]  # address words
    joined = ok("search_customers", created_before="2024-09-01")["total"]
    assert joined == 3 and ok("search_customers", created_after="2024-09-01")["total"] == 0
    by_name = ok("search_customers", sort="name")["items"]
    assert [c["last_name"] for c in by_name] == ["Newman", "Okafor", "Reyes"]
    record = ok("search_customers", query="okafor")["items"][0]
    assert record["loyalty_discount_pct"] == 0 and record["created_at"].endswith("-05:00")
    assert refused("search_customers", "invalid_arguments", loyalty_tier="diamond")["field"] == "loyalty_tier"
    assert refused("search_customers", "invalid_arguments", created_after="last week")["details"] == [
        {
            "field": "created_after",
            "reason": "not an ISO 8601 date or time (e.g. 2025-08-01 or 2025-08-01T09:30:00-05:00)",
        }
    ]


def test_search_orders_filters(shop):
    mine = ok("search_orders", customer_id=shop.customer.id)
    assert ids(mine) == [shop.transit.id, shop.discounted.id, shop.recent.id, shop.old.id]  # newest first
    assert ids(ok("search_orders", status="pending")) == [shop.pending.id]
    assert ids(ok("search_orders", product_id=shop.psu.id, sort="oldest")) == [shop.old.id, shop.bulk.id]
    window = ok("search_orders", created_after="2025-09-01", created_before="2025-09-10")
    assert ids(window) == [shop.discounted.id, shop.bulk.id, shop.recent.id]  # placed Sep 9, Sep 6, Sep 1 14:00
    assert ids(ok("search_orders", min_total=600, sort="total_desc")) == [shop.discounted.id]
    assert ids(ok("search_orders", max_total="100", sort="total_asc")) == []
    assert ids(ok("search_orders", query="okafor")) == [shop.pending.id, shop.bulk.id]
    summary = ok("search_orders", query=shop.recent.id)["items"][0]
    assert summary["total"] == "599.96" and summary["customer_name"] == "Dana Reyes"
    assert summary["created_at"] == "2025-09-01T14:00:00-05:00"


def test_search_products_filters(shop):
    assert ids(ok("search_products", category="motherboard", specs={"socket": "LGA1700"})) == [shop.intel_board.id]
    assert ids(ok("search_products", specs={"sockets": "AM5"})) == [shop.cooler.id]
    assert ids(ok("search_products", category="psu", spec_min={"wattage": 700})) == [shop.psu.id]
    assert ids(ok("search_products", specs={"wattage": "450"})) == [shop.small_psu.id]  # a number sent as text
    assert refused("search_products", "invalid_arguments", specs={"wattage": "lots"})["field"] == "specs.wattage"
    assert ids(ok("search_products", category="gpu", spec_max={"length_mm": 320}, lifecycle="active")) == [shop.gpu.id]
    assert ids(ok("search_products", in_stock=False)) == [shop.old_gpu.id]
    assert ids(ok("search_products", query="rtx titan")) == [shop.long_gpu.id]
    cheap = ok("search_products", max_price=50, sort="price_asc")
    assert [p["price"] for p in cheap["items"]] == ["19.99", "49.99"]
    assert ok("search_products", sort="price_desc")["items"][0]["id"] == shop.long_gpu.id
    error = refused("search_products", "invalid_arguments", category="psu", specs={"socket": "AM5"})
    assert error["field"] == "specs.socket"
    assert "known specs: efficiency, form_factor, modular, wattage" in error["message"]
    error = refused("search_products", "invalid_arguments", spec_min={"chipset": 3})
    assert error["field"] == "spec_min.chipset"
    item = ok("search_products", query=shop.gpu.sku)["items"][0]
    assert item["specs"] == dict(sorted(shop.gpu.specs.items())) and item["price"] == "549.99"


def test_search_tickets_filters(shop):
    assert ids(ok("search_tickets", customer_id=shop.customer.id)) == [shop.closed_ticket.id, shop.ticket.id]
    assert ids(ok("search_tickets", unassigned=True)) == [shop.new_ticket.id]
    assert ids(ok("search_tickets", status="closed")) == [shop.closed_ticket.id]
    assert ids(ok("search_tickets", order_id=shop.bulk.id, ticket_type="return", priority="high")) == [
        shop.new_ticket.id
    ]
    assert ids(ok("search_tickets", assignee_id=shop.agent.id, query="gpu artifacts")) == [shop.ticket.id]
    assert ok("search_tickets", sort="priority")["items"][0]["id"] == shop.new_ticket.id
    SupportTicketFactory(customer=shop.other, created_at=NOW - timedelta(days=40))
    assert ok("search_tickets", created_before="2025-08-15")["total"] == 1
    assert ok("search_tickets", channel="phone")["total"] == 0


def test_search_shipments_filters(shop):
    delivered = ok("search_shipments", status="delivered", sort="oldest")
    assert [s["order_id"] for s in delivered["items"]] == [
        shop.old.id,
        shop.recent.id,
        shop.bulk.id,
        shop.discounted.id,
    ]
    assert [s["order_id"] for s in ok("search_shipments", delivered_after="2025-09-08")["items"]] == [
        shop.discounted.id,
        shop.bulk.id,
    ]
    assert ok("search_shipments", delivered_before="2025-07-03")["items"][0]["order_id"] == shop.old.id
    assert ok("search_shipments", customer_id=shop.other.id)["total"] == 1
    tracking = shop.transit.shipments.get().tracking_number
    found = ok("search_shipments", query=tracking)["items"]
    assert len(found) == 1 and found[0]["status"] == "in_transit" and found[0]["delivered_at"] is None
    ShipmentFactory(order=shop.pending, status="label_created", shipped_at=None)
    assert ok("search_shipments", order_id=shop.pending.id)["items"][0]["shipped_at"] is None
    # Unshipped last, whatever the direction.
    assert ok("search_shipments", limit=50)["items"][-1]["order_id"] == shop.pending.id
    assert ok("search_shipments", sort="oldest", limit=50)["items"][-1]["order_id"] == shop.pending.id


def test_search_payments_shows_refunded_totals(shop):
    payment = shop.recent.payments.get()
    ok(
        "create_refund",
        order_id=shop.recent.id,
        reason="shipping_issue",
        amount=25,
        notes="box arrived crushed, goodwill",
    )
    found = ok("search_payments", order_id=shop.recent.id)["items"]
    assert found == [
        {**found[0], "id": payment.id, "amount": "599.96", "refunded_total": "25.00", "status": "partially_refunded"}
    ]
    assert ids(ok("search_payments", status="authorized")) == [shop.pending.payments.get().id]
    assert ok("search_payments", customer_id=shop.other.id, method="card")["total"] == 2
    assert ok("search_payments", min_amount=Decimal("700"), sort="amount_desc")["total"] == 0
    assert ok("search_payments", query=payment.transaction_id)["items"][0]["id"] == payment.id


def test_search_employees_filters(shop):
    assert ids(ok("search_employees", permission="approve_refunds_over_limit")) == [shop.lead.id]
    assert ids(ok("search_employees", department="engineering")) == [shop.engineer.id]
    assert ids(ok("search_employees", is_active=False)) == [shop.former.id]
    assert ids(ok("search_employees", support_role="team_lead", query="lead")) == [shop.lead.id]
    assert ok("search_employees", hired_after="2022-03-02")["total"] == 0
    assert ok("search_employees", hired_before="2022-03-02")["total"] == 5
    assert [e["name"] for e in ok("search_employees", sort="name", limit=2)["items"]] == ["Alex Agent", "Eve Engineer"]


def test_search_knowledge_base(shop):
    assert ids(ok("search_knowledge_base", query="30 days delivery")) == [shop.policy.id]
    assert ids(ok("search_knowledge_base", product_id=shop.gpu.id)) == [shop.manual.id]
    assert ids(ok("search_knowledge_base", kind="troubleshooting", product_category="gpu")) == [shop.gpu_guide.id]
    # Relevance: an article with every word in its title comes before one with them only in the body.
    KnowledgeBaseArticleFactory(title="Artifact reports", body="GPU artifacts: see the troubleshooting guide.")
    ranked = ok("search_knowledge_base", query="gpu artifacts")
    assert ids(ranked)[0] == shop.gpu_guide.id and ranked["total"] == 2
    KnowledgeBaseArticleFactory(title="Retired GPU guide", body="old gpu notes", is_published=False)
    assert ok("search_knowledge_base", query="retired")["total"] == 0
    assert ok("search_knowledge_base", query="retired", include_unpublished=True)["total"] == 1
    assert ok("search_knowledge_base", sort="title")["items"][0]["title"] == "Artifact reports"
    assert ok("search_knowledge_base", query="troubleshooting gpu")["items"][0]["body"].startswith("Artifacts")


def test_search_builds(shop):
    found = ok("search_builds", customer_id=shop.customer.id, status="saved")["items"]
    assert [b["id"] for b in found] == [shop.build.id]
    assert [p["id"] for p in found[0]["parts"]] == [
        shop.cpu.id,
        shop.board.id,
        shop.memory.id,
        shop.gpu.id,
        shop.case.id,
        shop.psu.id,
        shop.cooler.id,
    ]
    assert found[0]["parts_total"] == "1527.95"
    assert ids(ok("search_builds", product_id=shop.cpu.id, sort="oldest")) == [shop.build.id, shop.ordered_build.id]
    assert ids(ok("search_builds", query="office")) == [shop.ordered_build.id]


def test_search_results_are_json_with_the_page_envelope(shop):
    for name in SEARCHES:
        result = invoke_tool(name, {})
        assert set(result) == {"items", "total", "offset", "limit", "has_more"}, name
