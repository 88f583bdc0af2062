"""A manufacturer's notice on a product's units delivered in a date range: which of our buyers does it concern?

Selector: products bought on at least ``MIN_ORDERS`` orders that each went out in one shipment (a split order
would leave open which parcel held the unit). For each, a window of delivery dates chosen from the world: one
that covers some of the product's deliveries and leaves others out on both sides ("some buyers"), or, where the
deliveries leave a gap of three weeks, a window inside the gap ("no buyers"). The sender, a colleague in
quality, names the product and its SKU and the window, never an id.

What the agent must do (no tool decides who is affected): find the product (``get_product`` by SKU), list every
order of it (``search_orders`` by product, page by page), and for each order find its shipment and delivery
date (``search_shipments`` by order); then keep the orders delivered inside the window (inclusive, world
dates) and name them with the customer, the delivery date and the shipment. Orders not delivered yet are not
concerned. The rubric owes the affected order ids exactly, the shipments of the affected orders (seen in a
result, so each affected order's shipment was looked up) and the count.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

from world_app.models import OrderLineItem, ShipmentStatus
from world_app.tools.results import local_date

from .base import (
    Family,
    FamilyInstance,
    criterion,
    judged,
    long_date,
    pick,
    says,
    says_number,
    says_pattern,
    stable_hash,
    tidy,
)

MIN_ORDERS = 6
GAP_DAYS = 21
MESSAGES = (
    "Quality here. The manufacturer of the {product} (SKU {sku}) has issued a safety notice for units delivered "
    "between {start} and {end}. Which of our customers received one in that window? I need the order numbers, "
    "the customers' names, the delivery dates and the shipment references so we can arrange collection.",
    "Hi, we just got a notice from the supplier about the {product}, SKU {sku}: anything delivered from {start} "
    "through {end} may be affected. Can you tell me which orders of ours that covers (order number, customer, "
    "delivery date, shipment)? If none, say so.",
    "Urgent for the product safety team: {product} ({sku}). Units that reached customers {start} to {end} "
    "(inclusive) are part of a recall. Please list every order delivered in that range with the buyer's name, "
    "the delivery date and the shipment id, and tell me how many there are.",
    "The {product} ({sku}) had a bad batch. The maker says it only concerns deliveries made between {start} and "
    "{end}. Who did we deliver one to in that period? Order numbers, names, delivery dates and shipment ids, "
    "please. Thanks, {sender}",
    "{sender} from quality assurance. For the notice on the {product} (SKU {sku}) I need the customers whose unit "
    "was delivered between {start} and {end}: their orders, the shipment that carried each and the day it "
    "arrived. Orders delivered outside those dates are not part of it.",
)
SENDERS = ("Mei", "Jonas", "Farah", "Owen", "Lucia", "Ravi")


class RecallNoticeFamily(Family):
    name = "recall_notice_buyers"
    title = "Which buyers a product notice concerns (delivered in a date range)"
    description = (
        "List the orders of a product delivered inside a notice's date range, with customer, date and shipment: "
        "every order of the product, each one's shipment, a date judgement."
    )
    task_type = "reasoning"

    def candidates(self):
        lines = (
            OrderLineItem.objects.select_related("order__customer", "product")
            .prefetch_related("order__shipments")
            .order_by("product_id", "order_id")
        )
        by_product: dict[str, list] = {}
        products = {}
        for line in lines:
            by_product.setdefault(line.product_id, []).append(line.order)
            products[line.product_id] = line.product
        for product_id, orders in sorted(by_product.items()):
            orders = list({o.id: o for o in orders}.values())
            if len(orders) < MIN_ORDERS or any(len(o.shipments.all()) > 1 for o in orders):
                continue
            delivered = sorted(
                {
                    local_date(s.delivered_at)
                    for o in orders
                    for s in o.shipments.all()
                    if s.status == ShipmentStatus.DELIVERED and s.delivered_at
                }
            )
            if len(delivered) < 3:
                continue
            for window in _windows(product_id, delivered):
                yield (products[product_id], window)

    def entity_ids(self, candidate) -> tuple[str, ...]:
        product, (_, start, end) = candidate
        return (product.id, start.isoformat(), end.isoformat())

    def build(self, candidate, sim) -> FamilyInstance | None:
        product, (kind, start, end) = candidate
        key = "+".join(self.entity_ids(candidate))
        lookup = {"tool": "get_product", "arguments": {"sku": product.sku}}
        first = sim.run([{"tool": "search_orders", "arguments": {"product_id": product.id}}])[0]
        if "error" in first:
            return None
        calls = [lookup, {"tool": "search_orders", "arguments": {"product_id": product.id}}]
        for offset in range(first["limit"], first["total"], first["limit"]):
            calls.append({"tool": "search_orders", "arguments": {"product_id": product.id, "offset": offset}})
        pages = sim.run(calls)
        orders = [o for page in pages[1:] for o in page.get("items", [])]
        if len(orders) != first["total"]:
            return None
        shipment_calls = [{"tool": "search_shipments", "arguments": {"order_id": o["id"]}} for o in orders]
        results = sim.run(shipment_calls)
        delivered = []
        for order, result in zip(orders, results, strict=True):
            items = result.get("items") or []
            if len(items) > 1:
                return None
            if items and items[0]["status"] == "delivered" and items[0].get("delivered_at"):
                delivered.append((order, items[0], _day(items[0]["delivered_at"])))
        delivered.sort(key=lambda a: (a[2], a[0]["id"]))
        affected = [row for row in delivered if start <= row[2] <= end]
        before = [row for row in delivered if row[2] < start][-1:]
        after = [row for row in delivered if row[2] > end][:1]
        calls += shipment_calls
        sender = pick(SENDERS, key, "sender")
        # A product's two notices (two windows) never share a phrasing.
        message = MESSAGES[(stable_hash(product.id, "message") + (kind == "gap")) % len(MESSAGES)]
        instruction = tidy(
            message.format(
                product=product.name, sku=product.sku, start=long_date(start), end=long_date(end), sender=sender
            )
        )
        window = f"{start.isoformat()} to {end.isoformat()}"
        if affected:
            rows = "\n".join(
                f"- {o['id']}: {o['customer_name']}, delivered {long_date(day)} (shipment {s['id']})"
                for o, s, day in affected
            )
            answer = (
                f"I checked all {len(orders)} orders of the {product.name} ({product.sku}) and the shipment of "
                f"each. {len(affected)} of them {'was' if len(affected) == 1 else 'were'} delivered between "
                f"{long_date(start)} and {long_date(end)}:\n"
                f"{rows}\n"
                f"The other {len(orders) - len(affected)} were delivered outside that window or not delivered yet, "
                "so the notice does not concern them."
            )
            ids = [o["id"] for o, _, _ in affected]
            criteria = [
                says(
                    f"The reply names exactly the orders delivered {window}: {', '.join(ids)}.",
                    ids[0],
                    weight=3,
                    required=True,
                ),
                says_number(
                    f"The reply gives how many orders were delivered {window} ({len(affected)}).",
                    len(affected),
                    weight=1,
                    required=True,
                ),
                criterion(
                    "tool_call",
                    "The agent looked up the shipment of every affected order (it saw "
                    + ", ".join(s["id"] for _, s, _ in affected)
                    + ").",
                    {"expect": "saw", "ids": [s["id"] for _, s, _ in affected][:12]},
                    category="completeness",
                    required=True,
                ),
                judged(
                    "Each affected order is given with its customer, delivery date and shipment, easy to scan.",
                    category="format",
                ),
            ]
            branch = "some buyers"
        else:
            answer = (
                f"I checked all {len(orders)} orders of the {product.name} ({product.sku}) and the shipment of "
                f"each. None of them was delivered between {long_date(start)} and {long_date(end)}, so the notice "
                "concerns none of our customers."
            )
            criteria = [
                says_pattern(
                    f"The reply says that no order of the product was delivered {window}.",
                    r"\bnone of (?:them|our customers|the orders)\b|\bno (?:order|customer)s?\b",
                    weight=2,
                    required=True,
                ),
                criterion(
                    "response",
                    "The reply names no order as concerned.",
                    {"op": "id_set", "value": [], "id_kind": "ord"},
                    weight=3,
                    category="correctness",
                    required=True,
                ),
                criterion(
                    "tool_call",
                    "The agent checked the deliveries closest to the window on either side (it saw "
                    + ", ".join(f"{s['id']} delivered {day.isoformat()}" for _, s, day in before + after)
                    + ").",
                    {"expect": "saw", "ids": [s["id"] for _, s, _ in before + after]},
                    category="completeness",
                    required=True,
                ),
                # "None" is only worth as much as the search behind it: the reply says how many orders it checked
                # (not required, so a correct "none" that leaves the count out still passes; without it no fault
                # of the answer was detectable, a dropped count included).
                says_pattern(
                    f"The reply says it checked all {len(orders)} orders of the product.",
                    rf"\b{len(orders)}\b(?:\s+\w+){{0,2}}\s+orders\b",
                    weight=1,
                ),
                judged("The reply says which product and which dates it checked.", category="format"),
            ]
            branch = "no buyers"
        # Shipments name their order, not its customer: the customer of an order on the last page is seen only by
        # listing the orders to the end.
        last = (pages[-1].get("items") or [])[-1]
        criteria.append(
            criterion(
                "tool_call",
                f"The agent listed every order of the product, to the last page ({last['id']}, {last['customer_id']}).",
                {"expect": "saw", "ids": [last["customer_id"]]},
                category="completeness",
                required=True,
            )
        )
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=self.entity_ids(candidate),
            title=f"Notice on {product.name}: deliveries {window} ({len(affected)} of {len(orders)} orders)",
            difficulty="medium",
            instruction=instruction,
            criteria=criteria,
            tags=["recall", "join", "date-relation", "judgement:recall-scope", "family"],
            reviewer_notes=(
                f"{product.id} ({product.sku}) is on {len(orders)} orders, each with one shipment; delivered "
                f"{window} inclusive (world dates): {', '.join(o['id'] for o, _, _ in affected) or 'none'}."
            ),
            branch=branch,
        )


def _day(value: str):
    from datetime import datetime

    return local_date(datetime.fromisoformat(value))


def _windows(product_id: str, delivered: list) -> list[tuple]:
    """Up to one window with some deliveries inside and some on each side ("some"), and one inside a gap of
    deliveries ("gap"): (kind, first day, last day)."""
    windows = []
    n = len(delivered)
    if n >= 4:
        size = 1 + stable_hash(product_id, "size") % max(1, min(4, n - 3))
        first = 1 + stable_hash(product_id, "first") % (n - 1 - size)
        last = first + size - 1
        # A day of margin where the neighbours allow it: no delivery falls on the window's edge.
        start = delivered[first] - timedelta(
            days=1 if delivered[first - 1] < delivered[first] - timedelta(days=1) else 0
        )
        end = delivered[last] + timedelta(days=1 if delivered[last + 1] > delivered[last] + timedelta(days=1) else 0)
        windows.append(("some", start, end))
    gaps = [
        (a + timedelta(days=3), b - timedelta(days=3))
        for a, b in itertools.pairwise(delivered)
        if (b - a).days >= GAP_DAYS
    ]
    if gaps:
        windows.append(("gap", *gaps[stable_hash(product_id, "gap") % len(gaps)]))
    return windows
