"""Refunds: which orders are refunded, for which lines and how much (restocking fee, shipping), with their notes,
and the order and payment statuses that follow.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta

from world_app.generator.commerce.facts import (
    APPROVAL_LIMIT_CENTS,
    ORDERS_AT_SCALE_1,
    REFUND_SHARE,
    LineFacts,
    OrderFacts,
    RefundFacts,
)
from world_app.generator.commerce.orders import refund_cents_for
from world_app.generator.timeline import Timeline
from world_app.store_rules import (
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVED_AT_ONCE_REASONS,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RETURN_WINDOW_DAYS,
)

# --- Refunds ------------------------------------------------------------------------------------------


def _refund_orders(
    rng: random.Random, orders: list[OrderFacts], *, scale: float, timeline: Timeline
) -> list[RefundFacts]:
    refunds: list[RefundFacts] = []
    for order in orders:
        shipment = order.shipment
        if shipment and shipment.status == "exception" and not order.mess:
            exception_at = datetime.fromisoformat(shipment.events[-1]["at"])
            created = exception_at + timedelta(days=rng.randint(1, 4), hours=rng.randint(1, 6))
            if created <= timeline.now - timedelta(days=1):
                _add_refund(rng, order, order.lines, "shipping_issue", created, timeline, refunds, full=True)
    candidates = [o for o in orders if o.delivered_at and not o.mess and o.status == "fulfilled"]
    target = min(len(candidates), round(REFUND_SHARE * ORDERS_AT_SCALE_1 * scale))
    chosen = sorted(rng.sample(range(len(candidates)), target))
    for index in chosen:
        order = candidates[index]
        since = timeline.days_ago(order.delivered_at)
        reason = rng.choices(
            ("customer_remorse", "defective", "incompatible", "price_match", "other", "late"),
            weights=(36, 28, 16, 8, 4, 8),
        )[0]
        if reason == "late" and since > RETURN_WINDOW_DAYS + 1:
            # Asked after the window closed: rejected, and the ticket explains why.
            created = order.delivered_at + timedelta(days=rng.randint(RETURN_WINDOW_DAYS + 1, RETURN_WINDOW_DAYS + 20))
            if created < timeline.now:
                _add_refund(
                    rng,
                    order,
                    [rng.choice(order.lines)],
                    "customer_remorse",
                    created,
                    timeline,
                    refunds,
                    rejected="Requested {days} days after delivery, outside the 30-day return window.",
                )
            continue
        if reason == "price_match":
            created = order.created_at + timedelta(
                days=rng.randint(1, PRICE_MATCH_WINDOW_DAYS), hours=rng.randint(0, 8)
            )
        else:
            reason = "customer_remorse" if reason == "late" else reason
            window = min(RETURN_WINDOW_DAYS, int(since))
            if window < 1:
                continue
            created = order.delivered_at + timedelta(days=rng.randint(1, window), hours=rng.randint(0, 6))
        if created > timeline.now:
            continue
        lines = [rng.choice(order.lines)]
        if len(order.lines) > 1 and rng.random() < 0.15:
            lines = order.lines
        _add_refund(rng, order, lines, reason, created, timeline, refunds)
        if len(order.lines) > 1 and rng.random() < 0.1 and reason in ("customer_remorse", "defective"):
            others = [line for line in order.lines if line not in lines]
            later = created + timedelta(days=rng.randint(1, 6))
            if others and later <= timeline.now and (later - order.delivered_at).days <= RETURN_WINDOW_DAYS:
                _add_refund(rng, order, [rng.choice(others)], reason, later, timeline, refunds)
    return refunds


_REFUND_NOTES = {
    "customer_remorse": ("Changed mind; item returned {state}.", "No longer needed; returned {state}."),
    "incompatible": ("Did not fit the customer's system; returned {state}.", "Wrong part for their build; {state}."),
    "defective": (
        "Dead on arrival; defect confirmed from photos.",
        "Failed within days of delivery; defect confirmed.",
    ),
    "shipping_issue": ("Carrier damaged the parcel in transit; merchandise refunded, shipping not refundable.",),
    "price_match": ("Matched a lower advertised price at an authorized retailer within 14 days.",),
    "other": ("Goodwill credit for a delivery that arrived days after its estimate.",),
}


def _add_refund(rng, order, lines, reason, created, timeline, refunds, *, full=False, rejected="") -> None:
    refundable = order.payment.amount - order.shipping
    refundable -= sum(r.amount + r.fee for r in order.refunds if r.status != "rejected")
    opened = reason in ("customer_remorse", "incompatible") and rng.random() < 0.5
    chosen: list[tuple[LineFacts, int]] = []
    amount = fee = 0
    if reason == "price_match":
        line = lines[0]
        competitor = line.unit_cents * rng.randint(90, 97) // 100
        amount = (line.unit_cents - competitor) * line.quantity
        chosen = [(line, line.quantity)]
    elif reason == "other":
        amount = min(2500, order.subtotal // 10)
    else:
        already: Counter[str] = Counter()
        for earlier in order.refunds:
            if earlier.status != "rejected" and earlier.reason not in ("price_match", "other"):
                for line, quantity in earlier.lines:
                    already[line.id] += quantity
        for line in lines:
            left = line.quantity - already[line.id]
            if left <= 0:
                continue
            quantity = left if full or rng.random() < 0.7 else rng.randint(1, left)
            restocking = opened and line.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES
            line_amount, line_fee = refund_cents_for(order, line, quantity, restocking=restocking)
            amount, fee = amount + line_amount, fee + line_fee
            chosen.append((line, quantity))
        if not chosen:
            return
    amount = min(amount, refundable - fee)
    if amount <= 0:
        return
    approved_at = processed = decided = None
    if rejected:
        status = "rejected"
        decided = min(created + timedelta(days=rng.randint(1, 3)), timeline.now)
        notes = rejected.format(days=(created - order.delivered_at).days)
    else:
        if reason in REFUND_APPROVED_AT_ONCE_REASONS and amount <= APPROVAL_LIMIT_CENTS:
            approved_at = created
        elif reason in ("customer_remorse", "incompatible"):
            # Approved when the returned item has arrived and passed inspection.
            approved_at = created + timedelta(days=rng.randint(4, 10), hours=rng.randint(1, 8))
        else:
            approved_at = created + timedelta(days=rng.randint(1, 3), hours=rng.randint(1, 8))
        processed = approved_at + timedelta(days=rng.randint(2, 5), hours=rng.randint(1, 8))
        if approved_at > timeline.now:
            status, processed = "pending", None
        elif processed > timeline.now:
            status, processed = "approved", None
        else:
            status = "processed"
        state = "unopened in original packaging"
        if opened:
            state = f"opened, undamaged ({RESTOCKING_FEE_PCT}% restocking fee)" if fee else "opened, undamaged"
        notes = rng.choice(_REFUND_NOTES[reason]).format(state=state)
    refund = RefundFacts(order, order.payment, amount, reason, status, fee, created, processed, chosen, notes)
    refund.decided_at = decided or (approved_at if approved_at and approved_at <= timeline.now else None)
    order.refunds.append(refund)
    refunds.append(refund)


def _settle_statuses(order: OrderFacts) -> None:
    moving = [r for r in order.refunds if r.counts]
    if not moving:
        return
    returned = Counter()
    for refund in moving:
        if refund.reason not in ("price_match", "other"):
            for line, quantity in refund.lines:
                returned[line.id] += quantity
    everything = all(returned[line.id] >= line.quantity for line in order.lines)
    order.status = "refunded" if everything else "partially_refunded"
    order.payment.status = "refunded" if everything else "partially_refunded"
    order.payment.updated_at = max(r.processed_at or r.created_at for r in moving)
