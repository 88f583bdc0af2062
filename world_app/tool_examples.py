"""A real example call of every tool, on the latest snapshot, for the tools page (and realistic bench arguments).

The arguments are chosen from the snapshot's own world (an order delivered last week, a ticket that is open, a
build that can still change...), each call runs in a throwaway episode, and the results are cached per snapshot:
the same snapshot and the same tools always give the same answers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Exists, OuterRef

from corecraft_site.canonical import sorted_json_sha256
from world_app import clock
from world_app.episodes import episode_create, episode_world
from world_app.episodes.cache import episode_cache
from world_app.models import (
    Build,
    BuildComponent,
    Customer,
    Employee,
    Episode,
    Escalation,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Shipment,
    SupportTicket,
    WorldSnapshot,
)
from world_app.store_rules import REFUND_APPROVAL_LIMIT, RETURN_WINDOW_DAYS
from world_app.tools import all_tools, call_tool, tool_schemas
from world_app.tools.coverage import warranty_coverage

CACHE_TIMEOUT_S = 7 * 24 * 3600
EPISODE_LABEL = "tools page examples"


@dataclass(frozen=True)
class ToolExample:
    tool: str
    arguments: dict
    result: dict
    is_error: bool


# --- choosing arguments from the world (run inside the snapshot's episode world) ---------------------------------


def _delivered_lines(*, since_days: int | None = None, before_days: int | None = None):
    """Lines of fulfilled orders with a delivered shipment and money taken, newest order first."""
    now = clock.world_now()
    shipments = Shipment.objects.filter(status="delivered", order__status="fulfilled", delivered_at__isnull=False)
    if since_days is not None:
        shipments = shipments.filter(delivered_at__gte=now - timedelta(days=since_days))
    if before_days is not None:
        shipments = shipments.filter(delivered_at__lt=now - timedelta(days=before_days))
    captured = Payment.objects.filter(order_id=OuterRef("order_id"), status__in=("captured", "completed"))
    return (
        OrderLineItem.objects.filter(order_id__in=shipments.values("order_id"))
        .filter(Exists(captured))
        .select_related("order", "product")
        .order_by("-order__created_at", "id")
    )


def _refundable_line() -> OrderLineItem | None:
    """A line delivered within the return window, cheap enough to be refunded without approval."""
    lines = _delivered_lines(since_days=RETURN_WINDOW_DAYS - 5)
    return lines.filter(product__price__lte=REFUND_APPROVAL_LIMIT).first()


def _warranty_line() -> OrderLineItem | None:
    """A line past its return window but still under warranty: the case for a warranty claim."""
    for line in _delivered_lines(before_days=RETURN_WINDOW_DAYS + 1)[:200]:
        delivered = (
            Shipment.objects.filter(order_id=line.order_id, status="delivered")
            .order_by("-delivered_at")
            .values_list("delivered_at", flat=True)
            .first()
        )
        if warranty_coverage(delivered, line.product.warranty_months).is_active:
            return line
    return None


def _open_ticket(**filters: Any) -> SupportTicket | None:
    return (
        SupportTicket.objects.filter(status__in=("open", "pending_customer"), assignee__is_active=True, **filters)
        .select_related("customer")
        .order_by("id")
        .first()
    )


def _escalatable_ticket() -> SupportTicket | None:
    technical = Escalation.objects.filter(ticket_id=OuterRef("pk"), escalation_type="technical")
    return (
        SupportTicket.objects.filter(status__in=("new", "open", "pending_customer"), ticket_type="troubleshooting")
        .exclude(Exists(technical))
        .order_by("id")
        .first()
    )


def _editable_build() -> Build | None:
    with_parts = BuildComponent.objects.filter(build_id=OuterRef("pk"))
    return Build.objects.filter(status__in=("draft", "saved")).filter(Exists(with_parts)).order_by("id").first()


def _cancellable_order() -> Order | None:
    shipped = Shipment.objects.filter(order_id=OuterRef("pk"))
    return Order.objects.filter(status="pending").exclude(Exists(shipped)).order_by("id").first()


def _in_stock(category: str) -> Product | None:
    return Product.objects.filter(category=category, lifecycle="active", stock_quantity__gt=0).order_by("id").first()


def _employee(**filters: Any) -> Employee | None:
    return Employee.objects.filter(is_active=True, **filters).order_by("id").first()


def _id(row: Any, fallback: str) -> str:
    """The row's id; a missing row (a world without one) makes the example show the tool's not-found answer."""
    return row.pk if row is not None else fallback


def example_arguments() -> dict[str, dict]:
    """Arguments for every tool, chosen from the world the router points at (call inside ``episode_world``)."""
    line = _refundable_line()
    order_id = _id(line and line.order, "ord-00001")
    ticket = _open_ticket()
    customer_id = _id(ticket and ticket.customer, "cus-00001")
    last_name = ticket.customer.last_name if ticket else "Smith"
    warranty_line = _warranty_line()
    build = _editable_build()
    escalating = _escalatable_ticket()
    new_ticket = SupportTicket.objects.filter(status="new").order_by("id").first()
    cancellable = _cancellable_order()
    cpu, gpu = _in_stock("cpu"), _in_stock("gpu")
    gold = Customer.objects.filter(loyalty_tier="gold").order_by("id").first()
    agent = _employee(support_role="agent")
    engineer = _employee(department="engineering")
    parts = (
        [{"product_id": c.product_id, "quantity": c.quantity} for c in build.components.order_by("id")[:6]]
        if build
        else [{"product_id": _id(cpu, "prd-0001"), "quantity": 1}]
    )
    return {
        "search_customers": {"query": last_name, "limit": 3},
        "search_orders": {"customer_id": _id(line and line.order.customer, customer_id), "limit": 3},
        "search_products": {"category": "gpu", "in_stock": True, "max_price": 600, "sort": "price_desc", "limit": 3},
        "search_tickets": {"customer_id": customer_id, "limit": 3},
        "search_shipments": {"order_id": order_id},
        "search_payments": {"order_id": order_id},
        "search_employees": {"department": "engineering", "is_active": True, "limit": 3},
        "search_knowledge_base": {"query": "return", "kind": "policy", "limit": 3},
        "search_builds": {"customer_id": _id(build and build.customer, customer_id), "limit": 2},
        "get_order_details": {"order_id": order_id},
        "get_product": {"product_id": _id(line and line.product, "prd-0001")},
        "get_customer_ticket_history": {"customer_id": customer_id, "limit": 2},
        "check_warranty_status": {"line_item_id": _id(warranty_line or line, "li-00001")},
        "calculate_price": {
            "mode": "quote",
            "items": [{"product_id": _id(cpu, "prd-0001"), "quantity": 1}, {"product_id": _id(gpu, "prd-0002")}],
            "customer_id": _id(gold, customer_id),
            "coupon_codes": ["SAVE25"],
            "shipping_service": "two_day",
        },
        "validate_build_compatibility": {"build_id": _id(build, "bld-00001")},
        "create_refund": {
            "order_id": order_id,
            "reason": "defective",
            "lines": [{"line_item_id": _id(line, "li-00001"), "quantity": 1}],
            "opened": True,
            "notes": "Customer reports the part was dead on arrival.",
        },
        "update_order_status": {
            "order_id": _id(cancellable, "ord-00001"),
            "status": "cancelled",
            "reason": "Customer asked to cancel before it shipped.",
        },
        "create_resolution": {
            "ticket_id": _id(ticket, "tkt-00001"),
            "outcome": "troubleshooting_steps",
            "summary": "Walked the customer through reseating the part and updating firmware; the fault is gone.",
            "resolved_by": ticket.assignee_id if ticket else _id(agent, "emp-0001"),
        },
        "create_escalation": {
            "ticket_id": _id(escalating, "tkt-00001"),
            "escalation_type": "technical",
            "notes": "Fault persists after a clean OS install and a BIOS update; please diagnose the hardware.",
            "created_by": (escalating and escalating.assignee_id) or _id(agent, "emp-0001"),
            "assigned_to": _id(engineer, "emp-0001"),
        },
        "create_warranty_claim": {
            "line_item_id": _id(warranty_line, "li-00001"),
            "issue_description": "The unit stopped powering on after normal use; no physical damage.",
            "defect_category": "manufacturing_defect",
            "remedy": "replacement",
        },
        "update_ticket_status": {
            "ticket_id": _id(new_ticket, "tkt-00001"),
            "status": "open",
            "assignee_id": _id(agent, "emp-0001"),
        },
        "create_build": {
            "customer_id": customer_id,
            "name": "Quiet 1440p gaming build",
            "parts": parts,
            "notes": "Customer wants it quiet; prefers air cooling.",
        },
        "update_build": {
            "build_id": _id(build, "bld-00001"),
            "name": f"{build.name} (revised)" if build else "Revised build",
            "status": "saved",
        },
        "ask_user": {"message": "Sorry to hear that! Which order is it? Could you give me the order number?"},
    }


def example_simulated_user(order_id: str) -> dict:
    """Who answers the conversation tool's example: a customer who gives the order number when asked."""
    return {"facts": [{"key": "order_number", "topics": ["order number", "which order"], "reply": f"It's {order_id}."}]}


