"""How much like a real store the world is: the figures ``manage.py world_stats --json`` reports under
``realism`` (issue 12), measured on whatever world the router points at, honestly, whatever they come to.

- ``ticket_text_distinct_ratio``: distinct texts over all ticket texts (ticket bodies and messages).
- ``customers_with_orders_share``: customers with at least one order.
- ``split_shipments``: orders with more than one shipment; ``disputed_payments``, ``failed_payments``.
- ``duplicate_accounts``: customers sharing a last name and a phone number or first street address with an
  earlier account.
- ``search_shapes``: 20 common searches fixed here, each run through its tool at the maximum page size; the
  share whose answer needs a second page (``has_more``).
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count

from world_app import clock
from world_app.models import (
    Customer,
    Order,
    OrderLineItem,
    Payment,
    Shipment,
    SupportTicket,
    TicketMessage,
)
from world_app.tools.params import MAX_LIMIT
from world_app.tools.registry import invoke_tool


def _busiest(queryset, field: str) -> str | None:
    row = queryset.values(field).annotate(n=Count("id")).order_by("-n", field).first()
    return row[field] if row else None


def search_shapes() -> list[tuple[str, str, dict]]:
    """The 20 common searches: (name, tool, arguments without paging). Entity-scoped shapes use the busiest
    entity of their kind (a busy customer's orders is the case where paging matters to a support agent)."""
    now = clock.world_now()
    year_ago, quarter_ago, month_ago = (now - timedelta(days=d) for d in (365, 90, 30))
    customer = _busiest(Order.objects, "customer_id")
    product = _busiest(OrderLineItem.objects, "product_id")
    ticket_type = _busiest(SupportTicket.objects.filter(status__in=("new", "open")), "ticket_type")
    last_name = _busiest(Customer.objects, "last_name")
    iso = lambda moment: moment.isoformat()  # noqa: E731
    return [
        ("orders placed in the last year", "search_orders", {"created_after": iso(year_ago)}),
        ("fulfilled orders", "search_orders", {"status": "fulfilled"}),
        ("a customer's orders over a year", "search_orders", {"customer_id": customer, "created_after": iso(year_ago)}),
        ("a product's buyers", "search_orders", {"product_id": product}),
        ("orders over $1,000", "search_orders", {"min_total": "1000.00"}),
        ("open tickets", "search_tickets", {"status": "open"}),
        ("open tickets of a type", "search_tickets", {"status": "open", "ticket_type": ticket_type}),
        ("tickets of the last 30 days", "search_tickets", {"created_after": iso(month_ago)}),
        ("unassigned tickets", "search_tickets", {"unassigned": True}),
        ("a customer's tickets", "search_tickets", {"customer_id": customer}),
        ("gold customers", "search_customers", {"loyalty_tier": "gold"}),
        ("customers who joined in the last year", "search_customers", {"created_after": iso(year_ago)}),
        ("customers by a common last name", "search_customers", {"query": last_name}),
        ("graphics cards", "search_products", {"category": "gpu"}),
        ("products in stock", "search_products", {"in_stock": True}),
        ("shipments delivered in the last 90 days", "search_shipments", {"delivered_after": iso(quarter_ago)}),
        ("UPS shipments", "search_shipments", {"carrier": "ups"}),
        ("card payments of the last 90 days", "search_payments", {"method": "card", "created_after": iso(quarter_ago)}),
        ("a customer's payments", "search_payments", {"customer_id": customer}),
        ("support staff", "search_employees", {"department": "support"}),
    ]


def search_shape_paging() -> dict:
    rows = []
    for name, tool, arguments in search_shapes():
        result = invoke_tool(tool, {**arguments, "limit": MAX_LIMIT})
        error = result.get("error")
        rows.append(
            {
                "name": name,
                "tool": tool,
                "arguments": arguments,
                "total": None if error else result["total"],
                "needs_second_page": False if error else bool(result["has_more"]),
                **({"error": error["message"]} if error else {}),
            }
        )
    paged = sum(1 for row in rows if row["needs_second_page"])
    return {
        "max_page_size": MAX_LIMIT,
        "shapes": rows,
        "needing_second_page": paged,
        "share_needing_second_page": round(paged / len(rows), 3),
    }


def world_realism() -> dict:
    texts = list(SupportTicket.objects.values_list("body", flat=True)) + list(
        TicketMessage.objects.values_list("body", flat=True)
    )
    customers = Customer.objects.count()
    with_orders = Order.objects.values("customer_id").distinct().count()
    split = Shipment.objects.values("order_id").annotate(n=Count("id")).filter(n__gt=1).count()
    seen: set = set()
    duplicates = 0
    for phone, last_name, addresses in Customer.objects.order_by("created_at", "id").values_list(
        "phone", "last_name", "addresses"
    ):
        street = (addresses or [{}])[0].get("line1", "") if addresses else ""
        keys = {("phone", phone, last_name.lower())} if phone else set()
        if street:
            keys.add(("street", street.lower(), last_name.lower()))
        duplicates += 1 if keys & seen else 0
        seen |= keys
    return {
        "ticket_texts": len(texts),
        "ticket_text_distinct_ratio": round(len(set(texts)) / len(texts), 3) if texts else None,
        "customers_with_orders_share": round(with_orders / customers, 3) if customers else None,
        "split_shipments": split,
        "disputed_payments": Payment.objects.filter(status="disputed").count(),
        "failed_payments": Payment.objects.filter(status="failed").count(),
        "duplicate_accounts": duplicates,
        "search_paging": search_shape_paging(),
    }
