"""Fulfilling orders: payments (failures and all), shipments by carrier and service with their transit days and
events, the order's status as it goes, and the records that contradict each other on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta

from world_app.generator.commerce.facts import (
    _ALNUM,
    CANCEL_SHARE,
    PAYMENT_FAILURES,
    TRANSIT_DAYS,
    OrderFacts,
    PaymentFacts,
    ShipmentFacts,
)
from world_app.generator.mess import PAYMENT_SHORT_NOTE, MessPlan
from world_app.generator.timeline import Timeline, cents
from world_app.generator.vocabulary import CITIES, WAREHOUSES

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


def declined_card_payment(
    rng: random.Random,
    counter: _Counters,
    order: OrderFacts,
    at: datetime,
    *,
    reasons: Sequence[str] = (),
    reason: str = "",
) -> PaymentFacts:
    """A card payment of the order's total that the bank declined at ``at`` (answered in 4 seconds). The reason is
    ``reason``, or one of ``reasons`` drawn after the card's digits (the order the generator has always drawn in)."""
    payment_id = counter.payment_id()
    transaction_id = counter.transaction_id(rng)
    card_last4 = f"{rng.randrange(10000):04d}"
    return PaymentFacts(
        payment_id,
        "card",
        "failed",
        order.total,
        at,
        at + timedelta(seconds=4),
        transaction_id,
        card_last4=card_last4,
        failure_reason=reason or rng.choice(reasons),
    )


def _fulfil(rng: random.Random, order: OrderFacts, *, timeline: Timeline, counter: _Counters) -> None:
    age = timeline.days_ago(order.created_at)
    method = "bank_transfer" if order.total >= 100000 and rng.random() < 0.25 else None
    method = method or rng.choices(("card", "paypal", "apple_pay", "google_pay"), weights=(60, 20, 11, 9))[0]
    attempt_at = order.created_at + timedelta(seconds=rng.randint(30, 240))
    if age > 0.2 and rng.random() < 0.045:
        # A declined card first, then a second attempt that went through.
        failed_at = attempt_at
        order.payments.append(declined_card_payment(rng, counter, order, failed_at, reasons=PAYMENT_FAILURES))
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
