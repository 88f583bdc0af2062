"""The money side of an order: what was taken, what was refunded, what can still be refunded.

Rejected refunds never count; pending and approved ones do (the money is committed to the customer).
What can be refunded is what was taken, less the shipping once the order has shipped, less the restocking fees
already withheld (``world_app.store_rules``): a duplicate charge and a never-shipped order come back in full.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from world_app.models import Order, Payment, PaymentStatus, Refund, RefundStatus, Shipment
from world_app.money import ZERO
from world_app.store_rules import SHIPPING_KEPT_ONCE_SHIPPED, SHIPPING_USED_SHIPMENT_STATUSES
from world_app.tools.baked import BakedQuery
from world_app.tools.lookups import ORDER_SHIPMENTS
from world_app.tools.results import money

# Payments whose money was taken at some point (a refunded payment was captured first).
TAKEN_STATUSES = frozenset(
    {PaymentStatus.CAPTURED, PaymentStatus.COMPLETED, PaymentStatus.PARTIALLY_REFUNDED, PaymentStatus.REFUNDED}
)


def refunded_by_payment(payment_ids: Iterable[str]) -> dict[str, Decimal]:
    """The sum of each payment's refunds that were not rejected (payments with none are left out), from one baked
    look-up of the refunds (an aggregate compiled on every call cost more than the search it completes)."""
    ids = sorted(set(payment_ids))
    totals: dict[str, Decimal] = {}
    for refund in PAYMENT_REFUNDS(ids) if ids else ():
        if refund.status != RefundStatus.REJECTED:
            totals[refund.payment_id] = totals.get(refund.payment_id, ZERO) + refund.amount
    return totals


def refunded_quantities(refunds: Iterable[Refund]) -> dict[str, int]:
    """Units refunded so far per order line, from the refunds' ``line_items``."""
    quantities: dict[str, int] = defaultdict(int)
    for refund in refunds:
        # A price match names its units but returns none.
        if refund.status == RefundStatus.REJECTED or refund.reason == "price_match":
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
    shipments: list[Shipment] = field(default_factory=list)

    @property
    def taken_total(self) -> Decimal:
        return sum((p.amount for p in self.payments if p.status in TAKEN_STATUSES), ZERO)

    @property
    def refunded_total(self) -> Decimal:
        return sum(self.refunded_per_payment.values(), ZERO)

    @property
    def has_shipped(self) -> bool:
        return any(s.status in SHIPPING_USED_SHIPMENT_STATUSES for s in self.shipments)

    @property
    def shipping_kept(self) -> Decimal:
        """The shipping cost the store keeps: all of it once the order has shipped, none before."""
        if not SHIPPING_KEPT_ONCE_SHIPPED or not self.has_shipped:
            return ZERO
        return min(self.order.shipping_cost, self.taken_total)

    @property
    def fees_withheld(self) -> Decimal:
        return sum((r.restocking_fee for r in self.refunds if r.status != RefundStatus.REJECTED), ZERO)

    @property
    def refund_ceiling(self) -> Decimal:
        """Most the order's refunds may ever total: what was taken, less the shipping kept and the fees withheld."""
        return max(self.taken_total - self.shipping_kept - self.fees_withheld, ZERO)

    @property
    def refundable_remaining(self) -> Decimal:
        return max(self.refund_ceiling - self.refunded_total, ZERO)

    @property
    def overpaid(self) -> Decimal:
        """Money taken beyond the order's total and not yet refunded (a duplicate charge)."""
        return max(self.taken_total - self.refunded_total - self.order.total, ZERO)

    def ceiling_explained(self) -> str:
        """The ceiling's arithmetic in words; the figures add up to ``refundable_remaining``."""
        parts = [f"${money(self.taken_total)} was paid"]
        if self.shipping_kept:
            parts.append(f"less ${money(self.shipping_kept)} of shipping (kept: the order has shipped)")
        if self.fees_withheld:
            parts.append(f"less ${money(self.fees_withheld)} of restocking fees withheld")
        parts.append(f"less ${money(self.refunded_total)} refunded already")
        return ", ".join(parts) + f" leaves ${money(self.refundable_remaining)}"

    def payment_remaining(self, payment: Payment) -> Decimal:
        return max(payment.amount - self.refunded_per_payment.get(payment.id, ZERO), ZERO)

    def refunded_quantities(self) -> dict[str, int]:
        return refunded_quantities(self.refunds)


# Baked (world_app/tools/baked.py): every money tool reads these, and compiling them cost more than running them.
ORDER_PAYMENTS = BakedQuery(Payment, lambda order_id: Payment.objects.filter(order_id=order_id).order_by("id"))
PAYMENT_REFUNDS = BakedQuery(Refund, lambda ids: Refund.objects.filter(payment_id__in=ids).order_by("id"))


def order_ledger(order: Order, *, shipments: list[Shipment] | None = None) -> OrderLedger:
    payments = ORDER_PAYMENTS(order.id)
    shipments = ORDER_SHIPMENTS(order.id) if shipments is None else shipments
    refunds = PAYMENT_REFUNDS([payment.id for payment in payments])
    per_payment: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for refund in refunds:
        if refund.status != RefundStatus.REJECTED:
            per_payment[refund.payment_id] += refund.amount
    return OrderLedger(
        order=order, payments=payments, refunds=refunds, refunded_per_payment=dict(per_payment), shipments=shipments
    )
