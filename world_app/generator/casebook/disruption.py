"""A carrier disruption: a hub closed by a storm, parcels stuck or lost there, and the open shipping tickets
worried customers write about them (wrong order numbers, two questions in one message, anger, chargebacks).
"""

from __future__ import annotations

import random
import re
from datetime import date, datetime, timedelta

from world_app.generator.casebook.base import DISRUPTED_ORDERS, HUB, STORM_STARTS, _business_hours, _Casebook, _pick
from world_app.generator.commerce import OrderFacts, ShipmentFacts
from world_app.generator.people import EmployeeFacts
from world_app.generator.support import _Desk, _signed

# --- The carrier disruption --------------------------------------------------------------------------------

_CARRIER_NAMES = {"ups": "UPS", "fedex": "FedEx", "usps": "USPS", "dhl": "DHL"}
_OPENINGS = (
    "Where is {ref}?",
    "My order {ref} was supposed to arrive on {eta} and it still hasn't.",
    "Tracking for {ref} hasn't moved since {last_scan}.",
    "I ordered a {product} on {ordered} ({ref}) and it's stuck somewhere in {hub}.",
    "The tracking page for {tracking} just says '{detail}' and nothing else.",
    "{ref}: the estimated delivery date came and went.",
    "So the {product} I paid for on {ordered} is now {late} days late.",
    "Can someone tell me what's going on with {ref}?",
    "{carrier} says my package is delayed in {hub}. Order number {ref}.",
    "I need the {product} for a build this weekend and {ref} is nowhere to be seen.",
    "Still no {product}. Order {ref}, placed {ordered}.",
    "Is {ref} lost? It's been sitting in {hub} since {last_scan}.",
    "I was told {eta} for {ref}. It is now {today} and nothing.",
    "Quick question about {ref}, the tracking hasn't updated in a while",
)
_DETAILS = (
    "",
    "",
    "The last scan was {last_scan} in {hub}.",
    "{carrier}'s hotline told me to contact the shipper.",
    "I've checked with the neighbours and the front desk, nothing.",
    "I took a day off work to be home for it.",
    "The order page still says fulfilled, which isn't very helpful.",
    "I saw on the news there was a storm down there, is that it?",
    "It's a gift and the birthday was yesterday.",
    "The carrier app says 'delivery date pending', whatever that means.",
    "My tracking number is {tracking} if that helps.",
)
_ASKS = (
    "Can you send a replacement?",
    "If it's lost I want a refund, not store credit.",
    "Please tell me when it will actually arrive.",
    "Could you ship a replacement with faster shipping?",
    "Should I just cancel and order again?",
    "Just refund me please, I'll buy it locally.",
    "Is there anything you can do from your side?",
    "What are my options?",
    "Please call me back, I'd rather sort this on the phone.",
    "Can you open a trace with the carrier?",
)
_EXTRAS = (
    "Also, the invoice shows my old billing address.",
    "Also, could you add a second {product} if a new box goes out?",
    "Separately: my discount code didn't apply at checkout.",
    "And while I have you, will the {product} work with a B650 board?",
    "Also I changed my email, can you update it on my account?",
    "P.S. I ordered another thing last week, is that one stuck too?",
    "Also, do you price match? I saw it cheaper elsewhere.",
)
_TONES = (
    "",
    "",
    "",
    "This is ridiculous.",
    "Third time I'm writing about this.",
    "Very disappointed, I've ordered from you for years.",
    "Sorry if this is the wrong place to ask.",
    "I'm not sure I'm looking at the right tracking number.",
    "No rush, just want to know it's not lost.",
    "I'm really frustrated at this point.",
)
_SUBJECTS = (
    "Where is my order?",
    "Order stuck in transit",
    "Package delayed",
    "{ref} not delivered",
    "Tracking not updating",
    "Lost parcel?",
    "Late delivery {ref}",
    "Still waiting",
    "Shipping delay",
)


def _typo_order_id(rng: random.Random, order_id: str) -> str:
    """How a customer mistypes an order number: two neighbouring digits swapped, one digit dropped or doubled."""
    digits = [i for i, ch in enumerate(order_id) if ch.isdigit()]
    while True:
        roll, i = rng.random(), rng.choice(digits[:-1])
        chars = list(order_id)
        if roll < 0.5 and order_id[i] != order_id[i + 1] and i + 1 in digits:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        elif roll < 0.75:
            del chars[i]
        else:
            chars.insert(i, chars[i])
        typed = "".join(chars)
        if typed != order_id:
            return typed


