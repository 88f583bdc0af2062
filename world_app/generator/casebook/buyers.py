"""Orders whose payment never went through, lapsed buyers now out of warranty and recent buyers inside the
return window, support agents on leave, and the tickets their colleagues left behind.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from world_app.generator.casebook.base import (
    _DECLINES,
    AGENTS_ON_LEAVE,
    DESK_AGENTS,
    LAPSED_BUYERS,
    RECENT_BUYERS,
    UNPAID_ORDERS,
    _business_hours,
    _Casebook,
    _pick,
)
from world_app.generator.commerce import (
    LineFacts,
    OrderFacts,
    _add_refund,
    _settle_statuses,
    declined_card_payment,
    warranty_end,
)
from world_app.generator.people import CORECRAFT_EMAIL_DOMAIN, EmployeeFacts
from world_app.generator.support import Message, TicketDraft, _Desk, _signed
from world_app.generator.timeline import add_months
from world_app.generator.vocabulary import FIRST_NAMES, LAST_NAMES
from world_app.models import Employee, Product
from world_app.models.people import EMPLOYEE_PERMISSIONS
from world_app.store_rules import RETURN_WINDOW_DAYS

# --- Payments that never went through ------------------------------------------------------------------------


def _unpaid_orders(book: _Casebook, *, scale: float) -> None:
    rng, timeline, catalog = book.rng_for("unpaid"), book.timeline, book.catalog
    desk = _Desk(rng, timeline, book.desk, book.kb)
    counter = book.ids.counter
    for _ in range(round(UNPAID_ORDERS * scale)):
        moment = timeline.now - timedelta(days=rng.uniform(0.3, 12))
        account = book.account(rng, joined=timeline.between(rng, timeline.at(date(2021, 6, 1), 8), moment))
        product = _pick(catalog, rng, moment.date())
        if product is None:
            continue
        order = book.order(rng, account, moment.replace(microsecond=0), [(product, 1)])
        at = order.created_at + timedelta(seconds=rng.randint(30, 200))
        reason = rng.choice(_DECLINES)
        order.payments.append(declined_card_payment(rng, counter, order, at, reason=reason))
        if timeline.days_ago(order.created_at) > 7:
            order.status = "cancelled"
            order.cancelled_at = order.created_at + timedelta(days=7)
            order.notes = "Cancelled: the payment was declined and no other payment arrived within 7 days."
        else:
            order.status = "pending"
            order.notes = "Awaiting payment: the card was declined; the customer was emailed a payment link."
        book.note("unpaid_order", order.id, (order.payment.id,), reason)
        if rng.random() < 0.5:
            created = desk.within(at, 0.5, 48)
            if created is None:
                continue
            body = rng.choice(
                (
                    f"My card got declined on {order.id} but the bank says there's no problem on their side. "
                    "Did the order go through or not?",
                    f"Tried to pay for the {product.name} and it failed ({order.id}). Can I pay by PayPal instead?",
                    f"Why was my payment declined?? Order {order.id}. I have the money.",
                )
            )
            ticket = desk.open(
                account.facts,
                order=order,
                kind="billing",
                subject="Payment declined",
                body=_signed(rng, account.facts, body),
                created=created,
            )
            desk.settle(
                ticket,
                reply="",
                outcome="no_action",
                summary="",
                status=rng.choice(("new", "open")),
                pending_ask="You can pay with another method from the payment link we emailed you.",
            )
            book.ticket(ticket)


# --- Lapsed buyers (out of warranty) and recent buyers (inside the return window) ------------------------------


def _lapsed_buyers(book: _Casebook, *, scale: float) -> None:
    rng, timeline, catalog = book.rng_for("lapsed"), book.timeline, book.catalog
    desk = _Desk(rng, timeline, book.desk, book.kb)
    today = timeline.today
    first, last = timeline.at(date(2023, 1, 15), 8), timeline.at(date(2024, 6, 30), 20)
    for _ in range(round(LAPSED_BUYERS * scale)):
        account = book.account(rng, joined=timeline.between(rng, timeline.at(date(2021, 1, 1), 8), first))
        count = rng.choices((1, 2, 3), (55, 30, 15))[0]
        for moment in sorted(timeline.between(rng, first, last) for _ in range(count)):
            # Parts whose warranty has run out by today (delivery is within about a week of the order).
            ordered_on = moment.date()

            def expired(product: Product, day: date = ordered_on) -> bool:
                return add_months(day + timedelta(days=10), product.warranty_months) < today - timedelta(days=7)

            parts: list[tuple[Product, int]] = []
            for _ in range(rng.choices((1, 2, 3), weights=(45, 40, 15))[0]):
                product = _pick(catalog, rng, moment.date(), exclude=[p.id for p, _ in parts], accept=expired)
                if product is not None:
                    parts.append((product, 1))
            if not parts:
                continue
            order = book.order(rng, account, moment, parts)
            book.pay(rng, order, fail_first=rng.random() < 0.03)
            ships = _business_hours(timeline, rng, moment + timedelta(hours=rng.randint(6, 50)))
            parcel = book.parcel(rng, order, ships=ships)
            if parcel is None or not parcel.delivered_at:
                continue
            order.status = "fulfilled"
            if len(order.lines) > 1 and rng.random() < 0.45:
                # Sent one part back inside the window, kept the rest.
                returned = rng.choice(order.lines)
                reason = rng.choice(("customer_remorse", "incompatible", "defective"))
                after = timedelta(days=rng.randint(2, RETURN_WINDOW_DAYS - 2), hours=rng.randint(0, 6))
                created = parcel.delivered_at + after
                _add_refund(rng, order, [returned], reason, created, timeline, book.refunds)
                _settle_statuses(order)
        if account.orders and rng.random() < 0.08:
            delivered = [o for o in account.orders if o.delivered_at]
            if delivered:
                order = rng.choice(delivered)
                line = max(order.lines, key=lambda li: (li.unit_cents, li.id))
                _late_warranty_ticket(book, desk, rng, order, line)


def _late_warranty_ticket(book: _Casebook, desk: _Desk, rng: random.Random, order: OrderFacts, line: LineFacts) -> None:
    timeline = book.timeline
    ends = warranty_end(order.delivered_at, line.product.warranty_months)
    created = timeline.now - timedelta(days=rng.randint(0, 20), hours=rng.randint(1, 9))
    if created.date() <= ends:
        return
    body = rng.choice(
        (
            f"My {line.product.name} just died. I bought it from you a while back, is it still under warranty?",
            f"The {line.product.name} from {order.id} stopped working this week. Can I get it replaced?",
            f"hi my {line.product.name} wont turn on anymore. bought it in {order.created_at:%Y} I think. warranty?",
        )
    )
    ticket = desk.open(
        order.customer,
        order=order if rng.random() < 0.6 else None,
        kind="warranty",
        subject=f"Warranty: {line.product.name}",
        body=_signed(rng, order.customer, body),
        created=created,
    )
    desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))
    book.ticket(ticket)


def _recent_buyers(book: _Casebook, *, scale: float) -> None:
    rng, timeline, catalog = book.rng_for("recent"), book.timeline, book.catalog
    now = timeline.now
    for _ in range(round(RECENT_BUYERS * scale)):
        # Delivered 1 to 28 days ago: still inside the return window.
        delivered_target = now - timedelta(days=rng.uniform(1, RETURN_WINDOW_DAYS - 2))
        moment = delivered_target - timedelta(days=rng.randint(3, 6), hours=rng.randint(0, 10))
        account = book.account(rng, joined=timeline.between(rng, timeline.at(date(2021, 1, 1), 8), moment))
        parts: list[tuple[Product, int]] = []
        for _ in range(rng.choices((1, 2, 3), weights=(55, 32, 13))[0]):
            product = _pick(catalog, rng, moment.date(), exclude=[p.id for p, _ in parts])
            if product is not None:
                # Several units of the same part are common for memory, fans, cables and monitors.
                multiple = product.category in ("memory", "cooling", "cable", "monitor", "storage", "accessory")
                parts.append((product, rng.choice((2, 2, 3, 4)) if multiple and rng.random() < 0.6 else 1))
        if not parts:
            continue
        order = book.order(rng, account, moment, parts)
        book.pay(rng, order)
        ships = _business_hours(timeline, rng, moment + timedelta(hours=rng.randint(6, 30)))
        days = max(1, (delivered_target.date() - ships.date()).days)
        parcel = book.parcel(rng, order, ships=ships, days=days)
        if parcel is not None and parcel.shipped_at:
            order.status = "fulfilled"


# --- Agents on leave ------------------------------------------------------------------------------------------


def _desk_staff(book: _Casebook, *, scale: float) -> tuple[list, list]:
    """The agents of the business and logistics desk, who answer the casebook's tickets (so the base agents'
    queues stay as they were), and support agents hired years ago on a leave that started weeks before the
    world's now. Returns ([(facts, row)] on leave, [(facts, row)] at work)."""
    rng, timeline = book.rng_for("leave"), book.timeline
    leads = [e for e in book.people.employees if e.support_role == "team_lead" and e.active_until is None]
    taken = {f"{e.first_name}.{e.last_name}".lower() for e in book.people.employees}
    away, desk = [], []
    leaving = max(1, round(AGENTS_ON_LEAVE * scale**0.5))
    for index in range(leaving + max(2, round(DESK_AGENTS * scale**0.5))):
        on_leave = index < leaving
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        while f"{first}.{last}".lower() in taken:
            first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        taken.add(f"{first}.{last}".lower())
        hired = date(2019, 1, 1) + timedelta(days=rng.randint(0, 1100))
        starts = timeline.today - timedelta(days=rng.randint(25, 45)) if on_leave else None
        ends = timeline.today + timedelta(days=rng.randint(20, 100)) if on_leave else None
        role = ("agent", "senior_agent")[index % 2]
        facts = EmployeeFacts(
            book.ids.employee(),
            first,
            last,
            "support",
            "Support Agent" if role == "agent" else "Senior Support Agent",
            role,
            hired,
            None,
        )
        manager = leads[index % len(leads)].id if leads else None
        row = Employee(
            id=facts.id,
            first_name=first,
            last_name=last,
            email=f"{first}.{last}".lower() + f"@{CORECRAFT_EMAIL_DOMAIN}",
            department="support",
            title=facts.title,
            manager_id=manager,
            permissions=[p for p in EMPLOYEE_PERMISSIONS if p in ("view_orders", "manage_tickets", "issue_refunds")],
            support_role=role,
            hired_on=hired,
            is_active=True,
            leave_starts_on=starts,
            leave_ends_on=ends,
            created_at=timeline.at(hired, 9),
            updated_at=timeline.at(starts - timedelta(days=1), 16) if starts else timeline.at(hired, 9),
        )
        (away if on_leave else desk).append((facts, row))
    return away, desk


