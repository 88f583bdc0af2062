"""The store's order money arithmetic, once: discounts, shipping, tax and what a refund gives back.

The generator (in cents), the agent tools' quotes and refunds (``world_app.tools.pricing``) and the admin's
recalculation (``world_app.services``) all price through these functions, so a task's expected figures, a
tool's answer and an edited order agree to the cent. Every amount is a Decimal in dollars, rounded half-up
to the cent. Which coupon may be used is each caller's check; these functions only price.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from world_app.store_rules import (
    FREE_GROUND_SHIPPING_OVER,
    RESTOCKING_FEE_PCT,
    SALES_TAX_PCT,
    SHIPPING_RATES,
    Coupon,
)

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
HUNDRED = Decimal("100")


def to_cent(value: Decimal) -> Decimal:
    """``value`` rounded half-up to the cent."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def percent_of(amount: Decimal, pct: Decimal | int) -> Decimal:
    """``pct`` percent of ``amount``, to the cent."""
    return to_cent(amount * Decimal(pct) / HUNDRED)


@dataclass(frozen=True)
class MerchandiseDiscount:
    """The discount on merchandise: the loyalty tier's percent first, then one coupon on what remains."""

    merchandise: Decimal
    loyalty: Decimal
    coupon: Decimal

    @property
    def total(self) -> Decimal:
        return self.loyalty + self.coupon

    @property
    def remaining(self) -> Decimal:
        """Merchandise after discounts: what shipping's threshold and tax are reckoned on."""
        return self.merchandise - self.total


def merchandise_discount(*, merchandise: Decimal, loyalty_pct: int, coupon: Coupon | None) -> MerchandiseDiscount:
    """Loyalty percent of the merchandise, then ``coupon`` (already found usable) on what remains: a percent
    coupon takes its percent, an amount coupon its amount (at most what remains); a free-shipping coupon
    takes nothing off merchandise. Discounts never apply to shipping."""
    loyalty = percent_of(merchandise, loyalty_pct)
    remaining = merchandise - loyalty
    off = ZERO
    if coupon is not None and coupon.kind == "percent":
        off = percent_of(remaining, coupon.value)
    elif coupon is not None and coupon.kind == "amount":
        off = min(coupon.value, remaining)
    return MerchandiseDiscount(merchandise=merchandise, loyalty=loyalty, coupon=off)


def ground_ships_free(service: str, *, merchandise_after_discounts: Decimal) -> bool:
    return service == "ground" and merchandise_after_discounts > FREE_GROUND_SHIPPING_OVER


def shipping_cost(service: str, *, merchandise_after_discounts: Decimal, free_shipping_coupon: bool) -> Decimal:
    """The service's rate; nothing with a free-shipping coupon or on ground over the threshold."""
    if free_shipping_coupon or ground_ships_free(service, merchandise_after_discounts=merchandise_after_discounts):
        return ZERO
    return SHIPPING_RATES[service]


def sales_tax(merchandise_after_discounts: Decimal) -> Decimal:
    return percent_of(merchandise_after_discounts, SALES_TAX_PCT)


def discount_share(*, merchandise: Decimal, discount_total: Decimal, subtotal: Decimal) -> Decimal:
    """The part of an order's discount that ``merchandise`` of its lines carries (shared by value)."""
    if subtotal <= 0:
        return ZERO
    return to_cent(merchandise * discount_total / subtotal)


def restocking_fee(paid: Decimal) -> Decimal:
    return percent_of(paid, RESTOCKING_FEE_PCT)
