"""The executable rulebook: every rule of ``world_app.store_rules.RULES`` run through the tools that implement it,
and the generated world checked against it.

For each rule, ``rules_check`` runs scenarios in a scratch episode of a snapshot (each in a savepoint rolled
back, so nothing is ever written): the allowed case must succeed and the forbidden one must be refused (rules
the tools hold) or, for rules the agent holds, succeed with the fact that makes it wrong in the result and the
mistake in the world state, where a rubric sees it. A scenario that finds no entity to run on is a finding
too. Then the snapshot's rows are checked against the rule, and the knowledge-base articles that state it
must exist. Every finding is a contradiction; ``manage.py world_rules --check`` exits non-zero on any.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import transaction

from world_app.episodes import scratch_world
from world_app.loyalty import LOYALTY_EXCEPTION_NOTE, has_loyalty_exception, loyalty_spend, tier_for_spend
from world_app.models import (
    Customer,
    Employee,
    Escalation,
    KnowledgeBaseArticle,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    RefundStatus,
    Resolution,
    Shipment,
    SupportTicket,
    WarrantyClaim,
)
from world_app.money import to_cent
from world_app.snapshots import snapshot_latest
from world_app.store_rules import (
    COUPONS,
    LOYALTY_DISCOUNT_PCT,
    LOYALTY_EXCEPTION_SHARE,
    POLICY_EXCEPTION_PERMISSION,
    POLICY_EXCEPTION_ROLES,
    PRICE_MATCH_CLAIMS_PER_LINE,
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RESTOCKING_FEE_REASONS,
    RETURN_WINDOW_DAYS,
    RULES,
    SHIPPED_SHIPMENT_STATUSES,
    WARRANTY_REFUND_LIFECYCLES,
    WARRANTY_REMEDIES,
    Rule,
)
from world_app.tools.coverage import (
    CLOSED_TICKET_STATUSES,
    add_months,
    delivered_at,
    return_window,
    warranty_coverage,
)
from world_app.tools.ledger import TAKEN_STATUSES, refunded_quantities
from world_app.tools.registry import get_tool, invoke_tool
from world_app.tools.results import local_date, world_today

MONEY = re.compile(r"\$([0-9][0-9,]*\.[0-9]{2})")
MAX_LISTED = 10


@dataclass
class Finding:
    rule: str
    check: str  # "scenario", "data", "kb" or "tools"
    case: str
    message: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "check": self.check, "case": self.case, "message": self.message}


@dataclass
class Probe:
    """What a rule's scenarios call and expect; every failed expectation is a finding."""

    rule: Rule
    tools_used: set[str] = field(default_factory=set)
    cases: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def call(self, tool: str, **arguments: Any) -> dict:
        self.tools_used.add(tool)
        return invoke_tool(tool, arguments)

    def expect(self, holds: bool, case: str, message: str) -> bool:
        if case not in self.cases:
            self.cases.append(case)
        if not holds:
            self.findings.append(Finding(self.rule.id, "scenario", case, message))
        return holds

    def allowed(self, case: str, tool: str, **arguments: Any) -> dict:
        result = self.call(tool, **arguments)
        error = result.get("error") if isinstance(result, dict) else None
        self.expect(error is None, case, f"{tool} refused the allowed case: {(error or {}).get('message')}")
        return result if error is None else {}

    def refused(self, case: str, tool: str, *, code: str = "policy_violation", **arguments: Any) -> dict:
        result = self.call(tool, **arguments)
        error = result.get("error") if isinstance(result, dict) else None
        if not self.expect(error is not None, case, f"{tool} accepted the forbidden case: {arguments}"):
            return {}
        self.expect(error["code"] == code, case, f"{tool} refused with {error['code']}, not {code}: {error}")
        return error

    def missing(self, case: str, what: str) -> None:
        self.expect(False, case, f"no {what} in the world to run this case on")

    @contextmanager
    def scratch(self) -> Iterator[None]:
        """Writes inside are rolled back: each case starts from the snapshot's world."""
        from world_app.routers import EPISODE_ALIAS

        with transaction.atomic(using=EPISODE_ALIAS):
            yield
            transaction.set_rollback(True, using=EPISODE_ALIAS)


# --- finding the world's entities for the scenarios ------------------------------------------------------------


def _orders_with_money(**filters: Any) -> Iterator[Order]:
    orders = (
        Order.objects.filter(**filters)
        .prefetch_related("shipments", "line_items__product", "payments__refunds")
        .order_by("id")
    )
    for order in orders:
        payments = list(order.payments.all())
        if len(payments) != 1 or payments[0].status not in ("captured", "completed"):
            continue
        if any(p.refunds.all() for p in payments) or payments[0].amount != order.total:
            continue
        yield order


