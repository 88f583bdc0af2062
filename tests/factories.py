"""factory_boy factories for every world model (and users), for small worlds in tests.

Ids carry an ``f`` after the prefix ("cus-f00001") so they never collide with a seeded world's ids.
Every factory makes a row that passes the model's ``full_clean``.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model

from world_app import models as world

NOW = datetime.fromisoformat("2025-09-15T14:00:00-05:00")

# One valid specs document per product category (world_app.specs validates them).
SPECS_BY_CATEGORY: dict[str, dict] = {
    "cpu": {
        "socket": "AM5",
        "cores": 8,
        "threads": 16,
        "base_clock_ghz": 4.2,
        "boost_clock_ghz": 5.0,
        "tdp_watts": 105,
        "memory_types": ["DDR5"],
        "integrated_graphics": True,
        "cooler_included": False,
    },
    "motherboard": {
        "socket": "AM5",
        "chipset": "B650",
        "form_factor": "ATX",
        "memory_type": "DDR5",
        "memory_slots": 4,
        "max_memory_gb": 192,
        "m2_slots": 2,
        "pcie_version": "4.0",
        "wifi": True,
    },
    "gpu": {
        "chipset": "RTX 4070",
        "vram_gb": 12,
        "length_mm": 300,
        "slots": 2.5,
        "tdp_watts": 200,
        "recommended_psu_watts": 650,
        "power_connectors": "1x 16-pin",
    },
    "memory": {"type": "DDR5", "capacity_gb": 32, "modules": 2, "speed_mts": 6000, "cas_latency": 30},
    "storage": {
        "type": "nvme",
        "capacity_gb": 2000,
        "interface": "PCIe 4.0 x4",
        "form_factor": "M.2 2280",
        "read_mbps": 7000,
    },
    "psu": {"wattage": 750, "efficiency": "80+ Gold", "modular": "full", "form_factor": "ATX"},
    "case": {
        "form_factor": "mid_tower",
        "supported_motherboards": ["ATX", "Micro-ATX", "Mini-ITX"],
        "max_gpu_length_mm": 360,
        "max_cooler_height_mm": 165,
        "radiator_support_mm": [240, 360],
        "psu_form_factor": "ATX",
        "included_fans": 3,
    },
    "cooling": {"type": "air", "sockets": ["AM5", "LGA1700"], "height_mm": 155, "tdp_rating_watts": 220},
    "prebuilt": {
        "cpu": "Ryzen 7 7700",
        "gpu": "RTX 4070",
        "memory_gb": 32,
        "storage_gb": 1000,
        "operating_system": "Windows 11 Home",
        "psu_watts": 750,
    },
    "workstation": {
        "cpu": "Threadripper 7960X",
        "gpu": "RTX 6000 Ada",
        "memory_gb": 256,
        "storage_gb": 4000,
        "operating_system": "Windows 11 Pro",
        "psu_watts": 1600,
    },
    "monitor": {
        "size_in": 27,
        "resolution": "2560x1440",
        "refresh_hz": 165,
        "panel": "IPS",
        "inputs": ["HDMI 2.1", "DP 1.4"],
    },
    "keyboard": {"connection": "wired", "color": "black", "layout": "ANSI"},
    "mouse": {"connection": "wireless", "color": "white"},
    "headset": {"connection": "wireless+bluetooth", "color": "black"},
    "networking": {"kind": "router", "standard": "Wi-Fi 6E", "max_speed_mbps": 5400},
    "cable": {"kind": "displayport", "length_m": 2.0},
    "accessory": {"kind": "thermal_paste", "compatible_with": ["cpu"]},
}


def _address(label: str = "shipping") -> dict:
    return {
        "label": label,
        "name": "Dana Reyes",
        "line1": "12 Harbor Street",
        "line2": "",
        "city": "Portland",
        "state": "OR",
        "postal_code": "97201",
        "country": "US",
    }


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.com")
    password = factory.django.Password("corecraft-test-pw")


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Customer

    id = factory.Sequence(lambda n: f"cus-f{n:05d}")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    email = factory.Sequence(lambda n: f"customer{n}@example.com")
    phone = "555-0100"
    date_of_birth = date(1990, 5, 17)
    addresses = factory.LazyFunction(lambda: [_address("shipping"), _address("billing")])
    loyalty_tier = world.LoyaltyTier.NONE
    created_at = NOW - timedelta(days=400)
    updated_at = NOW - timedelta(days=400)


class EmployeeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Employee

    id = factory.Sequence(lambda n: f"emp-f{n:05d}")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    email = factory.Sequence(lambda n: f"employee{n}@corecraft.example")
    department = world.Department.SUPPORT
    title = "Support Agent"
    permissions = factory.LazyFunction(lambda: ["view_orders", "manage_tickets"])
    support_role = world.SupportRole.AGENT
    hired_on = date(2022, 3, 1)
    created_at = NOW - timedelta(days=900)
    updated_at = NOW - timedelta(days=900)


class ProductFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Product

    id = factory.Sequence(lambda n: f"prd-f{n:05d}")
    sku = factory.Sequence(lambda n: f"SKU-F{n:05d}")
    name = factory.Sequence(lambda n: f"Corecraft Part {n}")
    brand = "Corecraft"
    category = world.ProductCategory.GPU
    price = Decimal("499.99")
    specs = factory.LazyAttribute(lambda o: dict(SPECS_BY_CATEGORY[o.category]))
    warranty_months = 24
    stock_quantity = 10
    release_date = date(2024, 1, 15)
    created_at = NOW - timedelta(days=300)
    updated_at = NOW - timedelta(days=300)


class BundleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Bundle

    id = factory.Sequence(lambda n: f"bnd-f{n:05d}")
    sku = factory.Sequence(lambda n: f"BND-F{n:05d}")
    name = factory.Sequence(lambda n: f"Starter Bundle {n}")
    price = Decimal("899.00")
    valid_from = date(2025, 1, 1)
    valid_until = date(2025, 12, 31)


class BundleItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.BundleItem

    id = factory.Sequence(lambda n: f"bni-f{n:05d}")
    bundle = factory.SubFactory(BundleFactory)
    product = factory.SubFactory(ProductFactory)
    quantity = 1


class CompatibilityRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.CompatibilityRule

    id = factory.Sequence(lambda n: f"cr-f{n:05d}")
    name = factory.Sequence(lambda n: f"CPU socket matches motherboard {n}")
    severity = world.Severity.ERROR
    category_a = world.ProductCategory.CPU
    field_a = "socket"
    operator = world.RuleOperator.EQUAL
    category_b = world.ProductCategory.MOTHERBOARD
    field_b = "socket"
    message = "{a} ({a_value}) does not fit {b} ({b_value})"


class KnowledgeBaseArticleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.KnowledgeBaseArticle

    id = factory.Sequence(lambda n: f"kb-f{n:05d}")
    slug = factory.Sequence(lambda n: f"return-policy-{n}")
    title = factory.Sequence(lambda n: f"Return policy {n}")
    kind = world.ArticleKind.POLICY
    body = "Items may be returned within 30 days of purchase in their original condition."
    tags = factory.LazyFunction(lambda: ["returns", "policy"])


class BuildFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Build

    id = factory.Sequence(lambda n: f"bld-f{n:05d}")
    customer = factory.SubFactory(CustomerFactory)
    name = factory.Sequence(lambda n: f"Gaming build {n}")
    status = world.Build.Status.SAVED


class BuildComponentFactory(factory.django.DjangoModelFactory):
    """Pass the build as ``part_of=`` (``build`` would hide factory_boy's own ``build()``)."""

    class Meta:
        model = world.BuildComponent
        rename = {"part_of": "build"}

    id = factory.Sequence(lambda n: f"bcp-f{n:05d}")
    part_of = factory.SubFactory(BuildFactory)
    product = factory.SubFactory(ProductFactory)
    quantity = 1


class OrderFactory(factory.django.DjangoModelFactory):
    """A paid order; its totals add up (subtotal - discount + shipping + tax)."""

    class Meta:
        model = world.Order

    id = factory.Sequence(lambda n: f"ord-f{n:05d}")
    customer = factory.SubFactory(CustomerFactory)
    status = world.OrderStatus.PAID
    subtotal = Decimal("499.99")
    shipping_cost = Decimal("9.99")
    tax_total = Decimal("40.00")
    total = factory.LazyAttribute(lambda o: o.subtotal - o.discount_total + o.shipping_cost + o.tax_total)
    discount_total = Decimal("0.00")
    shipping_address = factory.LazyFunction(lambda: _address("shipping"))
    carrier = world.Carrier.UPS
    shipping_service = world.ShippingService.GROUND
    estimated_delivery = date(2025, 9, 10)
    created_at = NOW - timedelta(days=10)
    updated_at = NOW - timedelta(days=10)


class OrderLineItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.OrderLineItem

    id = factory.Sequence(lambda n: f"li-f{n:05d}")
    order = factory.SubFactory(OrderFactory)
    product = factory.SubFactory(ProductFactory)
    quantity = 1
    unit_price = factory.LazyAttribute(lambda o: o.product.price)


class PaymentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Payment

    id = factory.Sequence(lambda n: f"pay-f{n:05d}")
    order = factory.SubFactory(OrderFactory)
    customer = factory.LazyAttribute(lambda o: o.order.customer)
    amount = factory.LazyAttribute(lambda o: o.order.total)
    method = world.PaymentMethod.CARD
    status = world.PaymentStatus.CAPTURED
    transaction_id = factory.Sequence(lambda n: f"txn_f{n:08d}")
    card_last4 = "4242"
    processed_at = factory.LazyAttribute(lambda o: o.order.created_at + timedelta(minutes=2))
    created_at = factory.LazyAttribute(lambda o: o.order.created_at)
    updated_at = factory.LazyAttribute(lambda o: o.order.created_at)


class ShipmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Shipment

    id = factory.Sequence(lambda n: f"shp-f{n:05d}")
    order = factory.SubFactory(OrderFactory)
    carrier = world.Carrier.UPS
    service = world.ShippingService.GROUND
    tracking_number = factory.Sequence(lambda n: f"1ZF{n:012d}")
    status = world.ShipmentStatus.IN_TRANSIT
    shipped_at = factory.LazyAttribute(lambda o: o.order.created_at + timedelta(days=1))
    estimated_delivery = date(2025, 9, 10)
    events = factory.LazyFunction(lambda: [{"at": "2025-09-06T10:00:00Z", "status": "in_transit", "where": "Reno"}])


class RefundFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Refund

    id = factory.Sequence(lambda n: f"ref-f{n:05d}")
    payment = factory.SubFactory(PaymentFactory)
    amount = Decimal("100.00")
    reason = world.RefundReason.DEFECTIVE
    status = world.RefundStatus.APPROVED


class SupportTicketFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.SupportTicket

    id = factory.Sequence(lambda n: f"tkt-f{n:05d}")
    customer = factory.SubFactory(CustomerFactory)
    ticket_type = world.TicketType.TROUBLESHOOTING
    channel = world.Channel.EMAIL
    priority = world.Priority.NORMAL
    status = world.TicketStatus.OPEN
    subject = "My new GPU does not fit in my case"
    body = "The card is longer than the case allows. What can I do?"
    created_at = NOW - timedelta(days=2)
    updated_at = NOW - timedelta(days=2)


class TicketMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.TicketMessage

    id = factory.Sequence(lambda n: f"msg-f{n:05d}")
    ticket = factory.SubFactory(SupportTicketFactory)
    author_kind = world.TicketMessage.Author.CUSTOMER
    body = "Any update on this?"
    sent_at = NOW - timedelta(days=1)


class ResolutionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Resolution

    id = factory.Sequence(lambda n: f"res-f{n:05d}")
    ticket = factory.SubFactory(
        SupportTicketFactory,
        status=world.TicketStatus.RESOLVED,
        assignee=factory.SelfAttribute("..resolved_by"),
        resolved_at=NOW - timedelta(hours=3),
    )
    outcome = world.ResolutionOutcome.TROUBLESHOOTING_STEPS
    summary = "Walked the customer through reseating the card."
    resolved_by = factory.SubFactory(EmployeeFactory)


class EscalationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = world.Escalation

    id = factory.Sequence(lambda n: f"esc-f{n:05d}")
    ticket = factory.SubFactory(SupportTicketFactory, status=world.TicketStatus.ESCALATED)
    escalation_type = world.EscalationType.TECHNICAL
    destination = world.Department.ENGINEERING
    notes = "Customer reports coil whine under load; needs a technician's opinion."


class WarrantyClaimFactory(factory.django.DjangoModelFactory):
    """A claim on one unit of an order line, by that order's customer."""

    class Meta:
        model = world.WarrantyClaim

    id = factory.Sequence(lambda n: f"wcl-f{n:05d}")
    line_item = factory.SubFactory(OrderLineItemFactory)
    product = factory.LazyAttribute(lambda o: o.line_item.product)
    customer = factory.LazyAttribute(lambda o: o.line_item.order.customer)
    quantity = 1
    issue_description = "Fans spin but there is no display output after two months of use."
    defect_category = world.DefectCategory.MANUFACTURING_DEFECT
    remedy = world.WarrantyRemedy.REPLACEMENT
    status = world.WarrantyClaimStatus.APPROVED
    decision_reason = "Manufacturing defect within the 24-month warranty."
    warranty_expires_on = date(2027, 9, 1)


def small_world() -> dict[str, object]:
    """One row of every world table, linked the way the real world links them."""
    agent = EmployeeFactory()
    customer = CustomerFactory()
    gpu = ProductFactory(category=world.ProductCategory.GPU)
    case = ProductFactory(category=world.ProductCategory.CASE, price=Decimal("119.00"))
    bundle_item = BundleItemFactory(product=gpu)
    rule = CompatibilityRuleFactory()
    article = KnowledgeBaseArticleFactory()
    component = BuildComponentFactory(part_of__customer=customer, product=case)
    order = OrderFactory(customer=customer, build=component.build)
    line_item = OrderLineItemFactory(order=order, product=gpu)
    payment = PaymentFactory(order=order)
    shipment = ShipmentFactory(order=order)
    refund = RefundFactory(payment=payment)
    ticket = SupportTicketFactory(customer=customer, order=order, assignee=agent)
    message = TicketMessageFactory(ticket=ticket)
    resolution = ResolutionFactory(ticket=ticket, resolved_by=agent)
    escalation = EscalationFactory(ticket=ticket, created_by=agent)
    claim = WarrantyClaimFactory(line_item=line_item, ticket=ticket)
    return {
        "agent": agent,
        "customer": customer,
        "gpu": gpu,
        "case": case,
        "bundle_item": bundle_item,
        "rule": rule,
        "article": article,
        "build_component": component,
        "order": order,
        "line_item": line_item,
        "payment": payment,
        "shipment": shipment,
        "refund": refund,
        "ticket": ticket,
        "message": message,
        "resolution": resolution,
        "escalation": escalation,
        "warranty_claim": claim,
    }
