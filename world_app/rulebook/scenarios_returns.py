"""The scenarios of the return and refund rules: the return window and its basis, disputed payments, the
restocking fee, shipping refunds, a full refund's status and price matches.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from world_app.models import Order, Payment, Refund, SupportTicket
from world_app.money import to_cent
from world_app.rulebook.probes import (
    MONEY,
    Probe,
    _delivered_order,
    _every_line,
    _fee_line,
    _orders_with_money,
    _support_employee,
    _unshipped_paid_order,
)
from world_app.store_rules import PRICE_MATCH_WINDOW_DAYS, REFUND_APPROVAL_LIMIT, RESTOCKING_FEE_PCT, RETURN_WINDOW_DAYS
from world_app.tools.coverage import CLOSED_TICKET_STATUSES, delivered_at, return_window
from world_app.tools.results import local_date, world_today

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
