"""Writes to the live world that more than one edge needs (the admin, its actions)."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.db.models import DecimalField, ExpressionWrapper, F, Sum

from world_app.models import Order
from world_app.money import ZERO, merchandise_discount, to_cent
from world_app.store_rules import COUPONS, LOYALTY_DISCOUNT_PCT


def order_merchandise_discount(*, subtotal: Decimal, loyalty_tier: str, coupon_code: str = "") -> Decimal:
    """The discount on merchandise by the store's policy (``world_app.money.merchandise_discount``), for an
    order's loyalty tier and coupon code. Unknown codes, and coupons whose merchandise minimum the subtotal does
    not reach, take nothing off."""
    coupon = COUPONS.get(coupon_code.strip().upper()) if coupon_code else None
    if coupon is not None and subtotal < coupon.min_merchandise:
        coupon = None
    return merchandise_discount(
        merchandise=subtotal, loyalty_pct=LOYALTY_DISCOUNT_PCT[loyalty_tier], coupon=coupon
    ).total


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
    order.subtotal = to_cent(subtotal)
    order.discount_total = order_merchandise_discount(
        subtotal=order.subtotal, loyalty_tier=order.customer.loyalty_tier, coupon_code=order.discount_code
    )
    order.total = order.subtotal - order.discount_total + order.shipping_cost + order.tax_total
    order.save(update_fields=["subtotal", "discount_total", "total"])
    return order