# --- running them -------------------------------------------------------------------------------------------------


def _cache_key(snapshot: WorldSnapshot) -> str:
    # Tool descriptions or parameters changing means the examples may too.
    tools = sorted_json_sha256(tool_schemas("registry"))[:16]
    return f"tool-examples:snapshot-{snapshot.pk}-{snapshot.content_checksum[:16]}:tools-{tools}"


def tool_examples_run(*, snapshot: WorldSnapshot) -> dict[str, ToolExample]:
    """Run every tool's example in throwaway episodes on ``snapshot`` (reads share one; each write gets its own)."""
    readers = episode_create(snapshot=snapshot, label=EPISODE_LABEL)
    used = [readers.pk]
    try:
        with episode_world(readers):
            arguments = example_arguments()
        examples = {}
        for found in all_tools():
            episode = readers
            if found.group == "write":
                episode = episode_create(snapshot=snapshot, label=EPISODE_LABEL)
                used.append(episode.pk)
            elif found.group == "conversation":  # answered by the episode's simulated user: one who knows the order
                order_id = arguments.get("get_order_details", {}).get("order_id", "ord-00001")
                episode = episode_create(
                    snapshot=snapshot, label=EPISODE_LABEL, simulated_user=example_simulated_user(order_id)
                )
                used.append(episode.pk)
            args = arguments.get(found.name, {})
            result = call_tool(episode, found.name, args)
            examples[found.name] = ToolExample(found.name, args, result, isinstance(result, dict) and "error" in result)
        return examples
    finally:
        Episode.objects.filter(pk__in=used).delete()
        for episode_id in used:
            episode_cache.discard(episode_id)


def tool_examples_get(*, snapshot: WorldSnapshot) -> dict[str, ToolExample]:
    """The examples on ``snapshot``, from the cache when they were run before."""
    key = _cache_key(snapshot)
    cached = cache.get(key)
    if cached is not None:
        return {name: ToolExample(**example) for name, example in cached.items()}
    examples = tool_examples_run(snapshot=snapshot)
    cache.set(key, {name: asdict(example) for name, example in examples.items()}, CACHE_TIMEOUT_S)
    return examples
