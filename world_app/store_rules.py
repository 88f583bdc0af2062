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
# Opened items returned for one of these reasons pay a restocking fee of this percent of the returned
# merchandise; defective, transit-damaged (shipping_issue) and other returns never do.
RESTOCKING_FEE_PCT = Decimal("15")
RESTOCKING_FEE_REASONS = frozenset({"customer_remorse", "incompatible"})
# A withheld restocking fee is kept: no later refund of the order can give it back.
RESTOCKING_FEES_REFUNDABLE = False
# Categories that never pay a restocking fee (low value, sealed consumables).
RESTOCKING_FEE_EXEMPT_CATEGORIES = frozenset({"cable", "accessory"})
# Shipping is kept once the order has shipped (a return refunds merchandise only). An order that never shipped
# gives its shipping back with its last units, and money taken beyond the order's total (a duplicate charge)
# is refunded in full.
SHIPPING_KEPT_ONCE_SHIPPED = True
# An agent may refund up to this much of one order on one day; above it (one refund or several that add up)
# the refunds wait for a team lead's approval (an escalation of type policy_exception).
REFUND_APPROVAL_LIMIT = Decimal("500.00")
# A team lead may approve, by a policy_exception escalation, a return this many days past the window and a
# warranty claim this many days past expiry.
RETURN_EXCEPTION_DAYS = 15
WARRANTY_EXCEPTION_DAYS = 30

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
# A tier is earned by spending at least this much (order totals, less refunds) over the last
# LOYALTY_SPEND_MONTHS months; a tier the spend does not explain needs a recorded exception on the account.
LOYALTY_TIER_SPEND = {"silver": Decimal("500"), "gold": Decimal("1500"), "platinum": Decimal("4000")}
LOYALTY_SPEND_MONTHS = 12
# Tiers follow the spend; a team lead or manager may keep a tier the spend no longer earns for a handful of
# accounts (a goodwill gesture, a migrated trade agreement, a grace period), recorded with who, when and why.
LOYALTY_EXCEPTION_SHARE = 0.006

# Price match: the difference is refunded when an authorised retailer sells the identical item for less
# within this many days of our sale; marketplace sellers and clearance prices do not count.
PRICE_MATCH_WINDOW_DAYS = 14
# One price-match claim per order line, for less than what was paid for its units (a difference, not the price).
PRICE_MATCH_CLAIMS_PER_LINE = 1

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
# An order with a shipment in one of these statuses used its shipping: the shipping cost is kept.
SHIPPING_USED_SHIPMENT_STATUSES = SHIPPED_SHIPMENT_STATUSES | {"returned"}
# Only money actually taken can be given back; an authorised payment is voided instead.
REFUNDABLE_PAYMENT_STATUSES = frozenset({"captured", "completed", "partially_refunded"})
# Refunds return what was paid: an order-level discount is shared across its lines by value.
REFUND_DISCOUNT_PRORATED = True
# A refund for these reasons is approved at once (up to the approval limit); other returns wait until the
# returned units are received and inspected. A refund that returns no units (an amount) has nothing to wait for.
REFUND_APPROVED_AT_ONCE_REASONS = frozenset({"defective"})
# Warranty claims for these causes need the part inspected before a decision.
WARRANTY_INSPECTION_CATEGORIES = frozenset({"unknown"})
# Remedies of an approved warranty claim: a replacement; a refund only when the product is no longer sold.
# We do not repair parts.
WARRANTY_REMEDIES = frozenset({"replacement", "refund"})
WARRANTY_REFUND_LIFECYCLES = frozenset({"discontinued", "end_of_life"})
# Which department receives each type of escalation.
ESCALATION_DESTINATIONS = {
    "product_specialist": "product_management",
    "technical": "engineering",
    "policy_exception": "support",  # a team lead approves exceptions and refunds over the limit
}
# Who may take a policy_exception escalation: a team lead or a manager (support role), or anyone holding the
# permission to approve policy exceptions.
POLICY_EXCEPTION_ROLES = frozenset({"team_lead", "manager"})
POLICY_EXCEPTION_PERMISSION = "approve_policy_exceptions"
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


# --- The rulebook: every rule once, who holds it, and where the tools and the knowledge base carry it --------
# ``holder`` says what a broken rule looks like: "tool", the tool refuses (money, state machines, permissions);
# "agent", the call succeeds and the wrong judgement shows in the world state for a rubric to see.
# ``kb`` names the knowledge-base articles (by slug) that state the rule, ``tools`` the tools that implement it.
# ``manage.py world_rules --check`` runs each rule's scenarios through those tools and checks the generated data.


@dataclass(frozen=True)
class Rule:
    id: str
    statement: str
    holder: str  # "tool" or "agent"
    tools: tuple[str, ...]
    kb: tuple[str, ...]


def _usd(amount: Decimal) -> str:
    return f"${amount:,.2f}"


