"""The money side of an order: what was taken, what was refunded, what can still be refunded.

Rejected refunds never count; pending and approved ones do (the money is committed to the customer).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Sum

from world_app.models import Order, Payment, PaymentStatus, Refund, RefundStatus
from world_app.tools.baked import BakedQuery

ZERO = Decimal("0.00")
# Payments whose money was taken at some point (a refunded payment was captured first).
TAKEN_STATUSES = frozenset(
    {PaymentStatus.CAPTURED, PaymentStatus.COMPLETED, PaymentStatus.PARTIALLY_REFUNDED, PaymentStatus.REFUNDED}
)


def refunded_by_payment(payment_ids: Iterable[str]) -> dict[str, Decimal]:
    rows = (
        Refund.objects.filter(payment_id__in=list(payment_ids))
        .exclude(status=RefundStatus.REJECTED)
        .values("payment_id")
        .annotate(total=Sum("amount"))
        .order_by("payment_id")
    )
    return {row["payment_id"]: row["total"] for row in rows}


def refunded_quantities(refunds: Iterable[Refund]) -> dict[str, int]:
    """Units refunded so far per order line, from the refunds' ``line_items``."""
    quantities: dict[str, int] = defaultdict(int)
    for refund in refunds:
        if refund.status == RefundStatus.REJECTED:
            continue
        for entry in refund.line_items or []:
            if isinstance(entry, dict) and entry.get("line_item_id"):
                quantities[entry["line_item_id"]] += int(entry.get("quantity") or 0)
    return dict(quantities)


@dataclass
class OrderLedger:
    order: Order
    payments: list[Payment]
    refunds: list[Refund]
    refunded_per_payment: dict[str, Decimal] = field(default_factory=dict)

    @property
    def taken_total(self) -> Decimal:
        return sum((p.amount for p in self.payments if p.status in TAKEN_STATUSES), ZERO)

    @property
    def refunded_total(self) -> Decimal:
        return sum(self.refunded_per_payment.values(), ZERO)

    @property
    def refund_ceiling(self) -> Decimal:
        """Most the order's refunds may ever total: what was taken, less the shipping that is never refunded."""
        return max(min(self.taken_total, self.order.total - self.order.shipping_cost), ZERO)

    @property
    def refundable_remaining(self) -> Decimal:
        return max(self.refund_ceiling - self.refunded_total, ZERO)

    def payment_remaining(self, payment: Payment) -> Decimal:
        return max(payment.amount - self.refunded_per_payment.get(payment.id, ZERO), ZERO)

    def refunded_quantities(self) -> dict[str, int]:
        return refunded_quantities(self.refunds)


# Baked (world_app/tools/baked.py): every money tool reads these, and compiling them cost more than running them.
ORDER_PAYMENTS = BakedQuery(Payment, lambda order_id: Payment.objects.filter(order_id=order_id).order_by("id"))
PAYMENT_REFUNDS = BakedQuery(Refund, lambda ids: Refund.objects.filter(payment_id__in=ids).order_by("id"))


def order_ledger(order: Order) -> OrderLedger:
    payments = ORDER_PAYMENTS(order.id)
    refunds = PAYMENT_REFUNDS([payment.id for payment in payments])
    per_payment: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for refund in refunds:
        if refund.status != RefundStatus.REJECTED:
            per_payment[refund.payment_id] += refund.amount
    return OrderLedger(order=order, payments=payments, refunds=refunds, refunded_per_payment=dict(per_payment))
