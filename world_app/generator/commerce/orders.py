"""Placing orders: who buys what on which day (backorders included) and what it costs, priced by
``world_app.money`` with the buyer's tier and at most one coupon, in integer cents.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal

from world_app.generator.builds import BuildFacts
from world_app.generator.catalog import Catalog
from world_app.generator.commerce.facts import ORDERS_AT_SCALE_1, RECENT_SHARE, LineFacts, OrderFacts
from world_app.generator.mess import MessPlan
from world_app.generator.people import CustomerFacts
from world_app.generator.timeline import ORDERS_START, Timeline, cents
from world_app.models import Product
from world_app.money import discount_share, merchandise_discount, restocking_fee, sales_tax, shipping_cost
from world_app.store_rules import COUPONS, Coupon

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