def _delivered_order(*, window_open: bool, min_lines: int = 1, fee_line: bool = False) -> Order | None:
    for order in _orders_with_money(status="fulfilled", shipments__status="delivered"):
        window = return_window(delivered_at(order.shipments.all()))
        lines = list(order.line_items.all())
        if window.is_open != window_open or len(lines) < min_lines:
            continue
        if fee_line and not any(li.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES for li in lines):
            continue
        if order.total - order.shipping_cost > REFUND_APPROVAL_LIMIT:
            continue
        return order
    return None


def _unshipped_paid_order() -> Order | None:
    for order in _orders_with_money(status="paid"):
        if order.shipping_cost > 0 and not any(s.status in SHIPPED_SHIPMENT_STATUSES for s in order.shipments.all()):
            return order
    return None


def _every_line(order: Order) -> list[dict]:
    return [{"line_item_id": li.id, "quantity": li.quantity} for li in order.line_items.all()]


def _fee_line(order: Order) -> OrderLineItem:
    return next(li for li in order.line_items.all() if li.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES)


def _support_employee(*, decides_exceptions: bool) -> Employee | None:
    for employee in Employee.objects.filter(department="support", is_active=True).order_by("id"):
        decides = employee.support_role in POLICY_EXCEPTION_ROLES or POLICY_EXCEPTION_PERMISSION in (
            employee.permissions or []
        )
        if decides == decides_exceptions:
            return employee
    return None


def _escalatable_ticket() -> SupportTicket | None:
    taken = Escalation.objects.filter(escalation_type="policy_exception").exclude(status="resolved")
    return (
        SupportTicket.objects.filter(status__in=("new", "open", "pending_customer"))
        .exclude(id__in=taken.values("ticket_id"))
        .order_by("id")
        .first()
    )


def _warranty_line(*, active: bool, lifecycles: frozenset[str] | None = None) -> OrderLineItem | None:
    lines = (
        OrderLineItem.objects.filter(order__shipments__status="delivered", product__warranty_months__gt=0)
        .select_related("product", "order")
        .order_by("id")
        .distinct()
    )
    if lifecycles:
        lines = lines.filter(product__lifecycle__in=lifecycles)
    for line in lines:
        if WarrantyClaim.objects.filter(line_item=line).exists():
            continue
        if refunded_quantities(Refund.objects.filter(payment__order_id=line.order_id)).get(line.id):
            continue
        coverage = warranty_coverage(delivered_at(line.order.shipments.all()), line.product.warranty_months)
        if coverage.is_active == active:
            return line
    return None


def _active_product() -> Product | None:
    return Product.objects.filter(lifecycle="active", stock_quantity__gt=0).order_by("id").first()


# --- scenarios, one function per rule ----------------------------------------------------------------------------


def _scenario_return_window(p: Probe) -> None:
    inside, outside = _delivered_order(window_open=True), _delivered_order(window_open=False)
    if inside is None:
        p.missing("inside the window: refunded", "delivered order inside its return window")
    else:
        details = p.allowed("inside the window: refunded", "get_order_details", order_id=inside.id)
        p.expect(
            details.get("return_window", {}).get("is_open") is True,
            "inside the window: refunded",
            "get_order_details does not show the window open",
        )
        with p.scratch():
            args = {"order_id": inside.id, "reason": "customer_remorse", "lines": _every_line(inside)}
            result = p.allowed("inside the window: refunded", "create_refund", opened=False, **args)
            p.expect(
                result.get("return_window", {}).get("is_open") is True,
                "inside the window: refunded",
                "create_refund does not report the open window",
            )
    if outside is None:
        p.missing("outside the window: the mistake shows", "delivered order past its return window")
        return
    case = "outside the window: the mistake shows"
    quote = p.allowed(case, "calculate_price", mode="refund", order_id=outside.id, opened=False)
    p.expect(
        any("after the window" in note for note in quote.get("notes", [])), case, "the refund quote hides the window"
    )
    with p.scratch():
        args = {"order_id": outside.id, "reason": "customer_remorse", "lines": _every_line(outside)}
        result = p.allowed(case, "create_refund", opened=False, **args)
        p.expect(result.get("return_window", {}).get("is_open") is False, case, "the result hides the closed window")
        p.expect(
            Refund.objects.filter(payment__order=outside, reason="customer_remorse").exists(),
            case,
            "the wrong refund is not in the world state",
        )


def _late_delivered_order() -> Order | None:
    """A delivered order placed more than the window's days ago whose (last) delivery is inside the window: the
    order date and the delivery date give different answers."""
    today = world_today()
    for order in _orders_with_money(status="fulfilled", shipments__status="delivered"):
        window = return_window(delivered_at(order.shipments.all()))
        placed = local_date(order.created_at)
        late = window.is_open and (today - placed).days > RETURN_WINDOW_DAYS
        if late and order.total - order.shipping_cost <= REFUND_APPROVAL_LIMIT:
            return order
    return None


