"""The generated world checked against each rule: the snapshot's rows read once (``WorldFacts``) and one check
per rule that lists the rows breaking it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from world_app.loyalty import LOYALTY_EXCEPTION_NOTE, has_loyalty_exception, loyalty_spend, tier_for_spend
from world_app.models import (
    Customer,
    Escalation,
    Order,
    OrderLineItem,
    Payment,
    Refund,
    RefundStatus,
    Resolution,
    Shipment,
    SupportTicket,
    WarrantyClaim,
)
from world_app.store_rules import (
    LOYALTY_EXCEPTION_SHARE,
    POLICY_EXCEPTION_PERMISSION,
    POLICY_EXCEPTION_ROLES,
    PRICE_MATCH_CLAIMS_PER_LINE,
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_REASONS,
    RETURN_WINDOW_DAYS,
    SHIPPED_SHIPMENT_STATUSES,
    WARRANTY_REFUND_LIFECYCLES,
    WARRANTY_REMEDIES,
)
from world_app.tools.coverage import add_months, delivered_at
from world_app.tools.ledger import TAKEN_STATUSES, refunded_quantities
from world_app.tools.results import local_date, world_today

# --- the generated data against each rule --------------------------------------------------------------------------


@dataclass
class WorldFacts:
    """The snapshot's rows that the data checks share, read once."""

    orders: dict[str, Order]
    lines: dict[str, OrderLineItem]
    lines_by_order: dict[str, list[OrderLineItem]]
    payments_by_order: dict[str, list[Payment]]
    refunds_by_order: dict[str, list[Refund]]
    shipments_by_order: dict[str, list[Shipment]]

    @classmethod
    def read(cls) -> WorldFacts:
        orders = {o.id: o for o in Order.objects.order_by("id")}
        lines = {li.id: li for li in OrderLineItem.objects.select_related("product").order_by("id")}
        by_order: dict[str, list] = defaultdict(list)
        for line in lines.values():
            by_order[line.order_id].append(line)
        payments: dict[str, list] = defaultdict(list)
        pay_order = {}
        for pay in Payment.objects.order_by("id"):
            payments[pay.order_id].append(pay)
            pay_order[pay.id] = pay.order_id
        refunds: dict[str, list] = defaultdict(list)
        for refund in Refund.objects.order_by("id"):
            refunds[pay_order[refund.payment_id]].append(refund)
        shipments: dict[str, list] = defaultdict(list)
        for shipment in Shipment.objects.order_by("id"):
            shipments[shipment.order_id].append(shipment)
        return cls(orders, lines, by_order, payments, refunds, shipments)

    def delivered_on(self, order_id: str) -> date | None:
        delivered = delivered_at(self.shipments_by_order.get(order_id, []))
        return local_date(delivered) if delivered else None


def _live(refunds: list[Refund]) -> list[Refund]:
    return [r for r in refunds if r.status != RefundStatus.REJECTED]


def _data_return_window(w: WorldFacts) -> list[str]:
    out = []
    for order_id, refunds in w.refunds_by_order.items():
        delivered_on = w.delivered_on(order_id)
        for refund in _live(refunds):
            if refund.reason not in ("customer_remorse", "incompatible", "defective") or delivered_on is None:
                continue
            days = (local_date(refund.created_at) - delivered_on).days
            if days <= RETURN_WINDOW_DAYS:
                continue
            if refund.reason != "defective":
                out.append(f"{refund.id}: a {refund.reason} return {days} days after delivery")
                continue
            for entry in refund.line_items or []:
                line = w.lines[entry["line_item_id"]]
                ends = add_months(delivered_on, line.product.warranty_months)
                if local_date(refund.created_at) > ends:
                    out.append(f"{refund.id}: a defective refund after the window and after the warranty ({ends})")
    return out


def _data_restocking_fee(w: WorldFacts) -> list[str]:
    out = []
    for refunds in w.refunds_by_order.values():
        for refund in _live(refunds):
            if refund.restocking_fee <= 0:
                continue
            if refund.reason not in RESTOCKING_FEE_REASONS:
                out.append(f"{refund.id}: a {refund.reason} refund withheld a ${refund.restocking_fee} fee")
            exempt = [
                e
                for e in refund.line_items or []
                if w.lines[e["line_item_id"]].product.category in RESTOCKING_FEE_EXEMPT_CATEGORIES
            ]
            if exempt and len(exempt) == len(refund.line_items or []):
                out.append(f"{refund.id}: a fee on exempt items only")
    return out


