"""The order write tool: ``update_order_status`` moves an order along the order state machine
(``store_rules.ORDER_TRANSITIONS``), refusing the moves the store does not allow: an order with a parcel on its way
cannot be cancelled, it must be returned.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from world_app import clock
from world_app.models import (
    Order,
    OrderStatus,
    PaymentStatus,
    Shipment,
)
from world_app.store_rules import (
    CANCELLABLE_ORDER_STATUSES,
    ORDER_TRANSITIONS,
    SHIPPED_SHIPMENT_STATUSES,
)
from world_app.tools.baked import save_fields
from world_app.tools.ledger import ORDER_PAYMENTS
from world_app.tools.lookups import ORDER_SHIPMENTS, fetch
from world_app.tools.params import EntityId, ToolParams
from world_app.tools.records import order_summary
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError, money


class UpdateOrderStatusParams(ToolParams):
    order_id: EntityId = Field(description="The order to change.")
    status: Literal[tuple(OrderStatus.values)] = Field(
        description="The new status. Orders move: pending -> paid or cancelled; paid -> fulfilled, backorder or "
        "cancelled; backorder -> paid, fulfilled or cancelled. Refund statuses are set by create_refund."
    )
    reason: str = Field("", max_length=500, description="Why: appended to the order's notes with the date.")


@tool(group="write", params=UpdateOrderStatusParams)
def update_order_status(p: UpdateOrderStatusParams) -> dict:
    """Move an order to a new status along the order state machine (e.g. cancel it, mark it backordered).

    Refused with the reason when the move is not allowed: an order whose shipment has left the warehouse (in
    transit, out for delivery, delivered, carrier exception) cannot be cancelled, it must be returned; an order
    becomes paid only with a captured payment and fulfilled only with a shipment. Cancelling voids authorised
    payments; a captured payment must then be refunded with create_refund.
    """
    order = fetch(Order, p.order_id, field="order_id", related=("customer",))
    current = order.status
    if p.status == current:
        raise ToolError(ErrorCode.INVALID_TRANSITION, f"order {order.id} is already {current}", field="status")
    if p.status in {OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED}:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"{p.status} follows from refunds: use create_refund, which sets the order's status",
            field="status",
        )
    allowed = ORDER_TRANSITIONS.get(current, frozenset())
    if p.status not in allowed:
        options = ", ".join(sorted(allowed)) if allowed else f"nothing ({current} is final)"
        raise ToolError(
            ErrorCode.INVALID_TRANSITION,
            f"order {order.id} is {current}; from {current} it can move to: {options}",
            field="status",
        )
    shipments = ORDER_SHIPMENTS(order.id)
    payments = ORDER_PAYMENTS(order.id)
    now = clock.world_now()
    voided: list[str] = []
    next_steps: list[str] = []
    if p.status == OrderStatus.CANCELLED:
        _check_cancellable(order, shipments)
        for pay in payments:
            if pay.status in {PaymentStatus.PENDING, PaymentStatus.AUTHORIZED}:
                pay.status = PaymentStatus.VOIDED
                pay.updated_at = now
                save_fields(pay, ["status", "updated_at"])
                voided.append(pay.id)
            elif pay.status in {PaymentStatus.CAPTURED, PaymentStatus.COMPLETED}:
                next_steps.append(f"payment {pay.id} (${money(pay.amount)}) was captured: refund it with create_refund")
    elif p.status == OrderStatus.PAID:
        if not any(pay.status in {PaymentStatus.CAPTURED, PaymentStatus.COMPLETED} for pay in payments):
            listed = ", ".join(f"{pay.id} ({pay.status})" for pay in payments) or "none"
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"order {order.id} has no captured payment (payments: {listed}): it cannot be marked paid",
                field="status",
            )
    elif p.status == OrderStatus.FULFILLED and not shipments:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"order {order.id} has no shipment: it is fulfilled when it ships",
            field="status",
        )
    order.status = p.status
    order.updated_at = now
    note = f"[{now.astimezone(clock.world_zone()).date().isoformat()}] {current} -> {p.status}"
    if p.reason:
        note += f": {p.reason}"
    order.notes = f"{order.notes}\n{note}" if order.notes else note
    save_fields(order, ["status", "updated_at", "notes"])
    return {
        "order": order_summary(order),
        "previous_status": current,
        "notes": order.notes,
        "payments_voided": voided,
        "next_steps": next_steps,
    }


def _check_cancellable(order: Order, shipments: list[Shipment]) -> None:
    if order.status not in CANCELLABLE_ORDER_STATUSES:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"order {order.id} is {order.status}; only {', '.join(sorted(CANCELLABLE_ORDER_STATUSES))} orders can "
            "be cancelled",
            field="status",
        )
    for shipment in shipments:
        if shipment.status in SHIPPED_SHIPMENT_STATUSES:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"order {order.id} has shipped: shipment {shipment.id} ({shipment.carrier} "
                f"{shipment.tracking_number}) is {shipment.status}. A shipped order cannot be cancelled; the customer "
                "can return it after delivery",
                field="status",
            )
