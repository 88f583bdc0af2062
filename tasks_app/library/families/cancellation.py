"""A cancellation request: cancel what has not shipped, refuse (and point to a return) what has.

Selector: orders still pending, paid or on backorder, and orders whose shipment has left the warehouse but not
arrived. Policy (``ORDER_TRANSITIONS``, ``CANCELLABLE_ORDER_STATUSES``, ``SHIPPED_SHIPMENT_STATUSES``): only an
unshipped pending/paid/backorder order can be cancelled; cancelling voids authorised payments, while captured
money must be refunded (``create_refund`` for every unit, reason ``other``, as the tool's next steps say; an
order that never shipped gets its shipping back too);
a shipped order cannot be cancelled, the customer returns it after delivery.
"""

from __future__ import annotations

from decimal import Decimal

from world_app.models import Order
from world_app.store_rules import CANCELLABLE_ORDER_STATUSES, SHIPPED_SHIPMENT_STATUSES
from world_app.tools.results import local_date

from .base import (
    Family,
    FamilyInstance,
    called,
    date_pattern,
    dollars,
    long_date,
    pick,
    reply_tone,
    says,
    says_number,
    says_pattern,
    state,
    tidy,
)

CARRIERS = {"ups": "UPS", "fedex": "FedEx", "usps": "USPS", "dhl": "DHL"}
MESSAGES = (
    "Hi, {name} here. Please cancel my order {order} from {placed}, I don't need it any more.",
    "Hello, I placed order {order} on {placed} ({product}) and changed my mind. Can you cancel it and refund me? "
    "Thanks, {name}",
    "This is {name}. I'd like to cancel order {order} (the one with the {product}) before it ships, please.",
    "Cancel request: order {order}, placed {placed} by {name}. I found the {product} cheaper locally.",
)


