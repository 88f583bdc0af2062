"""Business accounts that order most weeks: their orders over a year, split and partial shipments, parcels a
carrier lost and the store reshipped, and the tickets they write about them.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from world_app.generator.casebook.base import BUSINESS_ACCOUNTS, _Account, _business_hours, _Casebook, _sold_through
from world_app.generator.commerce import OrderFacts
from world_app.generator.support import _Desk, _signed
from world_app.generator.vocabulary import FIRST_NAMES, LAST_NAMES
from world_app.models import Product

# --- Business accounts ------------------------------------------------------------------------------------

_COMPANIES = (
    ("Halvorsen Systems", "a custom PC builder", "halvorsensystems"),
    ("Brightline Esports Arena", "a gaming venue refitting its stations", "brightlinearena"),
    ("Quarry Street Computers", "a repair shop", "quarrystreetpc"),
    ("Northfield School District IT", "a school district's IT team", "northfieldsd"),
    ("Copperleaf Render Farm", "a small render farm", "copperleafrender"),
    ("Vantage LAN Lounge", "a LAN cafe", "vantagelan"),
    ("Meridian Dental Group IT", "a dental group's IT contractor", "meridiandental"),
    ("Oakridge Makerspace", "a community makerspace", "oakridgemakers"),
)
_HOUSE_CATEGORIES = ("storage", "memory", "cooling", "cable", "networking")


def _business_accounts(book: _Casebook, *, scale: float) -> None:
    rng, timeline, catalog = book.rng_for("business"), book.timeline, book.catalog
    first_day, now = date(2023, 3, 1), timeline.now
    steady = [
        p
        for p in catalog.products
        if p.category in _HOUSE_CATEGORIES and _sold_through(catalog, p, first_day, timeline.today)
    ]
    # The parts every account reorders (a product with buyers on several pages).
    house = rng.sample(steady, min(2, len(steady)))
    for index in range(max(1, round(BUSINESS_ACCOUNTS * scale))):
        company, what, domain = _COMPANIES[index % len(_COMPANIES)]
        if index >= len(_COMPANIES):
            company = f"{company} {index // len(_COMPANIES) + 1}"
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        account = book.account(
            rng,
            joined=timeline.at(date(2022, 1, 1) + timedelta(days=rng.randint(0, 400)), 10),
            first=first,
            last=last,
            email=f"purchasing@{domain}{index // len(_COMPANIES) or ''}.com",
            notes=f"Business account: {company}, {what}. Orders most weeks; invoices to accounts payable. "
            f"Buyer: {first} {last}.",
        )
        kit = [p for p in rng.sample(steady, min(6, len(steady))) if p not in house][:4]
        year_ago = now - timedelta(days=364)
        moments = [timeline.between(rng, timeline.at(first_day, 8), year_ago) for _ in range(rng.randint(26, 34))]
        moments += [
            timeline.between(rng, year_ago + timedelta(days=1), now - timedelta(hours=3))
            for _ in range(rng.randint(64, 72))
        ]
        moments = sorted(_business_hours(timeline, rng, m) for m in moments)
        for moment in moments:
            if moment > now - timedelta(hours=2):
                continue
            parts: list[tuple[Product, int]] = []
            if rng.random() < 0.85:
                parts.append((rng.choice(house), rng.randint(2, 8)))
            for product in rng.sample(kit, rng.randint(1, min(3, len(kit)))):
                if catalog.sellable_on(product, moment.date()) and all(p.id != product.id for p, _ in parts):
                    parts.append((product, rng.randint(2, 6)))
            if not parts:
                continue
            order = book.order(rng, account, moment, parts)
            _business_fulfilment(book, rng, order)
        _business_tickets(book, rng, account)


def _business_fulfilment(book: _Casebook, rng: random.Random, order: OrderFacts) -> None:
    timeline = book.timeline
    book.pay(rng, order, method="bank_transfer" if rng.random() < 0.5 else "card", fail_first=rng.random() < 0.05)
    ships = _business_hours(timeline, rng, order.created_at + timedelta(hours=rng.randint(6, 40)))
    split = len(order.lines) >= 2 and rng.random() < 0.35
    if not split:
        fate = "lost" if rng.random() < 0.025 and timeline.days_ago(ships) > 12 else "deliver"
        parcel = book.parcel(rng, order, ships=ships, fate=fate)
        if parcel is None:
            return
        if parcel.shipped_at:
            order.status = "fulfilled"
        if fate == "lost":
            lost_at = datetime.fromisoformat(parcel.events[-1]["at"])
            again = book.parcel(rng, order, ships=_business_hours(timeline, rng, lost_at + timedelta(hours=20)))
            order.notes = f"Parcel {parcel.tracking_number} lost by the carrier; reshipped at no cost."
            book.note(
                "lost_parcel",
                order.id,
                (parcel.id, again.id if again else ""),
                "carrier declared the parcel lost; the order was reshipped",
            )
        return
    # One line waits for stock at the warehouse and follows in a second parcel.
    late = rng.choice(order.lines)
    first_lines = [(line, line.quantity) for line in order.lines if line is not late]
    first = book.parcel(rng, order, ships=ships, lines=first_lines)
    if first is None:
        return
    if first.shipped_at:
        order.status = "fulfilled"
    follows = _business_hours(
        timeline, rng, ships + timedelta(days=rng.choice((2, 3, 5, 8, 12, 18)), hours=rng.randint(0, 8))
    )
    second = book.parcel(rng, order, ships=follows, lines=[(late, late.quantity)])
    if second is None or second.shipped_at is None:
        # A partial shipment: the order is not fulfilled until its last parcel leaves.
        order.status = "paid"
        order.notes = f"Shipped in two parcels; the {late.product.name} follows when back in stock."
        book.note("partial_shipment", order.id, (first.id,), f"{late.id} not shipped yet")
    else:
        order.notes = f"Shipped in two parcels: {late.product.name} was sent separately from another warehouse."
        book.note("split_shipment", order.id, (first.id, second.id), f"{late.id} in the second parcel")


def _business_tickets(book: _Casebook, rng: random.Random, account: _Account) -> None:
    desk = _Desk(rng, book.timeline, book.desk, book.kb)
    customer, now = account.facts, book.timeline.now
    for order in account.orders:
        if order.status == "paid" and order.shipment and order.shipment.shipped_at and rng.random() < 0.8:
            late = next(line for line in order.lines if all(line is not pl for pl, _ in order.shipment.lines))
            created = desk.within(order.shipment.shipped_at, 30, 24 * 6)
            if created is None:
                continue
            body = rng.choice(
                (
                    f"We received {order.id} but the {late.quantity} x {late.product.name} were not in the box. "
                    "The packing slip lists them. Are they coming separately?",
                    f"Only part of {order.id} arrived. Missing: {late.product.name} (qty {late.quantity}). "
                    "We need it for a client install, please advise an ETA.",
                    f"Box for {order.id} came without the {late.product.name}s. Is that backordered or lost?",
                )
            )
            ticket = desk.open(
                customer,
                order=order,
                kind="shipping",
                subject=f"Partial delivery {order.id}",
                body=_signed(rng, customer, body),
                created=created,
            )
            book.ticket(
                desk.settle(
                    ticket,
                    reply=f"The {late.product.name} ships separately once it's back in stock; you'll get a second "
                    "tracking number then.",
                    outcome="no_action",
                    summary="Explained the split shipment; the rest follows.",
                    status=rng.choice(("open", "new", "resolved")),
                )
            )
        elif order.notes.startswith("Parcel ") and rng.random() < 0.9:
            lost = order.shipment
            created = desk.within(datetime.fromisoformat(lost.events[-2]["at"]), 24, 24 * 4)
            if created is None:
                continue
            body = f"Tracking {lost.tracking_number} for {order.id} hasn't moved in days. Can you chase the carrier?"
            ticket = desk.open(
                customer,
                order=order,
                kind="shipping",
                subject=f"{order.id} stuck in transit",
                body=_signed(rng, customer, body),
                created=created,
                priority="high",
            )
            book.ticket(
                desk.settle(
                    ticket,
                    reply="The carrier has declared the parcel lost. We've reshipped the order at no cost; new "
                    "tracking follows by email.",
                    outcome="replacement_sent",
                    summary="Carrier lost the parcel; reshipped.",
                    resolve_at=datetime.fromisoformat(lost.events[-1]["at"]) + timedelta(hours=3),
                    status="resolved",
                )
            )
    # Invoices, and one claim about quantities that the order does not bear out.
    delivered = [o for o in account.orders if o.delivered_at]
    for order in rng.sample(delivered, min(len(delivered), rng.randint(3, 5))):
        created = desk.within(order.created_at, 2, 24 * 20)
        if created is None:
            continue
        body = rng.choice(
            (
                f"Please send the invoice for {order.id} to accounts payable, PO number PO-{rng.randint(1000, 9999)}.",
                f"Could you reissue the invoice for {order.id} with our company name on it? Accounts needs it.",
                f"Our bookkeeper can't find the invoice for {order.id}. Resend please.",
            )
        )
        ticket = desk.open(
            customer, order=order, kind="billing", subject="Invoice", body=_signed(rng, customer, body), created=created
        )
        book.ticket(desk.settle(ticket, reply="Invoice attached.", outcome="no_action", summary="Sent the invoice."))
    recent = [o for o in delivered if book.timeline.days_ago(o.delivered_at) < 40]
    if recent and book.messy:
        order = rng.choice(recent)
        line = max(order.lines, key=lambda li: (li.quantity, li.id))
        claimed = line.quantity + rng.randint(1, 3)
        created = desk.within(order.delivered_at, 3, 24 * 5)
        if created is not None:
            body = (
                f"We ordered {claimed} x {line.product.name} on {order.id} and only {line.quantity} arrived. "
                f"Please ship the missing {claimed - line.quantity} or credit us."
            )
            ticket = desk.open(
                customer,
                order=order,
                kind="order_issue",
                subject=f"Short shipment on {order.id}",
                body=_signed(rng, customer, body),
                created=min(created, now - timedelta(hours=2)),
            )
            desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))
            book.ticket(ticket)
            book.note(
                "ticket_contradicts_order",
                ticket,
                (order.id, line.id),
                f"ticket says {claimed} ordered; the order line has {line.quantity}, all shipped",
            )
