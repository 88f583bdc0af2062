"""Tickets about an order's journey and the account: where is my order, order issues, billing, recommendations,
return requests (in time and late), missing parcels, duplicate charges, tier claims and everything else.
"""

from __future__ import annotations

from datetime import timedelta

from world_app.generator.builds import BuildFacts
from world_app.generator.commerce import OrderFacts
from world_app.generator.people import CustomerFacts
from world_app.generator.support.drafts import TicketDraft, _Desk, _order_ref, _signed
from world_app.generator.timeline import cents
from world_app.store_rules import RETURN_WINDOW_DAYS


def _where_is_my_order_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    start = order.created_at + timedelta(hours=rng.randint(20, 96))
    if start >= desk.timeline.now - timedelta(hours=1):
        return None
    body = _signed(rng, order.customer, f"Where is {_order_ref(rng, order)}? I haven't had an update in days.")
    ticket = desk.open(
        order.customer, order=order, kind="shipping", subject="Where is my order?", body=body, created=start
    )
    shipment = order.shipment
    if shipment and shipment.shipped_at and shipment.shipped_at < start:
        reply = (
            f"It's on its way with {shipment.carrier.upper()}, tracking {shipment.tracking_number}, expected "
            f"by {shipment.eta}."
        )
        summary = "Shared tracking and ETA."
    else:
        reply = "It hasn't left the warehouse yet; it ships within 1 to 2 business days and you'll get tracking then."
        summary = "Not yet shipped; explained handling times."
    return desk.settle(ticket, reply=reply, outcome="no_action", summary=summary)


def _order_issue_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    if order.status == "cancelled" and order.cancelled_at:
        created = order.created_at + (order.cancelled_at - order.created_at) / 2
        created = created.replace(microsecond=0)
        body = _signed(rng, order.customer, f"Please cancel {order.id}, I ordered the wrong thing.")
        ticket = desk.open(
            order.customer, order=order, kind="order_issue", subject=f"Cancel {order.id}", body=body, created=created
        )
        return desk.settle(
            ticket,
            reply="Done: the order is cancelled and the payment authorization voided.",
            outcome="order_updated",
            summary="Cancelled before shipment; payment voided.",
            resolve_at=order.cancelled_at,
            status="resolved",
        )
    if order.delivered_at:
        created = desk.within(order.delivered_at, 2, 24 * 6)
        if created is None:
            return None
        line = rng.choice(order.lines)
        missing = rng.random() < 0.5
        text = (
            f"The {line.product.name} was missing from the box."
            if missing
            else f"I received the wrong item instead of the {line.product.name}."
        )
        body = _signed(rng, order.customer, f"{text} ({_order_ref(rng, order)})")
        ticket = desk.open(
            order.customer,
            order=order,
            kind="order_issue",
            subject="Missing item" if missing else "Wrong item received",
            body=body,
            created=created,
        )
        return desk.settle(
            ticket,
            reply=f"Sorry about that. A {line.product.name} is on its way at no cost.",
            outcome="replacement_sent",
            summary=f"Sent a replacement {line.product.id}.",
            pending_ask="Could you send a photo of the packing slip and the box contents?",
        )
    if order.status in ("pending", "paid", "backorder"):
        created = desk.within(order.created_at, 0.2, 6)
        if created is None:
            return None
        body = _signed(rng, order.customer, f"Can you change the shipping address on {order.id}? I've moved.")
        ticket = desk.open(
            order.customer,
            order=order,
            kind="order_issue",
            subject="Change shipping address",
            body=body,
            created=created,
        )
        return desk.settle(
            ticket,
            reply="Happy to help: please confirm the new address and I'll update the order.",
            outcome="order_updated",
            summary="Address change requested before shipment.",
            status=rng.choice(("new", "pending_customer", "open")),
            pending_ask="Please confirm the full new address, including the ZIP code.",
        )
    return None