class OrderCancellationFamily(Family):
    name = "order_cancellation"
    title = "Cancel an order, or explain why a shipped one can't be"
    description = "Cancel unshipped orders (and refund captured money); refuse shipped ones and point to returns."
    task_type = "multi_step_workflow"

    def candidates(self):
        orders = (
            Order.objects.select_related("customer")
            .prefetch_related("shipments", "line_items__product", "payments__refunds")
            .order_by("id")
        )
        for order in orders:
            shipped = [s for s in order.shipments.all() if s.status in SHIPPED_SHIPMENT_STATUSES]
            if (order.status in CANCELLABLE_ORDER_STATUSES and not shipped) or (
                order.status == "fulfilled" and shipped and all(s.status != "delivered" for s in shipped)
            ):
                yield order

    def build(self, order, sim) -> FamilyInstance | None:
        customer = order.customer
        lines = list(order.line_items.all())
        if not lines or any(p.refunds.all() for p in order.payments.all()):
            return None
        key = order.id
        placed = local_date(order.created_at)
        product = max(lines, key=lambda li: (li.unit_price, li.id)).product.name
        instruction = tidy(
            pick(MESSAGES, key, "message").format(
                name=f"{customer.first_name} {customer.last_name}",
                order=order.id,
                placed=long_date(placed),
                product=product,
            )
        )
        read = {"tool": "get_order_details", "arguments": {"order_id": order.id}}
        tone = reply_tone(customer.first_name)
        shipped = [s for s in order.shipments.all() if s.status in SHIPPED_SHIPMENT_STATUSES]
        if shipped:
            shipment = shipped[0]
            carrier = CARRIERS.get(shipment.carrier, shipment.carrier)
            eta = shipment.estimated_delivery
            answer = (
                f"Hi {customer.first_name}, I'm sorry, but order {order.id} can no longer be cancelled: it has "
                f"already shipped with {carrier} (tracking {shipment.tracking_number}).\n"
                + (f"It is expected to arrive by {long_date(eta)}.\n" if eta else "")
                + "Once it's delivered you can return it within 30 days for a refund of the merchandise."
            )
            criteria = [
                state(
                    f"Order {order.id} is still {order.status} (a shipped order can't be cancelled).",
                    "order",
                    {"id": order.id},
                    "eq",
                    field="status",
                    value=order.status,
                ),
                called(
                    f"Order {order.id} was looked up before answering.",
                    "get_order_details",
                    {"order_id": order.id},
                    weight=1,
                    required=True,
                ),
                says(
                    f"The reply gives the tracking number {shipment.tracking_number}.",
                    shipment.tracking_number,
                    weight=1,
                ),
                says_pattern("The reply offers a return after delivery instead.", r"\breturn", weight=1, required=True),
                tone,
            ]
            if eta:
                criteria.insert(
                    3, says_pattern(f"The reply gives the expected delivery ({eta.isoformat()}).", date_pattern(eta))
                )
            calls, outcome, difficulty = [read], "already shipped", "medium"
        else:
            cancel = {
                "tool": "update_order_status",
                "arguments": {"order_id": order.id, "status": "cancelled", "reason": "Customer asked to cancel."},
            }
            results = sim.run([cancel])
            if "error" in results[-1]:
                return None
            calls = [read, cancel]
            captured = [p for p in order.payments.all() if p.status in ("captured", "completed")]
            refund_amount = None
            shipping_back = Decimal(0)
            if captured:
                refund = {
                    "tool": "create_refund",
                    "arguments": {
                        "order_id": order.id,
                        "reason": "other",
                        "lines": [{"line_item_id": li.id, "quantity": li.quantity} for li in lines],
                        "opened": False,
                        "notes": "Order cancelled before shipping.",
                    },
                }
                result = sim.run([cancel, refund])[-1]
                if "error" in result or result.get("requires_approval"):
                    return None
                refund_amount = Decimal(result["refund"]["amount"])
                # It never shipped: its shipping comes back with its last units (world_app.store_rules).
                shipping_back = Decimal(result["breakdown"]["shipping_refunded"])
                calls.append(refund)
            voided = results[-1].get("payments_voided") or []
            money_sentence = (
                f"The {dollars(refund_amount)} you paid"
                + (f", {dollars(shipping_back)} of shipping included," if shipping_back else " for the items")
                + " is being refunded to your original payment method."
                if refund_amount is not None
                else (
                    "The payment authorisation on your card has been released, so you won't be charged."
                    if voided
                    else "No payment had been taken, so there is nothing to refund."
                )
            )
            answer = (
                f"Hi {customer.first_name}, done: order {order.id} from {long_date(placed)} is cancelled.\n"
                f"{money_sentence}\n"
                "Sorry to see it go; let us know if we can help you find something else."
            )
            criteria = [
                state(
                    f"Order {order.id} is cancelled.",
                    "order",
                    {"id": order.id},
                    "eq",
                    field="status",
                    value="cancelled",
                ),
                says(f"The reply names the cancelled order ({order.id}).", order.id, weight=1),
                called(
                    "The cancellation went through the order's status.",
                    "update_order_status",
                    {"order_id": order.id, "status": "cancelled"},
                    weight=1,
                ),
                tone,
            ]
            if refund_amount is not None:
                criteria[1:1] = [
                    state(
                        f"The captured payment is refunded: a refund of {dollars(refund_amount)} on {order.id}.",
                        "refund",
                        {"payment__order": order.id},
                        "eq",
                        field="amount",
                        value=str(refund_amount),
                    ),
                    says_number(f"The reply gives the refund ({dollars(refund_amount)}).", refund_amount),
                ]
            else:
                criteria.insert(
                    1,
                    state(
                        f"No refund is created on {order.id}: no money was captured.",
                        "refund",
                        {"payment__order": order.id},
                        "count_eq",
                        value=0,
                        weight=1,
                    ),
                )
            outcome = "cancelled and refunded" if refund_amount is not None else "cancelled"
            difficulty = "hard" if refund_amount is not None else "easy"
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=(order.id,),
            title=f"Cancel {order.id} ({outcome})",
            branch=outcome,
            difficulty=difficulty,
            instruction=instruction,
            criteria=criteria,
            tags=["orders", "cancellation", "state-machine", "family"],
            reviewer_notes=f"Order {order.id} is {order.status}; outcome: {outcome}.",
        )