def _data_ceiling(w: WorldFacts) -> list[str]:
    out = []
    for order_id, refunds in w.refunds_by_order.items():
        order = w.orders[order_id]
        taken = sum((p.amount for p in w.payments_by_order[order_id] if p.status in TAKEN_STATUSES), Decimal(0))
        shipped = any(s.status in SHIPPED_SHIPMENT_STATUSES | {"returned"} for s in w.shipments_by_order[order_id])
        live = _live(refunds)
        ceiling = taken - (min(order.shipping_cost, taken) if shipped else 0) - sum(r.restocking_fee for r in live)
        refunded = sum((r.amount for r in live), Decimal(0))
        if refunded > ceiling:
            out.append(f"{order_id}: refunds of ${refunded} exceed the ${ceiling} ceiling")
    return out


def _data_full_refund_status(w: WorldFacts) -> list[str]:
    out = []
    for order_id, refunds in w.refunds_by_order.items():
        order = w.orders[order_id]
        units = refunded_quantities(refunds)
        every = all(units.get(li.id, 0) >= li.quantity for li in w.lines_by_order[order_id])
        moving = [r for r in refunds if r.status in (RefundStatus.APPROVED, "processed")]
        if not moving:
            continue
        if every and order.status != "refunded":
            out.append(f"{order_id}: every unit refunded, yet {order.status}")
        if order.status == "refunded" and not every:
            taken = sum((p.amount for p in w.payments_by_order[order_id] if p.status in TAKEN_STATUSES), Decimal(0))
            if sum((r.amount + r.restocking_fee for r in _live(refunds)), Decimal(0)) < taken - order.shipping_cost:
                out.append(f"{order_id}: refunded, yet units and money remain")
    return out


def _data_price_match(w: WorldFacts) -> list[str]:
    out = []
    for order_id, refunds in w.refunds_by_order.items():
        claims: dict[str, int] = defaultdict(int)
        for refund in _live(refunds):
            if refund.reason != "price_match":
                continue
            entries = refund.line_items or []
            if not entries:
                out.append(f"{refund.id}: a price match that names no item")
            paid = sum((w.lines[e["line_item_id"]].unit_price * e["quantity"] for e in entries), Decimal(0))
            if entries and refund.amount >= paid:
                out.append(f"{refund.id}: a price match of ${refund.amount} on ${paid} paid")
            for entry in entries:
                claims[entry["line_item_id"]] += 1
            days = (local_date(refund.created_at) - local_date(w.orders[order_id].created_at)).days
            if days > PRICE_MATCH_WINDOW_DAYS:
                out.append(f"{refund.id}: a price match {days} days after the sale")
        out += [f"{line}: {n} price-match claims" for line, n in claims.items() if n > PRICE_MATCH_CLAIMS_PER_LINE]
    return out


def _data_approval_limit(w: WorldFacts) -> list[str]:
    out = []
    for order_id, refunds in w.refunds_by_order.items():
        by_day: dict[date, list[Refund]] = defaultdict(list)
        for refund in _live(refunds):
            by_day[local_date(refund.created_at)].append(refund)
        for day, same_day in by_day.items():
            total = sum((r.amount for r in same_day), Decimal(0))
            if total > REFUND_APPROVAL_LIMIT and any(
                r.status == "approved" and r.updated_at == r.created_at for r in same_day
            ):
                out.append(f"{order_id}: ${total} refunded on {day} approved at once, over the limit")
    return out


def _data_policy_exception_decider(w: WorldFacts) -> list[str]:
    out = []
    for escalation in Escalation.objects.filter(escalation_type="policy_exception").select_related("assigned_to"):
        employee = escalation.assigned_to
        if employee is None:
            continue
        decides = employee.support_role in POLICY_EXCEPTION_ROLES or POLICY_EXCEPTION_PERMISSION in (
            employee.permissions or []
        )
        if not decides:
            out.append(f"{escalation.id}: assigned to {employee.id} ({employee.support_role})")
    return out


def _data_warranty_coverage(w: WorldFacts) -> list[str]:
    out = []
    for claim in WarrantyClaim.objects.select_related("product").order_by("id"):
        delivered_on = w.delivered_on(w.lines[claim.line_item_id].order_id)
        if delivered_on is None:
            out.append(f"{claim.id}: a claim on an undelivered line")
            continue
        ends = add_months(delivered_on, claim.product.warranty_months)
        if claim.warranty_expires_on != ends:
            out.append(f"{claim.id}: warranty_expires_on {claim.warranty_expires_on}, but delivery + term is {ends}")
        filed = local_date(claim.created_at)
        within = filed <= ends and claim.product.warranty_months > 0
        if claim.status in ("approved", "pending_inspection") and not within:
            out.append(f"{claim.id}: {claim.status} though filed {filed}, after the warranty ended {ends}")
        if "within warranty" in claim.decision_reason and not within:
            out.append(f"{claim.id}: filed {filed}, after the warranty ended {ends}, yet reads 'within warranty'")
        if "expired" in claim.decision_reason and within:
            out.append(f"{claim.id}: filed {filed} within the warranty (ends {ends}), yet denied as expired")
    return out


