"""Corecraft Computers' business policies as data: the single source for the knowledge-base policy articles
(the generator renders their numbers from here) and for the rules the agent tools enforce.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

# Returns: a product may be returned within this many days of delivery, in original condition
# (unopened, or opened but undamaged); after that the sale is final (warranty still applies).
RETURN_WINDOW_DAYS = 30
# Opened, non-defective returns pay a restocking fee of this percent of the returned merchandise.
RESTOCKING_FEE_PCT = Decimal("15")
# Categories that never pay a restocking fee (low value, sealed consumables).
RESTOCKING_FEE_EXEMPT_CATEGORIES = frozenset({"cable", "accessory"})
# Refunds cover merchandise only: the original shipping cost is never refunded.
REFUNDS_INCLUDE_SHIPPING = False
# Refunds above this amount need a team lead's approval (an escalation of type policy_exception).
REFUND_APPROVAL_LIMIT = Decimal("500.00")

# Warranty: from the delivery date, for the product's warranty_months; covers manufacturing defects only.
WARRANTY_EXCLUSIONS = (
    "physical_damage",
    "liquid_damage",
    "overclocking",
    "improper_installation",
    "wear_and_tear",
)

# Loyalty tiers: percent off merchandise, never off shipping.
LOYALTY_DISCOUNT_PCT = {"none": 0, "silver": 5, "gold": 10, "platinum": 15}

# Price match: the difference is refunded when an authorised retailer sells the identical item for less
# within this many days of our sale; marketplace sellers and clearance prices do not count.
PRICE_MATCH_WINDOW_DAYS = 14

# Shipping charged per service (free ground shipping over the threshold).
SHIPPING_RATES = {
    "ground": Decimal("9.99"),
    "two_day": Decimal("19.99"),
    "overnight": Decimal("39.99"),
    "freight": Decimal("89.00"),
}
FREE_GROUND_SHIPPING_OVER = Decimal("150.00")
SALES_TAX_PCT = Decimal("0")  # prices are shown tax-inclusive in the simulated world

# Order status machine: which statuses an order may move to from each status.
ORDER_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"paid", "cancelled"}),
    "paid": frozenset({"fulfilled", "backorder", "cancelled", "refunded"}),
    "backorder": frozenset({"paid", "fulfilled", "cancelled"}),
    "fulfilled": frozenset({"partially_refunded", "refunded"}),
    "partially_refunded": frozenset({"partially_refunded", "refunded"}),
    "cancelled": frozenset(),
    "refunded": frozenset(),
}
# An order whose shipment has left the warehouse cannot be cancelled; it must be returned instead.
CANCELLABLE_ORDER_STATUSES = frozenset({"pending", "paid", "backorder"})

# Ticket status machine.
TICKET_TRANSITIONS: dict[str, frozenset[str]] = {
    "new": frozenset({"open", "pending_customer", "escalated", "resolved", "closed"}),
    "open": frozenset({"pending_customer", "escalated", "resolved", "closed"}),
    "pending_customer": frozenset({"open", "escalated", "resolved", "closed"}),
    "escalated": frozenset({"open", "resolved", "closed"}),
    "resolved": frozenset({"open", "closed"}),
    "closed": frozenset({"open"}),
}

# --- Rules the agent tools enforce (added with the tools) -------------------------------------------------
# A shipment in one of these statuses has left the warehouse: its order can no longer be cancelled.
SHIPPED_SHIPMENT_STATUSES = frozenset({"in_transit", "out_for_delivery", "delivered", "exception"})
# Only money actually taken can be given back; an authorised payment is voided instead.
REFUNDABLE_PAYMENT_STATUSES = frozenset({"captured", "completed", "partially_refunded"})
# Refunds return what was paid: an order-level discount is shared across its lines by value.
REFUND_DISCOUNT_PRORATED = True
# A refund for these reasons is approved at once (up to the approval limit); others wait for review.
REFUND_APPROVED_AT_ONCE_REASONS = frozenset({"defective"})
# Warranty claims for these causes need the part inspected before a decision.
WARRANTY_INSPECTION_CATEGORIES = frozenset({"unknown"})
# Which department receives each type of escalation.
ESCALATION_DESTINATIONS = {
    "product_specialist": "product_management",
    "technical": "engineering",
    "policy_exception": "support",  # a team lead approves exceptions and refunds over the limit
}
# A build's parts may change only before it is ordered.
BUILD_EDITABLE_STATUSES = frozenset({"draft", "saved"})


@dataclass(frozen=True)
class Coupon:
    """A coupon code: percent or amount off merchandise, or free ground shipping."""

    code: str
    kind: str  # "percent", "amount" or "free_shipping"
    value: Decimal
    description: str
    min_merchandise: Decimal = Decimal("0.00")
    valid_from: date | None = None
    valid_until: date | None = None
    first_order_only: bool = False


# One coupon per order; it applies after the loyalty discount, to merchandise only.
COUPONS_PER_ORDER = 1
COUPONS: dict[str, Coupon] = {
    c.code: c
    for c in (
        Coupon("WELCOME10", "percent", Decimal("10"), "10% off a customer's first order", first_order_only=True),
        Coupon("SAVE25", "amount", Decimal("25.00"), "$25 off orders of $200 or more", Decimal("200.00")),
        Coupon("BUILD50", "amount", Decimal("50.00"), "$50 off orders of $1,000 or more", Decimal("1000.00")),
        Coupon("FREESHIP", "free_shipping", Decimal("0"), "free ground shipping on any order"),
        Coupon(
            "SUMMER15",
            "percent",
            Decimal("15"),
            "15% off, summer sale",
            valid_from=date(2025, 6, 1),
            valid_until=date(2025, 8, 31),
        ),
    )
}
