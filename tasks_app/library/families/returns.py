"""A return within or outside the 30-day window, with the restocking fee on opened items.

Selector: one line per delivered, fulfilled order with money captured and no refund yet (the most expensive
line; the second most expensive is the ``return_lookup`` family's), one per customer and product. Policy
(``world_app.store_rules``): returns within ``RETURN_WINDOW_DAYS`` of delivery (the agent's judgement: the refund tool
does not refuse a late return); opened, non-defective items pay ``RESTOCKING_FEE_PCT`` percent (cables and
accessories exempt); shipping is not refunded. Inside the window the reference refunds the line (the amount is
what ``create_refund`` computes); outside it nothing is refunded and the reply gives the window's last day.
Refunds over the approval limit are left out (they need a ticket to escalate on: a different task).
"""

from __future__ import annotations

from decimal import Decimal

from world_app.models import Order, ShipmentStatus
from world_app.store_rules import REFUND_APPROVAL_LIMIT, RESTOCKING_FEE_PCT, RETURN_WINDOW_DAYS
from world_app.tools.coverage import delivered_at, return_window
from world_app.tools.results import world_today

from .base import (
    Family,
    FamilyInstance,
    called,
    date_pattern,
    dollars,
    long_date,
    pick,
    remorse_refund_state,
    reply_tone,
    restocking_fee_said,
    says_number,
    says_pattern,
    state,
    tidy,
)

REASONS = (
    "it turned out to be more than I need",
    "I changed my mind about the upgrade",
    "I found I don't need it after all",
    "my plans for the build changed",
    "it's not the right fit for my setup after all",
)
OPENED = {
    True: ("I opened the box and tried it once", "it has been unboxed but it works fine", "I did open it"),
    False: ("it is still sealed in the original box", "I never opened it", "the box is unopened"),
}
MESSAGES = (
    "Hi, {name} here. I want to return the {product} from order {order} because {reason}; {opened}. It was "
    "delivered on {delivered}. What will I get back?",
    "Hello, I'd like to send back the {product} I bought on order {order}. {Opened}, and honestly {reason}. "
    "It arrived {delivered}. Please process the return. - {name}",
    "Can I still return the {product} (order {order})? It came on {delivered}; {opened}. The reason: {reason}. "
    "Thanks, {name}",
    "This is {name}. Order {order} was delivered {delivered} and I'd like to return the {product} in it. "
    "{Opened}. Please refund me if that's possible; {reason}.",
)


class ReturnLineFamily(Family):
    """A family over order lines, branched by the line's return window (inside, outside, or not delivered);
    one instance per customer and product."""

    def branch_of(self, line) -> str:
        window = return_window(delivered_at(line.order.shipments.all()))
        if window.delivered_on is None:
            return "(none)"
        return "inside window" if window.is_open else "outside window"

    def entity_ids(self, line) -> tuple[str, ...]:
        return (line.id,)

    def distinct_key(self, line):
        return (line.order.customer_id, line.product_id)