def _window_counts_from_delivery(p: Probe, case: str, order: Order, window: dict) -> None:
    """The window a tool shows counts from the order's last delivered parcel, to delivery + the window's days."""
    delivered = delivered_at(order.shipments.all())
    expected = local_date(delivered) if delivered else None
    got = window.get("delivered_on")
    p.expect(got == (expected.isoformat() if expected else None), case, f"the window starts {got}, not {expected}")
    if expected is not None:
        last = date.fromordinal(expected.toordinal() + RETURN_WINDOW_DAYS).isoformat()
        p.expect(window.get("last_day") == last, case, f"the last day is {window.get('last_day')}, not {last}")


def _scenario_return_window_basis(p: Probe) -> None:
    late = _late_delivered_order()
    if late is None:
        p.missing("counted from delivery, not the order date", "order placed before the window, delivered inside")
    else:
        case = "counted from delivery, not the order date"
        details = p.allowed(case, "get_order_details", order_id=late.id)
        _window_counts_from_delivery(p, case, late, details.get("return_window", {}))
        p.expect(details.get("return_window", {}).get("is_open") is True, case, "the window shows closed")
        quote = p.allowed(case, "calculate_price", mode="refund", order_id=late.id, opened=False)
        _window_counts_from_delivery(p, case, late, quote.get("return_window", {}))
        with p.scratch():
            args = {"order_id": late.id, "reason": "customer_remorse", "lines": _every_line(late)}
            result = p.allowed(case, "create_refund", opened=False, **args)
            _window_counts_from_delivery(p, case, late, result.get("return_window", {}))
    split = next(
        (
            order
            for order in Order.objects.filter(shipments__status="delivered").order_by("id").distinct()
            if len({local_date(s.delivered_at) for s in order.shipments.all() if s.status == "delivered"}) > 1
        ),
        None,
    )
    if split is None:
        p.missing("several parcels: counted from the last delivered", "order delivered in parcels on different days")
    else:
        case = "several parcels: counted from the last delivered"
        details = p.allowed(case, "get_order_details", order_id=split.id)
        _window_counts_from_delivery(p, case, split, details.get("return_window", {}))
    outside = _delivered_order(window_open=False)
    if outside is None:
        p.missing("past the last day: the mistake shows", "delivered order past its return window")
        return
    case = "past the last day: the mistake shows"
    with p.scratch():
        args = {"order_id": outside.id, "reason": "customer_remorse", "lines": _every_line(outside)}
        result = p.allowed(case, "create_refund", opened=False, **args)
        window = result.get("return_window", {})
        _window_counts_from_delivery(p, case, outside, window)
        p.expect(str(window.get("last_day")) < world_today().isoformat(), case, "the last day is not past")
        p.expect(
            Refund.objects.filter(payment__order=outside, reason="customer_remorse").exists(),
            case,
            "the wrong refund is not in the world state",
        )


def _disputed_payment() -> tuple[Payment, SupportTicket | None] | None:
    """A disputed payment, with an open ticket of its customer about the order where one has it."""
    payments = list(Payment.objects.filter(status="disputed").select_related("order").order_by("id"))
    for payment in payments:
        ticket = (
            SupportTicket.objects.filter(order_id=payment.order_id, customer_id=payment.order.customer_id)
            .exclude(status__in=CLOSED_TICKET_STATUSES)
            .order_by("id")
            .first()
        )
        if ticket is not None:
            return payment, ticket
    return (payments[0], None) if payments else None


def _scenario_disputed_payment(p: Probe) -> None:
    found = _disputed_payment()
    if found is None:
        p.missing("a disputed payment is not refunded", "disputed payment")
        return
    payment, ticket = found
    with p.scratch():
        p.refused(
            "a disputed payment is not refunded",
            "create_refund",
            order_id=payment.order_id,
            payment_id=payment.id,
            reason="other",
            amount="10.00",
        )
    lead = _support_employee(decides_exceptions=True)
    if ticket is None or lead is None:
        p.missing("a disputed payment goes to a team lead", "open ticket on the disputed order, and a team lead")
        return
    notes = f"The customer disputed {payment.id} with the bank; tracking and delivery evidence attached for finance."
    with p.scratch():
        p.allowed(
            "a disputed payment goes to a team lead",
            "create_escalation",
            ticket_id=ticket.id,
            escalation_type="policy_exception",
            assigned_to=lead.id,
            notes=notes,
        )


