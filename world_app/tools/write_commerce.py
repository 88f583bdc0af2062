"""The refund write tool: ``create_refund``, by the refund policies (what may come back, the windows, the approval
limit, what was paid). Order status changes are ``write_orders``.

A refusal names the rule and the numbers, and writes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Literal

from pydantic import Field, model_validator

from world_app import clock
from world_app.models import (
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    Refund,
    RefundReason,
    RefundStatus,
    Shipment,
)
from world_app.store_rules import (
    ORDER_TRANSITIONS,
    PRICE_MATCH_CLAIMS_PER_LINE,
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVAL_LIMIT,
    REFUND_APPROVED_AT_ONCE_REASONS,
    REFUNDABLE_PAYMENT_STATUSES,
    SHIPPED_SHIPMENT_STATUSES,
)
from world_app.tools.baked import create_row, save_fields
from world_app.tools.coverage import delivered_at, return_window
from world_app.tools.ids import new_id
from world_app.tools.ledger import ZERO, OrderLedger, order_ledger
from world_app.tools.lookups import ORDER_LINES, ORDER_SHIPMENTS, fetch
from world_app.tools.params import EntityId, LineQuantity, Money, ToolParams
from world_app.tools.pricing import (
    RefundLine,
    lines_to_refund,
    refund_breakdown,
    refund_lines,
    shipping_refund_due,
)
from world_app.tools.records import payment_record, refund_record
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError, local_date, money, world_today

# Reasons that send goods back: they refund specific units (lines), never a free amount.
RETURN_REASONS = frozenset({RefundReason.CUSTOMER_REMORSE, RefundReason.DEFECTIVE, RefundReason.INCOMPATIBLE})


class CreateRefundParams(ToolParams):
    order_id: EntityId | None = Field(None, description="The order to refund. Give this, payment_id, or both.")
    payment_id: EntityId | None = Field(
        None, description="The payment to refund; by default the order's first captured payment with enough left."
    )
    reason: Literal[tuple(RefundReason.values)] = Field(
        description="customer_remorse, defective, incompatible (returns: give lines); price_match (give the "
        "matched units as lines and the difference as amount); shipping_issue or other (lines or amount)."
    )
    lines: list[LineQuantity] = Field(
        default_factory=list,
        max_length=50,
        description="Returned units per order line; the refund is computed. For price_match: the matched units.",
    )
    opened: bool | None = Field(
        None, description="With returned lines: whether the items were opened (opened items may pay a fee)."
    )
    amount: Money | None = Field(
        None, description="A refund not tied to returned units: a price-match difference or a goodwill amount."
    )
    notes: str = Field("", max_length=2000, description="Why, in a sentence: stored with the refund.")

    @model_validator(mode="after")
    def _lines_or_amount(self) -> CreateRefundParams:
        if not self.order_id and not self.payment_id:
            raise ValueError("give order_id or payment_id")
        if self.reason == RefundReason.PRICE_MATCH:
            if self.amount is None or not self.lines:
                raise ValueError("a price_match refund is the price difference for named units: give lines and amount")
        elif self.lines and self.amount is not None:
            raise ValueError("give lines (returned units) or amount, not both")
        if self.reason in RETURN_REASONS and not self.lines:
            raise ValueError(f"a {self.reason} refund returns goods: list the returned units in lines")
        if not self.lines and self.amount is None:
            raise ValueError("give lines (returned units) or amount")
        if self.lines and self.opened is None and self.reason != RefundReason.PRICE_MATCH:
            raise ValueError("with lines, say whether the items were opened (opened: true or false)")
        if self.amount is not None and self.amount <= 0:
            raise ValueError("amount must be more than 0")
        return self


@tool(group="write", params=CreateRefundParams)
def create_refund(p: CreateRefundParams) -> dict:
    """Refund a customer, keeping the books; the order and payment statuses follow.

    Whether a refund is due (inside the return or price-match window, defective, an exception) is yours to
    judge: the result shows the return window (and the price-match window) so you can check.

    Returns (lines + opened): refunds what was paid for the units, less a {RESTOCKING_FEE_PCT}% restocking fee
    on opened items returned as customer_remorse or incompatible (cables and accessories exempt). Shipping is
    kept once the order has shipped; an order that never shipped gets it back with its last units. Price match
    (lines + amount): one claim per line, for less than was paid for its units. A refund can never exceed what was
    taken, less the shipping kept, the restocking fees withheld and earlier refunds; money taken twice (a
    duplicate charge) comes back in full. Every unit refunded: the order and payment become refunded.
    Defective returns and refunds of an amount are approved at once; other returns stay pending until the goods
    are inspected. Refunds of one order on one day that add up to more than ${REFUND_APPROVAL_LIMIT} stay pending
    until a team lead approves them (open a policy_exception escalation).
    """
    order, payment_given = _order_and_payment(p)
    shipments = ORDER_SHIPMENTS(order.id)
    ledger = order_ledger(order, shipments=shipments)
    _check_money_was_taken(ledger, payment_given)
    priced: list[RefundLine] = []
    refunded_units = ledger.refunded_quantities()
    every_unit = False
    shipping = ZERO
    window = return_window(delivered_at(shipments))
    price_match_window = None
    if p.reason == RefundReason.PRICE_MATCH:
        chosen = lines_to_refund(order, p.lines, refunded_units)
        _check_price_match(order, ledger, chosen, p.amount)
        amount = p.amount
        stored_lines = [{"line_item_id": line.id, "quantity": qty} for line, qty in chosen]
        price_match_window = _price_match_window(order)
    elif p.lines:
        chosen = lines_to_refund(order, p.lines, refunded_units)
        _check_goods_can_come_back(order, shipments, reason=p.reason)
        priced = refund_lines(order, chosen, opened=bool(p.opened), reason=p.reason)
        shipping = shipping_refund_due(order, chosen, refunded_units=refunded_units, has_shipped=ledger.has_shipped)
        amount = sum((r.refund for r in priced), ZERO) + shipping
        if amount <= 0:
            raise ToolError(ErrorCode.POLICY_VIOLATION, "these units refund $0.00: nothing to refund", field="lines")
        stored_lines = [{"line_item_id": r.line.id, "quantity": r.quantity} for r in priced]
        every_unit = _every_unit_refunded(order, refunded_units, chosen)
    else:
        amount = p.amount
        stored_lines = []
    _check_order_ceiling(ledger, amount)
    payment = _payment_for(ledger, payment_given, amount)

    now = clock.world_now()
    today_total = _refunded_today(ledger) + amount
    needs_approval = today_total > REFUND_APPROVAL_LIMIT
    returns_goods = bool(priced)
    approved = not needs_approval and (p.reason in REFUND_APPROVED_AT_ONCE_REASONS or not returns_goods)
    fee = sum((r.restocking_fee for r in priced), ZERO)
    overpaid_before = ledger.overpaid
    refund = create_row(
        Refund,
        id=new_id(Refund),
        payment=payment,
        amount=amount,
        reason=p.reason,
        status=RefundStatus.APPROVED if approved else RefundStatus.PENDING,
        restocking_fee=fee,
        line_items=stored_lines,
        notes=p.notes,
        created_at=now,
        updated_at=now,
    )
    ledger.refunds.append(refund)
    ledger.refunded_per_payment[payment.id] = ledger.refunded_per_payment.get(payment.id, ZERO) + amount
    fully_refunded = every_unit or ledger.refundable_remaining <= 0
    payment.status = (
        PaymentStatus.REFUNDED
        if fully_refunded or ledger.payment_remaining(payment) <= 0
        else PaymentStatus.PARTIALLY_REFUNDED
    )
    payment.updated_at = now
    save_fields(payment, ["status", "updated_at"])
    previous_status = order.status
    next_steps: list[str] = []
    if amount <= overpaid_before and not priced:
        # Money taken twice goes back; the order itself stays paid in full.
        next_steps.append(
            f"${money(amount)} was taken beyond order {order.id}'s ${money(order.total)} total: refunded in full, "
            f"the order stays {order.status}"
        )
    else:
        target = OrderStatus.REFUNDED if fully_refunded else OrderStatus.PARTIALLY_REFUNDED
        if target in ORDER_TRANSITIONS.get(order.status, frozenset()):
            order.status = target
            order.updated_at = now
            save_fields(order, ["status", "updated_at"])
        elif order.status != target:
            next_steps.append(
                f"order {order.id} stays {order.status}: the order status machine has no {order.status} -> {target}"
            )
    if needs_approval:
        next_steps.append(
            f"order {order.id}'s refunds today come to ${money(today_total)}, over the ${REFUND_APPROVAL_LIMIT} "
            "approval limit: the refund stays pending until a team lead approves it; open an escalation of type "
            "policy_exception on the customer's ticket"
        )
    elif not approved:
        next_steps.append(f"{p.reason} refunds stay pending until the returned items are received and inspected")
    result = {
        "refund": refund_record(refund),
        "order_id": order.id,
        "order_status": order.status,
        "previous_order_status": previous_status,
        "payment": payment_record(payment, ledger.refunded_per_payment[payment.id]),
        "requires_approval": needs_approval,
        "refundable_remaining": money(ledger.refundable_remaining),
        "return_window": window.as_dict(),
        "next_steps": next_steps,
    }
    if price_match_window is not None:
        result["price_match_window"] = price_match_window
    if priced:
        result["breakdown"] = refund_breakdown(
            priced, opened=bool(p.opened), reason=p.reason, shipping=shipping, has_shipped=ledger.has_shipped
        )
    return result


def _every_unit_refunded(order: Order, refunded_units: dict[str, int], chosen: list) -> bool:
    asked: dict[str, int] = {}
    for line, quantity in chosen:
        asked[line.id] = asked.get(line.id, 0) + quantity
    return all(
        refunded_units.get(line_id, 0) + asked.get(line_id, 0) >= quantity
        for line_id, quantity in ((line.id, line.quantity) for line in ORDER_LINES(order.id))
    )


def _refunded_today(ledger: OrderLedger) -> Decimal:
    today = world_today()
    return sum(
        (r.amount for r in ledger.refunds if r.status != RefundStatus.REJECTED and local_date(r.created_at) == today),
        ZERO,
    )


def _order_and_payment(p: CreateRefundParams) -> tuple[Order, Payment | None]:
    if p.payment_id:
        payment = fetch(Payment, p.payment_id, field="payment_id", related=("order",))
        if p.order_id and payment.order_id != p.order_id:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"payment {payment.id} belongs to order {payment.order_id}, not {p.order_id}",
                field="payment_id",
            )
        return payment.order, payment
    return fetch(Order, p.order_id, field="order_id"), None


def _check_goods_can_come_back(order: Order, shipments: list[Shipment], *, reason: str) -> None:
    """Goods on their way cannot be returned yet; a lost or damaged parcel is a shipping_issue."""
    if delivered_at(shipments) is not None or reason == RefundReason.SHIPPING_ISSUE:
        return
    moving = [s for s in shipments if s.status in SHIPPED_SHIPMENT_STATUSES]
    if moving:
        shipment = moving[0]
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"order {order.id} has shipped (shipment {shipment.id} is {shipment.status}) but is not delivered: "
            "a return starts after delivery; a lost or damaged shipment is a shipping_issue",
            field="reason",
        )


def _check_price_match(order: Order, ledger: OrderLedger, chosen: list, amount: Decimal) -> None:
    claimed = {
        entry.get("line_item_id")
        for r in ledger.refunds
        if r.reason == RefundReason.PRICE_MATCH and r.status != RefundStatus.REJECTED
        for entry in (r.line_items or [])
        if isinstance(entry, dict)
    }
    for line, _ in chosen:
        if len([c for c in claimed if c == line.id]) >= PRICE_MATCH_CLAIMS_PER_LINE:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"line {line.id} ({line.product.name}) already has a price-match refund: one claim per item",
                field="lines",
            )
    paid = sum((r.merchandise - r.discount_share for r in refund_lines(order, chosen, opened=False, reason="")), ZERO)
    if amount >= paid:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"a price match refunds the difference: ${money(amount)} is not less than the ${money(paid)} paid for "
            "these units",
            field="amount",
        )


def _price_match_window(order: Order) -> dict:
    sold_on = local_date(order.created_at)
    days = (world_today() - sold_on).days
    return {
        "sold_on": sold_on.isoformat(),
        "days_since_sale": days,
        "window_days": PRICE_MATCH_WINDOW_DAYS,
        "last_day": (sold_on + timedelta(days=PRICE_MATCH_WINDOW_DAYS)).isoformat(),
        "is_open": days <= PRICE_MATCH_WINDOW_DAYS,
    }


def _check_order_ceiling(ledger: OrderLedger, amount: Decimal) -> None:
    if amount <= ledger.refundable_remaining:
        return
    raise ToolError(
        ErrorCode.POLICY_VIOLATION,
        f"a ${money(amount)} refund is more than order {ledger.order.id} allows: {ledger.ceiling_explained()} that "
        "can still be refunded",
        field="amount",
    )


def _check_money_was_taken(ledger: OrderLedger, given: Payment | None) -> None:
    if given is not None:
        _check_payment_refundable(given)
        return
    if not any(pay.status in REFUNDABLE_PAYMENT_STATUSES for pay in ledger.payments):
        listed = ", ".join(f"{pay.id} ({pay.status})" for pay in ledger.payments) or "none"
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"order {ledger.order.id} has no captured payment to refund (payments: {listed}); an authorised payment "
            "is voided by cancelling the order",
            field="order_id",
        )


def _payment_for(ledger: OrderLedger, given: Payment | None, amount: Decimal) -> Payment:
    if given is not None:
        left = ledger.payment_remaining(given)
        if amount > left:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"payment {given.id} captured ${money(given.amount)} and has ${money(given.amount - left)} refunded "
                f"already: at most ${money(left)} can be refunded on it, not ${money(amount)}",
                field="payment_id",
            )
        return next(pay for pay in ledger.payments if pay.id == given.id)
    refundable = [pay for pay in ledger.payments if pay.status in REFUNDABLE_PAYMENT_STATUSES]
    for pay in refundable:
        if ledger.payment_remaining(pay) >= amount:
            return pay
    raise ToolError(
        ErrorCode.POLICY_VIOLATION,
        f"no single payment of order {ledger.order.id} has ${money(amount)} left to refund: "
        + ", ".join(f"{pay.id} has ${money(ledger.payment_remaining(pay))}" for pay in refundable)
        + "; refund in parts, naming payment_id",
        field="amount",
    )


def _check_payment_refundable(payment: Payment) -> None:
    if payment.status in REFUNDABLE_PAYMENT_STATUSES:
        return
    why = {
        PaymentStatus.PENDING: "it was never captured; cancelling the order voids it",
        PaymentStatus.AUTHORIZED: "it was only authorised, never captured; cancelling the order voids it",
        PaymentStatus.FAILED: "no money was taken",
        PaymentStatus.VOIDED: "it was voided: no money was taken",
        PaymentStatus.REFUNDED: "it is fully refunded already",
        PaymentStatus.DISPUTED: "the customer disputed it with the bank: finance handles it (escalate)",
    }.get(payment.status, "")
    raise ToolError(
        ErrorCode.POLICY_VIOLATION,
        f"payment {payment.id} is {payment.status} and cannot be refunded: {why}",
        field="payment_id",
    )