def _tickets_left_behind(book: _Casebook, away: list[tuple[EmployeeFacts, Employee]]) -> None:
    """Tickets an agent took before their leave and that nobody picked up since: the customer is still waiting."""
    rng, timeline = book.rng_for("left-behind"), book.timeline
    customers = [a for a in book.accounts if a.orders and a.orders[-1].delivered_at]
    for facts, row in away:
        for _ in range(rng.randint(2, 4)):
            if not customers:
                return
            account = rng.choice(customers)
            order = account.orders[-1]
            created = timeline.at(row.leave_starts_on - timedelta(days=rng.randint(2, 8)), rng.randint(9, 17))
            if created <= order.created_at:
                continue
            ask = rng.choice(
                (
                    f"The {order.lines[0].product.name} from {order.id} makes a buzzing noise. Is that normal?",
                    f"Can I change the billing name on {order.id} for my company?",
                    f"Is there a manual for the {order.lines[0].product.name}? The box didn't have one.",
                )
            )
            ticket = TicketDraft(
                account.facts,
                order,
                None,
                "other",
                "email",
                "normal",
                created,
                "Question",
                _signed(rng, account.facts, ask),
            )
            ticket.status, ticket.assignee = "open", facts
            replied = created + timedelta(hours=rng.randint(2, 20))
            ticket.messages.append(
                Message(replied, "employee", facts, f"Thanks, I'll check and get back to you.\n- {facts.first_name}")
            )
            chased = timeline.at(row.leave_starts_on + timedelta(days=rng.randint(7, 20)), rng.randint(8, 20))
            if chased < timeline.now:
                ticket.messages.append(Message(chased, "customer", None, "Any update on this? It's been weeks."))
            book.ticket(ticket)
            note = f"assigned to {facts.id}, on leave since {row.leave_starts_on}"
            book.note("stale_assignment", ticket, (facts.id,), note)