def _billing_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = desk.within(order.created_at, 1, 24 * 5)
    if created is None:
        return None
    if len(order.payments) > 1 and order.payments[0].status == "failed":
        failed = order.payments[0]
        body = _signed(
            rng, order.customer, f"My card was declined on {order.id} and then I paid again. Was I charged twice?"
        )
        reply = (
            f"Only one payment went through; the first attempt was declined ({failed.failure_reason}) and "
            "nothing was charged for it."
        )
        summary = "Explained the declined first attempt; one charge only."
        subject = "Declined card, charged twice?"
    elif order.discount:
        body = _signed(rng, order.customer, f"Why wasn't my loyalty discount applied to the shipping on {order.id}?")
        reply = "Loyalty discounts apply to merchandise only, never to shipping or tax; your discount was applied."
        summary = "Explained that loyalty discounts exclude shipping."
        subject = "Discount question"
    else:
        body = _signed(rng, order.customer, f"Could you send me an invoice for {order.id} for my expense report?")
        reply = "Attached is the invoice for your order."
        summary = "Sent an invoice copy."
        subject = "Invoice request"
    ticket = desk.open(order.customer, order=order, kind="billing", subject=subject, body=body, created=created)
    return desk.settle(ticket, reply=reply, outcome="no_action", summary=summary)


def _recommendation_ticket(desk: _Desk, customer: CustomerFacts, build: BuildFacts | None) -> TicketDraft | None:
    rng, now = desk.rng, desk.timeline.now
    created = desk.later(build.created_at if build else customer.created_at, 1, 24 * 120)
    if created >= now:
        created = now - timedelta(hours=rng.randint(2, 200))
        if created <= customer.created_at or (build and created <= build.created_at):
            return None
    if build:
        body = f'Can you check my build "{build.name}" ({build.id})? Is the power supply big enough?'
        subject = "Build check before I order"
    else:
        body = rng.choice(
            (
                "I'm looking for a graphics card for 1440p gaming under $600. What do you suggest?",
                "Which power supply do I need for a high-end graphics card and an 8-core CPU?",
                "Is a 240 mm liquid cooler enough for a 170 W CPU?",
                "What's the best small form factor case for a long graphics card?",
            )
        )
        subject = "Product recommendation"
    ticket = desk.open(
        customer,
        build=build,
        kind="recommendation",
        subject=subject,
        body=_signed(rng, customer, body),
        created=created,
        priority="low",
    )
    return desk.settle(
        ticket,
        reply="Here are two options that fit your needs and budget; both pass our compatibility checks.",
        outcome="recommendation_provided",
        summary="Recommended compatible parts." if not build else f"Reviewed build {build.id}; suggested options.",
        escalate=(
            "product_specialist",
            "product_management",
            "Customer wants a specialist opinion on a high-end configuration.",
        )
        if rng.random() < 0.2
        else None,
        pending_ask="What's your budget, and which games or software will you run?",
    )


def _return_request_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = desk.later(order.delivered_at, 6, 24 * 20)
    if created >= desk.timeline.now:
        created = desk.timeline.now - timedelta(hours=rng.randint(1, 12))
    if created <= order.delivered_at:
        return None
    line = rng.choice(order.lines)
    why = rng.choice(
        (
            "It's not what I expected.",
            "I found I don't need it.",
            "It doesn't fit my setup.",
            "It arrived opened and scratched.",
        )
    )
    body = _signed(
        rng, order.customer, f"I want to return the {line.product.name} from {_order_ref(rng, order)}. {why}"
    )
    ticket = desk.open(
        order.customer, order=order, kind="return", subject=f"Return: {line.product.name}", body=body, created=created
    )
    # Left undecided on purpose: a task's agent works out eligibility and the refund.
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "new", "open")))


