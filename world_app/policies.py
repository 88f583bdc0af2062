"""Corecraft Computers' business policies as data: the single source for the knowledge-base policy articles
(the generator renders their numbers from here) and for the rules the agent tools enforce.
"""

from __future__ import annotations

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