class ReturnRequestFamily(ReturnLineFamily):
    name = "return_window"
    title = "Return within or outside the return window"
    description = "Refund a returned line with the right restocking fee, or explain that the window has closed."
    task_type = "reasoning"

    def candidates(self):
        orders = (
            Order.objects.filter(status="fulfilled", shipments__status=ShipmentStatus.DELIVERED)
            .distinct()
            .select_related("customer")
            .prefetch_related("shipments", "line_items__product", "payments__refunds")
            .order_by("id")
        )
        for order in orders:
            payments = order.payments.all()
            if not any(p.status in ("captured", "completed") for p in payments):
                continue
            if any(p.refunds.all() for p in payments):
                continue
            lines = sorted(order.line_items.all(), key=lambda li: (li.unit_price * li.quantity, li.id), reverse=True)
            if lines:  # the most expensive line (the second is the return_lookup family's)
                yield lines[0]

    def build(self, line, sim) -> FamilyInstance | None:
        order = line.order
        window = return_window(delivered_at(order.shipments.all()))
        if window.delivered_on is None:
            return None
        key = line.id
        customer = order.customer
        name = f"{customer.first_name} {customer.last_name}"
        product = line.product.name
        opened = pick((True, False), key, "opened")
        opened_text = pick(OPENED[opened], key, "opened-text")
        units = f"{line.quantity} x " if line.quantity > 1 else ""
        instruction = tidy(
            pick(MESSAGES, key, "message").format(
                name=name,
                product=f"{units}{product}",
                order=order.id,
                reason=pick(REASONS, key, "reason"),
                opened=opened_text,
                Opened=opened_text[0].upper() + opened_text[1:],
                delivered=long_date(window.delivered_on),
            )
        )
        read = {"tool": "get_order_details", "arguments": {"order_id": order.id}}
        tone = reply_tone(customer.first_name)
        last_day = window.closes_on
        if window.is_open:
            refund_call = {
                "tool": "create_refund",
                "arguments": {
                    "order_id": order.id,
                    "reason": "customer_remorse",
                    "lines": [{"line_item_id": line.id, "quantity": line.quantity}],
                    "opened": opened,
                    "notes": "Customer return within the return window.",
                },
            }
            result = sim.run([refund_call])[-1]
            if "error" in result or result.get("requires_approval"):
                return None
            amount = Decimal(result["refund"]["amount"])
            fee = Decimal(result["refund"]["restocking_fee"])
            if amount > REFUND_APPROVAL_LIMIT:
                return None
            fee_sentence, fee_criterion = restocking_fee_said(
                fee,
                opened=opened,
                charged=(
                    f"Because the item was opened, a {RESTOCKING_FEE_PCT}% restocking fee of {dollars(fee)} applies."
                ),
            )
            answer = (
                f"Hi {customer.first_name}, your return of the {product} is accepted: it was delivered on "
                f"{long_date(window.delivered_on)}, within our {RETURN_WINDOW_DAYS}-day window.\n"
                f"{fee_sentence}\n"
                f"I've created a refund of {dollars(amount)} to your original payment; the original shipping "
                "cost is not refundable.\n"
                "The refund is completed once the item arrives back at our warehouse and is inspected."
            )
            criteria = [
                *remorse_refund_state(order.id, amount, fee),
                says_number(f"The reply states the refund amount ({dollars(amount)}).", amount, required=True),
                fee_criterion,
                tone,
            ]
            calls = [read, refund_call]
            difficulty = "medium" if fee > 0 else "easy"
            outcome = "inside window"
        else:
            answer = (
                f"Hi {customer.first_name}, thanks for asking. Order {order.id} was delivered on "
                f"{long_date(window.delivered_on)}, {window.days_since_delivery} days ago.\n"
                f"Our return window is {RETURN_WINDOW_DAYS} days from delivery, and it closed on "
                f"{long_date(last_day)}, so I can't accept a return of the {product} for a refund.\n"
                "If the item develops a fault, its manufacturer warranty still applies and we can help with a claim."
            )
            criteria = [
                state(
                    f"No refund was created on order {order.id}: the return window has closed.",
                    "refund",
                    {"payment__order": order.id},
                    "count_eq",
                    value=0,
                ),
                called(
                    f"The order {order.id} was looked up.",
                    "get_order_details",
                    {"order_id": order.id},
                    weight=1,
                    required=True,
                ),
                says_pattern(
                    f"The reply gives the window's last day ({last_day.isoformat()}).",
                    date_pattern(last_day),
                    weight=2,
                    required=True,
                ),
                says_number(
                    f"The reply says how many days ago the order was delivered ({window.days_since_delivery}).",
                    window.days_since_delivery,
                    weight=1,
                ),
                tone,
            ]
            calls = [read]
            difficulty = "easy" if window.days_since_delivery > 90 else "medium"
            outcome = "outside window"
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=(line.id,),
            title=f"Return of {product} on {order.id} ({outcome})",
            branch=outcome,
            difficulty=difficulty,
            instruction=instruction,
            criteria=criteria,
            tags=[
                "returns",
                "restocking-fee" if window.is_open else "return-window",
                "judgement:return-window",
                "family",
            ],
            reviewer_notes=(
                f"Delivered {window.delivered_on.isoformat()}, {window.days_since_delivery} days before "
                f"{world_today().isoformat()}; window {'open' if window.is_open else 'closed'} (last day "
                f"{last_day.isoformat()}); item {'opened' if opened else 'unopened'}."
            ),
        )
