"""The quarterly loyalty review, recorded: every account whose tier its spend does not earn gets a note saying why.

Tiers were given when the accounts were made and priced the orders since, so they stay; the spend rule of
``world_app.loyalty`` is applied to the finished world, and each account it does not explain carries a
``Loyalty exception:`` line with the reason (a promotion, a team lead's decision, an upgrade waiting for the
next review), as a real store's records would.
"""

from __future__ import annotations

import random
from decimal import Decimal

from django.db import connections

from world_app.generator.timeline import Timeline
from world_app.loyalty import LOYALTY_EXCEPTION_NOTE, has_loyalty_exception, loyalty_spend, tier_for_spend
from world_app.models import Customer
from world_app.policies import LOYALTY_SPEND_MONTHS

_KEPT = (
    "{tier} granted by the 2023 founding-members promotion, kept without the spend.",
    "{tier} matched from a competitor's loyalty program at sign-up (status match, approved by a team lead).",
    "{tier} agreed for this business account by the Head of Customer Support.",
    "{tier} kept for a year by a team lead after a large order was returned defective.",
    "{tier} kept by a team lead: most of the spend is on the customer's second account.",
)
_WAITING = (
    "{spend} spent in the last {months} months earns {earned}; the upgrade waits for the next quarterly review.",
    "upgrade to {earned} ({spend} in {months} months) held until the next quarterly review.",
)
_LOWER = ("spend of {spend} in {months} months earns {earned}; {tier} kept until the next quarterly review.",)
_RANK = {"none": 0, "silver": 1, "gold": 2, "platinum": 3}
UPDATE_BATCH = 1000


def record_loyalty_exceptions(*, rng: random.Random, timeline: Timeline, using: str) -> int:
    """Add the exception note to every account the spend rule does not explain; returns how many."""
    spend = loyalty_spend(today=timeline.today, using=using)
    changed = []
    for customer in Customer.objects.using(using).order_by("id"):
        spent = spend.get(customer.id, Decimal(0))
        earned = tier_for_spend(spent)
        if earned == customer.loyalty_tier or has_loyalty_exception(customer):
            continue
        facts = {
            "tier": customer.loyalty_tier.title(),
            "earned": earned,
            "spend": f"${spent:,.2f}",
            "months": LOYALTY_SPEND_MONTHS,
        }
        if _RANK[earned] > _RANK[customer.loyalty_tier]:
            reason = rng.choice(_WAITING).format(**facts)
        elif rng.random() < 0.3:
            reason = rng.choice(_LOWER).format(**facts)
        else:
            reason = rng.choice(_KEPT).format(**facts)
        note = f"{LOYALTY_EXCEPTION_NOTE} {reason}"
        customer.notes = f"{customer.notes}\n{note}" if customer.notes else note
        changed.append(customer)
    # One UPDATE ... FROM (VALUES ...) per batch: bulk_update's CASE per row costs seconds at this size.
    table = Customer._meta.db_table
    with connections[using].cursor() as cursor:
        for start in range(0, len(changed), UPDATE_BATCH):
            batch = changed[start : start + UPDATE_BATCH]
            values = ", ".join(["(%s, %s)"] * len(batch))
            # The table is the model's and every value a placeholder: nothing from the data is spliced in.
            query = f"UPDATE {table} AS c SET notes = v.notes FROM (VALUES {values}) AS v(id, notes) WHERE c.id = v.id"  # noqa: S608
            cursor.execute(
                query,
                [item for customer in batch for item in (customer.id, customer.notes)],
            )
    return len(changed)
