"""Writes to the live world that more than one edge needs (the admin, its actions)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.db.models import DecimalField, ExpressionWrapper, F, Sum

from world_app.models import Order
from world_app.policies import COUPONS, LOYALTY_DISCOUNT_PCT

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def _cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def order_merchandise_discount(*, subtotal: Decimal, loyalty_tier: str, coupon_code: str = "") -> Decimal:
    """The discount on merchandise by the store's policy (never on shipping).

    First the loyalty tier's percent of the subtotal, then one coupon on what remains: a percent coupon takes
    its percent, an amount coupon its amount (at most what remains), when the merchandise reaches the coupon's
    minimum. Unknown codes and free-shipping coupons take nothing off merchandise. Rounded half-up to the cent,
    the same arithmetic as the generator and the agent tools.
    """
    loyalty = _cents(subtotal * Decimal(LOYALTY_DISCOUNT_PCT[loyalty_tier]) / Decimal(100))
    remaining = subtotal - loyalty
    coupon = COUPONS.get(coupon_code.strip().upper()) if coupon_code else None
    off = ZERO
    if coupon is not None and subtotal >= coupon.min_merchandise:
        if coupon.kind == "percent":
            off = _cents(remaining * coupon.value / Decimal(100))
        elif coupon.kind == "amount":
            off = min(coupon.value, remaining)
    return loyalty + off


@transaction.atomic
def order_recalculate_totals(*, order: Order) -> Order:
    """Recompute an order's subtotal, discount and total from its line items, and save them.

    subtotal = sum(quantity x unit_price); discount_total = loyalty discount then the order's coupon
    (``order_merchandise_discount``); total = subtotal - discount_total + shipping_cost + tax_total.
    Shipping and tax are kept as they are: discounts never apply to shipping.
    """
    line_total = ExpressionWrapper(
        F("unit_price") * F("quantity"), output_field=DecimalField(max_digits=14, decimal_places=2)
    )
    subtotal = order.line_items.aggregate(s=Sum(line_total))["s"] or ZERO
    order.subtotal = _cents(subtotal)
    order.discount_total = order_merchandise_discount(
        subtotal=order.subtotal, loyalty_tier=order.customer.loyalty_tier, coupon_code=order.discount_code
    )
    order.total = order.subtotal - order.discount_total + order.shipping_cost + order.tax_total
    order.save(update_fields=["subtotal", "discount_total", "total"])
    return order