def _data_warranty_remedy(w: WorldFacts) -> list[str]:
    out = []
    for claim in WarrantyClaim.objects.select_related("product").order_by("id"):
        if claim.remedy not in WARRANTY_REMEDIES:
            out.append(f"{claim.id}: remedy {claim.remedy}")
        elif claim.remedy == "refund" and claim.product.lifecycle not in WARRANTY_REFUND_LIFECYCLES:
            out.append(f"{claim.id}: a refund remedy for {claim.product_id}, still sold")
    return out


_EXCEPTION_APPROVER = re.compile(r"approved by [^(]+\((emp-\d+), (team lead|manager)\) on (\d{4}-\d{2}-\d{2})")


def _data_disputed_payment(w: WorldFacts) -> list[str]:
    """No disputed payment carries a refund (the bank returns the money), and its order's notes say why."""
    out = []
    for payment in Payment.objects.filter(status="disputed").select_related("order").order_by("id"):
        if Refund.objects.filter(payment=payment).exclude(status="rejected").exists():
            out.append(f"{payment.id}: disputed and refunded")
        if "chargeback" not in (payment.order.notes or "").lower():
            out.append(f"{payment.id}: disputed, but {payment.order_id}'s notes do not record the chargeback")
    return out


def _data_loyalty_tier(w: WorldFacts) -> list[str]:
    """Every tier is the spend's, or a recorded exception that says who (a team lead or manager), when and why; and
    exceptions stay a handful (LOYALTY_EXCEPTION_SHARE of the accounts, at least one)."""
    today = world_today()
    spend = loyalty_spend(today=today)
    out, exceptions, customers = [], 0, 0
    for customer in Customer.objects.order_by("id"):
        customers += 1
        earned = tier_for_spend(spend.get(customer.id, Decimal(0)))
        if customer.loyalty_tier == earned:
            continue
        if not has_loyalty_exception(customer):
            out.append(f"{customer.id}: {customer.loyalty_tier}, but ${spend.get(customer.id, 0)} earns {earned}")
            continue
        exceptions += 1
        note = next(line for line in customer.notes.splitlines() if line.startswith(LOYALTY_EXCEPTION_NOTE))
        approver = _EXCEPTION_APPROVER.search(note)
        if approver is None:
            out.append(f"{customer.id}: the loyalty exception names no team lead or manager and date")
        elif date.fromisoformat(approver.group(3)) > today:
            out.append(f"{customer.id}: the loyalty exception is dated after today")
    allowed = max(1, round(customers * LOYALTY_EXCEPTION_SHARE))
    if exceptions > allowed:
        out.append(f"{exceptions} loyalty exceptions, more than a handful ({allowed} allowed)")
    return out


def _data_same_customer(w: WorldFacts) -> list[str]:
    out = []
    for ticket in SupportTicket.objects.filter(order__isnull=False).order_by("id"):
        if w.orders[ticket.order_id].customer_id != ticket.customer_id:
            out.append(f"{ticket.id}: about {ticket.order_id} of another customer")
    for claim in WarrantyClaim.objects.filter(ticket__isnull=False).select_related("ticket").order_by("id"):
        if claim.ticket.customer_id != claim.customer_id:
            out.append(f"{claim.id}: names ticket {claim.ticket_id} of another customer")
    for resolution in Resolution.objects.filter(refund__isnull=False).select_related("ticket", "refund__payment"):
        order = w.orders[resolution.refund.payment.order_id]
        if order.customer_id != resolution.ticket.customer_id:
            out.append(f"{resolution.id}: links refund {resolution.refund_id} of another customer")
    return out


def _data_cancellation(w: WorldFacts) -> list[str]:
    return [
        f"{order.id}: cancelled after shipping"
        for order in w.orders.values()
        if order.status == "cancelled"
        and any(s.status in SHIPPED_SHIPMENT_STATUSES for s in w.shipments_by_order.get(order.id, []))
    ]


def _data_one_coupon(w: WorldFacts) -> list[str]:
    return [
        f"{order.id}: coupon {order.discount_code!r} is not a coupon"
        for order in w.orders.values()
        if order.discount_code and "," in order.discount_code
    ]