def _scenario_restocking_fee(p: Probe) -> None:
    order = _delivered_order(window_open=True, fee_line=True)
    if order is None:
        p.missing("opened customer_remorse pays the fee", "delivered, in-window order with a fee-paying line")
        return
    line = _fee_line(order)
    units = [{"line_item_id": line.id, "quantity": line.quantity}]
    case = "opened customer_remorse pays the fee"
    quote = p.allowed(case, "calculate_price", mode="refund", order_id=order.id, opened=True, lines=units)
    merchandise = line.unit_price * line.quantity
    share = to_cent(merchandise * order.discount_total / order.subtotal) if order.discount_total else Decimal(0)
    expected = to_cent((merchandise - share) * RESTOCKING_FEE_PCT / 100)
    p.expect(quote.get("restocking_fee") == f"{expected:.2f}", case, f"fee {quote.get('restocking_fee')} != {expected}")
    for reason in ("shipping_issue", "defective"):
        case = f"opened {reason} pays no fee"
        with p.scratch():
            result = p.allowed(case, "create_refund", order_id=order.id, reason=reason, opened=True, lines=units)
            fee = result.get("refund", {}).get("restocking_fee")
            p.expect(fee == "0.00", case, f"an opened {reason} return paid a fee of {fee}")


def _scenario_restocking_fee_kept(p: Probe) -> None:
    order = _delivered_order(window_open=True, min_lines=2, fee_line=True)
    if order is None:
        p.missing("a withheld fee is not refunded back", "in-window order with two lines, one paying a fee")
        return
    line = _fee_line(order)
    with p.scratch():
        case = "a withheld fee is not refunded back"
        first = p.allowed(
            case,
            "create_refund",
            order_id=order.id,
            reason="customer_remorse",
            opened=True,
            lines=[{"line_item_id": line.id, "quantity": line.quantity}],
        )
        fee = Decimal(first.get("refund", {}).get("restocking_fee", "0"))
        remaining = Decimal(first.get("refundable_remaining", "0"))
        p.expect(fee > 0, case, "the opened return withheld no fee")
        p.refused(case, "create_refund", order_id=order.id, reason="other", amount=f"{remaining + fee:.2f}")
        if remaining > 0:
            p.allowed(
                "the rest of the order is still refundable",
                "create_refund",
                order_id=order.id,
                reason="other",
                amount=f"{remaining:.2f}",
            )


def _ceiling_adds_up(p: Probe, case: str, message: str, remaining: Decimal) -> None:
    figures = [Decimal(m.replace(",", "")) for m in MONEY.findall(message.split("allows:", 1)[-1])]
    if not p.expect(len(figures) >= 3, case, f"the refusal gives no arithmetic: {message}"):
        return
    paid, *less, leaves = figures
    p.expect(paid - sum(less) == leaves == remaining, case, f"the refusal's figures do not add up: {message}")


def _scenario_shipping_refund(p: Probe) -> None:
    shipped = _delivered_order(window_open=True) or _delivered_order(window_open=False)
    if shipped is None:
        p.missing("a shipped order keeps its shipping", "delivered order")
    else:
        case = "a shipped order keeps its shipping"
        details = p.allowed(case, "get_order_details", order_id=shipped.id)
        remaining = Decimal(details.get("refund_summary", {}).get("refundable_remaining", "0"))
        p.expect(remaining == shipped.total - shipped.shipping_cost, case, f"refundable {remaining} counts shipping")
        with p.scratch():
            args = {"order_id": shipped.id, "reason": "customer_remorse", "lines": _every_line(shipped)}
            result = p.allowed(case, "create_refund", opened=False, **args)
            p.expect(
                result.get("breakdown", {}).get("shipping_refunded") == "0.00", case, "shipping refunded after shipping"
            )
        case = "the ceiling's refusal adds up"
        error = p.refused(case, "create_refund", order_id=shipped.id, reason="other", amount=f"{remaining + 1:.2f}")
        if error:
            _ceiling_adds_up(p, case, error["message"], remaining)
        p.allowed(case, "calculate_price", mode="refund", order_id=shipped.id, opened=False)
    unsent = _unshipped_paid_order()
    if unsent is None:
        p.missing("a never-shipped order is refunded in full", "paid, unshipped order with shipping charged")
    else:
        case = "a never-shipped order is refunded in full"
        with p.scratch():
            args = {"order_id": unsent.id, "reason": "customer_remorse", "lines": _every_line(unsent)}
            result = p.allowed(case, "create_refund", opened=False, **args)
            p.expect(
                result.get("refund", {}).get("amount") == f"{unsent.total:.2f}",
                case,
                f"refunded {result.get('refund', {}).get('amount')} of a {unsent.total} order that never shipped",
            )
    duplicate = _duplicate_charge()
    if duplicate is None:
        p.missing("a duplicate charge is refunded in full", "order charged twice")
        return
    order, extra = duplicate
    case = "a duplicate charge is refunded in full"
    with p.scratch():
        result = p.allowed(case, "create_refund", payment_id=extra.id, reason="other", amount=f"{extra.amount:.2f}")
        p.expect(result.get("order_status") == order.status, case, "refunding the duplicate changed the order")


