"""Search tools for customers and the orders they placed (``search_customers``, ``search_orders``)."""

from __future__ import annotations

from typing import Literal

from django.db.models import Q, QuerySet
from pydantic import Field

from world_app.models import Customer, LoyaltyTier, Order, OrderLineItem, OrderStatus
from world_app.tools.baked import BakedQuery
from world_app.tools.params import EntityId, Money, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import customer_record, order_summary
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter


class SearchCustomersParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the customer's id, name, email, phone or addresses (city, ZIP, street)."
    )
    email: str | None = Field(None, max_length=254, description="Exact email address (case-insensitive).")
    loyalty_tier: Literal[choice_values(LoyaltyTier)] | None = Field(None, description="Only customers of this tier.")
    created_after: WorldTime | None = after_field("customers who joined")
    created_before: WorldTime | None = before_field("customers who joined")
    sort: Literal["id", "name", "newest", "oldest"] = Field(
        "id", description="Order of results: id, name (last then first), newest or oldest account first."
    )


CUSTOMER_TEXT = ("id", "first_name", "last_name", "email", "phone", "addresses")
CUSTOMER_SORTS = {
    "id": ("id",),
    "name": ("last_name", "first_name", "id"),
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
}


@tool(group="search", params=SearchCustomersParams)
def search_customers(p: SearchCustomersParams) -> dict:
    """Find customers by name, email, phone, address words, loyalty tier or sign-up date.

    Returns a page of customer records (id, name, email, phone, addresses, loyalty tier and discount). Several
    accounts may share a name or email: check the details before acting on one.
    """
    return CUSTOMER_SEARCH.page(p, customer_record)


def _customers(p: SearchCustomersParams) -> QuerySet:
    return Customer.objects.filter(
        text_filter(p.query, CUSTOMER_TEXT, Customer)
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(loyalty_tier=p.loyalty_tier, email__iexact=p.email)
    ).order_by(*CUSTOMER_SORTS[p.sort])


CUSTOMER_SEARCH = BakedSearch(
    Customer,
    SearchCustomersParams,
    _customers,
    unbaked=("email", "created_after", "created_before"),
    text_fields=CUSTOMER_TEXT,
    sorts=CUSTOMER_SORTS,
)


# --- orders --------------------------------------------------------------------------------------------------


class SearchOrdersParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the order id, its notes, or the customer's name or email."
    )
    customer_id: EntityId | None = Field(None, description="Only this customer's orders.")
    status: Literal[choice_values(OrderStatus)] | None = Field(None, description="Only orders in this status.")
    product_id: EntityId | None = Field(None, description="Only orders with a line for this product.")
    build_id: EntityId | None = Field(None, description="Only orders made from this build.")
    created_after: WorldTime | None = after_field("orders placed")
    created_before: WorldTime | None = before_field("orders placed")
    min_total: Money | None = Field(None, description="Only orders whose total is at least this many dollars.")
    max_total: Money | None = Field(None, description="Only orders whose total is at most this many dollars.")
    sort: Literal["newest", "oldest", "total_desc", "total_asc"] = Field(
        "newest", description="Order of results: newest or oldest first, or by total (highest or lowest first)."
    )


ORDER_TEXT = ("id", "notes", "customer__first_name", "customer__last_name", "customer__email")
ORDER_SORTS = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "total_desc": ("-total", "id"),
    "total_asc": ("total", "id"),
}


@tool(group="search", params=SearchOrdersParams)
def search_orders(p: SearchOrdersParams) -> dict:
    """Find orders by customer, status, product bought, build, date placed or total.

    Returns a page of order summaries (status, totals, shipping service, dates) without line items: call
    get_order_details for lines, payments, shipments and refunds. Newest first unless `sort` says otherwise.
    """
    return ORDER_SEARCH.page(p, order_summary, _load_customers)


def _orders(p: SearchOrdersParams) -> QuerySet:
    condition = (
        text_filter(p.query, ORDER_TEXT, Order)
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(customer_id=p.customer_id, status=p.status, build_id=p.build_id)
        & exact_filters(total__gte=p.min_total, total__lte=p.max_total)
    )
    if p.product_id:
        condition &= Q(id__in=OrderLineItem.objects.filter(product_id=p.product_id).values("order_id"))
    return Order.objects.filter(condition).order_by(*ORDER_SORTS[p.sort])


CUSTOMERS = BakedQuery(Customer, lambda ids: Customer.objects.filter(pk__in=ids))


def _load_customers(orders: list[Order]) -> None:
    """Each order's customer, in one baked query (a join would keep the page query from being baked)."""
    customers = {customer.id: customer for customer in CUSTOMERS(sorted({o.customer_id for o in orders}))}
    for order in orders:
        order.customer = customers[order.customer_id]


ORDER_SEARCH = BakedSearch(
    Order,
    SearchOrdersParams,
    _orders,
    values=("customer_id", "product_id", "build_id"),
    unbaked=("created_after", "created_before", "min_total", "max_total"),
    text_fields=ORDER_TEXT,
    sorts=ORDER_SORTS,
)
