"""Orders with their line items, payments, shipments and refunds, following the store's policies.

Money is kept in integer cents until a row is written. The numbers come from ``world_app.store_rules`` and the
arithmetic is ``world_app.money``, the one the agent tools and the admin use, so a task's expected figures agree:

- discount = loyalty tier % of the merchandise subtotal, then one coupon on what remains (never shipping);
- shipping = the service's rate, ground free when merchandise after discounts is over the threshold;
- tax = SALES_TAX_PCT of merchandise after discounts; total = subtotal - discount + shipping + tax;
- a refund returns what was paid for the returned units: their price less their share of the order's
  discount (shared by value), less the restocking fee on opened, non-defective items; never shipping.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from world_app.generator.builds import BuildFacts
from world_app.generator.catalog import Catalog
from world_app.generator.mess import PAYMENT_SHORT_NOTE, MessPlan
from world_app.generator.people import CustomerFacts, People
from world_app.generator.sink import RowSink
from world_app.generator.timeline import ORDERS_START, Timeline, add_months, cents
from world_app.generator.vocabulary import CITIES, WAREHOUSES
from world_app.models import (
    Build,
    BuildComponent,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Shipment,
)
from world_app.money import discount_share, merchandise_discount, restocking_fee, sales_tax, shipping_cost
from world_app.store_rules import (
    COUPONS,
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVAL_LIMIT,
    REFUND_APPROVED_AT_ONCE_REASONS,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RETURN_WINDOW_DAYS,
    Coupon,
)

ORDERS_AT_SCALE_1 = 800
REFUND_SHARE = 0.11
CANCEL_SHARE = 0.04
RECENT_SHARE = 0.1
APPROVAL_LIMIT_CENTS = int(REFUND_APPROVAL_LIMIT * 100)
TRANSIT_DAYS = {"ground": (2, 5), "two_day": (2, 2), "overnight": (1, 1), "freight": (4, 7)}
PAYMENT_FAILURES = (
    "card declined: insufficient funds",
    "card declined: do not honor",
    "card expired",
    "3-D Secure authentication failed",
    "billing address mismatch (AVS)",
)
_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


@dataclass(slots=True)
class LineFacts:
    id: str
    product: Product
    quantity: int
    unit_cents: int


@dataclass(slots=True)
class PaymentFacts:
    id: str
    method: str
    status: str
    amount: int
    created_at: datetime
    processed_at: datetime | None
    transaction_id: str
    card_last4: str = ""
    failure_reason: str = ""
    updated_at: datetime | None = None


@dataclass(slots=True)
class ShipmentFacts:
    id: str
    carrier: str
    service: str
    tracking_number: str
    status: str
    label_at: datetime
    shipped_at: datetime | None
    eta: date | None
    delivered_at: datetime | None
    events: list[dict]
    # [(line, quantity)] in this parcel when the order ships in several; empty: the whole order.
    lines: list[tuple[LineFacts, int]] = field(default_factory=list)


@dataclass(slots=True)
class RefundFacts:
    order: OrderFacts
    payment: PaymentFacts
    amount: int
    reason: str
    status: str
    fee: int
    created_at: datetime
    processed_at: datetime | None
    lines: list[tuple[LineFacts, int]]
    notes: str
    id: str = ""
    decided_at: datetime | None = None

    @property
    def counts(self) -> bool:
        """Approved and processed refunds move money; pending ones await the item, rejected ones never do."""
        return self.status in ("approved", "processed")


@dataclass(slots=True)
class OrderFacts:
    id: str
    customer: CustomerFacts
    created_at: datetime
    lines: list[LineFacts]
    build: BuildFacts | None
    address: dict | None = None
    service: str = "ground"
    carrier: str = "ups"
    subtotal: int = 0
    discount: int = 0
    coupon: str = ""
    shipping: int = 0
    tax: int = 0
    total: int = 0
    status: str = "pending"
    payments: list[PaymentFacts] = field(default_factory=list)
    shipment: ShipmentFacts | None = None
    # Further parcels of an order shipped in several (the casebook's split shipments); the first is ``shipment``.
    more_parcels: list[ShipmentFacts] = field(default_factory=list)
    refunds: list[RefundFacts] = field(default_factory=list)
    cancelled_at: datetime | None = None
    notes: str = ""
    mess: list[str] = field(default_factory=list)

    @property
    def payment(self) -> PaymentFacts:
        """The payment that went through (the last one; failed attempts come first)."""
        return self.payments[-1]

    @property
    def parcels(self) -> list[ShipmentFacts]:
        return ([self.shipment] if self.shipment else []) + self.more_parcels

    @property
    def delivered_at(self) -> datetime | None:
        """As the tools read it (``world_app.tools.coverage.delivered_at``): the latest delivered parcel."""
        times = [parcel.delivered_at for parcel in self.parcels if parcel.delivered_at]
        return max(times) if times else None

    @property
    def updated_at(self) -> datetime:
        moments = [self.created_at, self.payment.processed_at, self.cancelled_at]
        for parcel in self.parcels:
            moments += [parcel.label_at, parcel.shipped_at, parcel.delivered_at]
        moments += [r.processed_at or r.created_at for r in self.refunds if r.counts]
        return max(m for m in moments if m is not None)


@dataclass
class Commerce:
    orders: list[OrderFacts]
    refunds: list[RefundFacts]
    scenarios: dict[str, list[str]]


def build_commerce(
    *,
    rng: random.Random,
    scale: float,
    timeline: Timeline,
    catalog: Catalog,
    people: People,
    builds: list[BuildFacts],
    mess: MessPlan,
    sink: RowSink,
) -> Commerce:
    orders = _place_orders(rng, scale=scale, timeline=timeline, catalog=catalog, people=people, builds=builds)
    _make_backorders(orders, catalog=catalog, timeline=timeline, mess=mess)
    counter = _Counters()
    first_orders: set[str] = set()
    for order in orders:
        _price_order(rng, order, first_order=order.customer.id not in first_orders)
        first_orders.add(order.customer.id)
        _fulfil(rng, order, timeline=timeline, counter=counter)
    _contradictions(orders, timeline=timeline, mess=mess, counter=counter)
    refunds = _refund_orders(rng, orders, scale=scale, timeline=timeline)
    for order in orders:
        _settle_statuses(order)
        if order.build is not None:
            delivered = order.delivered_at
            order.build.status = "assembled" if delivered and rng.random() < 0.6 else "ordered"
            order.build.ordered_at = order.created_at
    refunds.sort(key=lambda r: (r.created_at, r.order.id))
    for number, refund in enumerate(refunds, start=1):
        refund.id = f"ref-{number:05d}"
    _write_builds(builds, sink=sink)
    for order in orders:
        _write_order(order, sink=sink)
    for refund in refunds:
        sink.add(_refund_row(refund))
    _record_discontinued(orders, catalog=catalog, mess=mess)
    return Commerce(orders=orders, refunds=refunds, scenarios=_scenarios(orders, builds, timeline=timeline))


# --- Placing orders ---------------------------------------------------------------------------------


def _place_orders(rng, *, scale, timeline, catalog, people, builds) -> list[OrderFacts]:
    count = max(10, round(ORDERS_AT_SCALE_1 * scale))
    drafts: list[tuple[datetime, int, CustomerFacts, list[tuple[Product, int]], BuildFacts | None]] = []
    for build in builds:
        if not build.wants_order:
            continue
        moment = build.created_at + timedelta(minutes=rng.randint(30, 7 * 24 * 60))
        if moment < timeline.now - timedelta(hours=2):
            drafts.append((moment, len(drafts), build.customer, list(build.parts), build))
    start = timeline.at(ORDERS_START, 0)
    span = (timeline.now - start).total_seconds()
    while len(drafts) < count:
        # Density grows linearly with time (the store is busier now than in 2023), plus a share of the last
        # two weeks so that orders in every state (pending, paid, in transit) exist at the world's now.
        if rng.random() < RECENT_SHARE:
            day = (timeline.now - timedelta(days=rng.uniform(0, 14))).date()
        else:
            day = (start + timedelta(seconds=span * math.sqrt(rng.random()))).date()
        moment = timeline.daytime(rng, day, first_hour=7, last_hour=22)
        if moment > timeline.now:
            moment = timeline.now - timedelta(minutes=rng.randint(20, 600))
        customer = people.pick_customer(rng, moment)
        if customer is None:
            continue
        chosen: list[tuple[Product, int]] = []
        for _ in range(rng.choices((1, 2, 3, 4), weights=(50, 28, 14, 8))[0]):
            product = catalog.pick_for_order(rng, moment.date(), exclude=[p.id for p, _ in chosen])
            if product is not None:
                chosen.append((product, _quantity(rng, product)))
        if chosen:
            drafts.append((moment, len(drafts), customer, chosen, None))
    drafts.sort(key=lambda d: (d[0], d[1]))
    per_day: Counter[str] = Counter()
    orders = []
    for moment, _seq, customer, parts, build in drafts:
        stamp = moment.strftime("%y%m%d")
        per_day[stamp] += 1
        order_id = f"ord-{stamp}-{per_day[stamp]:03d}"
        lines = [
            LineFacts(f"li-{order_id[4:]}-{i}", product, quantity, _unit_price(rng, product, moment, timeline))
            for i, (product, quantity) in enumerate(parts, start=1)
        ]
        addresses = customer.shipping_addresses
        address = addresses[1] if len(addresses) > 1 and rng.random() < 0.3 else addresses[0]
        orders.append(OrderFacts(order_id, customer, moment, lines, build, address=dict(address)))
        if build is not None:
            build.order_id = order_id
    return orders


def _quantity(rng: random.Random, product: Product) -> int:
    if product.category in ("cable", "accessory"):
        return rng.choice((1, 1, 2, 3))
    if product.category in ("storage", "memory", "monitor"):
        return rng.choice((1, 1, 1, 1, 2))
    if product.category == "psu":
        # A few small-business orders of power supplies in bulk (the port's task had four PSUs).
        return rng.choice((1,) * 30 + (4,))
    return 1


def _unit_price(rng: random.Random, product: Product, moment: datetime, timeline: Timeline) -> int:
    price = int(product.price * 100)
    if timeline.days_ago(moment) > 180 and rng.random() < 0.25:
        # Prices move: older orders were sometimes placed at another shelf price.
        moved = price * rng.choice((104, 108, 95, 110)) // 100
        return max(99, moved // 100 * 100 + 99)
    return price


def _make_backorders(orders: list[OrderFacts], *, catalog: Catalog, timeline: Timeline, mess: MessPlan) -> None:
    waiting = [p for p in catalog.products if p.stock_quantity == 0 and p.backorderable]
    if not waiting:
        return
    recent = [o for o in orders if 3 <= timeline.days_ago(o.created_at) <= 40 and o.build is None]
    for order in mess.pick(recent, mess.share(len(orders))):
        product = mess.rng.choice(waiting)
        if any(line.product.id == product.id for line in order.lines):
            continue
        order.lines.append(LineFacts(f"li-{order.id[4:]}-{len(order.lines) + 1}", product, 1, int(product.price * 100)))
        order.mess.append("backorder")
        mess.record(
            "backorder", order.id, related=(product.id,), note=f"waiting for {product.id} ({product.lifecycle})"
        )


# --- Money --------------------------------------------------------------------------------------------


def _price_order(rng: random.Random, order: OrderFacts, *, first_order: bool) -> None:
    order.subtotal = sum(line.unit_cents * line.quantity for line in order.lines)
    systems = any(line.product.category in ("prebuilt", "workstation") for line in order.lines)
    if systems and rng.random() < 0.5:
        order.service = "freight"
    else:
        order.service = rng.choices(("ground", "two_day", "overnight"), weights=(68, 23, 9))[0]
    order.carrier = rng.choices(("ups", "fedex", "usps", "dhl"), weights=(40, 35, 15, 10))[0]
    if order.service == "freight" and order.carrier in ("usps", "dhl"):
        order.carrier = "fedex"
    coupon: Coupon | None = None
    if rng.random() < 0.09:
        eligible = [c for c in COUPONS.values() if _coupon_fits(c, order, first_order=first_order)]
        # Free shipping codes are handed out less than the others.
        weights = [1 if c.kind == "free_shipping" else 3 for c in eligible]
        coupon = rng.choices(eligible, weights=weights)[0] if eligible else None
    free_shipping = coupon is not None and coupon.kind == "free_shipping"
    if coupon is not None:
        order.coupon = coupon.code
    if free_shipping:
        order.service = "ground"
    discount = merchandise_discount(
        merchandise=cents(order.subtotal), loyalty_pct=order.customer.discount_pct, coupon=coupon
    )
    order.discount = _in_cents(discount.total)
    remaining = discount.remaining
    order.shipping = _in_cents(
        shipping_cost(order.service, merchandise_after_discounts=remaining, free_shipping_coupon=free_shipping)
    )
    order.tax = _in_cents(sales_tax(remaining))
    order.total = order.subtotal - order.discount + order.shipping + order.tax


def _in_cents(amount: Decimal) -> int:
    return int(amount * 100)


def _coupon_fits(coupon: Coupon, order: OrderFacts, *, first_order: bool) -> bool:
    day = order.created_at.date()
    return (
        order.subtotal >= int(coupon.min_merchandise * 100)
        and (coupon.valid_from is None or coupon.valid_from <= day)
        and (coupon.valid_until is None or day <= coupon.valid_until)
        and (first_order or not coupon.first_order_only)
    )


def refund_cents_for(order: OrderFacts, line: LineFacts, quantity: int, *, restocking: bool) -> tuple[int, int]:
    """(refund, restocking fee) for ``quantity`` units of ``line``: their price less their share of the order's
    discount, less the fee when ``restocking``. Shipping is never part of it."""
    merchandise = cents(line.unit_cents * quantity)
    paid = merchandise - discount_share(
        merchandise=merchandise, discount_total=cents(order.discount), subtotal=cents(order.subtotal)
    )
    fee = restocking_fee(paid) if restocking else Decimal(0)
    return _in_cents(paid - fee), _in_cents(fee)


# --- Payment and shipping -------------------------------------------------------------------------------


class _Counters:
    def __init__(self) -> None:
        self.payments = 0
        self.shipments = 0
        self.transactions: set[str] = set()
        self.tracking: set[str] = set()

    def payment_id(self) -> str:
        self.payments += 1
        return f"pay-{self.payments:06d}"

    def shipment_id(self) -> str:
        self.shipments += 1
        return f"shp-{self.shipments:06d}"

    def transaction_id(self, rng: random.Random) -> str:
        while True:
            value = f"txn_{rng.getrandbits(64):016x}"
            if value not in self.transactions:
                self.transactions.add(value)
                return value

    def tracking_number(self, rng: random.Random, carrier: str) -> str:
        while True:
            if carrier == "ups":
                value = "1Z" + "".join(rng.choice(_ALNUM) for _ in range(6)) + f"{rng.randrange(10**10):010d}"
            elif carrier == "fedex":
                value = f"{rng.randrange(10**12):012d}"
            elif carrier == "usps":
                value = f"9400{rng.randrange(10**18):018d}"
            else:
                value = f"{rng.randrange(10**10):010d}"
            if value not in self.tracking:
                self.tracking.add(value)
                return value


def _fulfil(rng: random.Random, order: OrderFacts, *, timeline: Timeline, counter: _Counters) -> None:
    age = timeline.days_ago(order.created_at)
    method = "bank_transfer" if order.total >= 100000 and rng.random() < 0.25 else None
    method = method or rng.choices(("card", "paypal", "apple_pay", "google_pay"), weights=(60, 20, 11, 9))[0]
    attempt_at = order.created_at + timedelta(seconds=rng.randint(30, 240))
    if age > 0.2 and rng.random() < 0.045:
        # A declined card first, then a second attempt that went through.
        failed_at = attempt_at
        order.payments.append(
            PaymentFacts(
                counter.payment_id(),
                "card",
                "failed",
                order.total,
                failed_at,
                failed_at + timedelta(seconds=4),
                counter.transaction_id(rng),
                card_last4=f"{rng.randrange(10000):04d}",
                failure_reason=rng.choice(PAYMENT_FAILURES),
            )
        )
        attempt_at = failed_at + timedelta(minutes=rng.randint(3, 45))
        method = rng.choice(("card", "paypal", "apple_pay"))
    payment = PaymentFacts(
        counter.payment_id(),
        method,
        "captured",
        order.total,
        attempt_at,
        attempt_at + timedelta(seconds=5),
        counter.transaction_id(rng),
        card_last4=f"{rng.randrange(10000):04d}" if method == "card" else "",
    )
    order.payments.append(payment)
    if "backorder" in order.mess:
        order.status, payment.status = "backorder", "authorized"
        order.notes = "Waiting on stock for a backordered item; the whole order ships together."
        return
    if age < 1 and rng.random() < 0.6:
        order.status = "pending"
        payment.status = "pending" if method == "bank_transfer" else "authorized"
        if payment.status == "pending":
            payment.processed_at = None
        return
    if age > 1 and order.build is None and rng.random() < CANCEL_SHARE:
        order.status, payment.status = "cancelled", "voided"
        order.cancelled_at = order.created_at + timedelta(minutes=rng.randint(20, 20 * 60))
        payment.updated_at = order.cancelled_at
        order.notes = rng.choice(
            (
                "Cancelled at the customer's request before shipment.",
                "Cancelled: customer ordered the wrong item and reordered.",
                "Cancelled by order processing: suspected fraud check failed.",
            )
        )
        return
    payment.status = "captured" if age < 5 else "completed"
    order.status = "paid"
    lag = timedelta(hours=rng.randint(6, 60) + (48 if order.build else 0))
    shipped_at = _business_hours(rng, order.created_at + lag, timeline)
    label_at = max(order.created_at + timedelta(minutes=40), shipped_at - timedelta(hours=rng.randint(2, 10)))
    if label_at > timeline.now:
        return
    warehouse = rng.choice(WAREHOUSES)
    origin = f"{warehouse[0]}, {warehouse[1]}"
    events = [_event(label_at, "label_created", origin)]
    shipment = ShipmentFacts(
        counter.shipment_id(),
        order.carrier,
        order.service,
        counter.tracking_number(rng, order.carrier),
        "label_created",
        label_at,
        None,
        None,
        None,
        events,
    )
    order.shipment = shipment
    if shipped_at > timeline.now:
        return
    order.status = "fulfilled"
    low, high = TRANSIT_DAYS[order.service]
    days = rng.randint(low, high)
    shipment.shipped_at = shipped_at
    shipment.eta = shipped_at.date() + timedelta(days=high)
    shipment.status = "in_transit"
    # Only the scans that matter are kept (the label's time is the shipment's created_at): images stay small.
    events[:] = [_event(shipped_at, "picked_up", origin)]
    destination = f"{order.address['city']}, {order.address['state']}"
    delivered_at = timeline.at(shipped_at.date() + timedelta(days=days), rng.randint(10, 19), rng.randint(0, 59))
    if days >= 3:
        hub = rng.choice(CITIES)
        middle = shipped_at + (delivered_at - shipped_at) / 2
        if middle <= timeline.now:
            events.append(_event(middle.replace(microsecond=0), "in_transit", f"{hub[0]}, {hub[1]}"))
    if age > 8 and rng.random() < 0.015:
        when = datetime.fromisoformat(events[-1]["at"]) + timedelta(hours=rng.randint(6, 30))
        shipment.status = "exception"
        events.append(_event(when, "exception", destination, detail="damaged in transit, returning to sender"))
        return
    out_at = timeline.at(delivered_at.date(), 7, rng.randint(0, 59))
    if delivered_at <= timeline.now:
        spot = rng.choice(("front door", "mailroom", "side door", "reception", "handed to resident"))
        events.append(_event(delivered_at, "delivered", destination, detail=spot))
        shipment.status = "delivered"
        shipment.delivered_at = delivered_at
    elif out_at <= timeline.now:
        events.append(_event(out_at, "out_for_delivery", destination))
        shipment.status = "out_for_delivery"


def _business_hours(rng: random.Random, moment: datetime, timeline: Timeline) -> datetime:
    if moment.hour < 8:
        return timeline.at(moment.date(), rng.randint(8, 11), rng.randint(0, 59))
    if moment.hour >= 19:
        return timeline.at(moment.date() + timedelta(days=1), rng.randint(8, 11), rng.randint(0, 59))
    return moment


def _event(moment: datetime, status: str, location: str, *, detail: str = "") -> dict:
    event = {"at": moment.isoformat(), "status": status, "location": location}
    if detail:
        event["detail"] = detail
    return event


# --- Deliberate contradictions ----------------------------------------------------------------------


def _contradictions(orders: list[OrderFacts], *, timeline: Timeline, mess: MessPlan, counter: _Counters) -> None:
    def plain(order: OrderFacts) -> bool:
        return order.build is None and not order.mess and len(order.payments) == 1 and not order.notes

    delivered_old = [o for o in orders if plain(o) and o.delivered_at and timeline.days_ago(o.delivered_at) > 60]
    for order in mess.pick(delivered_old, mess.share(len(orders))):
        order.address = None
        order.mess.append("order_missing_shipping_data")
        mess.record(
            "order_missing_shipping_data",
            order.id,
            related=(order.shipment.id,),
            note="phone order: no address, carrier, service or ETA on the order; the shipment has them",
        )
    settled = [o for o in orders if plain(o) and o.delivered_at and timeline.days_ago(o.delivered_at) > 30]
    for order in mess.pick(settled, mess.handful()):
        gap = mess.rng.randint(1, 7)
        order.payment.amount = order.total - gap
        order.notes = PAYMENT_SHORT_NOTE.format(paid=cents(order.payment.amount), total=cents(order.total), gap=gap)
        order.mess.append("payment_short_by_cents")
        mess.record(
            "payment_short_by_cents",
            order.payment.id,
            related=(order.id,),
            note=f"{gap} cent{'s' if gap > 1 else ''} below the order total",
        )
    recent = [o for o in orders if plain(o) and o.delivered_at and 5 <= timeline.days_ago(o.created_at) <= 60]
    for order in mess.pick(recent, mess.handful()):
        first = order.payment
        again = PaymentFacts(
            counter.payment_id(),
            first.method,
            first.status,
            first.amount,
            first.created_at + timedelta(seconds=47),
            first.processed_at + timedelta(seconds=47),
            counter.transaction_id(mess.rng),
            first.card_last4,
        )
        order.payments.append(again)
        order.mess.append("duplicate_charge")
        mess.record("duplicate_charge", order.id, related=(first.id, again.id), note="charged twice 47 seconds apart")
    delivered_recent = [
        o for o in orders if plain(o) and o.delivered_at and 3 <= timeline.days_ago(o.delivered_at) <= 25
    ]
    for order in mess.pick(delivered_recent, mess.handful()):
        # The ticket that says it never came is written by the support section.
        order.mess.append("delivered_but_reported_missing")


# --- Refunds ------------------------------------------------------------------------------------------


def _refund_orders(
    rng: random.Random, orders: list[OrderFacts], *, scale: float, timeline: Timeline
) -> list[RefundFacts]:
    refunds: list[RefundFacts] = []
    for order in orders:
        shipment = order.shipment
        if shipment and shipment.status == "exception" and not order.mess:
            exception_at = datetime.fromisoformat(shipment.events[-1]["at"])
            created = exception_at + timedelta(days=rng.randint(1, 4), hours=rng.randint(1, 6))
            if created <= timeline.now - timedelta(days=1):
                _add_refund(rng, order, order.lines, "shipping_issue", created, timeline, refunds, full=True)
    candidates = [o for o in orders if o.delivered_at and not o.mess and o.status == "fulfilled"]
    target = min(len(candidates), round(REFUND_SHARE * ORDERS_AT_SCALE_1 * scale))
    chosen = sorted(rng.sample(range(len(candidates)), target))
    for index in chosen:
        order = candidates[index]
        since = timeline.days_ago(order.delivered_at)
        reason = rng.choices(
            ("customer_remorse", "defective", "incompatible", "price_match", "other", "late"),
            weights=(36, 28, 16, 8, 4, 8),
        )[0]
        if reason == "late" and since > RETURN_WINDOW_DAYS + 1:
            # Asked after the window closed: rejected, and the ticket explains why.
            created = order.delivered_at + timedelta(days=rng.randint(RETURN_WINDOW_DAYS + 1, RETURN_WINDOW_DAYS + 20))
            if created < timeline.now:
                _add_refund(
                    rng,
                    order,
                    [rng.choice(order.lines)],
                    "customer_remorse",
                    created,
                    timeline,
                    refunds,
                    rejected="Requested {days} days after delivery, outside the 30-day return window.",
                )
            continue
        if reason == "price_match":
            created = order.created_at + timedelta(
                days=rng.randint(1, PRICE_MATCH_WINDOW_DAYS), hours=rng.randint(0, 8)
            )
        else:
            reason = "customer_remorse" if reason == "late" else reason
            window = min(RETURN_WINDOW_DAYS, int(since))
            if window < 1:
                continue
            created = order.delivered_at + timedelta(days=rng.randint(1, window), hours=rng.randint(0, 6))
        if created > timeline.now:
            continue
        lines = [rng.choice(order.lines)]
        if len(order.lines) > 1 and rng.random() < 0.15:
            lines = order.lines
        _add_refund(rng, order, lines, reason, created, timeline, refunds)
        if len(order.lines) > 1 and rng.random() < 0.1 and reason in ("customer_remorse", "defective"):
            others = [line for line in order.lines if line not in lines]
            later = created + timedelta(days=rng.randint(1, 6))
            if others and later <= timeline.now and (later - order.delivered_at).days <= RETURN_WINDOW_DAYS:
                _add_refund(rng, order, [rng.choice(others)], reason, later, timeline, refunds)
    return refunds


_REFUND_NOTES = {
    "customer_remorse": ("Changed mind; item returned {state}.", "No longer needed; returned {state}."),
    "incompatible": ("Did not fit the customer's system; returned {state}.", "Wrong part for their build; {state}."),
    "defective": (
        "Dead on arrival; defect confirmed from photos.",
        "Failed within days of delivery; defect confirmed.",
    ),
    "shipping_issue": ("Carrier damaged the parcel in transit; merchandise refunded, shipping not refundable.",),
    "price_match": ("Matched a lower advertised price at an authorized retailer within 14 days.",),
    "other": ("Goodwill credit for a delivery that arrived days after its estimate.",),
}


def _add_refund(rng, order, lines, reason, created, timeline, refunds, *, full=False, rejected="") -> None:
    refundable = order.payment.amount - order.shipping
    refundable -= sum(r.amount + r.fee for r in order.refunds if r.status != "rejected")
    opened = reason in ("customer_remorse", "incompatible") and rng.random() < 0.5
    chosen: list[tuple[LineFacts, int]] = []
    amount = fee = 0
    if reason == "price_match":
        line = lines[0]
        competitor = line.unit_cents * rng.randint(90, 97) // 100
        amount = (line.unit_cents - competitor) * line.quantity
        chosen = [(line, line.quantity)]
    elif reason == "other":
        amount = min(2500, order.subtotal // 10)
    else:
        already: Counter[str] = Counter()
        for earlier in order.refunds:
            if earlier.status != "rejected" and earlier.reason not in ("price_match", "other"):
                for line, quantity in earlier.lines:
                    already[line.id] += quantity
        for line in lines:
            left = line.quantity - already[line.id]
            if left <= 0:
                continue
            quantity = left if full or rng.random() < 0.7 else rng.randint(1, left)
            restocking = opened and line.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES
            line_amount, line_fee = refund_cents_for(order, line, quantity, restocking=restocking)
            amount, fee = amount + line_amount, fee + line_fee
            chosen.append((line, quantity))
        if not chosen:
            return
    amount = min(amount, refundable - fee)
    if amount <= 0:
        return
    approved_at = processed = decided = None
    if rejected:
        status = "rejected"
        decided = min(created + timedelta(days=rng.randint(1, 3)), timeline.now)
        notes = rejected.format(days=(created - order.delivered_at).days)
    else:
        if reason in REFUND_APPROVED_AT_ONCE_REASONS and amount <= APPROVAL_LIMIT_CENTS:
            approved_at = created
        elif reason in ("customer_remorse", "incompatible"):
            # Approved when the returned item has arrived and passed inspection.
            approved_at = created + timedelta(days=rng.randint(4, 10), hours=rng.randint(1, 8))
        else:
            approved_at = created + timedelta(days=rng.randint(1, 3), hours=rng.randint(1, 8))
        processed = approved_at + timedelta(days=rng.randint(2, 5), hours=rng.randint(1, 8))
        if approved_at > timeline.now:
            status, processed = "pending", None
        elif processed > timeline.now:
            status, processed = "approved", None
        else:
            status = "processed"
        state = "unopened in original packaging"
        if opened:
            state = f"opened, undamaged ({RESTOCKING_FEE_PCT}% restocking fee)" if fee else "opened, undamaged"
        notes = rng.choice(_REFUND_NOTES[reason]).format(state=state)
    refund = RefundFacts(order, order.payment, amount, reason, status, fee, created, processed, chosen, notes)
    refund.decided_at = decided or (approved_at if approved_at and approved_at <= timeline.now else None)
    order.refunds.append(refund)
    refunds.append(refund)


def _settle_statuses(order: OrderFacts) -> None:
    moving = [r for r in order.refunds if r.counts]
    if not moving:
        return
    returned = Counter()
    for refund in moving:
        if refund.reason not in ("price_match", "other"):
            for line, quantity in refund.lines:
                returned[line.id] += quantity
    everything = all(returned[line.id] >= line.quantity for line in order.lines)
    order.status = "refunded" if everything else "partially_refunded"
    order.payment.status = "refunded" if everything else "partially_refunded"
    order.payment.updated_at = max(r.processed_at or r.created_at for r in moving)


# --- Rows -------------------------------------------------------------------------------------------------


def _write_builds(builds: list[BuildFacts], *, sink: RowSink) -> None:
    for build in builds:
        updated = build.ordered_at or build.created_at
        sink.add(
            Build(
                id=build.id,
                customer_id=build.customer.id,
                name=build.name,
                status=build.status,
                notes="",
                created_at=build.created_at,
                updated_at=updated,
            )
        )
        for component_id, (product, quantity) in zip(build.component_ids, build.parts, strict=True):
            sink.add(BuildComponent(id=component_id, build_id=build.id, product_id=product.id, quantity=quantity))


def _write_order(order: OrderFacts, *, sink: RowSink) -> None:
    shipment = order.shipment
    keyed_in = order.address is not None
    sink.add(
        Order(
            id=order.id,
            customer_id=order.customer.id,
            status=order.status,
            build_id=order.build.id if order.build else None,
            subtotal=cents(order.subtotal),
            discount_code=order.coupon,
            discount_total=cents(order.discount),
            shipping_cost=cents(order.shipping),
            tax_total=cents(order.tax),
            total=cents(order.total),
            shipping_address=order.address,
            carrier=order.carrier if keyed_in else "",
            shipping_service=order.service if keyed_in else "",
            estimated_delivery=(shipment.eta if shipment else None) if keyed_in else None,
            notes=order.notes,
            created_at=order.created_at,
            updated_at=order.updated_at,
        )
    )
    for line in order.lines:
        sink.add(
            OrderLineItem(
                id=line.id,
                order_id=order.id,
                product_id=line.product.id,
                quantity=line.quantity,
                unit_price=cents(line.unit_cents),
            )
        )
    for payment in order.payments:
        sink.add(
            Payment(
                id=payment.id,
                order_id=order.id,
                customer_id=order.customer.id,
                amount=cents(payment.amount),
                method=payment.method,
                status=payment.status,
                transaction_id=payment.transaction_id,
                card_last4=payment.card_last4,
                processed_at=payment.processed_at,
                failure_reason=payment.failure_reason,
                created_at=payment.created_at,
                updated_at=payment.updated_at or payment.processed_at or payment.created_at,
            )
        )
    for parcel in order.parcels:
        sink.add(
            Shipment(
                id=parcel.id,
                order_id=order.id,
                carrier=parcel.carrier,
                service=parcel.service,
                tracking_number=parcel.tracking_number,
                status=parcel.status,
                shipped_at=parcel.shipped_at,
                estimated_delivery=parcel.eta,
                delivered_at=parcel.delivered_at,
                events=parcel.events,
                line_items=[{"line_item_id": line.id, "quantity": quantity} for line, quantity in parcel.lines],
                created_at=parcel.label_at,
                updated_at=datetime.fromisoformat(parcel.events[-1]["at"]),
            )
        )


def _refund_row(refund: RefundFacts) -> Refund:
    return Refund(
        id=refund.id,
        payment_id=refund.payment.id,
        amount=cents(refund.amount),
        reason=refund.reason,
        status=refund.status,
        restocking_fee=cents(refund.fee),
        line_items=[{"line_item_id": line.id, "quantity": quantity} for line, quantity in refund.lines],
        processed_at=refund.processed_at,
        notes=refund.notes,
        created_at=refund.created_at,
        updated_at=refund.processed_at or refund.decided_at or refund.created_at,
    )


# --- What the manifest says about commerce ----------------------------------------------------------------

SCENARIO_CAP = 200


def _record_discontinued(orders: list[OrderFacts], *, catalog: Catalog, mess: MessPlan) -> None:
    found = 0
    for order in orders:
        gone = [line.product.id for line in order.lines if line.product.id in catalog.sold_until]
        if gone and found < SCENARIO_CAP:
            found += 1
            mess.record("discontinued_in_old_order", order.id, related=tuple(gone), note="ordered before it left sale")


def _scenarios(orders: list[OrderFacts], builds: list[BuildFacts], *, timeline: Timeline) -> dict[str, list[str]]:
    boundary, window, exceptions = [], [], []
    for order in orders:
        delivered = order.delivered_at
        if order.shipment and order.shipment.status == "exception":
            exceptions.append(order.id)
        if not delivered:
            continue
        if 0 <= timeline.days_ago(delivered) <= RETURN_WINDOW_DAYS and not order.refunds and not order.mess:
            window.append(order.id)
        for line in order.lines:
            if line.product.warranty_months == 12:
                ends = add_months(delivered.date(), 12)
                if abs((ends - timeline.today).days) <= 31:
                    boundary.append(order.id)
                    break
    return {
        "warranty_boundary_orders": boundary[:SCENARIO_CAP],
        "return_window_open_orders": window[:SCENARIO_CAP],
        "exception_shipment_orders": exceptions[:SCENARIO_CAP],
        "incompatible_builds": [b.id for b in builds if b.violated_rule][:SCENARIO_CAP],
        "ordered_incompatible_builds": [b.id for b in builds if b.violated_rule and b.order_id][:SCENARIO_CAP],
    }


def warranty_end(delivered: datetime, months: int) -> date:
    """The last day of a product's warranty: delivery date + its warranty months."""
    return add_months(delivered.date(), months)
