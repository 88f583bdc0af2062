"""The cases a real store's records are full of and the base world has too few of, appended after it.

The base world (catalog, people, commerce, support) is a store of one-off buyers whose searches fit one page and
whose tasks mostly land on the common branch. A real store also has:

- **business accounts** that order most weeks (a customer's orders over a year, and a product's buyers, run to
  several pages), with orders shipped in two parcels, one of them sometimes still on its way (a partial
  shipment), and parcels a carrier lost and the store reshipped;
- **a carrier disruption**: a hub closed by a storm a week ago, parcels stuck or lost, and a queue of open
  shipping tickets written the way worried customers write (wrong order numbers, two questions in one message,
  anger, confusion), some disputed with the bank as well;
- **failed payments** that never went through (the order waits for payment, or was cancelled for it);
- **lapsed buyers** whose parts, bought in 2023 and early 2024, are now out of warranty, and **recent buyers**
  still inside the return window, so both branches of the warranty and return tasks exist in similar numbers;
- **support agents on leave** whose open tickets still name them (a stale assignment);
- **records that disagree**: a ticket that says one thing and the order another.

Everything is appended: each part draws from its own random stream (``corecraft:{seed}:casebook:{part}``) and
takes the ids after the base world's last ones (an order's number continues its day's count), so no base id or
value moves and the starter library's hard-coded answers about base records stay true. New accounts get the
loyalty tier their spend earns (``world_app.loyalty``), and orders are priced with the tier held on the day.
Each deliberate anomaly is recorded in the manifest (``ANOMALY_KINDS``).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from world_app.generator.catalog import Catalog
from world_app.generator.commerce import (
    TRANSIT_DAYS,
    Commerce,
    LineFacts,
    OrderFacts,
    PaymentFacts,
    RefundFacts,
    ShipmentFacts,
    _add_refund,
    _Counters,
    _event,
    _price_order,
    _refund_row,
    _settle_statuses,
    _write_order,
    warranty_end,
)
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.mess import MessPlan
from world_app.generator.people import (
    CORECRAFT_EMAIL_DOMAIN,
    CustomerFacts,
    EmployeeFacts,
    People,
    _address,
    _email,
)
from world_app.generator.sink import RowSink
from world_app.generator.support import (
    Message,
    RowNumbers,
    Support,
    TicketDraft,
    _Desk,
    _signed,
    write_tickets,
)
from world_app.generator.timeline import Timeline, add_months
from world_app.generator.vocabulary import CITIES, FIRST_NAMES, LAST_NAMES, WAREHOUSES
from world_app.models import Customer, Employee, Product
from world_app.models.people import EMPLOYEE_PERMISSIONS
from world_app.store_rules import LOYALTY_SPEND_MONTHS, LOYALTY_TIER_SPEND, RETURN_WINDOW_DAYS

# Sizes at scale 1 (each scales linearly; agents on leave with the square root, as staff does).
BUSINESS_ACCOUNTS = 3
DISRUPTED_ORDERS = 115
UNPAID_ORDERS = 12
LAPSED_BUYERS = 260
RECENT_BUYERS = 420
AGENTS_ON_LEAVE = 2
DESK_AGENTS = 3

TIER_SPEND_CENTS = {tier: int(amount * 100) for tier, amount in LOYALTY_TIER_SPEND.items()}
HUB = ("Memphis", "TN")
STORM_STARTS = timedelta(days=9)  # before the world's now
_ORDER_ID = re.compile(r"^ord-(\d{6})-(\d{3})$")


# --- Ids after the base world's ---------------------------------------------------------------------------


@dataclass
class _Ids:
    customers: int
    employees: int
    tickets: int
    refunds: int
    per_day: Counter
    counter: _Counters
    support_rows: RowNumbers
    order_ids: set[str] = field(default_factory=set)

    def customer(self) -> str:
        self.customers += 1
        return f"cus-{self.customers:05d}"

    def employee(self) -> str:
        self.employees += 1
        return f"emp-{self.employees:04d}"

    def order(self, moment: datetime) -> str:
        stamp = moment.strftime("%y%m%d")
        self.per_day[stamp] += 1
        order_id = f"ord-{stamp}-{self.per_day[stamp]:03d}"
        self.order_ids.add(order_id)
        return order_id


def _base_ids(people: People, commerce: Commerce, support: Support) -> _Ids:
    per_day: Counter = Counter()
    counter = _Counters()
    for order in commerce.orders:
        stamp, number = _ORDER_ID.match(order.id).groups()
        per_day[stamp] = max(per_day[stamp], int(number))
        for payment in order.payments:
            counter.payments = max(counter.payments, int(payment.id[4:]))
            counter.transactions.add(payment.transaction_id)
        for parcel in order.parcels:
            counter.shipments = max(counter.shipments, int(parcel.id[4:]))
            counter.tracking.add(parcel.tracking_number)
    return _Ids(
        customers=len(people.customers),
        employees=len(people.employees),
        tickets=len(support.tickets),
        refunds=len(commerce.refunds),
        per_day=per_day,
        counter=counter,
        support_rows=support.numbers or RowNumbers(),
        order_ids={order.id for order in commerce.orders},
    )


# --- Accounts, and the tier their spend earns ------------------------------------------------------------------


@dataclass
class _Account:
    facts: CustomerFacts
    row: dict
    orders: list[OrderFacts] = field(default_factory=list)


def _tier_for_cents(spend: int) -> str:
    earned = "none"
    for tier, threshold in TIER_SPEND_CENTS.items():
        if spend >= threshold:
            earned = tier
    return earned


def _spend_before(account: _Account, day: date) -> int:
    """What the account spent in the LOYALTY_SPEND_MONTHS months up to ``day`` (the rule of world_app.loyalty)."""
    since = add_months(day, -LOYALTY_SPEND_MONTHS)
    total = 0
    for order in account.orders:
        if order.status in ("pending", "cancelled") or not since <= order.created_at.date() <= day:
            continue
        total += order.total - sum(r.amount for r in order.refunds if r.status != "rejected")
    return total


@dataclass
class _Casebook:
    rng_for: Callable[[str], random.Random]
    timeline: Timeline
    catalog: Catalog
    people: People
    kb: KnowledgeBase
    mess: MessPlan
    ids: _Ids
    messy: bool
    desk: People | None = None
    accounts: list[_Account] = field(default_factory=list)
    tickets: list[TicketDraft] = field(default_factory=list)
    refunds: list[RefundFacts] = field(default_factory=list)
    anomalies: list[tuple[str, TicketDraft | str, tuple[str, ...], str]] = field(default_factory=list)

    def account(self, rng: random.Random, *, joined: datetime, first=None, last=None, email=None, notes="") -> _Account:
        first = first or rng.choice(FIRST_NAMES)
        last = last or rng.choice(LAST_NAMES)
        city_row = rng.choice(CITIES)
        name = f"{first} {last}"
        addresses = [_address(rng, label="shipping", name=name, city_row=city_row)]
        if rng.random() < 0.25:
            addresses.append(_address(rng, label="billing", name=name, city_row=city_row))
        facts = CustomerFacts(
            id=self.ids.customer(),
            first_name=first,
            last_name=last,
            email=email or _email(rng, first, last),
            created_at=joined,
            tier="none",
            shipping_addresses=[a for a in addresses if a["label"] == "shipping"],
            weight=0.0,
        )
        dob = date(1950, 1, 1) + timedelta(days=rng.randint(0, 365 * 56)) if rng.random() < 0.8 else None
        row = {
            "phone": f"+1-{city_row[3]}-555-{rng.randint(100, 9999):04d}" if rng.random() < 0.9 else "",
            "date_of_birth": dob,
            "addresses": addresses,
            "marketing_opt_in": rng.random() < 0.4,
            "notes": notes,
        }
        account = _Account(facts, row)
        self.accounts.append(account)
        return account

    def order(
        self, rng: random.Random, account: _Account, moment: datetime, parts: list[tuple[Product, int]]
    ) -> OrderFacts:
        order_id = self.ids.order(moment)
        lines = [
            LineFacts(f"li-{order_id[4:]}-{i}", product, quantity, int(product.price * 100))
            for i, (product, quantity) in enumerate(parts, start=1)
        ]
        order = OrderFacts(
            order_id, account.facts, moment, lines, None, address=dict(account.facts.shipping_addresses[0])
        )
        # Priced with the tier the account held that day: the one its spend of the year before earned.
        account.facts.tier = _tier_for_cents(_spend_before(account, moment.date() - timedelta(days=1)))
        _price_order(rng, order, first_order=not account.orders)
        account.orders.append(order)
        return order

    def pay(self, rng: random.Random, order: OrderFacts, *, method: str | None = None, fail_first: bool = False):
        counter, age = self.ids.counter, self.timeline.days_ago(order.created_at)
        method = method or rng.choices(("card", "paypal", "apple_pay", "google_pay"), weights=(60, 20, 11, 9))[0]
        at = order.created_at + timedelta(seconds=rng.randint(30, 240))
        if fail_first:
            order.payments.append(
                PaymentFacts(
                    counter.payment_id(),
                    "card",
                    "failed",
                    order.total,
                    at,
                    at + timedelta(seconds=4),
                    counter.transaction_id(rng),
                    card_last4=f"{rng.randrange(10000):04d}",
                    failure_reason=rng.choice(_DECLINES),
                )
            )
            at += timedelta(minutes=rng.randint(3, 90))
        order.payments.append(
            PaymentFacts(
                counter.payment_id(),
                method,
                "captured" if age < 5 else "completed",
                order.total,
                at,
                at + timedelta(seconds=5),
                counter.transaction_id(rng),
                card_last4=f"{rng.randrange(10000):04d}" if method == "card" else "",
            )
        )
        order.status = "paid"

    def parcel(
        self,
        rng: random.Random,
        order: OrderFacts,
        *,
        ships: datetime,
        days: int | None = None,
        lines: list[tuple[LineFacts, int]] | None = None,
        fate: str = "deliver",
    ) -> ShipmentFacts | None:
        """A parcel labelled at ``ships``: delivered ``days`` later (or ``fate``: "lost", "stuck" at the hub, or
        whatever the world's now allows). None when it is not even labelled by now."""
        now = self.timeline.now
        label_at = max(order.created_at + timedelta(minutes=40), ships - timedelta(hours=rng.randint(2, 10)))
        if label_at > now:
            return None
        warehouse = rng.choice(WAREHOUSES)
        origin = f"{warehouse[0]}, {warehouse[1]}"
        parcel = ShipmentFacts(
            self.ids.counter.shipment_id(),
            order.carrier,
            order.service,
            self.ids.counter.tracking_number(rng, order.carrier),
            "label_created",
            label_at,
            None,
            None,
            None,
            [_event(label_at, "label_created", origin)],
            lines or [],
        )
        if order.shipment is None:
            order.shipment = parcel
        else:
            order.more_parcels.append(parcel)
        if ships > now:
            return parcel
        low, high = TRANSIT_DAYS[order.service]
        days = days if days is not None else rng.randint(low, high)
        parcel.shipped_at = ships
        parcel.eta = ships.date() + timedelta(days=high)
        parcel.status = "in_transit"
        parcel.events[:] = [_event(ships, "picked_up", origin)]
        destination = f"{order.address['city']}, {order.address['state']}"
        arrives = self.timeline.at(ships.date() + timedelta(days=days), rng.randint(10, 19), rng.randint(0, 59))
        middle = (ships + (arrives - ships) / 2).replace(microsecond=0)
        if fate in ("lost", "stuck"):
            hub_at = min(ships + timedelta(hours=rng.randint(14, 30)), now - timedelta(hours=2))
            parcel.events.append(_event(hub_at, "in_transit", f"{HUB[0]}, {HUB[1]}", detail="arrived at hub"))
            held = self.timeline.at(hub_at.date() + timedelta(days=1), 6, rng.randint(0, 59))
            if held < now:
                parcel.events.append(
                    _event(held, "in_transit", f"{HUB[0]}, {HUB[1]}", detail="delayed: severe weather at hub")
                )
            if fate == "lost":
                declared = min(held + timedelta(days=rng.randint(3, 6)), now - timedelta(hours=1))
                parcel.status = "exception"
                parcel.events.append(
                    _event(declared, "exception", f"{HUB[0]}, {HUB[1]}", detail="carrier trace closed: parcel lost")
                )
            return parcel
        if days >= 3 and middle <= now:
            hub = rng.choice(CITIES)
            parcel.events.append(_event(middle, "in_transit", f"{hub[0]}, {hub[1]}"))
        if arrives <= now:
            spot = rng.choice(_DROP_SPOTS)
            parcel.events.append(_event(arrives, "delivered", destination, detail=spot))
            parcel.status, parcel.delivered_at = "delivered", arrives
        else:
            out_at = self.timeline.at(arrives.date(), 7, rng.randint(0, 59))
            if out_at <= now:
                parcel.events.append(_event(out_at, "out_for_delivery", destination))
                parcel.status = "out_for_delivery"
        return parcel

    def ticket(self, draft: TicketDraft | None) -> TicketDraft | None:
        if draft is not None:
            self.tickets.append(draft)
        return draft

    def note(self, kind: str, subject: TicketDraft | str, related: tuple[str, ...] = (), note: str = "") -> None:
        """Record an anomaly; a ticket's id is known only once every ticket is numbered."""
        self.anomalies.append((kind, subject, related, note))


_DROP_SPOTS = ("front door", "mailroom", "side door", "reception", "loading dock", "handed to resident")
_DECLINES = (
    "card declined: insufficient funds",
    "card declined: do not honor",
    "card expired",
    "3-D Secure authentication failed",
    "billing address mismatch (AVS)",
)


def _business_hours(timeline: Timeline, rng: random.Random, moment: datetime) -> datetime:
    if moment.hour < 8:
        return timeline.at(moment.date(), rng.randint(8, 11), rng.randint(0, 59))
    if moment.hour >= 18:
        return timeline.at(moment.date() + timedelta(days=1), rng.randint(8, 11), rng.randint(0, 59))
    return moment


def _sold_through(catalog: Catalog, product: Product, first: date, last: date) -> bool:
    return catalog.sellable_on(product, first) and catalog.sellable_on(product, last)


def _pick(catalog: Catalog, rng: random.Random, day: date, *, exclude=(), accept=None) -> Product | None:
    for _ in range(30):
        product = catalog.pick_for_order(rng, day, exclude=list(exclude))
        if product is not None and (accept is None or accept(product)):
            return product
    return None


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
        order.payments.append(
            PaymentFacts(
                counter.payment_id(),
                "card",
                "failed",
                order.total,
                at,
                at + timedelta(seconds=4),
                counter.transaction_id(rng),
                card_last4=f"{rng.randrange(10000):04d}",
                failure_reason=reason,
            )
        )
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


# --- Writing ------------------------------------------------------------------------------------------------------


def append_casebook(
    *,
    rng_for: Callable[[str], random.Random],
    scale: float,
    timeline: Timeline,
    catalog: Catalog,
    people: People,
    commerce: Commerce,
    support: Support,
    kb: KnowledgeBase,
    mess: MessPlan,
    sink: RowSink,
) -> dict[str, list[str]]:
    """Generate and write the casebook after the base world; returns its scenarios for the manifest."""
    book = _Casebook(rng_for, timeline, catalog, people, kb, mess, _base_ids(people, commerce, support), mess.rate > 0)
    away, desk = _desk_staff(book, scale=scale)
    book.desk = People(customers=[], employees=[facts for facts, _ in desk])
    _business_accounts(book, scale=scale)
    _carrier_disruption(book, scale=scale, agents_on_leave=[facts for facts, _ in away])
    _unpaid_orders(book, scale=scale)
    _lapsed_buyers(book, scale=scale)
    _recent_buyers(book, scale=scale)
    if book.messy:
        _tickets_left_behind(book, away)

    for _, row in away + desk:
        sink.add(row)
    for account in book.accounts:
        # The tier the account's spend of the last year earns today (world_app.loyalty), no exception needed.
        account.facts.tier = _tier_for_cents(_spend_before(account, timeline.today))
        sink.add(
            Customer(
                id=account.facts.id,
                first_name=account.facts.first_name,
                last_name=account.facts.last_name,
                email=account.facts.email,
                loyalty_tier=account.facts.tier,
                created_at=account.facts.created_at,
                updated_at=account.facts.created_at,
                **account.row,
            )
        )
    orders = sorted((o for a in book.accounts for o in a.orders), key=lambda o: o.id)
    for order in orders:
        _write_order(order, sink=sink)
    book.refunds.sort(key=lambda r: (r.created_at, r.order.id))
    for refund in book.refunds:
        book.ids.refunds += 1
        refund.id = f"ref-{book.ids.refunds:05d}"
        sink.add(_refund_row(refund))
    book.tickets.sort(key=lambda t: (t.created_at, t.customer.id, t.subject))
    for ticket in book.tickets:
        book.ids.tickets += 1
        ticket.id = f"tkt-{book.ids.tickets:05d}"
        if ticket.assignee is None and ticket.status not in ("new",):
            ticket.assignee = book.desk.employees[0]
    write_tickets(book.tickets, sink=sink, numbers=book.ids.support_rows)
    for kind, subject, related, note in book.anomalies:
        mess.record(kind, subject.id if isinstance(subject, TicketDraft) else subject, related=related, note=note)
    return {
        "business_accounts": [a.facts.id for a in book.accounts if a.row["notes"].startswith("Business account")],
        "open_disruption_tickets": [
            t.id for t in book.tickets if t.ticket_type == "shipping" and t.status in ("new", "open")
        ][:200],
        "agents_on_leave": [facts.id for facts, _ in away],
    }