def _late_return_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = order.delivered_at + timedelta(days=rng.randint(RETURN_WINDOW_DAYS + 3, RETURN_WINDOW_DAYS + 80))
    if created >= desk.timeline.now:
        return None
    line = rng.choice(order.lines)
    body = _signed(
        rng, order.customer, f"Can I still return the {line.product.name} from {_order_ref(rng, order)}? Never used it."
    )
    ticket = desk.open(
        order.customer, order=order, kind="return", subject="Return after a while", body=body, created=created
    )
    days = (created - order.delivered_at).days
    return desk.settle(
        ticket,
        reply=(
            f"I'm sorry: {order.id} was delivered on {order.delivered_at:%Y-%m-%d}, {days} days ago, and returns "
            "are accepted within 30 days of delivery. The item remains covered by its warranty for defects."
        ),
        outcome="no_action",
        summary=f"Return declined: {days} days after delivery, outside the 30-day window.",
        escalate=("policy_exception", "support", f"Customer asks for a return {days} days after delivery.")
        if days <= RETURN_WINDOW_DAYS + 15
        else None,
    )


def _other_ticket(desk: _Desk, customer: CustomerFacts) -> TicketDraft | None:
    rng, now = desk.rng, desk.timeline.now
    created = desk.later(customer.created_at, 2, 24 * 300)
    if created >= now:
        created = now - timedelta(hours=rng.randint(2, 48))
        if created <= customer.created_at:
            return None
    if customer.duplicate_of is not None:
        body = f"I think I have two accounts, this one and one under {customer.duplicate_of.email}. Can you merge them?"
        subject, reply = "Two accounts", "I can merge them once you confirm both email addresses from each inbox."
        summary = "Duplicate accounts: asked the customer to verify both emails."
    else:
        body, subject, reply, summary = rng.choice(
            (
                (
                    "Please take me off your marketing emails.",
                    "Unsubscribe",
                    "Done: you're unsubscribed.",
                    "Marketing opt-out recorded.",
                ),
                (
                    "How do I update the phone number on my account?",
                    "Update phone number",
                    "You can change it under Account > Profile; I've noted the new number too.",
                    "Explained profile edits.",
                ),
                (
                    "Do you have a store I can visit?",
                    "Store location",
                    "We're online only, shipping from three US warehouses.",
                    "Answered a store question.",
                ),
            )
        )
    ticket = desk.open(
        customer, kind="other", subject=subject, body=_signed(rng, customer, body), created=created, priority="low"
    )
    return desk.settle(
        ticket,
        reply=reply,
        outcome="no_action",
        summary=summary,
        pending_ask="Please reply from the other email address too so I can verify it.",
    )


def _missing_parcel_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft:
    rng = desk.rng
    created = min(desk.later(order.delivered_at, 24, 24 * 4), desk.timeline.now - timedelta(hours=3))
    body = _signed(
        rng,
        order.customer,
        f"{order.id} never arrived. I've been home all week and nothing came. Please send it again or refund me.",
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="shipping",
        subject=f"{order.id} never arrived",
        body=body,
        created=created,
        priority="high",
    )
    desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))
    return ticket


def _duplicate_charge_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft:
    rng = desk.rng
    created = desk.later(order.created_at, 24, 24 * 4)
    body = _signed(
        rng, order.customer, f"My bank shows two charges of ${cents(order.total)} for {order.id}. Please refund one."
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="billing",
        subject="Charged twice",
        body=body,
        created=min(created, desk.timeline.now - timedelta(hours=2)),
        priority="high",
    )
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))


def _tier_claim_ticket(desk: _Desk, customer: CustomerFacts, order: OrderFacts | None) -> TicketDraft:
    rng = desk.rng
    base = order.created_at if order else customer.created_at
    created = max(desk.later(base, 2, 24 * 10), customer.created_at + timedelta(hours=1))
    created = min(created, desk.timeline.now - timedelta(hours=2))
    ref = f" on {order.id}" if order else ""
    body = _signed(
        rng,
        customer,
        f"My account notes say I'm a higher loyalty tier, but I didn't get that discount"
        f"{ref}. Please fix it and refund the difference.",
    )
    ticket = desk.open(
        customer, order=order, kind="billing", subject="Loyalty discount missing", body=body, created=created
    )
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status="new")
