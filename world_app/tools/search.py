"""Search tools: one per kind of record an agent looks up, each with filters, a fixed order and paging.

Every search answers ``{"items", "total", "offset", "limit", "has_more"}``; an agent that reads only the first
page misses the rest, by design. Text queries are split into words; every word must appear (case-insensitive)
in one of the searched fields. Orders always end with the id, so equal keys never swap between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime
from decimal import Decimal
from types import UnionType
from typing import Literal, Union, get_args, get_origin

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Case, F, IntegerField, Model, Q, QuerySet, Value, When
from pydantic import Field

from world_app.models import (
    ArticleKind,
    Build,
    BuildComponent,
    Carrier,
    Channel,
    Customer,
    Department,
    Employee,
    KnowledgeBaseArticle,
    Lifecycle,
    LoyaltyTier,
    Order,
    OrderLineItem,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    Priority,
    Product,
    ProductCategory,
    Shipment,
    ShipmentStatus,
    ShippingService,
    SupportRole,
    SupportTicket,
    TicketStatus,
    TicketType,
)
from world_app.models.people import EMPLOYEE_PERMISSIONS
from world_app.specs import SPEC_BY_CATEGORY
from world_app.tools.baked import BakedQuery
from world_app.tools.ledger import refunded_by_payment
from world_app.tools.params import (
    EntityId,
    Money,
    PageParams,
    SearchText,
    WorldTime,
    after_field,
    before_field,
)
from world_app.tools.records import (
    article_record,
    build_record,
    customer_record,
    employee_record,
    order_summary,
    payment_record,
    product_record,
    shipment_record,
    ticket_record,
)
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError, page, page_of

MAX_QUERY_WORDS = 8
# Deeper pages go through the ORM: every offset is a compiled form of its own.
BAKED_MAX_OFFSET = 200
ZERO_MONEY = Decimal("0.00")


def _choices(text_choices) -> tuple:
    return tuple(text_choices.values)


def text_filter(text: str | None, fields: tuple[str, ...]) -> Q:
    """Every word of ``text`` in at least one of ``fields`` (case-insensitive; the same on Postgres and SQLite)."""
    condition = Q()
    if not text:
        return condition
    for word in text.split()[:MAX_QUERY_WORDS]:
        any_field = Q()
        for name in fields:
            any_field |= Q(**{f"{name}__icontains": word})
        condition &= any_field
    return condition


def range_filter(name: str, after: datetime | None, before: datetime | None, *, dates: bool = False) -> Q:
    condition = Q()
    if after is not None:
        condition &= Q(**{f"{name}__gte": after.date() if dates else after})
    if before is not None:
        condition &= Q(**{f"{name}__lt": before.date() if dates else before})
    return condition


def exact_filters(**pairs) -> Q:
    """Equality on every pair whose value was given."""
    condition = Q()
    for name, value in pairs.items():
        if value is not None:
            condition &= Q(**{name: value})
    return condition


def paged(queryset: QuerySet, params: PageParams, record, prepare=None) -> dict:
    return page(queryset, offset=params.offset, limit=params.limit, record=record, prepare=prepare)


class BakedSearch:
    """A search whose page and total run as baked queries (``baked.py``) when its arguments allow it.

    ``queryset(p)`` is the search's filtered, ordered queryset. ``values``: id arguments it compares with
    ``exact`` or ``in``, run as query values. ``words``: the text argument ``text_filter`` splits, its words run
    as ``icontains`` values (a baked query rewrites them as Django does). ``unbaked``: arguments whose SQL
    depends on the value (times, money, spec dicts, exact case-insensitive matches): when one is given, the ORM
    runs the search. Every other argument (choices, booleans, sort, paging) picks a compiled form.
    """

    def __init__(
        self,
        model: type[Model],
        params: type[PageParams],
        queryset: Callable[[PageParams], QuerySet],
        *,
        values: tuple[str, ...] = (),
        words: str | None = "query",
        unbaked: tuple[str, ...] = (),
    ) -> None:
        unknown = (set(values) | {words} | set(unbaked)) - set(params.model_fields) - {None}
        if unknown:
            raise ImproperlyConfigured(f"{params.__name__} has no fields {sorted(unknown)}")
        self.params = params
        self.queryset = queryset
        self.values = values
        self.words = words
        self.unbaked = unbaked
        self.shape = tuple(name for name in params.model_fields if name not in (*values, words, *unbaked))
        self._rows = BakedQuery(model, self._page_queryset)
        self._totals = BakedQuery(model, self._queryset)

    def _stand_in(self, values: tuple, shape: dict) -> PageParams:
        fields = dict(zip(self.values, values[: len(self.values)], strict=True))
        if self.words is not None:
            # Stand-ins hold no white space: text_filter splits them back into one word each.
            words = values[-1]
            fields[self.words] = None if words is None else " ".join(words)
        # Stand-in values are not ids: build the params without validating them.
        return self.params.model_construct(**fields, **shape)

    def _queryset(self, *values, **shape) -> QuerySet:
        return self.queryset(self._stand_in(values, shape))

    def _page_queryset(self, *values, **shape) -> QuerySet:
        p = self._stand_in(values, shape)
        return self.queryset(p)[p.offset : p.offset + p.limit]

    def page(self, p: PageParams, record: Callable, prepare: Callable[[list], None] | None = None) -> dict:
        if p.offset > BAKED_MAX_OFFSET or any(getattr(p, name) is not None for name in self.unbaked):
            return paged(self.queryset(p), p, record, prepare)
        values: list = [getattr(p, name) for name in self.values]
        if self.words is not None:
            text = getattr(p, self.words)
            words = None if text is None else text.split()[:MAX_QUERY_WORDS]
            if words == []:
                return paged(self.queryset(p), p, record, prepare)  # blank text: leave the ORM its own answer
            values.append(words)
        shape: dict[str, Hashable] = {name: getattr(p, name) for name in self.shape}
        rows = self._rows(*values, **shape)
        unpaged = {name: value for name, value in shape.items() if name not in ("offset", "limit")}
        return page_of(
            rows,
            offset=p.offset,
            limit=p.limit,
            count=lambda: self._totals.count(*values, **unpaged),
            record=record,
            prepare=prepare,
        )


# --- customers -----------------------------------------------------------------------------------------------


class SearchCustomersParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the customer's id, name, email, phone or addresses (city, ZIP, street)."
    )
    email: str | None = Field(None, max_length=254, description="Exact email address (case-insensitive).")
    loyalty_tier: Literal[_choices(LoyaltyTier)] | None = Field(None, description="Only customers of this tier.")
    created_after: WorldTime | None = after_field("customers who joined")
    created_before: WorldTime | None = before_field("customers who joined")
    sort: Literal["id", "name", "newest", "oldest"] = Field(
        "id", description="Order of results: id, name (last then first), newest or oldest account first."
    )


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
        text_filter(p.query, ("id", "first_name", "last_name", "email", "phone", "addresses"))
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(loyalty_tier=p.loyalty_tier, email__iexact=p.email)
    ).order_by(*CUSTOMER_SORTS[p.sort])


CUSTOMER_SEARCH = BakedSearch(
    Customer, SearchCustomersParams, _customers, unbaked=("email", "created_after", "created_before")
)


# --- orders --------------------------------------------------------------------------------------------------


class SearchOrdersParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the order id, its notes, or the customer's name or email."
    )
    customer_id: EntityId | None = Field(None, description="Only this customer's orders.")
    status: Literal[_choices(OrderStatus)] | None = Field(None, description="Only orders in this status.")
    product_id: EntityId | None = Field(None, description="Only orders with a line for this product.")
    build_id: EntityId | None = Field(None, description="Only orders made from this build.")
    created_after: WorldTime | None = after_field("orders placed")
    created_before: WorldTime | None = before_field("orders placed")
    min_total: Money | None = Field(None, description="Only orders whose total is at least this many dollars.")
    max_total: Money | None = Field(None, description="Only orders whose total is at most this many dollars.")
    sort: Literal["newest", "oldest", "total_desc", "total_asc"] = Field(
        "newest", description="Order of results: newest or oldest first, or by total (highest or lowest first)."
    )


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
        text_filter(p.query, ("id", "notes", "customer__first_name", "customer__last_name", "customer__email"))
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
)


# --- products ------------------------------------------------------------------------------------------------


def _spec_kind(annotation) -> str:
    """list, number or scalar: how a spec field can be filtered."""
    if get_origin(annotation) is list:
        return "list"
    options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    kinds = []
    for option in options:
        if option is type(None):
            continue
        if get_origin(option) is Literal:
            kinds.extend(type(v) for v in get_args(option))
        else:
            kinds.append(option)
    return "number" if kinds and all(k in (int, float) for k in kinds) else "scalar"


def _spec_kinds(category: str | None) -> dict[str, str]:
    models = [SPEC_BY_CATEGORY[category]] if category else list(dict.fromkeys(SPEC_BY_CATEGORY.values()))
    kinds: dict[str, str] = {}
    for model in models:
        for name, info in model.model_fields.items():
            kinds.setdefault(name, _spec_kind(info.annotation))
    return kinds


SpecValue = str | int | float | bool


class SearchProductsParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the product's id, name, SKU, brand or description."
    )
    category: Literal[_choices(ProductCategory)] | None = Field(None, description="Only this category.")
    brand: str | None = Field(None, max_length=80, description="Only this brand (exact, case-insensitive).")
    lifecycle: Literal[_choices(Lifecycle)] | None = Field(
        None, description="Only products at this lifecycle stage (active, preorder, discontinued, end_of_life)."
    )
    min_price: Money | None = Field(None, description="Only products costing at least this many dollars.")
    max_price: Money | None = Field(None, description="Only products costing at most this many dollars.")
    in_stock: bool | None = Field(None, description="true: only products in stock; false: only out-of-stock ones.")
    specs: dict[str, SpecValue] | None = Field(
        None,
        description='Spec values that must match, e.g. {"socket": "AM5"} or {"memory_type": "DDR5"}. For list '
        "specs (sockets, memory_types, supported_motherboards, radiator_support_mm, inputs) the list must contain "
        "the value.",
    )
    spec_min: dict[str, float] | None = Field(
        None, description='Numeric specs that must be at least a value, e.g. {"wattage": 850, "vram_gb": 16}.'
    )
    spec_max: dict[str, float] | None = Field(
        None, description='Numeric specs that must be at most a value, e.g. {"length_mm": 320}.'
    )
    sort: Literal["id", "price_asc", "price_desc", "name", "newest"] = Field(
        "id", description="Order of results: id, price (low or high first), name, or newest release first."
    )


PRODUCT_SORTS = {
    "id": ("id",),
    "price_asc": ("price", "id"),
    "price_desc": ("-price", "id"),
    "name": ("name", "id"),
    "newest": (F("release_date").desc(nulls_last=True), "id"),
}


def spec_filter(p: SearchProductsParams) -> Q:
    kinds = _spec_kinds(p.category)
    where = f"{p.category} products" if p.category else "any product category"
    condition = Q()
    for key, value in sorted((p.specs or {}).items()):
        kind = kinds.get(key)
        if kind is None:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"{where} have no spec {key!r}; known specs: {', '.join(sorted(kinds))}",
                field=f"specs.{key}",
            )
        if kind == "list":
            # A list spec is stored as JSON text; the quoted value matches one element on both databases.
            needle = f'"{value}"' if isinstance(value, str) else str(value)
            condition &= Q(**{f"specs__{key}__icontains": needle})
        else:
            if kind == "number" and isinstance(value, str):
                value = _spec_number(value, field=f"specs.{key}")
            condition &= Q(**{f"specs__{key}": value})
    for bound, lookup in (("spec_min", "gte"), ("spec_max", "lte")):
        for key, value in sorted((getattr(p, bound) or {}).items()):
            if kinds.get(key) != "number":
                numeric = sorted(k for k, v in kinds.items() if v == "number")
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"{key!r} is not a numeric spec of {where}; numeric specs: {', '.join(numeric)}",
                    field=f"{bound}.{key}",
                )
            condition &= Q(**{f"specs__{key}__{lookup}": value})
    return condition


def _spec_number(text: str, *, field: str) -> int | float:
    try:
        number = float(text)
    except ValueError:
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"{text!r} is not a number", field=field) from None
    return int(number) if number.is_integer() else number


@tool(group="search", params=SearchProductsParams)
def search_products(p: SearchProductsParams) -> dict:
    """Find products in the catalogue by words, category, brand, price, stock, lifecycle or spec values.

    Returns a page of products with price, stock, lifecycle, warranty months and full specs. Use `specs`,
    `spec_min` and `spec_max` for compatibility questions (socket, memory type, wattage, GPU length...).
    """
    return PRODUCT_SEARCH.page(p, product_record)


def _products(p: SearchProductsParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "name", "sku", "brand", "description"))
        & exact_filters(category=p.category, brand__iexact=p.brand, lifecycle=p.lifecycle)
        & exact_filters(price__gte=p.min_price, price__lte=p.max_price)
        & spec_filter(p)
    )
    if p.in_stock is not None:
        condition &= Q(stock_quantity__gt=0) if p.in_stock else Q(stock_quantity=0)
    return Product.objects.filter(condition).order_by(*PRODUCT_SORTS[p.sort])


PRODUCT_SEARCH = BakedSearch(
    Product,
    SearchProductsParams,
    _products,
    unbaked=("brand", "min_price", "max_price", "specs", "spec_min", "spec_max"),
)


# --- tickets -------------------------------------------------------------------------------------------------


class SearchTicketsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the ticket id, subject or body.")
    customer_id: EntityId | None = Field(None, description="Only this customer's tickets.")
    order_id: EntityId | None = Field(None, description="Only tickets about this order.")
    build_id: EntityId | None = Field(None, description="Only tickets about this build.")
    status: Literal[_choices(TicketStatus)] | None = Field(None, description="Only tickets in this status.")
    ticket_type: Literal[_choices(TicketType)] | None = Field(None, description="Only tickets of this type.")
    priority: Literal[_choices(Priority)] | None = Field(None, description="Only tickets of this priority.")
    channel: Literal[_choices(Channel)] | None = Field(None, description="Only tickets that came in this way.")
    assignee_id: EntityId | None = Field(None, description="Only tickets assigned to this employee.")
    unassigned: bool | None = Field(None, description="true: only tickets nobody is assigned to.")
    created_after: WorldTime | None = after_field("tickets opened")
    created_before: WorldTime | None = before_field("tickets opened")
    sort: Literal["newest", "oldest", "priority"] = Field(
        "newest", description="Order of results: newest or oldest first, or most urgent first (then newest)."
    )


PRIORITY_RANK = Case(
    When(priority=Priority.URGENT, then=Value(0)),
    When(priority=Priority.HIGH, then=Value(1)),
    When(priority=Priority.NORMAL, then=Value(2)),
    default=Value(3),
    output_field=IntegerField(),
)
TICKET_SORTS = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "priority": (PRIORITY_RANK.asc(), "-created_at", "-id"),
}


@tool(group="search", params=SearchTicketsParams)
def search_tickets(p: SearchTicketsParams) -> dict:
    """Find support tickets by words, customer, order, build, status, type, priority, channel, assignee or date.

    Returns a page of tickets with subject, body, status and assignee, newest first unless `sort` says otherwise.
    For a customer's full history with messages, resolutions and escalations use get_customer_ticket_history.
    """
    return TICKET_SEARCH.page(p, ticket_record)


def _tickets(p: SearchTicketsParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "subject", "body"))
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(
            customer_id=p.customer_id,
            order_id=p.order_id,
            build_id=p.build_id,
            status=p.status,
            ticket_type=p.ticket_type,
            priority=p.priority,
            channel=p.channel,
            assignee_id=p.assignee_id,
        )
    )
    if p.unassigned is not None:
        condition &= Q(assignee__isnull=p.unassigned)
    return SupportTicket.objects.filter(condition).order_by(*TICKET_SORTS[p.sort])


TICKET_SEARCH = BakedSearch(
    SupportTicket,
    SearchTicketsParams,
    _tickets,
    values=("customer_id", "order_id", "build_id", "assignee_id"),
    unbaked=("created_after", "created_before"),
)


# --- shipments -----------------------------------------------------------------------------------------------


class SearchShipmentsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the shipment id, tracking number or order id.")
    order_id: EntityId | None = Field(None, description="Only this order's shipments.")
    customer_id: EntityId | None = Field(None, description="Only shipments of this customer's orders.")
    carrier: Literal[_choices(Carrier)] | None = Field(None, description="Only this carrier.")
    service: Literal[_choices(ShippingService)] | None = Field(None, description="Only this shipping service.")
    status: Literal[_choices(ShipmentStatus)] | None = Field(None, description="Only shipments in this status.")
    shipped_after: WorldTime | None = after_field("shipments that left")
    shipped_before: WorldTime | None = before_field("shipments that left")
    delivered_after: WorldTime | None = after_field("shipments delivered")
    delivered_before: WorldTime | None = before_field("shipments delivered")
    sort: Literal["newest", "oldest"] = Field(
        "newest", description="Order of results by the time they shipped: newest or oldest first (unshipped last)."
    )


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
        text_filter(p.query, ("id", "tracking_number", "order__id"))
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
)


# --- payments ------------------------------------------------------------------------------------------------


class SearchPaymentsParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the payment id, transaction id, card's last 4 digits or order id."
    )
    order_id: EntityId | None = Field(None, description="Only this order's payments.")
    customer_id: EntityId | None = Field(None, description="Only this customer's payments.")
    method: Literal[_choices(PaymentMethod)] | None = Field(None, description="Only this payment method.")
    status: Literal[_choices(PaymentStatus)] | None = Field(None, description="Only payments in this status.")
    min_amount: Money | None = Field(None, description="Only payments of at least this many dollars.")
    max_amount: Money | None = Field(None, description="Only payments of at most this many dollars.")
    created_after: WorldTime | None = after_field("payments made")
    created_before: WorldTime | None = before_field("payments made")
    sort: Literal["newest", "oldest", "amount_desc"] = Field(
        "newest", description="Order of results: newest or oldest first, or largest amount first."
    )


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
        text_filter(p.query, ("id", "transaction_id", "card_last4", "order__id"))
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
)


# --- employees -----------------------------------------------------------------------------------------------


class SearchEmployeesParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the employee's id, name, email or title.")
    department: Literal[_choices(Department)] | None = Field(None, description="Only this department.")
    support_role: Literal[_choices(SupportRole)] | None = Field(None, description="Only this support role.")
    manager_id: EntityId | None = Field(None, description="Only employees reporting to this manager.")
    permission: Literal[EMPLOYEE_PERMISSIONS] | None = Field(
        None, description="Only employees holding this permission (e.g. approve_refunds_over_limit)."
    )
    is_active: bool | None = Field(None, description="true: only current employees; false: only former ones.")
    hired_after: WorldTime | None = after_field("employees hired")
    hired_before: WorldTime | None = before_field("employees hired")
    sort: Literal["id", "name"] = Field("id", description="Order of results: id, or name (last then first).")


EMPLOYEE_SORTS = {"id": ("id",), "name": ("last_name", "first_name", "id")}


@tool(group="search", params=SearchEmployeesParams)
def search_employees(p: SearchEmployeesParams) -> dict:
    """Find employees by name, department, support role, manager, permission or hire date.

    Use it to find who may resolve a ticket, who approves refunds over the limit (a team lead), or where an
    escalation should go. Returns a page of employees with title, department, manager, role and permissions.
    """
    return EMPLOYEE_SEARCH.page(p, employee_record)


def _employees(p: SearchEmployeesParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "first_name", "last_name", "email", "title"))
        & range_filter("hired_on", p.hired_after, p.hired_before, dates=True)
        & exact_filters(
            department=p.department, support_role=p.support_role, manager_id=p.manager_id, is_active=p.is_active
        )
    )
    if p.permission:
        condition &= Q(permissions__icontains=f'"{p.permission}"')
    return Employee.objects.filter(condition).order_by(*EMPLOYEE_SORTS[p.sort])


EMPLOYEE_SEARCH = BakedSearch(
    Employee,
    SearchEmployeesParams,
    _employees,
    values=("manager_id",),
    unbaked=("hired_after", "hired_before"),
)


# --- knowledge base ------------------------------------------------------------------------------------------


class SearchKnowledgeBaseParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the article's title, body, slug or tags, e.g. 'return window'."
    )
    kind: Literal[_choices(ArticleKind)] | None = Field(
        None, description="Only this kind: policy, troubleshooting, manual, faq or procedure."
    )
    product_category: Literal[_choices(ProductCategory)] | None = Field(
        None, description="Only articles about this product category."
    )
    product_id: EntityId | None = Field(None, description="Only articles about this product (e.g. its manual).")
    tag: str | None = Field(None, max_length=60, description="Only articles with this tag.")
    include_unpublished: bool = Field(False, description="Also return drafts and retired articles.")
    updated_after: WorldTime | None = after_field("articles last updated")
    updated_before: WorldTime | None = before_field("articles last updated")
    sort: Literal["relevance", "id", "title"] = Field(
        "relevance", description="Order of results: relevance (all words in the title first), id or title."
    )


@tool(group="search", params=SearchKnowledgeBaseParams)
def search_knowledge_base(p: SearchKnowledgeBaseParams) -> dict:
    """Search the knowledge base: policies (returns, refunds, warranty, shipping, loyalty), troubleshooting
    guides, product manuals, FAQs and procedures.

    Returns a page of articles with their full text. Policies state the rules the write tools enforce; read them
    before promising a customer anything.
    """
    return ARTICLE_SEARCH.page(p, article_record)


def _articles(p: SearchKnowledgeBaseParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "title", "body", "slug", "tags"))
        & range_filter("updated_at", p.updated_after, p.updated_before)
        & exact_filters(kind=p.kind, product_category=p.product_category, product_id=p.product_id)
    )
    if not p.include_unpublished:
        condition &= Q(is_published=True)
    if p.tag:
        condition &= Q(tags__icontains=f'"{p.tag}"')
    queryset = KnowledgeBaseArticle.objects.filter(condition)
    if p.sort == "relevance" and p.query:
        in_title = text_filter(p.query, ("title",))
        rank = Case(When(in_title, then=Value(0)), default=Value(1), output_field=IntegerField())
        queryset = queryset.order_by(rank.asc(), "id")
    else:
        queryset = queryset.order_by(*({"title": ("title", "id")}.get(p.sort, ("id",))))
    return queryset


ARTICLE_SEARCH = BakedSearch(
    KnowledgeBaseArticle,
    SearchKnowledgeBaseParams,
    _articles,
    values=("product_id",),
    unbaked=("tag", "updated_after", "updated_before"),
)


# --- builds --------------------------------------------------------------------------------------------------


class SearchBuildsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the build's id, name or notes.")
    customer_id: EntityId | None = Field(None, description="Only this customer's builds.")
    status: Literal[_choices(Build.Status)] | None = Field(
        None, description="Only builds in this status (draft, saved, ordered, assembled)."
    )
    product_id: EntityId | None = Field(None, description="Only builds that use this product.")
    created_after: WorldTime | None = after_field("builds created")
    created_before: WorldTime | None = before_field("builds created")
    sort: Literal["newest", "oldest"] = Field("newest", description="Order of results: newest or oldest first.")


BUILD_SORTS = {"newest": ("-created_at", "-id"), "oldest": ("created_at", "id")}


BUILD_COMPONENTS = BakedQuery(BuildComponent, lambda ids: BuildComponent.objects.filter(build_id__in=ids))
PRODUCTS = BakedQuery(Product, lambda ids: Product.objects.filter(pk__in=ids))


class BuildParts:
    """The parts of a page of builds, loaded in two baked queries (a prefetch costs several times more)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[BuildComponent]] = {}

    def load(self, builds: list[Build]) -> None:
        components = BUILD_COMPONENTS([b.id for b in builds])
        products = {product.id: product for product in PRODUCTS(sorted({c.product_id for c in components}))}
        for component in components:
            component.product = products[component.product_id]
            self.parts.setdefault(component.build_id, []).append(component)

    def record(self, build: Build) -> dict:
        return build_record(build, self.parts.get(build.id, []))


@tool(group="search", params=SearchBuildsParams)
def search_builds(p: SearchBuildsParams) -> dict:
    """Find customers' PC builds by customer, status, a product they use, words or date.

    Returns a page of builds with their parts (product, category, quantity, price). To check that a build's
    parts work together, call validate_build_compatibility with its id.
    """
    parts = BuildParts()
    return BUILD_SEARCH.page(p, parts.record, parts.load)


def _builds(p: SearchBuildsParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "name", "notes"))
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(customer_id=p.customer_id, status=p.status)
    )
    if p.product_id:
        condition &= Q(id__in=BuildComponent.objects.filter(product_id=p.product_id).values("build_id"))
    return Build.objects.filter(condition).order_by(*BUILD_SORTS[p.sort])


BUILD_SEARCH = BakedSearch(
    Build,
    SearchBuildsParams,
    _builds,
    values=("customer_id", "product_id"),
    unbaked=("created_after", "created_before"),
)
