"""Read tools: one record with everything an agent needs to act on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from django.db.models import Q, QuerySet
from pydantic import Field, model_validator

from world_app.models import (
    Bundle,
    Customer,
    Escalation,
    KnowledgeBaseArticle,
    Order,
    Product,
    Resolution,
    SupportTicket,
    TicketMessage,
    TicketStatus,
    TicketType,
    WarrantyClaim,
)
from world_app.tools.baked import BakedQuery
from world_app.tools.coverage import delivered_at, return_window, warranty_coverage
from world_app.tools.ledger import order_ledger
from world_app.tools.lookups import ORDER_LINES, ORDER_SHIPMENTS, PRODUCTS, fetch, resolve_line
from world_app.tools.params import EntityId, LineRefParams, PageParams, ToolParams
from world_app.tools.records import (
    article_brief,
    customer_record,
    customer_summary,
    escalation_record,
    line_record,
    message_record,
    order_summary,
    payment_record,
    product_brief,
    product_record,
    refund_record,
    resolution_record,
    shipment_record,
    ticket_record,
    warranty_claim_record,
)
from world_app.tools.registry import tool
from world_app.tools.results import canonical, money, not_found, when, world_today
from world_app.tools.search.base import BakedSearch

# The look-ups of these tools, baked (world_app/tools/baked.py): they run on every call, and compiling them
# each time cost more than running them.
LINE_CLAIMS = BakedQuery(WarrantyClaim, lambda ids: WarrantyClaim.objects.filter(line_item_id__in=ids).order_by("id"))
ORDER_TICKETS = BakedQuery(
    SupportTicket, lambda order_id: SupportTicket.objects.filter(order_id=order_id).order_by("created_at", "id")
)
TICKET_MESSAGES = BakedQuery(TicketMessage, lambda ids: TicketMessage.objects.filter(ticket_id__in=ids))
TICKET_RESOLUTIONS = BakedQuery(Resolution, lambda ids: Resolution.objects.filter(ticket_id__in=ids))
TICKET_ESCALATIONS = BakedQuery(Escalation, lambda ids: Escalation.objects.filter(ticket_id__in=ids))
TICKET_CLAIMS = BakedQuery(WarrantyClaim, lambda ids: WarrantyClaim.objects.filter(ticket_id__in=ids))
PRODUCT_ARTICLES = BakedQuery(
    KnowledgeBaseArticle,
    lambda product_id, category: KnowledgeBaseArticle.objects.filter(
        Q(product_id=product_id) | Q(product__isnull=True, product_category=category), is_published=True
    ).order_by("id"),
)
PRODUCT_BUNDLES = BakedQuery(
    Bundle,
    lambda product_id, *, today: (
        Bundle.objects.filter(items__product_id=product_id, is_active=True)
        .filter(Q(valid_from__isnull=True) | Q(valid_from__lte=today))
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gte=today))
        .order_by("id")
    ),
)


def _keyed(rows: list) -> dict:
    return {row.id: row for row in rows}


class GetOrderDetailsParams(ToolParams):
    order_id: EntityId = Field(description="Order id, e.g. ord-250812-017.")


@tool(group="read", params=GetOrderDetailsParams)
def get_order_details(p: GetOrderDetailsParams) -> dict:
    """Everything about one order: customer, shipping address, line items (with units already refunded and each
    product's warranty expiry), payments (with refunded totals), shipments (with tracking events), refunds,
    warranty claims, related tickets, the delivery date and whether the return window is still open.

    `refund_summary.refundable_remaining` is the most that can still be refunded (captured payments less
    earlier refunds, never the shipping cost).
    """
    order = fetch(Order, p.order_id, field="order_id")
    order.customer = fetch(Customer, order.customer_id, field="customer_id")
    lines = ORDER_LINES(order.id)
    products = _keyed(PRODUCTS(sorted({line.product_id for line in lines})))
    for line in lines:
        line.product = products[line.product_id]
    shipments = ORDER_SHIPMENTS(order.id)
    ledger = order_ledger(order)
    refunded_units = ledger.refunded_quantities()
    delivered = delivered_at(shipments)
    claims = LINE_CLAIMS([line.id for line in lines])
    tickets = [{"id": t.id, "status": t.status, "subject": t.subject} for t in ORDER_TICKETS(order.id)]
    line_items = []
    for line in lines:
        coverage = warranty_coverage(delivered, line.product.warranty_months)
        line_items.append(
            {
                **line_record(line),
                "refunded_quantity": refunded_units.get(line.id, 0),
                "warranty_months": line.product.warranty_months,
                "warranty_expires_on": coverage.as_dict()["expires_on"],
                "warranty_status": coverage.status,
            }
        )
    return {
        "order": order_summary(order),
        "customer": customer_summary(order.customer),
        "shipping_address": canonical(order.shipping_address),
        "notes": order.notes,
        "line_items": line_items,
        "payments": [payment_record(pay, ledger.refunded_per_payment.get(pay.id, 0)) for pay in ledger.payments],
        "shipments": [shipment_record(s) for s in shipments],
        "refunds": [refund_record(r) for r in ledger.refunds],
        "warranty_claims": [warranty_claim_record(c) for c in claims],
        "tickets": tickets,
        "delivered_at": when(delivered),
        "return_window": return_window(delivered).as_dict(),
        "refund_summary": {
            "paid_total": money(ledger.taken_total),
            "refunded_total": money(ledger.refunded_total),
            "shipping_not_refundable": money(order.shipping_cost),
            "refundable_remaining": money(ledger.refundable_remaining),
        },
    }


class GetProductParams(ToolParams):
    product_id: EntityId | None = Field(None, description="Product id, e.g. prd-0042. Give this or sku.")
    sku: str | None = Field(None, min_length=1, max_length=40, description="Product SKU. Give this or product_id.")

    @model_validator(mode="after")
    def _one_key(self) -> GetProductParams:
        if bool(self.product_id) == bool(self.sku):
            raise ValueError("give exactly one of product_id or sku")
        return self


@tool(group="read", params=GetProductParams)
def get_product(p: GetProductParams) -> dict:
    """One product by id or SKU: description, price, full specs, stock and backorder, lifecycle (active,
    preorder, discontinued, end_of_life), warranty months, the knowledge-base articles written for it (manuals,
    troubleshooting) and for its category, and the bundles on offer today that include it.
    """
    if p.product_id:
        product = fetch(Product, p.product_id, field="product_id")
    else:
        product = Product.objects.filter(sku__iexact=p.sku).first()
        if product is None:
            raise not_found("product", p.sku, field="sku")
    articles = PRODUCT_ARTICLES(product.id, product.category)
    own = [article_brief(a) for a in articles if a.product_id == product.id]
    category = [article_brief(a) for a in articles if a.product_id is None]
    bundles = PRODUCT_BUNDLES(product.id, today=world_today())
    return {
        **product_record(product),
        "description": product.description,
        "articles": own,
        "category_articles": category,
        "bundles": [{"id": b.id, "name": b.name, "price": money(b.price)} for b in bundles],
    }


class GetCustomerTicketHistoryParams(PageParams):
    customer_id: EntityId = Field(description="Customer id, e.g. cus-00042.")
    status: Literal[tuple(TicketStatus.values)] | None = Field(None, description="Only tickets in this status.")
    ticket_type: Literal[tuple(TicketType.values)] | None = Field(None, description="Only tickets of this type.")


def _by_ticket(rows: list) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for row in rows:
        grouped.setdefault(row.ticket_id, []).append(row)
    return grouped


@dataclass
class TicketHistory:
    """What a page of tickets shows besides the tickets: each one's messages, resolutions, escalations, claims."""

    messages: dict[str, list[TicketMessage]] = field(default_factory=dict)
    resolutions: dict[str, list[Resolution]] = field(default_factory=dict)
    escalations: dict[str, list[Escalation]] = field(default_factory=dict)
    claims: dict[str, list[WarrantyClaim]] = field(default_factory=dict)

    def load(self, tickets: list[SupportTicket]) -> None:
        ids = [t.id for t in tickets]
        self.messages = _by_ticket(TICKET_MESSAGES(ids))
        self.resolutions = _by_ticket(TICKET_RESOLUTIONS(ids))
        self.escalations = _by_ticket(TICKET_ESCALATIONS(ids))
        self.claims = _by_ticket(TICKET_CLAIMS(ids))

    def record(self, ticket: SupportTicket) -> dict:
        messages = sorted(self.messages.get(ticket.id, []), key=lambda m: (m.sent_at, m.id))
        resolutions = sorted(self.resolutions.get(ticket.id, []), key=lambda r: r.id)
        escalations = sorted(self.escalations.get(ticket.id, []), key=lambda e: e.id)
        claims = sorted(self.claims.get(ticket.id, []), key=lambda c: c.id)
        return {
            **ticket_record(ticket),
            "messages": [message_record(m) for m in messages],
            "resolutions": [resolution_record(r) for r in resolutions],
            "escalations": [escalation_record(e) for e in escalations],
            "warranty_claims": [warranty_claim_record(c) for c in claims],
        }


@tool(group="read", params=GetCustomerTicketHistoryParams)
def get_customer_ticket_history(p: GetCustomerTicketHistoryParams) -> dict:
    """A customer's support history, newest ticket first: each ticket with its messages (internal notes
    flagged), resolutions, escalations and warranty claims, plus the customer's record.

    Paged like the searches: `total` and `has_more` say whether older tickets remain.
    """
    customer = fetch(Customer, p.customer_id, field="customer_id")
    children = TicketHistory()
    history = CUSTOMER_TICKETS.page(p, children.record, children.load)
    return {"customer": customer_record(customer), **history}


def _customer_tickets(p: GetCustomerTicketHistoryParams) -> QuerySet:
    queryset = SupportTicket.objects.filter(customer_id=p.customer_id).order_by("-created_at", "-id")
    if p.status:
        queryset = queryset.filter(status=p.status)
    if p.ticket_type:
        queryset = queryset.filter(ticket_type=p.ticket_type)
    return queryset


# The page and its total, baked like a search's (the customer, status and type are query values).
CUSTOMER_TICKETS = BakedSearch(
    SupportTicket,
    GetCustomerTicketHistoryParams,
    _customer_tickets,
    values=("customer_id", "status", "ticket_type"),
    words=None,
)


class CheckWarrantyStatusParams(LineRefParams):
    pass


@tool(group="read", params=CheckWarrantyStatusParams)
def check_warranty_status(p: CheckWarrantyStatusParams) -> dict:
    """Whether a purchased item is still under warranty, by order line (or order + product).

    The warranty runs from the delivery date for the product's warranty months and covers manufacturing
    defects only (not physical or liquid damage, overclocking, improper installation, wear and tear). Returns
    the delivery date, expiry date, status (active, expired, not_started), days left or since expiry, the
    return window, and earlier claims on the line.
    """
    line = resolve_line(line_item_id=p.line_item_id, order_id=p.order_id, product_id=p.product_id)
    delivered = delivered_at(ORDER_SHIPMENTS(line.order_id))
    coverage = warranty_coverage(delivered, line.product.warranty_months)
    claims = LINE_CLAIMS([line.id])
    return {
        "order_id": line.order_id,
        "line_item_id": line.id,
        "customer_id": line.order.customer_id,
        "product": product_brief(line.product),
        "quantity": line.quantity,
        **coverage.as_dict(),
        "explanation": coverage.explain(),
        "return_window": return_window(delivered).as_dict(),
        "claims": [warranty_claim_record(c) for c in claims],
    }
