"""How much like a real store the world is: the figures ``manage.py world_stats --json`` reports under
``realism``, measured on whatever world the router points at, honestly, whatever they come to.

- ``ticket_text_distinct_ratio``: distinct texts over all ticket texts (ticket bodies and messages).
- ``customers_with_orders_share``: customers with at least one order.
- ``split_shipments``: orders with more than one shipment; ``partial_shipments``: orders shipped in parcels that
  name their lines, some units not shipped yet; ``lost_parcels``: exception shipments whose last scan says lost;
  ``disputed_payments``, ``failed_payments``, ``unpaid_orders`` (pending or cancelled with no payment through).
- ``employees_on_leave`` today and the open tickets still assigned to them; ``discontinued_products``.
- ``loyalty_tiers``: accounts whose tier the spend rule explains, those with a recorded exception, and any
  unexplained (a contradiction ``world_rules --check`` also reports); ``retiered_at_review``: accounts the
  relaunch review moved (they are among those following the spend).
- ``minority_branches``: delivered orders inside and outside the return window, in and out of warranty, counted
  as the return and warranty families choose cases (similar numbers, so both branches are trained).
- ``duplicate_accounts``: customers sharing a last name and a phone number or first street address with an
  earlier account.
- ``search_shapes``: 20 common searches fixed here, each run through its tool at the maximum page size; the
  share whose answer needs a second page (``has_more``).
- ``subject_paging``: the same per subject: customers whose orders of the last year, products whose buyers and
  ticket types whose open tickets run past one page, and how many of the trade accounts (the heavy accounts) do.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal

from django.db.models import Count

from world_app import clock
from world_app.loyalty import has_loyalty_exception, loyalty_spend, tier_before_review, tier_for_spend
from world_app.models import (
    Customer,
    Employee,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Shipment,
    SupportTicket,
    TicketMessage,
    WarrantyClaim,
)
from world_app.tools.coverage import return_window, warranty_coverage
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


# The casebook's trade accounts (world_app/generator/casebook/) say so in their notes; the base world's small
# business accounts carry the first part only.
BUSINESS_ACCOUNT_NOTE = "Business account:"
TRADE_ACCOUNT_NOTE = "Orders most weeks"


def subject_paging() -> dict:
    """Per subject rather than store-wide: how many customers' orders of the last year, products' buyers and ticket
    types' open tickets run past one page at the maximum page size, and whether every trade account's year of orders
    does (the store's heavy accounts, the ones a support agent pages through)."""
    year_ago = clock.world_now() - timedelta(days=365)
    per_customer = dict(
        Order.objects.filter(created_at__gte=year_ago)
        .values("customer_id")
        .annotate(n=Count("id"))
        .values_list("customer_id", "n")
    )
    trade = list(
        Customer.objects.filter(notes__startswith=BUSINESS_ACCOUNT_NOTE, notes__contains=TRADE_ACCOUNT_NOTE)
        .order_by("id")
        .values_list("id", flat=True)
    )
    buyers = OrderLineItem.objects.values("product_id").annotate(n=Count("order_id", distinct=True))
    open_by_type = (
        SupportTicket.objects.filter(status__in=("new", "open", "pending_customer", "escalated"))
        .values("ticket_type")
        .annotate(n=Count("id"))
    )
    return {
        "max_page_size": MAX_LIMIT,
        "customers_whose_year_of_orders_pages": sum(1 for n in per_customer.values() if n > MAX_LIMIT),
        "trade_accounts": len(trade),
        "trade_accounts_whose_year_of_orders_pages": sum(1 for cid in trade if per_customer.get(cid, 0) > MAX_LIMIT),
        "products_whose_buyers_page": sum(1 for row in buyers if row["n"] > MAX_LIMIT),
        "ticket_types_whose_open_tickets_page": sorted(
            row["ticket_type"] for row in open_by_type if row["n"] > MAX_LIMIT
        ),
    }


def _partial_shipments() -> int:
    """Orders that shipped in parcels naming their lines, some of whose units have not left yet."""
    shipped: dict[str, Counter] = {}
    for order_id, items, left in Shipment.objects.exclude(line_items=[]).values_list(
        "order_id", "line_items", "shipped_at"
    ):
        units = shipped.setdefault(order_id, Counter())
        if left is not None:
            for item in items:
                units[item["line_item_id"]] += item["quantity"]
    ordered: dict[str, Counter] = {}
    for order_id, line_id, quantity in OrderLineItem.objects.filter(order_id__in=list(shipped)).values_list(
        "order_id", "id", "quantity"
    ):
        ordered.setdefault(order_id, Counter())[line_id] = quantity
    return sum(1 for order_id, units in shipped.items() if units and units != ordered.get(order_id))


def _latest_event_detail(events: list) -> str:
    return (events[-1].get("detail") or "") if events else ""


def minority_branches() -> dict:
    """How many delivered orders fall on each side of the return window and of the warranty, counted the way the
    return and warranty task families choose their cases: the return side over fulfilled orders with a settled
    payment and no refund (their biggest line), the warranty side over fulfilled or partly refunded orders (their
    most expensive single unit with a warranty and no claim yet)."""
    today = clock.world_now().astimezone(clock.world_zone()).date()
    returns, warranty = Counter(), Counter()
    # Plain value queries, joined here: the prefetching ORM walk took seconds per thousand orders.
    statuses = dict(Order.objects.filter(status__in=("fulfilled", "partially_refunded")).values_list("id", "status"))
    delivered: dict[str, object] = {}
    for order_id, moment in Shipment.objects.filter(
        status="delivered", delivered_at__isnull=False, order_id__in=statuses
    ).values_list("order_id", "delivered_at"):
        delivered[order_id] = max(moment, delivered.get(order_id, moment))
    settled = set(
        Payment.objects.filter(status__in=("captured", "completed"), order_id__in=statuses).values_list(
            "order_id", flat=True
        )
    )
    refunded = set(Refund.objects.filter(payment__order_id__in=statuses).values_list("payment__order_id", flat=True))
    claimed = set(WarrantyClaim.objects.values_list("line_item_id", flat=True))
    lines: dict[str, list] = {}
    for row in OrderLineItem.objects.filter(order_id__in=delivered).values_list(
        "order_id", "id", "quantity", "unit_price", "product__warranty_months"
    ):
        lines.setdefault(row[0], []).append(row)
    for order_id, moment in delivered.items():
        mine = lines.get(order_id, [])
        if statuses[order_id] == "fulfilled" and order_id in settled and mine and order_id not in refunded:
            returns["in_window" if return_window(moment, today=today).is_open else "out_of_window"] += 1
        claimable = [row for row in mine if row[4] > 0 and row[2] == 1 and row[1] not in claimed]
        if claimable:
            _, _, _, _, months = max(claimable, key=lambda row: (row[3], row[1]))
            status = warranty_coverage(moment, months, today=today).status
            warranty["in_warranty" if status == "active" else "out_of_warranty"] += 1
    return {
        "returns": {"in_window": returns["in_window"], "out_of_window": returns["out_of_window"]},
        "warranty": {"in_warranty": warranty["in_warranty"], "out_of_warranty": warranty["out_of_warranty"]},
    }


def loyalty_tiers() -> dict:
    """Accounts whose tier the spend rule (world_app.loyalty) explains, and those that record an exception."""
    today = clock.world_now().astimezone(clock.world_zone()).date()
    spend = loyalty_spend(today=today)
    follows = excepted = unexplained = retiered = 0
    for customer in Customer.objects.only("id", "loyalty_tier", "notes").iterator(chunk_size=2000):
        retiered += tier_before_review(customer) is not None
        if tier_for_spend(spend.get(customer.id, Decimal(0))) == customer.loyalty_tier:
            follows += 1
        elif has_loyalty_exception(customer):
            excepted += 1
        else:
            unexplained += 1
    # retiered_at_review: accounts the relaunch review moved to the tier their spend earns (among follow_spend).
    return {
        "follow_spend": follows,
        "recorded_exception": excepted,
        "unexplained": unexplained,
        "retiered_at_review": retiered,
    }


def world_realism() -> dict:
    texts = list(SupportTicket.objects.values_list("body", flat=True)) + list(
        TicketMessage.objects.values_list("body", flat=True)
    )
    customers = Customer.objects.count()
    with_orders = Order.objects.values("customer_id").distinct().count()
    split = Shipment.objects.values("order_id").annotate(n=Count("id")).filter(n__gt=1).count()
    partial = _partial_shipments()
    lost = Shipment.objects.filter(status="exception").values_list("events", flat=True)
    today = clock.world_now().astimezone(clock.world_zone()).date()
    away = [e.id for e in Employee.objects.filter(leave_starts_on__isnull=False) if e.on_leave(today)]
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
        "partial_shipments": partial,
        "lost_parcels": sum(1 for events in lost if "lost" in _latest_event_detail(events)),
        "disputed_payments": Payment.objects.filter(status="disputed").count(),
        "failed_payments": Payment.objects.filter(status="failed").count(),
        "unpaid_orders": Order.objects.filter(status__in=("pending", "cancelled"))
        .exclude(payments__status__in=("pending", "authorized", "captured", "completed", "voided"))
        .count(),
        "duplicate_accounts": duplicates,
        "employees_on_leave": len(away),
        "open_tickets_assigned_to_someone_on_leave": SupportTicket.objects.filter(
            assignee_id__in=away, status__in=("new", "open", "pending_customer", "escalated")
        ).count(),
        "discontinued_products": Product.objects.filter(lifecycle="discontinued").count(),
        "loyalty_tiers": loyalty_tiers(),
        "minority_branches": minority_branches(),
        "search_paging": search_shape_paging(),
        "subject_paging": subject_paging(),
    }
