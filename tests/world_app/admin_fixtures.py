"""A small, complete Corecraft world written with the plain ORM, and a form reader for admin pages.

The admin tests need every entity type with consistent references (and rows that break them on purpose);
``many_orders`` adds enough rows that an N+1 query on a changelist would show. Ids, emails and SKUs carry
"adm"/"bulk" so the rows can sit next to the shared seeded world when a session has seeded it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from html.parser import HTMLParser

from django.conf import settings

from tests.factories import SPECS_BY_CATEGORY
from world_app import models as w
from world_app.services import order_recalculate_totals

CPU_SPECS = SPECS_BY_CATEGORY["cpu"]
BOARD_SPECS = SPECS_BY_CATEGORY["motherboard"]
GPU_SPECS = SPECS_BY_CATEGORY["gpu"]
COOLER_SPECS = {"type": "air", "sockets": ["AM5", "LGA1700"], "height_mm": 158, "tdp_rating_watts": 220}


def address(label: str = "shipping", name: str = "Dana Reyes") -> dict:
    return {
        "label": label,
        "name": name,
        "line1": "12 Harbor Way",
        "line2": "",
        "city": "Portland",
        "state": "OR",
        "postal_code": "97201",
        "country": "US",
    }


def world_time(days_before_now: float) -> datetime:
    return settings.WORLD_NOW - timedelta(days=days_before_now)


@dataclass
class SmallWorld:
    gold: w.Customer
    other: w.Customer
    lead: w.Employee
    agent: w.Employee
    cpu: w.Product
    board: w.Product
    gpu: w.Product
    cooler: w.Product
    bundle: w.Bundle
    rule: w.CompatibilityRule
    article: w.KnowledgeBaseArticle
    build: w.Build
    order: w.Order
    other_order: w.Order
    payment: w.Payment
    shipment: w.Shipment
    refund: w.Refund
    ticket: w.SupportTicket
    message: w.TicketMessage
    resolution: w.Resolution
    escalation: w.Escalation
    warranty_claim: w.WarrantyClaim
    snapshot: w.WorldSnapshot
    episode: w.Episode


def product(pk: str, category: str, specs: dict, price: str, **extra) -> w.Product:
    return w.Product.objects.create(
        id=pk,
        sku=pk.upper().replace("PRD-", "SKU-"),
        name=extra.pop("name", f"{category.upper()} {pk}"),
        brand=extra.pop("brand", "Corecraft"),
        category=category,
        price=Decimal(price),
        specs=specs,
        stock_quantity=extra.pop("stock_quantity", 10),
        **extra,
    )


def order_with_lines(pk: str, customer: w.Customer, lines: list[tuple[w.Product, int, str]], **extra) -> w.Order:
    order = w.Order.objects.create(
        id=pk,
        customer=customer,
        status=extra.pop("status", w.OrderStatus.PAID),
        shipping_cost=Decimal(extra.pop("shipping_cost", "9.99")),
        total=Decimal(extra.pop("shipping_cost_total", "9.99")),
        created_at=extra.pop("created_at", world_time(20)),
        **extra,
    )
    for i, (item_product, quantity, unit_price) in enumerate(lines, start=1):
        w.OrderLineItem.objects.create(
            id=f"li-{pk[4:]}-{i}", order=order, product=item_product, quantity=quantity, unit_price=Decimal(unit_price)
        )
    return order_recalculate_totals(order=order)


def small_world() -> SmallWorld:
    """Every entity type once (twice where a cross-customer mistake needs a second row), all consistent."""
    gold = w.Customer.objects.create(
        id="cus-adm-1",
        first_name="Dana",
        last_name="Reyes",
        email="dana.reyes@admin-test.example",
        phone="503-555-0101",
        loyalty_tier=w.LoyaltyTier.GOLD,
        addresses=[address("shipping"), address("billing")],
        created_at=world_time(400),
    )
    other = w.Customer.objects.create(
        id="cus-adm-2",
        first_name="Sam",
        last_name="Okafor",
        email="sam.okafor@admin-test.example",
        loyalty_tier=w.LoyaltyTier.NONE,
        created_at=world_time(100),
    )
    lead = w.Employee.objects.create(
        id="emp-adm-1",
        first_name="Ivy",
        last_name="Chen",
        email="ivy.chen@admin-test.example",
        department=w.Department.SUPPORT,
        title="Support team lead",
        support_role=w.SupportRole.TEAM_LEAD,
        permissions=["view_orders", "issue_refunds", "approve_refunds_over_limit"],
        hired_on=date(2021, 3, 1),
    )
    agent = w.Employee.objects.create(
        id="emp-adm-2",
        first_name="Tom",
        last_name="Berg",
        email="tom.berg@admin-test.example",
        department=w.Department.SUPPORT,
        title="Support agent",
        support_role=w.SupportRole.AGENT,
        manager=lead,
        permissions=["view_orders"],
        hired_on=date(2023, 6, 1),
    )
    cpu = product("prd-adm-cpu", "cpu", CPU_SPECS, "299.00", name="Ryzen 7 7700")
    board = product("prd-adm-mb", "motherboard", BOARD_SPECS, "189.99", name="B650 Aorus")
    gpu = product("prd-adm-gpu", "gpu", GPU_SPECS, "599.00", name="GeForce RTX 4070")
    cooler = product("prd-adm-cool", "cooling", COOLER_SPECS, "49.99", name="Tower cooler 240")
    bundle = w.Bundle.objects.create(id="bnd-adm-1", sku="BND-ADM-AM5", name="AM5 starter", price=Decimal("469.00"))
    w.BundleItem.objects.create(id="bni-adm-1", bundle=bundle, product=cpu)
    w.BundleItem.objects.create(id="bni-adm-2", bundle=bundle, product=board)
    rule = w.CompatibilityRule.objects.create(
        id="cr-adm-socket",
        name="Admin test: CPU socket matches the board",
        category_a="cpu",
        field_a="socket",
        operator=w.RuleOperator.EQUAL,
        category_b="motherboard",
        field_b="socket",
        message="{a} needs socket {a_value}; {b} has {b_value}",
    )
    article = w.KnowledgeBaseArticle.objects.create(
        id="kb-adm-returns",
        slug="adm-test-return-policy",
        title="Return policy",
        kind=w.ArticleKind.POLICY,
        body="Products may be returned within 30 days of delivery.",
        tags=["returns", "policy"],
    )
    build = w.Build.objects.create(
        id="bld-adm-1", customer=gold, name="Dana's AM5 build", status=w.Build.Status.ORDERED
    )
    w.BuildComponent.objects.create(id="bcp-adm-1", build=build, product=cpu)
    w.BuildComponent.objects.create(id="bcp-adm-2", build=build, product=board)
    order = order_with_lines(
        "ord-adm-001",
        gold,
        [(cpu, 1, "299.00"), (board, 1, "189.99")],
        build=build,
        shipping_address=address(),
        carrier=w.Carrier.UPS,
        shipping_service=w.ShippingService.GROUND,
    )
    other_order = order_with_lines("ord-adm-002", other, [(gpu, 1, "599.00")])
    payment = w.Payment.objects.create(
        id="pay-adm-1",
        order=order,
        customer=gold,
        amount=order.total,
        method=w.PaymentMethod.CARD,
        status=w.PaymentStatus.CAPTURED,
        transaction_id="txn-adm-0001",
        card_last4="4242",
        processed_at=world_time(20),
    )
    w.Payment.objects.create(
        id="pay-adm-2",
        order=other_order,
        customer=other,
        amount=other_order.total,
        method=w.PaymentMethod.PAYPAL,
        status=w.PaymentStatus.CAPTURED,
        transaction_id="txn-adm-0002",
        processed_at=world_time(19),
    )
    shipment = w.Shipment.objects.create(
        id="shp-adm-1",
        order=order,
        carrier=w.Carrier.UPS,
        service=w.ShippingService.GROUND,
        tracking_number="1ZADMTEST00000001",
        status=w.ShipmentStatus.DELIVERED,
        shipped_at=world_time(19),
        delivered_at=world_time(15),
        events=[{"at": "2025-08-27T10:00:00-05:00", "status": "in_transit", "location": "Reno, NV"}],
    )
    refund = w.Refund.objects.create(
        id="ref-adm-1",
        payment=payment,
        amount=Decimal("49.00"),
        reason=w.RefundReason.PRICE_MATCH,
        status=w.RefundStatus.APPROVED,
        line_items=[{"line_item_id": "li-adm-001-1", "quantity": 1}],
    )
    ticket = w.SupportTicket.objects.create(
        id="tkt-adm-1",
        customer=gold,
        order=order,
        build=build,
        ticket_type=w.TicketType.TROUBLESHOOTING,
        channel=w.Channel.EMAIL,
        priority=w.Priority.HIGH,
        status=w.TicketStatus.OPEN,
        subject="PC does not boot after assembly",
        body="Fans spin, no display.",
        assignee=agent,
        created_at=world_time(10),
    )
    w.SupportTicket.objects.create(
        id="tkt-adm-2",
        customer=other,
        ticket_type=w.TicketType.BILLING,
        channel=w.Channel.PHONE,
        subject="Charged twice?",
        body="I see two charges.",
        created_at=world_time(3),
    )
    message = w.TicketMessage.objects.create(
        id="msg-adm-1",
        ticket=ticket,
        author_kind=w.TicketMessage.Author.CUSTOMER,
        body="Fans spin, no display.",
        sent_at=world_time(10),
    )
    w.TicketMessage.objects.create(
        id="msg-adm-2",
        ticket=ticket,
        author_kind=w.TicketMessage.Author.EMPLOYEE,
        employee=agent,
        body="Please update the BIOS.",
        sent_at=world_time(9),
    )
    resolution = w.Resolution.objects.create(
        id="res-adm-1",
        ticket=ticket,
        outcome=w.ResolutionOutcome.TROUBLESHOOTING_STEPS,
        summary="BIOS update fixed it.",
        resolved_by=agent,
    )
    escalation = w.Escalation.objects.create(
        id="esc-adm-1",
        ticket=ticket,
        escalation_type=w.EscalationType.TECHNICAL,
        destination=w.Department.ENGINEERING,
        assigned_to=lead,
        created_by=agent,
        notes="Board may need a BIOS flashback.",
    )
    warranty_claim = w.WarrantyClaim.objects.create(
        id="wcl-adm-1",
        line_item=w.OrderLineItem.objects.get(id="li-adm-001-2"),
        product=board,
        customer=gold,
        ticket=ticket,
        issue_description="No POST",
        defect_category="manufacturing_defect",
        remedy="replacement",
        status="pending_inspection",
        decision_reason="Awaiting inspection.",
    )
    # Another test's world may already hold snapshots: take the next version.
    latest = w.WorldSnapshot.objects.order_by("-version").values_list("version", flat=True).first() or 0
    snapshot = w.WorldSnapshot.objects.create(
        version=latest + 1,
        note="test world",
        image=b"not a real image",
        image_sha256="0" * 64,
        image_bytes=16,
        content_checksum="a" * 64,
        schema_fingerprint="b" * 64,
        world_now=settings.WORLD_NOW,
        entity_counts={"customer": 2, "order": 2},
    )
    episode = w.Episode.objects.create(snapshot=snapshot, label="test episode")
    w.EpisodeStep.objects.create(
        episode=episode, seq=1, name="get_order", arguments={"order_id": order.id}, result={"status": "paid"}
    )
    return SmallWorld(
        gold=gold,
        other=other,
        lead=lead,
        agent=agent,
        cpu=cpu,
        board=board,
        gpu=gpu,
        cooler=cooler,
        bundle=bundle,
        rule=rule,
        article=article,
        build=build,
        order=order,
        other_order=other_order,
        payment=payment,
        shipment=shipment,
        refund=refund,
        ticket=ticket,
        message=message,
        resolution=resolution,
        escalation=escalation,
        warranty_claim=warranty_claim,
        snapshot=snapshot,
        episode=episode,
    )


def many_orders(count: int, *, products: list[w.Product], employee: w.Employee) -> None:
    """``count`` customers, each with one order of two lines, a payment, a shipment, a ticket and a message."""
    customers = [
        w.Customer(
            id=f"cus-bulk-{i:04d}",
            first_name=f"First{i}",
            last_name=f"Last{i}",
            email=f"bulk{i}@admin-test.example",
            loyalty_tier=w.LoyaltyTier.SILVER,
        )
        for i in range(count)
    ]
    w.Customer.objects.bulk_create(customers)
    orders = [
        w.Order(
            id=f"ord-bulk-{i:04d}",
            customer=c,
            status=w.OrderStatus.PAID,
            subtotal=Decimal("100.00"),
            total=Decimal("100.00"),
            created_at=world_time(i % 60),
        )
        for i, c in enumerate(customers)
    ]
    w.Order.objects.bulk_create(orders)
    w.OrderLineItem.objects.bulk_create(
        w.OrderLineItem(
            id=f"li-bulk-{i:04d}-{j}",
            order=o,
            product=products[j % len(products)],
            quantity=1,
            unit_price=Decimal("50"),
        )
        for i, o in enumerate(orders)
        for j in range(2)
    )
    payments = [
        w.Payment(
            id=f"pay-bulk-{i:04d}",
            order=o,
            customer=o.customer,
            amount=o.total,
            method=w.PaymentMethod.CARD,
            status=w.PaymentStatus.CAPTURED,
            transaction_id=f"txn-bulk-{i:04d}",
            processed_at=world_time(i % 60),
        )
        for i, o in enumerate(orders)
    ]
    w.Payment.objects.bulk_create(payments)
    w.Shipment.objects.bulk_create(
        w.Shipment(
            id=f"shp-bulk-{i:04d}",
            order=o,
            carrier=w.Carrier.FEDEX,
            service=w.ShippingService.GROUND,
            tracking_number=f"FXBULK{i:08d}",
            status=w.ShipmentStatus.IN_TRANSIT,
            shipped_at=world_time(i % 60),
        )
        for i, o in enumerate(orders)
    )
    w.Refund.objects.bulk_create(
        w.Refund(id=f"ref-bulk-{i:04d}", payment=p, amount=Decimal("10.00"), reason=w.RefundReason.OTHER)
        for i, p in enumerate(payments)
    )
    tickets = [
        w.SupportTicket(
            id=f"tkt-bulk-{i:04d}",
            customer=o.customer,
            order=o,
            ticket_type=w.TicketType.SHIPPING,
            channel=w.Channel.CHAT,
            status=w.TicketStatus.OPEN,
            subject=f"Where is order {o.id}?",
            body="Tracking has not moved.",
            assignee=employee,
            created_at=world_time(2),
        )
        for i, o in enumerate(orders)
    ]
    w.SupportTicket.objects.bulk_create(tickets)
    w.TicketMessage.objects.bulk_create(
        w.TicketMessage(
            id=f"msg-bulk-{i:04d}",
            ticket=t,
            author_kind=w.TicketMessage.Author.EMPLOYEE,
            employee=employee,
            body="Looking into it.",
            sent_at=world_time(1),
        )
        for i, t in enumerate(tickets)
    )
    w.Resolution.objects.bulk_create(
        w.Resolution(
            id=f"res-bulk-{i:04d}", ticket=t, outcome=w.ResolutionOutcome.NO_ACTION, summary="ok", resolved_by=employee
        )
        for i, t in enumerate(tickets)
    )
    w.Escalation.objects.bulk_create(
        w.Escalation(
            id=f"esc-bulk-{i:04d}",
            ticket=t,
            escalation_type=w.EscalationType.TECHNICAL,
            destination=w.Department.ENGINEERING,
            assigned_to=employee,
            created_by=employee,
            notes="n",
        )
        for i, t in enumerate(tickets)
    )


class _FormReader(HTMLParser):
    """Collects what a browser would submit from one <form>: inputs, textareas and selected options."""

    def __init__(self, form_id: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.in_form = False
        self.data: list[tuple[str, str]] = []
        self._textarea: str | None = None
        self._text: list[str] = []
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and (self.form_id is None or a.get("id") == self.form_id):
            self.in_form = True
        if not self.in_form:
            return
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in {"submit", "button", "image", "reset", "file"}:
                return
            if kind in {"checkbox", "radio"} and "checked" not in a:
                return
            self.data.append((a["name"], a.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "textarea" and a.get("name"):
            self._textarea, self._text = a["name"], []
        elif tag == "select" and a.get("name"):
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self.data.append((self._select, a.get("value", "")))

    def handle_endtag(self, tag):
        if tag == "form":
            self.in_form = False
        elif tag == "textarea" and self._textarea:
            # Browsers drop the one newline that follows <textarea>.
            text = "".join(self._text)
            self.data.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data):
        if self._textarea is not None:
            self._text.append(data)


def form_data(html: str, form_id: str | None = None) -> dict[str, str | list[str]]:
    """The POST data a browser would send from the page's form, unchanged."""
    reader = _FormReader(form_id)
    reader.feed(html)
    data: dict[str, str | list[str]] = {}
    for name, value in reader.data:
        if name in data:
            existing = data[name]
            data[name] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            data[name] = value
    return data