def _carrier_disruption(book: _Casebook, *, scale: float, agents_on_leave: list[EmployeeFacts]) -> None:
    rng, timeline, catalog = book.rng_for("disruption"), book.timeline, book.catalog
    now = timeline.now
    desk = _Desk(rng, timeline, book.desk, book.kb)
    storm = now - STORM_STARTS
    for _ in range(round(DISRUPTED_ORDERS * scale)):
        joined = timeline.between(rng, timeline.at(date(2021, 3, 1), 8), now - timedelta(days=20))
        account = book.account(rng, joined=joined)
        moment = timeline.daytime(rng, (storm - timedelta(days=rng.randint(1, 4))).date(), first_hour=7, last_hour=21)
        parts = []
        for _ in range(rng.choices((1, 2, 3), weights=(60, 30, 10))[0]):
            product = _pick(catalog, rng, moment.date(), exclude=[p.id for p, _ in parts])
            if product is not None:
                parts.append((product, 1))
        if not parts:
            continue
        order = book.order(rng, account, moment, parts)
        order.carrier = "fedex" if order.service == "freight" else rng.choice(("fedex", "fedex", "ups"))
        book.pay(rng, order)
        ships = _business_hours(timeline, rng, moment + timedelta(hours=rng.randint(8, 30)))
        roll = rng.random()
        fate = "lost" if roll < 0.14 else "stuck" if roll < 0.78 else "deliver"
        days = (now.date() - ships.date()).days - rng.randint(0, 1) if fate == "deliver" else None
        parcel = book.parcel(rng, order, ships=ships, days=days, fate=fate)
        order.status = "fulfilled"
        lines = ", ".join(line.product.id for line in order.lines)
        if fate == "lost":
            book.note("lost_parcel", order.id, (parcel.id,), f"lost at the {HUB[0]} hub during the storm ({lines})")
        disputed = rng.random() < (0.45 if fate == "lost" else 0.05 if fate == "stuck" else 0)
        if disputed:
            payment = order.payment
            payment.status = "disputed"
            disputed_at = min(parcel.shipped_at + timedelta(days=rng.randint(4, 7)), now - timedelta(hours=3))
            payment.updated_at = disputed_at
            order.notes = (
                f"Chargeback opened {disputed_at:%Y-%m-%d} by the customer's card issuer (reason: merchandise not "
                "received); funds held until finance answers with the carrier trace."
            )
            book.note("disputed_payment", payment.id, (order.id, parcel.id), "chargeback: merchandise not received")
        # Without mess (rate 0) nobody writes about a parcel the records show delivered.
        if rng.random() < 0.9 and (book.messy or not parcel.delivered_at):
            _disruption_ticket(book, desk, rng, order, parcel, disputed=disputed, on_leave=agents_on_leave)


def _disruption_ticket(
    book: _Casebook,
    desk: _Desk,
    rng: random.Random,
    order: OrderFacts,
    parcel: ShipmentFacts,
    *,
    disputed: bool,
    on_leave: list[EmployeeFacts],
) -> None:
    timeline, customer = book.timeline, order.customer
    last_scan = datetime.fromisoformat(parcel.events[-1]["at"])
    overdue = timeline.at(parcel.eta, 18) if parcel.eta else last_scan
    latest = timeline.now - timedelta(hours=2)
    created = timeline.between(rng, min(max(overdue, last_scan), latest - timedelta(hours=1)), latest)
    if parcel.delivered_at and rng.random() < 0.6:
        # Written before the parcel turned up, and still open: the record now says delivered.
        arrived = parcel.delivered_at
        created = timeline.between(rng, arrived - timedelta(days=2), arrived - timedelta(hours=1))
    line = order.lines[0]
    wrong = book.messy and rng.random() < 0.12
    typed = _typo_order_id(rng, order.id) if wrong else order.id
    facts = {
        "ref": typed,
        "eta": f"{parcel.eta:%B} {parcel.eta.day}" if parcel.eta else "last week",
        "last_scan": f"{last_scan:%A}",
        "product": line.product.name,
        "ordered": f"{order.created_at:%b} {order.created_at.day}",
        "hub": HUB[0],
        "tracking": parcel.tracking_number,
        "detail": parcel.events[-1].get("detail") or parcel.events[-1]["status"],
        "late": max(1, (timeline.today - parcel.eta).days) if parcel.eta else 3,
        "carrier": _CARRIER_NAMES[parcel.carrier],
        "today": f"{timeline.today:%A}",
    }
    parts = [rng.choice(_OPENINGS), rng.choice(_DETAILS), rng.choice(_ASKS)]
    if wrong and "{ref}" not in parts[0]:
        parts.insert(0, "Order {ref}.")  # the mistyped number is in the message, or the mix-up is not one
    if rng.random() < 0.3:
        parts.append(rng.choice(_EXTRAS))
    if disputed:
        parts.append("I've also disputed the charge with my bank in the meantime.")
    parts.append(rng.choice(_TONES))
    body = " ".join(p.format(**facts) for p in parts if p)
    ticket = desk.open(
        customer,
        order=None if wrong else order,
        kind="shipping",
        subject=rng.choice(_SUBJECTS).format(ref=typed),
        body=_signed(rng, customer, body),
        created=created,
        priority="high" if rng.random() < 0.4 else "normal",
    )
    stale = book.messy and on_leave and rng.random() < 0.08
    desk.settle(
        ticket,
        reply="",
        outcome="no_action",
        summary="",
        status=rng.choices(("new", "open"), weights=(22, 78))[0],
        pending_ask="Could you confirm the delivery address and whether anyone signed for a parcel?",
    )
    if stale and ticket.assignee is not None:
        away = rng.choice(on_leave)
        ticket.assignee = away
        for message in ticket.messages:
            if message.employee is not None:
                message.employee = away
                message.body = re.sub(r"\n- \w+$", f"\n- {away.first_name}", message.body)
        book.note("stale_assignment", ticket, (away.id,), f"assigned to {away.id}, who is on leave")
    book.ticket(ticket)
    if wrong:
        kind = "ticket_names_wrong_order"
        owner = "another customer's order" if typed in book.ids.order_ids else "no order"
        book.note(kind, ticket, (order.id,), f"the customer typed {typed} ({owner}); they meant {order.id}")
    elif parcel.delivered_at:
        when = "since" if created < parcel.delivered_at else "before the ticket"
        book.note(
            "ticket_contradicts_order",
            ticket,
            (order.id, parcel.id),
            f"ticket says not arrived; the carrier scanned it delivered {parcel.delivered_at:%Y-%m-%d %H:%M} ({when})",
        )