RULES: tuple[Rule, ...] = (
    Rule(
        "return-window",
        f"A return is accepted within {RETURN_WINDOW_DAYS} days of delivery; after that only defective items under "
        f"warranty, or an exception a team lead approves (up to {RETURN_EXCEPTION_DAYS} days past the window).",
        "agent",
        ("get_order_details", "calculate_price", "create_refund"),
        ("returns-policy", "proc-process-return", "escalation-rules"),
    ),
    Rule(
        "return-window-basis",
        f"The {RETURN_WINDOW_DAYS} days of the return window count from the delivery date in the carrier's tracking "
        "(the order's last delivered parcel), never from the order date; the last day is delivery + "
        f"{RETURN_WINDOW_DAYS} days.",
        "agent",
        ("get_order_details", "calculate_price", "create_refund"),
        ("returns-policy", "return-window-dates"),
    ),
    Rule(
        "restocking-fee",
        f"Opened items returned as {' or '.join(sorted(RESTOCKING_FEE_REASONS))} pay a {RESTOCKING_FEE_PCT}% "
        f"restocking fee ({', '.join(sorted(RESTOCKING_FEE_EXEMPT_CATEGORIES))} exempt); defective and "
        "transit-damaged items never do.",
        "tool",
        ("calculate_price", "create_refund"),
        ("restocking-fees", "returns-policy", "delivery-problems"),
    ),
    Rule(
        "restocking-fee-kept",
        "A withheld restocking fee is kept: no later refund of the order gives it back.",
        "tool",
        ("create_refund",),
        ("restocking-fees",),
    ),
    Rule(
        "shipping-refund",
        "Shipping is kept once an order has shipped, also on a full return; a never-shipped order is refunded in "
        "full, shipping included, and a duplicate charge is refunded in full. A refund never exceeds what was "
        "taken, less the shipping kept, the fees withheld and earlier refunds.",
        "tool",
        ("get_order_details", "calculate_price", "create_refund"),
        ("returns-policy", "order-changes", "payments-billing", "proc-duplicate-charge", "faq-refund-timing"),
    ),
    Rule(
        "disputed-payment",
        "A disputed payment (a chargeback) is never refunded by an agent: the bank returns the money if the "
        "dispute goes the customer's way; the agent escalates it to a team lead (a policy_exception) with the "
        "evidence.",
        "tool",
        ("create_refund", "create_escalation"),
        ("disputed-payments", "payments-billing"),
    ),
    Rule(
        "full-refund-status",
        'When an order\'s refunds cover every unit, the order and its payment become "refunded"; otherwise '
        '"partially_refunded".',
        "tool",
        ("create_refund",),
        ("returns-policy",),
    ),
    Rule(
        "price-match",
        f"Price match: within {PRICE_MATCH_WINDOW_DAYS} days of the sale, the difference per unit, one claim per "
        "item, for less than was paid; nothing is returned, so it is approved at once.",
        "tool",
        ("create_refund",),
        ("price-match", "faq-price-match"),
    ),
    Rule(
        "approval-limit",
        f"Refunds of one order on one day that add up to more than {_usd(REFUND_APPROVAL_LIMIT)} wait for a team "
        "lead's approval (a policy_exception escalation), however they are split.",
        "tool",
        ("create_refund", "create_escalation"),
        ("escalation-rules", "returns-policy", "payments-billing"),
    ),
    Rule(
        "policy-exception-decider",
        "A policy_exception escalation goes to support, where a team lead or manager decides; it is never "
        "assigned to a plain agent.",
        "tool",
        ("create_escalation",),
        ("escalation-rules", "proc-escalate"),
    ),
    Rule(
        "warranty-coverage",
        "The warranty runs from delivery for the product's warranty_months and covers manufacturing defects; "
        f"{', '.join(WARRANTY_EXCLUSIONS)} are excluded; an unknown cause is inspected first.",
        "tool",
        ("get_order_details", "create_warranty_claim"),
        ("warranty-policy", "proc-warranty-claim", "faq-warranty-length"),
    ),
    Rule(
        "warranty-claim-day",
        "A warranty claim is made on the day the customer reported the defect (the creation of their open ticket "
        "about the order), however late it is filed; filed without such a ticket, it is made today.",
        "tool",
        ("create_warranty_claim",),
        ("warranty-policy", "proc-warranty-claim"),
    ),
    Rule(
        "warranty-remedy",
        "An approved warranty claim is met with a replacement; a refund only when the product is no longer sold; "
        "parts are not repaired.",
        "tool",
        ("create_warranty_claim",),
        ("warranty-policy",),
    ),
    Rule(
        "loyalty-tier",
        "A loyalty tier follows the spend of the last "
        f"{LOYALTY_SPEND_MONTHS} months ("
        + ", ".join(f"{tier} from {_usd(amount)}" for tier, amount in LOYALTY_TIER_SPEND.items())
        + "), except where the account records an exception; the tier's discount comes off merchandise.",
        "agent",
        ("calculate_price",),
        ("loyalty-program", "faq-loyalty"),
    ),
    Rule(
        "same-customer",
        "An order is discussed and changed only on its own customer's ticket: a refund resolves a ticket of its "
        "order's customer, a warranty claim names a ticket of the buyer.",
        "tool",
        ("create_resolution", "create_warranty_claim"),
        ("account-verification",),
    ),
    Rule(
        "cancellation",
        f"An order can be cancelled while {', '.join(sorted(CANCELLABLE_ORDER_STATUSES))} and not shipped; a "
        "shipped order is returned instead.",
        "tool",
        ("update_order_status",),
        ("order-changes", "backorders-preorders"),
    ),
    Rule(
        "one-coupon",
        f"{COUPONS_PER_ORDER} coupon per order, after the loyalty discount, on merchandise only.",
        "tool",
        ("calculate_price",),
        ("coupons",),
    ),
)