def _duplicate_charge() -> tuple[Order, Payment] | None:
    for order in Order.objects.filter(payments__status__in=("captured", "completed")).distinct().order_by("id"):
        taken = [pay for pay in order.payments.order_by("id") if pay.status in ("captured", "completed")]
        if (
            len(taken) >= 2
            and sum(pay.amount for pay in taken) >= 2 * order.total
            and not Refund.objects.filter(payment__order=order).exists()
        ):
            return order, taken[-1]
    return None


def _scenario_full_refund_status(p: Probe) -> None:
    order = _delivered_order(window_open=True, fee_line=True) or _delivered_order(window_open=False)
    if order is None:
        p.missing("every unit refunded: refunded", "delivered order")
        return
    case = "every unit refunded: refunded"
    with p.scratch():
        args = {"order_id": order.id, "reason": "customer_remorse", "lines": _every_line(order)}
        result = p.allowed(case, "create_refund", opened=True, **args)
        p.expect(
            (result.get("order_status"), result.get("payment", {}).get("status")) == ("refunded", "refunded"),
            case,
            f"a full return left the order {result.get('order_status')}",
        )
    line = next(iter(order.line_items.all()))
    if line.quantity > 1 or order.line_items.count() > 1:
        case = "some units refunded: partially_refunded"
        with p.scratch():
            result = p.allowed(
                case,
                "create_refund",
                order_id=order.id,
                reason="customer_remorse",
                opened=False,
                lines=[{"line_item_id": line.id, "quantity": 1}],
            )
            p.expect(result.get("order_status") == "partially_refunded", case, "a partial return refunded the order")


def _scenario_price_match(p: Probe) -> None:
    order = next(_orders_with_money(status="fulfilled"), None)
    if order is None:
        p.missing("one claim per item, for the difference", "paid order")
        return
    line = next(iter(order.line_items.all()))
    units = [{"line_item_id": line.id, "quantity": line.quantity}]
    case = "one claim per item, for the difference"
    with p.scratch():
        result = p.allowed(case, "create_refund", order_id=order.id, reason="price_match", lines=units, amount="1.00")
        p.expect(result.get("refund", {}).get("status") == "approved", case, "a price match waits for a return")
        p.expect(
            result.get("price_match_window", {}).get("window_days") == PRICE_MATCH_WINDOW_DAYS,
            case,
            "the price-match window is not reported",
        )
        p.refused(
            "a second claim on the item",
            "create_refund",
            order_id=order.id,
            reason="price_match",
            lines=units,
            amount="1.00",
        )
    paid = line.unit_price * line.quantity
    p.refused(
        "a claim of the whole price",
        "create_refund",
        order_id=order.id,
        reason="price_match",
        lines=units,
        amount=f"{paid:.2f}",
    )


def _scenario_approval_limit(p: Probe) -> None:
    order = next(
        (o for o in _orders_with_money(status="fulfilled") if o.total - o.shipping_cost > REFUND_APPROVAL_LIMIT + 100),
        None,
    )
    if order is None:
        p.missing("split refunds add up", f"paid order over {REFUND_APPROVAL_LIMIT}")
        return
    part = to_cent(REFUND_APPROVAL_LIMIT * Decimal("0.6"))
    with p.scratch():
        first = p.allowed(
            "one refund under the limit", "create_refund", order_id=order.id, reason="other", amount=f"{part:.2f}"
        )
        p.expect(first.get("requires_approval") is False, "one refund under the limit", "a small refund needs approval")
        second = p.allowed(
            "split refunds add up", "create_refund", order_id=order.id, reason="shipping_issue", amount=f"{part:.2f}"
        )
        p.expect(
            (second.get("requires_approval"), second.get("refund", {}).get("status")) == (True, "pending"),
            "split refunds add up",
            "splitting a refund under the limit avoided the team lead's approval",
        )
    ticket, lead = _escalatable_ticket(), _support_employee(decides_exceptions=True)
    if ticket is None or lead is None:
        p.missing("the approval goes to a team lead", "open ticket and team lead")
        return
    with p.scratch():
        p.allowed(
            "the approval goes to a team lead",
            "create_escalation",
            ticket_id=ticket.id,
            escalation_type="policy_exception",
            assigned_to=lead.id,
            notes="Refunds of the order add up to more than the approval limit; asking for approval.",
        )


