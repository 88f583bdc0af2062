"""The loyalty spend rule (``world_app.store_rules``): what a customer spent over the last months, the tier it
earns, and the exception note an account carries when its tier is not the earned one.

The generator records the exceptions when it seeds a world; the rulebook checks every account against it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date
from decimal import Decimal

from world_app.models import Customer, Order, Refund, RefundStatus
from world_app.store_rules import LOYALTY_SPEND_MONTHS, LOYALTY_TIER_SPEND
from world_app.tools.coverage import add_months
from world_app.tools.results import local_date

# A loyalty exception is a line of the account's notes that starts with this, and says why, who and when.
LOYALTY_EXCEPTION_NOTE = "Loyalty exception:"
# The review that moved an account to the tier its spend earns leaves a line saying what it held before (the tier
# its older orders were priced with): "Loyalty review 2025-09-15: gold -> none ($0.00 in 12 months ...)".
LOYALTY_REVIEW_NOTE = "Loyalty review"
_TIER = r"(none|silver|gold|platinum)"
_REVIEW_LINE = re.compile(rf"^{LOYALTY_REVIEW_NOTE} (\d{{4}}-\d{{2}}-\d{{2}}): {_TIER} -> {_TIER}\b")
LOYALTY_RANK = {"none": 0, "silver": 1, "gold": 2, "platinum": 3}
SPEND_STATUSES_EXCLUDED = frozenset({"pending", "cancelled"})


def tier_for_spend(spend: Decimal) -> str:
    earned = "none"
    for tier, threshold in LOYALTY_TIER_SPEND.items():
        if spend >= threshold:
            earned = tier
    return earned


def loyalty_spend(*, today: date, using: str | None = None) -> dict[str, Decimal]:
    """Each customer's spend over the last LOYALTY_SPEND_MONTHS months to ``today``: order totals less refunds."""
    since = add_months(today, -LOYALTY_SPEND_MONTHS)
    orders = Order.objects.using(using) if using else Order.objects
    refunds = Refund.objects.using(using) if using else Refund.objects
    refunded: dict[str, Decimal] = defaultdict(Decimal)
    for order_id, amount in (
        refunds.exclude(status=RefundStatus.REJECTED).values_list("payment__order_id", "amount").order_by("id")
    ):
        refunded[order_id] += amount
    spend: dict[str, Decimal] = defaultdict(Decimal)
    for order_id, customer_id, total, status, created in orders.values_list(
        "id", "customer_id", "total", "status", "created_at"
    ).order_by("id"):
        if status in SPEND_STATUSES_EXCLUDED or not since <= local_date(created) <= today:
            continue
        spend[customer_id] += total - refunded.get(order_id, Decimal(0))
    return dict(spend)


def has_loyalty_exception(customer: Customer) -> bool:
    return any(line.startswith(LOYALTY_EXCEPTION_NOTE) for line in (customer.notes or "").splitlines())


def loyalty_review_note(*, day: date, before: str, after: str, spent: Decimal) -> str:
    """The account's line for a review that changed its tier; ``tier_before_review`` reads it back."""
    return (
        f"{LOYALTY_REVIEW_NOTE} {day.isoformat()}: {before} -> {after} (${spent:,.2f} spent in the last "
        f"{LOYALTY_SPEND_MONTHS} months; {before} was the tier given at sign-up under the former program, "
        f"and orders placed up to the review carry its discount)."
    )


def tier_before_review(customer: Customer) -> tuple[date, str] | None:
    """The review day and the tier the account held until the review (its orders up to then carry that tier's
    discount), when a review changed its tier. The review ran at the world's "now" of that day."""
    for line in (customer.notes or "").splitlines():
        match = _REVIEW_LINE.match(line)
        if match:
            return date.fromisoformat(match.group(1)), match.group(2)
    return None
