"""A return asked for on chat by a customer who gives a name, an email and a product, never an order number.

Selector: delivered, fulfilled orders with money captured and no refund yet, of a customer whose email finds one
account and who bought the product on no other order; the line is the order's second most expensive one (the
most expensive one is the ``return_window`` family's), so the two families never make the same task. The
customer remembers the delivery only roughly ("around August 12"), up to three days off: the record decides.

What the agent must do: find the account by the email (``search_customers``), the product by its name
(``search_products``), the order by both (``search_orders``), read it (``get_order_details``: the delivery date),
then judge the return window itself (``create_refund`` does not refuse a late return: the window is the agent's
judgement, ``world_app.store_rules.RULES`` "return-window"), and refund the line with the restocking fee the tool
computes, or refund nothing and give the window's last day.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal

from world_app.models import Customer, Order, ShipmentStatus
from world_app.store_rules import (
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RETURN_WINDOW_DAYS,
)
from world_app.tools.coverage import delivered_at, return_window
from world_app.tools.results import world_today

from .base import (
    FamilyInstance,
    called,
    date_pattern,
    dollars,
    long_date,
    pick,
    remorse_refund_state,
    reply_tone,
    restocking_fee_said,
    says,
    says_number,
    says_pattern,
    stable_hash,
    state,
    tidy,
)
from .returns import OPENED, REASONS, ReturnLineFamily

MESSAGES = (
    "Hi, it's {name} ({email}). I'd like to return the {product} I bought from you; it arrived {remembered}. "
    "{Opened}. The reason: {reason}. How much would I get back?",
    "Hello! {name} here, my account email is {email}. I want to send back the {product}. {Opened}, and {reason}. "
    "I think it was delivered {remembered}. Can you sort out the refund?",
    "Can I still return something? I'm {name}, {email}. It's the {product}, delivered {remembered} if I remember "
    "right. {Opened}. Honestly {reason}.",
    "Hey there, {name} ({email}) on chat. The {product} showed up {remembered} and {reason}, so I'd like to return "
    "it. {Opened}. What's the refund?",
    "Good afternoon, this is {name}. Email on the account: {email}. Please process a return of the {product}; "
    "{opened}. It came {remembered}. Reason: {reason}.",
)


def _remembered(delivered, key: str) -> str:
    """The delivery date as a customer remembers it: roughly, up to three days off."""
    shift = stable_hash(key, "shift") % 7 - 3
    day = delivered + timedelta(days=shift)
    return pick(
        (f"around {long_date(day).rsplit(',', 1)[0]}", f"on {long_date(day)} or so", f"about {long_date(day)}"),
        key,
        "remembered",
    )


class ReturnLookupFamily(ReturnLineFamily):
    name = "return_lookup"
    title = "A return on chat: find the order from the email and product, judge the window"
    description = (
        "A customer gives name, email and product (no order number): find the account, the product and the order, "
        "then refund inside the window or refuse outside it."
    )
    task_type = "multi_step_workflow"

    def candidates(self):
        emails = Counter(Customer.objects.values_list("email", flat=True))
        orders = (
            Order.objects.filter(status="fulfilled", shipments__status=ShipmentStatus.DELIVERED)
            .distinct()
            .select_related("customer")
            .prefetch_related("shipments", "line_items__product", "payments__refunds", "customer__orders__line_items")
            .order_by("id")
        )
        for order in orders:
            if emails[order.customer.email] != 1:
                continue
            payments = order.payments.all()
            if not any(p.status in ("captured", "completed") for p in payments):
                continue
            if any(p.refunds.all() for p in payments):
                continue
            lines = sorted(order.line_items.all(), key=lambda li: (li.unit_price * li.quantity, li.id), reverse=True)
            if len(lines) < 2:
                continue
            line = lines[1]
            bought = Counter(li.product_id for other in order.customer.orders.all() for li in other.line_items.all())
            if bought[line.product_id] != 1 or sum(1 for li in lines if li.product_id == line.product_id) != 1:
                continue
            yield line

    def build(self, line, sim) -> FamilyInstance | None:
        order = line.order
        window = return_window(delivered_at(order.shipments.all()))
        if window.delivered_on is None:
            return None
        key = line.id
        customer = order.customer
        product = line.product.name
        opened = pick((True, False), key, "opened")
        opened_text = pick(OPENED[opened], key, "opened-text")
        instruction = tidy(
            pick(MESSAGES, key, "message").format(
                name=f"{customer.first_name} {customer.last_name}",
                email=customer.email,
                product=product,
                remembered=_remembered(window.delivered_on, key),
                reason=pick(REASONS, key, "reason"),
                opened=opened_text,
                Opened=opened_text[0].upper() + opened_text[1:],
            )
        )
        lookups = [
            {"tool": "search_customers", "arguments": {"email": customer.email}},
            {"tool": "search_products", "arguments": {"query": product}},
            {"tool": "search_orders", "arguments": {"customer_id": customer.id, "product_id": line.product_id}},
            {"tool": "get_order_details", "arguments": {"order_id": order.id}},
        ]
        results = sim.run(lookups)
        if any("error" in r for r in results):
            return None
        if [c["id"] for c in results[0]["items"]] != [customer.id]:
            return None
        if line.product_id not in [p["id"] for p in results[1]["items"]]:
            return None  # the product's name does not find it: not a task a customer's words can start
        if [o["id"] for o in results[2]["items"]] != [order.id]:
            return None
        tone = reply_tone(customer.first_name)
        found = called(
            "The customer's orders were searched by the account (the customer gave no order number).",
            "search_orders",
            {"customer_id": customer.id},
            weight=1,
            required=True,
        )
        last_day = window.closes_on
        if window.is_open:
            refund_call = {
                "tool": "create_refund",
                "arguments": {
                    "order_id": order.id,
                    "reason": "customer_remorse",
                    "lines": [{"line_item_id": line.id, "quantity": line.quantity}],
                    "notes": "Customer return within the return window (chat).",
                },
            }
            if line.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES:
                refund_call["arguments"]["opened"] = opened  # for an exempt item it changes nothing
            result = sim.run([*lookups, refund_call])[-1]
            if "error" in result or result.get("requires_approval"):
                return None
            amount = Decimal(result["refund"]["amount"])
            fee = Decimal(result["refund"]["restocking_fee"])
            if amount > REFUND_APPROVAL_LIMIT:
                return None
            fee_sentence, fee_criterion = restocking_fee_said(
                fee,
                opened=opened,
                charged=f"As it was opened, a {RESTOCKING_FEE_PCT}% restocking fee of {dollars(fee)} applies.",
            )
            answer = (
                f"Hi {customer.first_name}, I found the {product} on your order {order.id}. Our records show it "
                f"was delivered on {long_date(window.delivered_on)}, so it is within our {RETURN_WINDOW_DAYS}-day "
                f"return window (open until {long_date(last_day)}).\n"
                f"{fee_sentence}\n"
                f"I've created a refund of {dollars(amount)} to your original payment; the original shipping is not "
                "refundable. It completes once the item is back at our warehouse and inspected."
            )
            criteria = [
                *remorse_refund_state(order.id, amount, fee, item=product),
                says_number(f"The reply states the refund amount ({dollars(amount)}).", amount, required=True),
                says(f"The reply names the order it found ({order.id}).", order.id, weight=1, required=True),
                fee_criterion,
                found,
                tone,
            ]
            calls = [*lookups, refund_call]
            branch = "inside window"
        else:
            answer = (
                f"Hi {customer.first_name}, thanks for reaching out. I found the {product} on your order "
                f"{order.id}: our records show it was delivered on {long_date(window.delivered_on)}, "
                f"{window.days_since_delivery} days ago.\n"
                f"Returns are accepted for {RETURN_WINDOW_DAYS} days after delivery, and that window closed on "
                f"{long_date(last_day)}, so I can't accept this return for a refund.\n"
                "If the item develops a fault, its manufacturer warranty still applies and we can help with a claim."
            )
            criteria = [
                state(
                    f"No refund was created on order {order.id}: the return window closed on {last_day.isoformat()}.",
                    "refund",
                    {"payment__order": order.id},
                    "count_eq",
                    value=0,
                ),
                says_pattern(
                    f"The reply gives the window's last day ({last_day.isoformat()}), from the recorded delivery.",
                    date_pattern(last_day),
                    weight=2,
                    required=True,
                ),
                says(f"The reply names the order it found ({order.id}).", order.id, weight=1, required=True),
                found,
                tone,
            ]
            calls = lookups
            branch = "outside window"
        days = (world_today() - window.delivered_on).days
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=(line.id,),
            title=f"Chat return of {product} ({customer.email}): {branch}",
            difficulty="hard" if window.is_open else "medium",
            instruction=instruction,
            criteria=criteria,
            tags=["returns", "return-window", "lookup", "judgement:return-window", "family"],
            reviewer_notes=(
                f"Account {customer.id} by email; {line.product_id} bought once, on {order.id}; delivered "
                f"{window.delivered_on.isoformat()} ({days} days before {world_today().isoformat()}); window "
                f"{'open' if window.is_open else 'closed'}, last day {last_day.isoformat()}; the customer's date is "
                f"approximate; item {'opened' if opened else 'unopened'}."
            ),
            branch=branch,
        )