def _scenario_policy_exception_decider(p: Probe) -> None:
    ticket = _escalatable_ticket()
    agent, lead = _support_employee(decides_exceptions=False), _support_employee(decides_exceptions=True)
    if ticket is None or agent is None or lead is None:
        p.missing("a team lead decides", "open ticket, support agent and team lead")
        return
    notes = "The customer asks for a return 10 days past the window; asking for an exception."
    args = {"ticket_id": ticket.id, "escalation_type": "policy_exception", "notes": notes}
    with p.scratch():
        p.allowed("a team lead decides", "create_escalation", assigned_to=lead.id, **args)
    with p.scratch():
        p.refused("never a plain agent", "create_escalation", assigned_to=agent.id, **args)


def _claim_args(line: OrderLineItem, **extra: Any) -> dict:
    return {"line_item_id": line.id, "issue_description": "Stopped working after a week of normal use.", **extra}


def _scenario_warranty_coverage(p: Probe) -> None:
    active, expired = _warranty_line(active=True), _warranty_line(active=False)
    if active is None:
        p.missing("a defect within the warranty is approved", "delivered line under warranty")
    else:
        case = "a defect within the warranty is approved"
        details = p.allowed(case, "get_order_details", order_id=active.order_id)
        status = next((li["warranty_status"] for li in details.get("line_items", []) if li["id"] == active.id), None)
        p.expect(status == "active", case, f"get_order_details says the warranty is {status}")
        for category, expected in (("manufacturing_defect", "approved"), ("unknown", "pending_inspection")):
            with p.scratch():
                args = _claim_args(active, defect_category=category, remedy="replacement")
                result = p.allowed(f"{category}: {expected}", "create_warranty_claim", **args)
                got = result.get("claim", {}).get("status")
                p.expect(got == expected, f"{category}: {expected}", f"the claim is {got}")
        with p.scratch():
            p.refused(
                "an excluded cause is denied",
                "create_warranty_claim",
                **_claim_args(active, defect_category="physical_damage", remedy="replacement"),
            )
    if expired is None:
        p.missing("an expired warranty is denied", "delivered line out of warranty")
        return
    with p.scratch():
        p.refused(
            "an expired warranty is denied",
            "create_warranty_claim",
            **_claim_args(expired, defect_category="manufacturing_defect", remedy="replacement"),
        )


def _reported_before_expiry() -> tuple[OrderLineItem, SupportTicket] | None:
    """A line whose warranty was running when the customer opened a ticket about its order, and has ended since."""
    today = world_today()
    tickets = (
        SupportTicket.objects.filter(order__isnull=False)
        .exclude(status__in=CLOSED_TICKET_STATUSES)
        .select_related("order")
        .order_by("id")
    )
    for ticket in tickets:
        reported = local_date(ticket.created_at)
        delivered = delivered_at(ticket.order.shipments.all())
        for line in ticket.order.line_items.select_related("product").order_by("id"):
            if line.product.warranty_months <= 0 or WarrantyClaim.objects.filter(line_item=line).exists():
                continue
            if refunded_quantities(Refund.objects.filter(payment__order_id=line.order_id)).get(line.id):
                continue
            then = warranty_coverage(delivered, line.product.warranty_months, today=reported)
            now = warranty_coverage(delivered, line.product.warranty_months, today=today)
            if then.is_active and now.status == "expired":
                return line, ticket
    return None


def _scenario_warranty_claim_day(p: Probe) -> None:
    found = _reported_before_expiry()
    if found is None:
        p.missing("a defect reported before the end date is covered", "ticket opened before a warranty ended")
        return
    line, ticket = found
    case = "a defect reported before the end date is covered, though filed after it"
    with p.scratch():
        args = _claim_args(line, defect_category="manufacturing_defect", remedy="replacement")
        result = p.allowed(case, "create_warranty_claim", ticket_id=ticket.id, **args)
        got = result.get("claim", {}).get("status")
        p.expect(got == "approved", case, f"the claim is {got}")
        made = result.get("warranty", {}).get("claim_made_on")
        p.expect(made == local_date(ticket.created_at).isoformat(), case, f"the claim is made on {made}")
    with p.scratch():
        p.refused(
            "the same defect filed with no report before the end date is denied",
            "create_warranty_claim",
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement"),
        )
    with p.scratch():
        from world_app.routers import EPISODE_ALIAS

        SupportTicket.objects.using(EPISODE_ALIAS).filter(pk=ticket.pk).update(status="closed")
        p.refused(
            "a closed ticket is a past conversation: it does not date the claim",
            "create_warranty_claim",
            ticket_id=ticket.id,
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement"),
        )


