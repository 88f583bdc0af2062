"""Where is my order: find the customer, the order (by its date and a product, not its id) and its shipment.

Selector: orders with exactly one shipment, placed by a customer with a unique email and no other order on the
same day. The customer names neither the order id nor the tracking number: the agent searches the customer,
their orders in a time window, then the shipment. The reply carries the carrier, the tracking number and the
status with its date (delivered on, or expected by).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from world_app.models import Customer, Order
from world_app.tools.results import local_date

from .base import (
    Family,
    FamilyInstance,
    called,
    date_pattern,
    long_date,
    pick,
    reply_tone,
    says,
    says_pattern,
    stable_hash,
    tidy,
)

CARRIERS = {"ups": "UPS", "fedex": "FedEx", "usps": "USPS", "dhl": "DHL"}
MESSAGES = (
    "Hi, this is {name} ({email}). I ordered a {product} on {placed} and I'd like to know where it is. Can you "
    "give me the tracking details?",
    "Hello, where is my order? It was placed on {placed} and included the {product}. My email is {email}. - {name}",
    "{name} here. Could you check the status of the order I placed {placed} (it had a {product} in it)? "
    "Account email: {email}.",
    "Hi support, my account is {email}. What's the shipping status of my {placed} order with the {product}? "
    "Please include the tracking number. Thanks, {name}",
)
STATUS_WORDS = {
    "delivered": r"delivered",
    "in_transit": r"in transit|on (?:its|the) way",
    "out_for_delivery": r"out for delivery",
    "exception": r"exception|problem|delay|issue",
    "label_created": r"label|not (?:yet )?(?:been )?(?:picked up|shipped)",
    "returned": r"returned",
}


class ShipmentStatusFamily(Family):
    name = "shipment_status"
    title = "Where is my order (found by date and product)"
    description = "Search the customer, their orders in a date window and the shipment; report tracking and status."
    task_type = "information_retrieval"

    def candidates(self):
        emails = Counter(e.casefold() for e in Customer.objects.values_list("email", flat=True))
        orders = (
            Order.objects.select_related("customer").prefetch_related("shipments", "line_items__product").order_by("id")
        )
        per_day = Counter((o.customer_id, local_date(o.created_at)) for o in orders)
        # One order per customer (one not delivered yet if there is one, else the first by hash): two tasks about
        # one customer's orders read alike, and parcels still on their way are the rare branch.
        chosen: dict[str, Order] = {}
        for order in orders:
            shipments = list(order.shipments.all())
            if len(shipments) != 1 or not order.line_items.all():
                continue
            if emails[order.customer.email.casefold()] != 1:
                continue
            if per_day[(order.customer_id, local_date(order.created_at))] != 1:
                continue
            current = chosen.get(order.customer_id)
            if current is None or self._rank(order) < self._rank(current):
                chosen[order.customer_id] = order
        yield from sorted(chosen.values(), key=lambda o: o.id)

    def _rank(self, order) -> tuple:
        return (order.shipments.all()[0].status == "delivered", stable_hash(self.name, order.id))

    def branch_of(self, order) -> str:
        return order.shipments.all()[0].status.replace("_", " ")

    def build(self, order, sim) -> FamilyInstance | None:
        shipment = order.shipments.all()[0]
        customer = order.customer
        key = order.id
        line = max(order.line_items.all(), key=lambda li: (li.unit_price, li.id))
        placed = local_date(order.created_at)
        instruction = tidy(
            pick(MESSAGES, key, "message").format(
                name=f"{customer.first_name} {customer.last_name}",
                email=customer.email,
                product=line.product.name,
                placed=long_date(placed),
            )
        )
        calls = [
            {"tool": "search_customers", "arguments": {"email": customer.email}},
            {
                "tool": "search_orders",
                "arguments": {
                    "customer_id": customer.id,
                    "created_after": placed.isoformat(),
                    "created_before": (placed + timedelta(days=1)).isoformat(),
                },
            },
            {"tool": "search_shipments", "arguments": {"order_id": order.id}},
        ]
        found, orders, shipments = sim.run(calls)
        if any("error" in r for r in (found, orders, shipments)):
            return None
        if [o["id"] for o in orders.get("items", [])] != [order.id] or shipments.get("total") != 1:
            return None
        record = shipments["items"][0]
        carrier = CARRIERS.get(shipment.carrier, shipment.carrier.upper())
        status = shipment.status
        if status == "delivered" and shipment.delivered_at:
            when = local_date(shipment.delivered_at)
            status_sentence = f"It was delivered on {long_date(when)}."
            date_check = ("the delivery date", when)
        elif shipment.estimated_delivery:
            when = shipment.estimated_delivery
            words = {
                "in_transit": "It is in transit",
                "out_for_delivery": "It is out for delivery",
                "exception": "The carrier reported a delivery exception (a problem in transit)",
                "label_created": "The label has been created but the carrier has not picked it up yet",
            }.get(status, f"Its status is {status.replace('_', ' ')}")
            status_sentence = f"{words}; the estimated delivery date is {long_date(when)}."
            date_check = ("the estimated delivery date", when)
        else:
            return None
        answer = (
            f"Hi {customer.first_name}, I found your order {order.id} from {long_date(placed)}.\n"
            f"It shipped with {carrier} under tracking number {record['tracking_number']}.\n"
            f"{status_sentence}\n"
            "You can follow it on the carrier's website with that number; let me know if anything looks wrong."
        )
        criteria = [
            says(
                f"The reply gives the tracking number {record['tracking_number']}.",
                record["tracking_number"],
                weight=2,
                required=True,
            ),
            says_pattern(f"The reply gives the shipment's status ({status}).", STATUS_WORDS.get(status, status)),
            says_pattern(
                f"The reply gives {date_check[0]} ({date_check[1].isoformat()}).",
                date_pattern(date_check[1]),
                weight=1,
            ),
            says(f"The reply names the order ({order.id}).", order.id, weight=1),
            called(
                "The customer's orders were searched (the customer gave no order id).",
                "search_orders",
                {"customer_id": customer.id},
                weight=1,
            ),
            reply_tone(customer.first_name),
        ]
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=(order.id,),
            title=f"Where is order {order.id} ({status.replace('_', ' ')})",
            branch=status.replace("_", " "),
            difficulty="medium" if status != "delivered" else "easy",
            instruction=instruction,
            criteria=criteria,
            tags=["shipping", "search", "time-window", "family"],
            reviewer_notes=(
                f"Order {order.id} placed {placed.isoformat()}; shipment {shipment.id} {carrier} "
                f"{record['tracking_number']} {status}."
            ),
        )
