"""What every part of the casebook shares: how many of each case, the ids after the base world's (``_Ids``), an
account's tier from its spend, and ``_Casebook``, which places, prices, pays and ships an appended order the way
the base world's commerce does.
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
    _Counters,
    _event,
    _price_order,
    declined_card_payment,
)
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.mess import MessPlan
from world_app.generator.people import CustomerFacts, People, _address, _email
from world_app.generator.support import RowNumbers, Support, TicketDraft
from world_app.generator.timeline import Timeline, add_months
from world_app.generator.vocabulary import CITIES, FIRST_NAMES, LAST_NAMES, WAREHOUSES
from world_app.models import Product
from world_app.store_rules import LOYALTY_SPEND_MONTHS, LOYALTY_TIER_SPEND

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
            order.payments.append(declined_card_payment(rng, counter, order, at, reasons=_DECLINES))
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