def _scenario_warranty_remedy(p: Probe) -> None:
    sold = _warranty_line(active=True, lifecycles=frozenset({"active"}))
    gone = _warranty_line(active=True, lifecycles=WARRANTY_REFUND_LIFECYCLES)
    if sold is None:
        p.missing("a product on sale is replaced", "line of an active product under warranty")
    else:
        with p.scratch():
            p.allowed(
                "a product on sale is replaced",
                "create_warranty_claim",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="replacement"),
            )
        with p.scratch():
            p.refused(
                "a product on sale is not refunded",
                "create_warranty_claim",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="refund"),
            )
        with p.scratch():
            p.refused(
                "parts are not repaired",
                "create_warranty_claim",
                code="invalid_arguments",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="repair"),
            )
    if gone is None:
        p.missing("a product no longer sold may be refunded", "line of a discontinued product under warranty")
        return
    with p.scratch():
        p.allowed(
            "a product no longer sold may be refunded",
            "create_warranty_claim",
            **_claim_args(gone, defect_category="manufacturing_defect", remedy="refund"),
        )


def _scenario_loyalty_tier(p: Probe) -> None:
    product = _active_product()
    if product is None:
        p.missing("the record's tier is priced", "product on sale")
        return
    for tier, pct in LOYALTY_DISCOUNT_PCT.items():
        customer = Customer.objects.filter(loyalty_tier=tier).order_by("id").first()
        case = f"{tier}: {pct}% off merchandise"
        if customer is None:
            p.missing(case, f"{tier} customer")
            continue
        quote = p.allowed(
            case,
            "calculate_price",
            mode="quote",
            customer_id=customer.id,
            items=[{"product_id": product.id, "quantity": 1}],
            shipping_service="two_day",
        )
        expected = to_cent(product.price * pct / 100)
        got = sum((Decimal(d["amount"]) for d in quote.get("discounts", []) if d["kind"] == "loyalty"), Decimal(0))
        p.expect(got == expected, case, f"{tier} discount {got}, not {expected}")
        shipping = quote.get("shipping", {}).get("amount")
        p.expect(
            quote.get("total") == f"{product.price - expected + Decimal(shipping or 0):.2f}",
            case,
            "the loyalty discount touched shipping",
        )


def _scenario_same_customer(p: Probe) -> None:
    ticket = (
        SupportTicket.objects.filter(order__isnull=False, status__in=("new", "open", "pending_customer"))
        .select_related("order")
        .order_by("id")
        .first()
    )
    other_refund = (
        Refund.objects.exclude(payment__order__customer_id=ticket.customer_id).order_by("id").first()
        if ticket
        else None
    )
    resolver = _support_employee(decides_exceptions=False)
    if ticket is None or other_refund is None or resolver is None:
        p.missing("another customer's refund does not resolve the ticket", "ticket with an order and a refund")
        return
    args = {
        "ticket_id": ticket.id,
        "outcome": "refund_issued",
        "resolved_by": resolver.id,
        "summary": "Refund issued for the returned item.",
    }
    with p.scratch():
        p.refused(
            "another customer's refund does not resolve the ticket",
            "create_resolution",
            refund_id=other_refund.id,
            **args,
        )
    own = Refund.objects.filter(payment__order_id=ticket.order_id).order_by("id").first()
    if own is not None:
        with p.scratch():
            p.allowed("the order's own refund resolves it", "create_resolution", refund_id=own.id, **args)
    line = _warranty_line(active=True)
    stranger = (
        SupportTicket.objects.exclude(customer_id=line.order.customer_id).order_by("id").first() if line else None
    )
    if line is None or stranger is None:
        p.missing("a claim names the buyer's own ticket", "line under warranty")
        return
    with p.scratch():
        p.refused(
            "a claim names the buyer's own ticket",
            "create_warranty_claim",
            code="invalid_arguments",
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement", ticket_id=stranger.id),
        )


def _scenario_cancellation(p: Probe) -> None:
    open_order = (
        Order.objects.filter(status__in=("pending", "paid", "backorder"))
        .exclude(shipments__status__in=SHIPPED_SHIPMENT_STATUSES)
        .order_by("id")
        .first()
    )
    shipped = Order.objects.filter(shipments__status__in=("in_transit", "delivered")).order_by("id").first()
    if open_order is None or shipped is None:
        p.missing("an unshipped order is cancelled", "unshipped and shipped orders")
        return
    with p.scratch():
        p.allowed("an unshipped order is cancelled", "update_order_status", order_id=open_order.id, status="cancelled")
    with p.scratch():
        p.refused(
            "a shipped order is not",
            "update_order_status",
            order_id=shipped.id,
            status="cancelled",
            code="policy_violation" if shipped.status in ("pending", "paid", "backorder") else "invalid_transition",
        )


