"""The arguments bench/tools.py calls each tool with: for every tool, a cycle of valid arguments drawn from the seeded
world (orders, customers, tickets, lines under warranty, builds), so each timed call does the tool's real work;
status writes move a row to the other of two states and back, so any call order stays valid. The calls run inside
one episode, never on the live world.

Imported by bench/tools.py once Django is set up.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.db.models import Exists, OuterRef

from world_app import clock
from world_app.models import (
    Build,
    BuildComponent,
    Customer,
    Employee,
    Escalation,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Shipment,
    SupportTicket,
)
from world_app.tool_examples import example_arguments
from world_app.tools.coverage import warranty_coverage

ArgumentsFor = Callable[[int], dict]


# --- arguments: reads rotate over real ids, writes are chosen to succeed ---------------------------------------


def _cycle(values: list, fallback) -> Callable[[int], object]:
    values = values or [fallback]
    return lambda i: values[i % len(values)]


def _units_under_warranty(limit: int) -> list[tuple[str, str]]:
    """(order id, line id) per unit of delivered lines still under warranty, on orders with money taken and no
    refund yet (a refunded unit can be neither refunded nor claimed again)."""
    taken = Payment.objects.filter(order_id=OuterRef("order_id"), status__in=("captured", "completed"))
    refunded = Refund.objects.filter(payment__order_id=OuterRef("order_id"))
    delivered = dict(
        Shipment.objects.filter(status="delivered", delivered_at__isnull=False)
        .order_by("order_id", "delivered_at")
        .values_list("order_id", "delivered_at")
    )
    lines = (
        OrderLineItem.objects.filter(order__status="fulfilled", order_id__in=list(delivered))
        .filter(Exists(taken))
        .exclude(Exists(refunded))
        .select_related("product")
        .order_by("-order__created_at", "id")
    )
    units: list[tuple[str, str]] = []
    for line in lines.iterator():
        if warranty_coverage(delivered[line.order_id], line.product.warranty_months).is_active:
            units.extend((line.order_id, line.id) for _ in range(line.quantity))
            if len(units) >= limit:
                break
    return units


def _toggle(pool: list[tuple[str, str]], states: tuple[str, str]) -> Callable[[int], tuple[str, str]]:
    """Call ``i`` moves row ``i % len(pool)`` (``(id, current state)``) to the other of two states, and back on
    the next round: stateless, so any call order stays valid."""

    def step(i: int) -> tuple[str, str]:
        row, current = pool[i % len(pool)]
        other = states[1] if current == states[0] else states[0]
        return row, other if (i // len(pool)) % 2 == 0 else current

    return step


def bench_arguments(samples: int) -> dict[str, ArgumentsFor]:
    """Arguments for every tool for ``samples`` calls in one episode (call inside ``episode_world``)."""
    examples = example_arguments()
    now = clock.world_now()
    orders = list(
        Order.objects.filter(status="fulfilled", created_at__gte=now - timedelta(days=120))
        .order_by("-created_at")
        .values_list("id", flat=True)[:200]
    )
    customers = list(
        SupportTicket.objects.order_by("-created_at").values_list("customer_id", flat=True).distinct()[:200]
    )
    last_names = list(Customer.objects.filter(pk__in=customers).values_list("last_name", flat=True))
    products = list(Product.objects.filter(lifecycle="active").order_by("id").values_list("id", flat=True)[:200])
    lines = list(OrderLineItem.objects.filter(order_id__in=orders).order_by("id").values_list("id", flat=True))
    with_parts = BuildComponent.objects.filter(build_id=OuterRef("pk"))
    builds = list(Build.objects.filter(Exists(with_parts)).order_by("id").values_list("id", "customer_id")[:200])
    editable = list(
        Build.objects.filter(Exists(with_parts), status__in=("draft", "saved"))
        .order_by("id")
        .values_list("id", flat=True)[:50]
    )
    open_tickets = list(
        SupportTicket.objects.filter(status="open", assignee__is_active=True)
        .order_by("id")
        .values_list("id", "assignee_id")[: max(samples, 50)]
    )
    agent = Employee.objects.filter(is_active=True, support_role="agent").order_by("id").values_list("id", flat=True)
    agent_id = agent.first()
    engineer = (
        Employee.objects.filter(is_active=True, department="engineering").order_by("id").values_list("id", flat=True)
    )
    # Escalating moves a ticket to escalated: keep those tickets apart from the ones whose status is toggled.
    escalations = _escalation_pool(samples, agent_id, engineer.first(), avoid={t for t, _ in open_tickets})
    toggled_orders = list(
        Order.objects.filter(status__in=("paid", "backorder"))
        .filter(Exists(Payment.objects.filter(order_id=OuterRef("pk"), status__in=("captured", "completed"))))
        .order_by("id")
        .values_list("id", "status")[:20]
    )
    units = _units_under_warranty(2 * samples + 10)
    refund_units, claim_units = units[0::2], units[1::2]
    categories = ["gpu", "cpu", "motherboard", "memory", "storage", "psu", "case", "cooling", "monitor"]
    kb_queries = ["return window", "warranty", "refund", "shipping", "gpu", "compatibility", "bios", "loyalty"]

    order = _cycle(orders, examples["get_order_details"]["order_id"])
    customer = _cycle(customers, examples["search_tickets"]["customer_id"])
    product = _cycle(products, examples["get_product"]["product_id"])
    build = _cycle(builds, (examples["validate_build_compatibility"]["build_id"], customer(0)))
    order_step = _toggle(toggled_orders or [(orders[0], "paid")], ("backorder", "paid"))
    ticket_step = _toggle(
        [(t, "open") for t, _ in open_tickets] or [("tkt-00001", "open")], ("pending_customer", "open")
    )
    resolver = _cycle(open_tickets, ("tkt-00001", agent_id))
    refund_unit = _cycle(refund_units, ("ord-00001", "li-00001"))
    claim_unit = _cycle(claim_units, ("ord-00001", "li-00001"))
    parts = examples["create_build"]["parts"]

    def priced(i: int) -> dict:
        return {
            **examples["calculate_price"],
            "items": [{"product_id": product(i)}, {"product_id": product(i + 7), "quantity": 2}],
        }

    return {
        "search_customers": lambda i: {"query": _cycle(last_names, "Smith")(i)},
        "search_orders": lambda i: {"customer_id": customer(i)},
        "search_products": lambda i: {
            "category": categories[i % len(categories)],
            "in_stock": True,
            "sort": "price_desc",
        },
        "search_tickets": lambda i: {"customer_id": customer(i)},
        "search_shipments": lambda i: {"order_id": order(i)},
        "search_payments": lambda i: {"order_id": order(i)},
        "search_employees": lambda i: {"department": ("support", "engineering", "finance")[i % 3], "is_active": True},
        "search_knowledge_base": lambda i: {"query": kb_queries[i % len(kb_queries)]},
        "search_builds": lambda i: {"customer_id": build(i)[1]},
        "get_order_details": lambda i: {"order_id": order(i)},
        "get_product": lambda i: {"product_id": product(i)},
        "get_customer_ticket_history": lambda i: {"customer_id": customer(i)},
        "check_warranty_status": lambda i: {"line_item_id": _cycle(lines, "li-00001")(i)},
        "calculate_price": priced,
        "validate_build_compatibility": lambda i: {"build_id": build(i)[0]},
        "create_refund": lambda i: {
            "order_id": refund_unit(i)[0],
            "reason": "defective",
            "lines": [{"line_item_id": refund_unit(i)[1], "quantity": 1}],
            "opened": True,
            "notes": "Dead on arrival.",
        },
        "update_order_status": lambda i: dict(
            zip(("order_id", "status"), order_step(i), strict=True), reason="stock check"
        ),
        "create_resolution": lambda i: {
            "ticket_id": resolver(i)[0],
            "outcome": "troubleshooting_steps",
            "summary": "Reseated the card and updated the driver; the fault is gone.",
            "resolved_by": resolver(i)[1],
        },
        "create_escalation": lambda i: escalations[i % len(escalations)],
        "create_warranty_claim": lambda i: {
            "line_item_id": claim_unit(i)[1],
            "issue_description": "Stopped powering on after normal use.",
            "defect_category": ("manufacturing_defect", "unknown")[i % 2],
            "remedy": "replacement",
        },
        "update_ticket_status": lambda i: dict(zip(("ticket_id", "status"), ticket_step(i), strict=True)),
        "create_build": lambda i: {"customer_id": customer(i), "name": f"Bench build {i}", "parts": parts},
        "update_build": lambda i: {"build_id": _cycle(editable, "bld-00001")(i), "name": f"Revised build {i}"},
    }


def _escalation_pool(samples: int, agent_id: str | None, engineer_id: str | None, *, avoid: set[str]) -> list[dict]:
    pool = []
    kinds = {"technical": engineer_id, "product_specialist": None, "policy_exception": None}
    tickets = (
        SupportTicket.objects.filter(status__in=("new", "open", "pending_customer"))
        .exclude(pk__in=avoid)
        .order_by("id")
        .values_list("id", flat=True)[: samples + 10]
    )
    for ticket_id in tickets:
        taken = set(Escalation.objects.filter(ticket_id=ticket_id).values_list("escalation_type", flat=True))
        for kind, assigned_to in kinds.items():
            if kind in taken:
                continue
            entry = {
                "ticket_id": ticket_id,
                "escalation_type": kind,
                "notes": "Customer still sees the fault after every documented fix; please take over.",
                "created_by": agent_id,
            }
            if assigned_to:
                entry["assigned_to"] = assigned_to
            pool.append(entry)
    return pool or [{"ticket_id": "tkt-00001", "escalation_type": "technical", "notes": "x" * 30}]
