"""A small Corecraft shop for the tool tests (customers, parts, orders in every interesting state), and helpers
to call tools on it.

The world clock is 2025-09-15 14:00 EST (tests/conftest.py); "delivered N days ago" is counted from it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

from tests.factories import (
    SPECS_BY_CATEGORY,
    BuildFactory,
    BundleFactory,
    BundleItemFactory,
    CompatibilityRuleFactory,
    CustomerFactory,
    EmployeeFactory,
    KnowledgeBaseArticleFactory,
    OrderFactory,
    OrderLineItemFactory,
    PaymentFactory,
    ProductFactory,
    ShipmentFactory,
    SupportTicketFactory,
)
from world_app import models as world
from world_app.tools import invoke_tool

NOW = datetime.fromisoformat("2025-09-15T14:00:00-05:00")


def specs(category: str, **changes) -> dict:
    return {**SPECS_BY_CATEGORY[category], **changes}


def address(name: str, line1: str, city: str, state: str, postal_code: str) -> list[dict]:
    place = {"name": name, "line1": line1, "line2": "", "city": city, "state": state, "postal_code": postal_code}
    return [{"label": "shipping", "country": "US", **place}, {"label": "billing", "country": "US", **place}]


def add_parts(build, *products) -> None:
    start = world.BuildComponent.objects.count()
    for offset, product in enumerate(products):
        world.BuildComponent.objects.create(id=f"bcp-t{start + offset:05d}", build=build, product=product, quantity=1)


def make_order(
    customer,
    lines,
    *,
    status="fulfilled",
    placed_days_ago=20,
    delivered_days_ago=None,
    shipment_status=None,
    shipping=Decimal("9.99"),
    discount=Decimal("0.00"),
    payment_status="captured",
    order_id=None,
):
    """An order whose totals add up, with a captured payment and (optionally) one shipment."""
    subtotal = sum((product.price * qty for product, qty in lines), Decimal("0.00"))
    placed = NOW - timedelta(days=placed_days_ago)
    extra = {"id": order_id} if order_id else {}
    order = OrderFactory(
        customer=customer,
        status=status,
        subtotal=subtotal,
        discount_total=discount,
        shipping_cost=shipping,
        tax_total=Decimal("0.00"),
        created_at=placed,
        updated_at=placed,
        **extra,
    )
    for product, qty in lines:
        OrderLineItemFactory(order=order, product=product, quantity=qty, unit_price=product.price)
    if payment_status:
        PaymentFactory(order=order, status=payment_status, amount=order.total)
    if delivered_days_ago is not None:
        ShipmentFactory(
            order=order,
            status="delivered",
            shipped_at=NOW - timedelta(days=delivered_days_ago + 3),
            delivered_at=NOW - timedelta(days=delivered_days_ago),
        )
    elif shipment_status:
        ShipmentFactory(order=order, status=shipment_status, shipped_at=placed + timedelta(days=1))
    return order


def build_shop() -> SimpleNamespace:
    s = SimpleNamespace()
    s.agent = EmployeeFactory(first_name="Alex", last_name="Agent", title="Support Agent")
    s.lead = EmployeeFactory(
        first_name="Lee",
        last_name="Lead",
        title="Support Team Lead",
        support_role="team_lead",
        permissions=["approve_refunds_over_limit", "issue_refunds", "manage_tickets"],
    )
    s.engineer = EmployeeFactory(
        first_name="Eve",
        last_name="Engineer",
        department="engineering",
        title="Hardware Engineer",
        support_role="technical_specialist",
    )
    s.specialist = EmployeeFactory(
        first_name="Pat",
        last_name="Product",
        department="product_management",
        title="Product Specialist",
        support_role="product_specialist",
    )
    s.former = EmployeeFactory(first_name="Fay", last_name="Former", is_active=False)

    s.customer = CustomerFactory(
        first_name="Dana",
        last_name="Reyes",
        email="dana.reyes@example.com",
        loyalty_tier="gold",
        addresses=address("Dana Reyes", "12 Harbor Street", "Portland", "OR", "97201"),
    )
    s.other = CustomerFactory(
        first_name="Sam",
        last_name="Okafor",
        email="sam.okafor@example.com",
        addresses=address("Sam Okafor", "400 Congress Ave", "Austin", "TX", "78701"),
    )
    s.newcomer = CustomerFactory(
        first_name="Nia",
        last_name="Newman",
        email="nia@example.com",
        addresses=address("Nia Newman", "9 Larimer St", "Denver", "CO", "80202"),
    )

    s.cpu = ProductFactory(category="cpu", name="Ryzen 7 7700X", price=Decimal("299.00"), warranty_months=36)
    s.board = ProductFactory(category="motherboard", name="B650 Tomahawk", price=Decimal("219.99"))
    s.intel_board = ProductFactory(
        category="motherboard", name="Z790 Edge", price=Decimal("289.99"), specs=specs("motherboard", socket="LGA1700")
    )
    s.memory = ProductFactory(category="memory", name="Vengeance DDR5 32GB", price=Decimal("119.99"))
    s.gpu = ProductFactory(category="gpu", name="RTX 4070 Windforce", price=Decimal("549.99"), warranty_months=24)
    s.long_gpu = ProductFactory(
        category="gpu",
        name="RTX 4090 Titan",
        price=Decimal("1799.99"),
        specs=specs("gpu", length_mm=380, tdp_watts=450, recommended_psu_watts=1000, vram_gb=24),
    )
    s.case = ProductFactory(category="case", name="Meshify Mid Tower", price=Decimal("119.00"))
    s.psu = ProductFactory(category="psu", name="Corecraft 750W Gold", price=Decimal("129.99"), warranty_months=60)
    s.small_psu = ProductFactory(
        category="psu", name="Budget 450W", price=Decimal("49.99"), specs=specs("psu", wattage=450)
    )
    s.cable = ProductFactory(category="cable", name="DisplayPort cable 2m", price=Decimal("19.99"), warranty_months=12)
    s.mouse = ProductFactory(category="mouse", name="Glide wireless mouse", price=Decimal("59.99"), warranty_months=1)
    s.cooler = ProductFactory(
        category="cooling",
        name="Frost 240 AIO",
        price=Decimal("89.99"),
        specs=specs("cooling", type="aio", height_mm=None, radiator_size_mm=240),
    )
    s.old_gpu = ProductFactory(
        category="gpu", name="GTX 1080 Classic", price=Decimal("299.99"), lifecycle="discontinued", stock_quantity=0
    )

    s.socket_rule = CompatibilityRuleFactory(name="CPU socket matches motherboard")
    s.length_rule = CompatibilityRuleFactory(
        name="GPU fits the case",
        category_a="gpu",
        field_a="length_mm",
        operator="lte",
        category_b="case",
        field_b="max_gpu_length_mm",
        message="{a} is {a_value} mm long; {b} takes {b_value} mm",
    )
    s.power_rule = CompatibilityRuleFactory(
        name="PSU covers the build's draw",
        category_a="gpu",
        field_a="",
        operator="total_draw_lte",
        category_b="psu",
        field_b="wattage",
        factor=Decimal("1.25"),
        message="the build draws {a_value} W with headroom; {b} gives {b_value} W",
    )

    # Orders, by what a support agent can still do with them.
    s.recent = make_order(
        s.customer, [(s.gpu, 1), (s.cable, 2)], placed_days_ago=14, delivered_days_ago=10, order_id="ord-t-recent"
    )
    s.old = make_order(
        s.customer, [(s.psu, 1), (s.mouse, 1)], placed_days_ago=80, delivered_days_ago=75, order_id="ord-t-old"
    )
    s.bulk = make_order(s.other, [(s.psu, 4)], placed_days_ago=9, delivered_days_ago=5, order_id="ord-t-bulk")
    s.transit = make_order(
        s.customer,
        [(s.cpu, 1)],
        status="paid",
        placed_days_ago=3,
        shipment_status="in_transit",
        order_id="ord-t-transit",
    )
    s.pending = make_order(
        s.other,
        [(s.memory, 2)],
        status="pending",
        placed_days_ago=1,
        payment_status="authorized",
        order_id="ord-t-pending",
    )
    s.discounted = make_order(
        s.customer,
        [(s.gpu, 1), (s.memory, 1)],
        placed_days_ago=6,
        delivered_days_ago=3,
        discount=Decimal("66.99"),
        order_id="ord-t-disc",
    )

    s.ticket = SupportTicketFactory(
        customer=s.customer, order=s.recent, assignee=s.agent, status="open", subject="GPU artifacts in games"
    )
    s.new_ticket = SupportTicketFactory(
        customer=s.other,
        order=s.bulk,
        status="new",
        subject="Two PSUs dead on arrival",
        ticket_type="return",
        priority="high",
    )
    s.closed_ticket = SupportTicketFactory(
        customer=s.customer, status="closed", assignee=s.agent, subject="Where is my invoice", ticket_type="billing"
    )

    s.policy = KnowledgeBaseArticleFactory(
        slug="return-policy", title="Return and refund policy", body="Returns are accepted within 30 days of delivery."
    )
    s.manual = KnowledgeBaseArticleFactory(
        slug="rtx-4070-windforce-manual",
        title="RTX 4070 Windforce installation manual",
        kind="manual",
        product=s.gpu,
        product_category="gpu",
        body="Seat the card in the top PCIe x16 slot and connect the 16-pin power cable.",
        tags=["gpu", "installation"],
    )
    s.gpu_guide = KnowledgeBaseArticleFactory(
        slug="gpu-artifacts",
        title="Troubleshooting GPU artifacts",
        kind="troubleshooting",
        product_category="gpu",
        body="Artifacts usually mean overheating, a loose power cable or a failing card.",
        tags=["gpu", "troubleshooting"],
    )

    s.build = BuildFactory(customer=s.customer, name="Dana's gaming rig", status="saved")
    add_parts(s.build, s.cpu, s.board, s.memory, s.gpu, s.case, s.psu, s.cooler)
    s.ordered_build = BuildFactory(customer=s.customer, name="Office PC", status="ordered")
    add_parts(s.ordered_build, s.cpu)

    s.bundle = BundleFactory(name="AM5 starter bundle", price=Decimal("489.00"))
    BundleItemFactory(bundle=s.bundle, product=s.cpu)
    BundleItemFactory(bundle=s.bundle, product=s.board)
    s.expired_bundle = BundleFactory(name="Summer GPU bundle", valid_until=date(2025, 8, 31))
    BundleItemFactory(bundle=s.expired_bundle, product=s.gpu)
    return s


def ok(name: str, /, **arguments) -> dict:
    """Call a tool on the live (test) world and assert it did not refuse."""
    result = invoke_tool(name, arguments)
    assert "error" not in result, result
    return result


def refused(name: str, code: str, /, **arguments) -> dict:
    """Call a tool and assert it refused with ``code``; returns the error object."""
    result = invoke_tool(name, arguments)
    assert "error" in result, result
    assert result["error"]["code"] == code, result
    return result["error"]