def _scenario_one_coupon(p: Probe) -> None:
    product = (
        Product.objects.filter(lifecycle="active", stock_quantity__gt=0, price__gte=COUPONS["SAVE25"].min_merchandise)
        .order_by("id")
        .first()
    )
    if product is None:
        p.missing("one coupon", "product over the coupon minimum")
        return
    items = [{"product_id": product.id, "quantity": 1}]
    quote = p.allowed("one coupon", "calculate_price", mode="quote", items=items, coupon_codes=["SAVE25"])
    p.expect(quote.get("discount_total") == "25.00", "one coupon", f"SAVE25 took {quote.get('discount_total')}")
    p.refused("two coupons", "calculate_price", mode="quote", items=items, coupon_codes=["SAVE25", "WELCOME10"])


SCENARIOS: dict[str, Callable[[Probe], None]] = {
    "return-window": _scenario_return_window,
    "restocking-fee": _scenario_restocking_fee,
    "restocking-fee-kept": _scenario_restocking_fee_kept,
    "shipping-refund": _scenario_shipping_refund,
    "full-refund-status": _scenario_full_refund_status,
    "price-match": _scenario_price_match,
    "approval-limit": _scenario_approval_limit,
    "policy-exception-decider": _scenario_policy_exception_decider,
    "warranty-coverage": _scenario_warranty_coverage,
    "return-window-basis": _scenario_return_window_basis,
    "disputed-payment": _scenario_disputed_payment,
    "warranty-claim-day": _scenario_warranty_claim_day,
    "warranty-remedy": _scenario_warranty_remedy,
    "loyalty-tier": _scenario_loyalty_tier,
    "same-customer": _scenario_same_customer,
    "cancellation": _scenario_cancellation,
    "one-coupon": _scenario_one_coupon,
}


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


DATA_CHECKS: dict[str, Callable[[WorldFacts], list[str]]] = {
    "return-window": _data_return_window,
    "restocking-fee": _data_restocking_fee,
    "restocking-fee-kept": _data_ceiling,
    "shipping-refund": _data_ceiling,
    "full-refund-status": _data_full_refund_status,
    "price-match": _data_price_match,
    "approval-limit": _data_approval_limit,
    "policy-exception-decider": _data_policy_exception_decider,
    "warranty-coverage": _data_warranty_coverage,
    "warranty-remedy": _data_warranty_remedy,
    "loyalty-tier": _data_loyalty_tier,
    "disputed-payment": _data_disputed_payment,
    "same-customer": _data_same_customer,
    "cancellation": _data_cancellation,
    "one-coupon": _data_one_coupon,
}


# --- the check -------------------------------------------------------------------------------------------------------


def rules_check(*, rule_ids: list[str] | None = None) -> dict:
    """Run every rule's scenarios and data check in the current world (call it inside ``episode_world``)."""
    rules = [r for r in RULES if not rule_ids or r.id in rule_ids]
    facts = WorldFacts.read()
    articles = dict(KnowledgeBaseArticle.objects.values_list("slug", "id"))
    report = []
    findings: list[Finding] = []
    for rule in rules:
        probe = Probe(rule)
        scenario = SCENARIOS.get(rule.id)
        if scenario is None:
            probe.findings.append(Finding(rule.id, "scenario", "-", "the rule has no scenario"))
        else:
            scenario(probe)
        for name in rule.tools:
            if get_tool(name) is None:
                probe.findings.append(Finding(rule.id, "tools", name, f"no tool named {name}"))
            elif name not in probe.tools_used:
                probe.findings.append(Finding(rule.id, "tools", name, f"the scenarios never run {name}"))
        for slug in rule.kb:
            if slug not in articles:
                probe.findings.append(Finding(rule.id, "kb", slug, f"no knowledge-base article {slug}"))
        violations = DATA_CHECKS[rule.id](facts) if rule.id in DATA_CHECKS else []
        for message in violations[:MAX_LISTED]:
            probe.findings.append(Finding(rule.id, "data", "generated world", message))
        if len(violations) > MAX_LISTED:
            probe.findings.append(
                Finding(rule.id, "data", "generated world", f"... and {len(violations) - MAX_LISTED} more")
            )
        findings += probe.findings
        report.append(
            {
                "id": rule.id,
                "statement": rule.statement,
                "held_by": rule.holder,
                "tools": list(rule.tools),
                "kb_articles": [{"slug": slug, "id": articles.get(slug)} for slug in rule.kb],
                "cases": probe.cases,
                "data_violations": len(violations),
                "contradictions": [f.as_dict() for f in probe.findings],
            }
        )
    contradictions = sum(len(r["contradictions"]) for r in report)
    return {"rules": report, "rule_count": len(report), "contradictions": contradictions}


def rules_check_snapshot(*, snapshot=None, rule_ids: list[str] | None = None) -> dict:
    """``rules_check`` in a scratch episode of ``snapshot`` (default: the latest published), closed afterwards."""
    snapshot = snapshot or snapshot_latest()
    with scratch_world(snapshot, label="world_rules --check"):
        result = rules_check(rule_ids=rule_ids)
    return {"snapshot": snapshot.version, **result}
