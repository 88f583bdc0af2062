"""Search tools for what follows an order: its shipments and its payments (``search_shipments``,
``search_payments``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from django.db.models import F, QuerySet
from pydantic import Field

from world_app.models import Carrier, Payment, PaymentMethod, PaymentStatus, Shipment, ShipmentStatus, ShippingService
from world_app.tools.ledger import refunded_by_payment
from world_app.tools.params import EntityId, Money, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import payment_record, shipment_record
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter

ZERO_MONEY = Decimal("0.00")


class SearchShipmentsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the shipment id, tracking number or order id.")
    order_id: EntityId | None = Field(None, description="Only this order's shipments.")
    customer_id: EntityId | None = Field(None, description="Only shipments of this customer's orders.")
    carrier: Literal[choice_values(Carrier)] | None = Field(None, description="Only this carrier.")
    service: Literal[choice_values(ShippingService)] | None = Field(None, description="Only this shipping service.")
    status: Literal[choice_values(ShipmentStatus)] | None = Field(None, description="Only shipments in this status.")
    shipped_after: WorldTime | None = after_field("shipments that left")
    shipped_before: WorldTime | None = before_field("shipments that left")
    delivered_after: WorldTime | None = after_field("shipments delivered")
    delivered_before: WorldTime | None = before_field("shipments delivered")
    sort: Literal["newest", "oldest"] = Field(
        "newest", description="Order of results by the time they shipped: newest or oldest first (unshipped last)."
    )


SHIPMENT_TEXT = ("id", "tracking_number", "order__id")
SHIPMENT_SORTS = {
    "newest": (F("shipped_at").desc(nulls_last=True), "-id"),
    "oldest": (F("shipped_at").asc(nulls_last=True), "id"),
}


@tool(group="search", params=SearchShipmentsParams)
def search_shipments(p: SearchShipmentsParams) -> dict:
    """Find shipments by order, customer, carrier, service, status, or ship and delivery dates.

    Returns a page of shipments with tracking number, status, ship, estimated and actual delivery times, and the
    carrier's scan events (oldest first).
    """
    return SHIPMENT_SEARCH.page(p, shipment_record)


def _shipments(p: SearchShipmentsParams) -> QuerySet:
    condition = (
        text_filter(p.query, SHIPMENT_TEXT, Shipment)
        & range_filter("shipped_at", p.shipped_after, p.shipped_before)
        & range_filter("delivered_at", p.delivered_after, p.delivered_before)
        & exact_filters(
            order_id=p.order_id, order__customer_id=p.customer_id, carrier=p.carrier, service=p.service, status=p.status
        )
    )
    return Shipment.objects.filter(condition).order_by(*SHIPMENT_SORTS[p.sort])


SHIPMENT_SEARCH = BakedSearch(
    Shipment,
    SearchShipmentsParams,
    _shipments,
    values=("order_id", "customer_id"),
    unbaked=("shipped_after", "shipped_before", "delivered_after", "delivered_before"),
    text_fields=SHIPMENT_TEXT,
    sorts=SHIPMENT_SORTS,
)


# --- payments ------------------------------------------------------------------------------------------------


class SearchPaymentsParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the payment id, transaction id, card's last 4 digits or order id."
    )
    order_id: EntityId | None = Field(None, description="Only this order's payments.")
    customer_id: EntityId | None = Field(None, description="Only this customer's payments.")
    method: Literal[choice_values(PaymentMethod)] | None = Field(None, description="Only this payment method.")
    status: Literal[choice_values(PaymentStatus)] | None = Field(None, description="Only payments in this status.")
    min_amount: Money | None = Field(None, description="Only payments of at least this many dollars.")
    max_amount: Money | None = Field(None, description="Only payments of at most this many dollars.")
    created_after: WorldTime | None = after_field("payments made")
    created_before: WorldTime | None = before_field("payments made")
    sort: Literal["newest", "oldest", "amount_desc"] = Field(
        "newest", description="Order of results: newest or oldest first, or largest amount first."
    )


PAYMENT_TEXT = ("id", "transaction_id", "card_last4", "order__id")
PAYMENT_SORTS = {"newest": ("-created_at", "-id"), "oldest": ("created_at", "id"), "amount_desc": ("-amount", "id")}


@tool(group="search", params=SearchPaymentsParams)
def search_payments(p: SearchPaymentsParams) -> dict:
    """Find payments by order, customer, method, status, amount or date.

    Returns a page of payments with amount, status, method, transaction id and `refunded_total` (the sum of the
    payment's refunds that were not rejected).
    """
    refunded: dict = {}

    def load_refunds(rows: list[Payment]) -> None:
        refunded.update(refunded_by_payment(r.id for r in rows))

    return PAYMENT_SEARCH.page(p, lambda pay: payment_record(pay, refunded.get(pay.id, ZERO_MONEY)), load_refunds)


def _payments(p: SearchPaymentsParams) -> QuerySet:
    condition = (
        text_filter(p.query, PAYMENT_TEXT, Payment)
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(order_id=p.order_id, customer_id=p.customer_id, method=p.method, status=p.status)
        & exact_filters(amount__gte=p.min_amount, amount__lte=p.max_amount)
    )
    return Payment.objects.filter(condition).order_by(*PAYMENT_SORTS[p.sort])


PAYMENT_SEARCH = BakedSearch(
    Payment,
    SearchPaymentsParams,
    _payments,
    values=("order_id", "customer_id"),
    unbaked=("min_amount", "max_amount", "created_after", "created_before"),
    text_fields=PAYMENT_TEXT,
    sorts=PAYMENT_SORTS,
)
