"""The loyalty spend rule (``world_app.policies``): what a customer spent over the last months, the tier it
earns, and the exception note an account carries when its tier is not the earned one.

The generator records the exceptions when it seeds a world; the rulebook checks every account against it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from decimal import Decimal

from world_app.models import Customer, Order, Refund, RefundStatus
from world_app.policies import LOYALTY_SPEND_MONTHS, LOYALTY_TIER_SPEND
from world_app.tools.coverage import add_months
from world_app.tools.results import local_date

# A loyalty exception is a line of the account's notes that starts with this, and says why.
LOYALTY_EXCEPTION_NOTE = "Loyalty exception:"
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
