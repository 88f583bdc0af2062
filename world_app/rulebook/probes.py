"""What a rule's scenarios run through (``Probe``: a tool call expected to be allowed or refused, each failure a
``Finding``) and the finders that pick the world's entities for a scenario to run on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from world_app.models import Employee, Escalation, Order, OrderLineItem, Product, Refund, SupportTicket, WarrantyClaim
from world_app.store_rules import (
    POLICY_EXCEPTION_PERMISSION,
    POLICY_EXCEPTION_ROLES,
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    SHIPPED_SHIPMENT_STATUSES,
    Rule,
)
from world_app.tools.coverage import delivered_at, return_window, warranty_coverage
from world_app.tools.ledger import refunded_quantities
from world_app.tools.registry import invoke_tool

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
