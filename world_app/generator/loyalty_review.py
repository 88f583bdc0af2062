"""The loyalty program's move to the spend rule, recorded: the relaunch review, run at the world's "now", gives every
account the tier its spend earns (kb-0004), except a handful a manager or team lead decided to keep, each with who,
when and why. Every order in the world was placed before it.

The base world's accounts were given a tier when they signed up (the former program) and their orders were
priced with it, so those orders stay as they were; an account whose tier the review changed carries a
``Loyalty review`` line saying what it held before and what it holds now (the tier its older orders were priced
with). The casebook's accounts already follow the spend day by day and are left alone. Deterministic per seed:
the exceptions are drawn from the ``loyalty`` stream.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

from django.db import connections

from world_app.generator.timeline import Timeline
from world_app.loyalty import (
    LOYALTY_EXCEPTION_NOTE,
    LOYALTY_RANK,
    has_loyalty_exception,
    loyalty_review_note,
    loyalty_spend,
    tier_for_spend,
)
from world_app.models import Customer, Employee, Order
from world_app.store_rules import LOYALTY_EXCEPTION_SHARE, LOYALTY_SPEND_MONTHS, LOYALTY_TIER_SPEND
from world_app.tools.results import local_date

UPDATE_BATCH = 1000
# A kept tier is reviewed again at the end of this many days after the decision.
EXCEPTION_TERM_DAYS = 120
# A goodwill exception follows an order of the last few months (older trouble earns none today).
GOODWILL_RECENT_DAYS = 100
# Accounts opened up to this year were the former program's founding members.
FOUNDING_YEAR = 2022


def _approvers(using: str) -> list[Employee]:
    """Who may decide a loyalty exception: support's team leads and managers (kb-0012)."""
    return list(
        Employee.objects.using(using)
        .filter(department="support", support_role__in=("team_lead", "manager"), is_active=True)
        .order_by("id")
    )


def _money(amount: Decimal) -> str:
    return f"${amount:,.2f}"


def _exception_reason(
    *,
    rng: random.Random,
    customer: Customer,
    spent: Decimal,
    earned: str,
    approver: Employee,
    review_day: date,
    last_order: Order | None,
) -> str:
    """One specific reason for keeping ``customer``'s tier: what happened, who decided, when, and until when."""
    tier = customer.loyalty_tier.title()
    who = f"{approver.full_name} ({approver.id}, {approver.get_support_role_display().lower()})"
    threshold = LOYALTY_TIER_SPEND.get(customer.loyalty_tier)
    recent = last_order is not None and (review_day - local_date(last_order.created_at)).days <= GOODWILL_RECENT_DAYS
    if recent and rng.random() < 0.6:
        decided = min(local_date(last_order.created_at) + timedelta(days=rng.randint(3, 20)), review_day)
        until = decided + timedelta(days=EXCEPTION_TERM_DAYS)
        return (
            f"{tier} kept as goodwill until {until.isoformat()} after {last_order.id} went wrong "
            f"(a replacement sent late); approved by {who} on {decided.isoformat()}."
        )
    until = review_day + timedelta(days=EXCEPTION_TERM_DAYS)
    if threshold is not None and threshold - spent <= Decimal("250") and rng.random() < 0.6:
        return (
            f"{tier} kept through a grace period until {until.isoformat()}: {_money(spent)} spent in "
            f"{LOYALTY_SPEND_MONTHS} months, {_money(threshold - spent)} short of {customer.loyalty_tier}; "
            f"approved by {who} on {review_day.isoformat()}."
        )
    signed = local_date(customer.created_at)
    promised = signed + timedelta(days=365)
    if promised > review_day:
        return (
            f"{tier} given at sign-up on {signed.isoformat()} by the former program's welcome offer, which promised "
            f"it for a year: kept until {promised.isoformat()} (the spend rule earns {earned}); approved by {who} "
            f"on {review_day.isoformat()}."
        )
    if signed.year <= FOUNDING_YEAR:
        return (
            f"{tier} since {signed.isoformat()}, a founding member of the former program (the spend rule earns "
            f"{earned}); kept at the relaunch review until {until.isoformat()}, approved by {who} on "
            f"{review_day.isoformat()}."
        )
    return (
        f"{tier} kept on a legacy account migrated from the former program (opened {signed.isoformat()}; the "
        f"spend rule earns {earned}) until the review of {until.isoformat()}; approved by {who} on "
        f"{review_day.isoformat()}."
    )


def record_loyalty_review(*, rng: random.Random, timeline: Timeline, using: str) -> dict[str, int]:
    """Re-tier every account its spend does not explain, keeping a few as recorded exceptions; returns counts."""
    review_day = timeline.today
    spend = loyalty_spend(today=review_day, using=using)
    customers = list(Customer.objects.using(using).order_by("id"))
    off_rule = [
        customer
        for customer in customers
        if tier_for_spend(spend.get(customer.id, Decimal(0))) != customer.loyalty_tier
        and not has_loyalty_exception(customer)
    ]
    # A handful of kept tiers, only where the record is higher than the spend earns (nobody is kept lower).
    candidates = [
        c for c in off_rule if LOYALTY_RANK[c.loyalty_tier] > LOYALTY_RANK[tier_for_spend(spend.get(c.id, Decimal(0)))]
    ]
    wanted = max(1, round(len(customers) * LOYALTY_EXCEPTION_SHARE)) if candidates else 0
    approvers = _approvers(using)
    kept = set(c.id for c in rng.sample(candidates, min(wanted, len(candidates)))) if approvers else set()
    last_orders: dict[str, Order] = {}
    for order in (
        Order.objects.using(using)
        .filter(customer_id__in=kept, status__in=("fulfilled", "partially_refunded", "refunded"))
        .order_by("customer_id", "created_at", "id")
    ):
        last_orders[order.customer_id] = order

    changed: list[Customer] = []
    for customer in off_rule:
        spent = spend.get(customer.id, Decimal(0))
        earned = tier_for_spend(spent)
        if customer.id in kept:
            reason = _exception_reason(
                rng=rng,
                customer=customer,
                spent=spent,
                earned=earned,
                approver=rng.choice(approvers),
                review_day=review_day,
                last_order=last_orders.get(customer.id),
            )
            note = f"{LOYALTY_EXCEPTION_NOTE} {reason}"
        else:
            note = loyalty_review_note(day=review_day, before=customer.loyalty_tier, after=earned, spent=spent)
            customer.loyalty_tier = earned
        customer.notes = f"{customer.notes}\n{note}" if customer.notes else note
        changed.append(customer)
    # One UPDATE ... FROM (VALUES ...) per batch: bulk_update's CASE per row costs seconds at this size.
    table = Customer._meta.db_table
    with connections[using].cursor() as cursor:
        for start in range(0, len(changed), UPDATE_BATCH):
            batch = changed[start : start + UPDATE_BATCH]
            values = ", ".join(["(%s, %s, %s)"] * len(batch))
            # The table is the model's and every value a placeholder: nothing from the data is spliced in.
            query = (
                f"UPDATE {table} AS c SET notes = v.notes, loyalty_tier = v.tier "  # noqa: S608
                f"FROM (VALUES {values}) AS v(id, notes, tier) WHERE c.id = v.id"
            )
            cursor.execute(
                query,
                [item for customer in batch for item in (customer.id, customer.notes, customer.loyalty_tier)],
            )
    return {"retiered": len(changed) - len(kept), "exceptions": len(kept)}
