"""Look-ups of the live world for authors: search as you type (``world_lookup``), by kind of entity.

Every read is bounded: a search page is one query (``page_size + 1`` rows tell whether there is more). Any
entity with its related rows is ``selectors_entity``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.postgres.aggregates import StringAgg
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector, SearchVectorExact, SearchVectorField
from django.db import connection, models
from django.db.models import CharField, Exists, F, FloatField, Func, OuterRef, Q, QuerySet, Subquery, Value

from world_app.clock import world_now, world_zone
from world_app.lookup_query import MAX_TERMS, DateWindow, LookupQuery, lookup_query_parse
from world_app.models import Customer, KnowledgeBaseArticle, Order, OrderLineItem, OrderStatus, Product, SupportTicket

PAGE_SIZE = 15
SEARCH_CONFIG = "simple"
WINDOW_SLACK_DAYS = 7  # a remembered date is rarely exact


@dataclass(frozen=True)
class LookupKind:
    name: str
    label: str
    model: type[models.Model]
    fields: tuple[str, ...]  # the fallback off Postgres: icontains, every word of the query must match one of them
    related: tuple[str, ...] = ()
    hint: str = ""


LOOKUP_KINDS: dict[str, LookupKind] = {
    "order": LookupKind(
        "order",
        "Orders",
        Order,
        ("id", "customer__id", "customer__email", "customer__last_name", "status"),
        ("customer",),
        "product, customer, date (mid august, aug 14, 40 days ago), amount ($299), id…",
    ),
    "customer": LookupKind(
        "customer",
        "Customers",
        Customer,
        ("id", "email", "first_name", "last_name", "phone"),
        hint="name, email, phone (or its last digits), id…",
    ),
    "product": LookupKind(
        "product", "Products", Product, ("id", "sku", "name", "brand", "category"), hint="name, brand, sku, price…"
    ),
    "ticket": LookupKind(
        "ticket",
        "Tickets",
        SupportTicket,
        ("id", "subject", "customer__id", "customer__email", "order__id"),
        ("customer",),
        "words of the subject or body, customer, date, id…",
    ),
    "kb": LookupKind(
        "kb", "Knowledge base", KnowledgeBaseArticle, ("id", "slug", "title"), hint="words of the title or body…"
    ),
}


@dataclass
class LookupRow:
    entity_type: str
    id: str
    title: str
    detail: str


@dataclass
class LookupPage:
    kind: str
    query: str
    page: int
    rows: list[LookupRow] = field(default_factory=list)
    has_more: bool = False
    understood: list[str] = field(default_factory=list)  # dates and amounts read from the query


def money(value: Decimal | None) -> str:
    """Dollars as a support lead reads them: $1,299.00."""
    return "" if value is None else f"${value:,.2f}"


def day(value: datetime | date | None) -> str:
    """A date as a person reads it (Aug 14, 2025), in the world's time zone for a moment in time."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        value = value.astimezone(world_zone()).date()
    return f"{value:%b} {value.day}, {value.year}"


def _describe(kind: str, row: Any) -> tuple[str, str]:
    if kind == "order":
        who = f"{row.customer.first_name} {row.customer.last_name}"
        products = getattr(row, "product_names", None)
        lines = f" · {products}" if products else ""
        return (
            f"{row.id} · {row.status}",
            f"{day(row.created_at)} · {who} ({row.customer_id}) · {money(row.total)}{lines}",
        )
    if kind == "customer":
        return f"{row.first_name} {row.last_name}", f"{row.id} · {row.email} · {row.phone} · {row.loyalty_tier}"
    if kind == "product":
        return (
            row.name,
            f"{row.id} · {row.sku} · {row.brand} · {row.category} · {money(row.price)} · stock {row.stock_quantity}",
        )
    if kind == "kb":
        return row.title, f"{row.id} · {row.kind} · {row.slug}"
    return (
        row.subject,
        f"{row.id} · {row.status} · {day(row.created_at)} · "
        f"{row.customer.first_name} {row.customer.last_name} ({row.customer_id})",
    )


# The text each kind is searched by: Postgres full text ('simple': no stemming, every word a prefix as one types).
# The GIN indexes of world_app/migrations/0005_lookup_search_indexes.py are built on exactly these expressions
# (the tickets' on the function of 0009).
def _spaced(name: str) -> Func:
    """An email or sku with its separators as spaces, so "doe" finds jane.doe@example.com."""
    return Func(F(name), Value("@._+-/"), Value("      "), function="translate", output_field=CharField())


def _digits(name: str) -> Func:
    return Func(F(name), Value(r"\D"), Value(""), Value("g"), function="regexp_replace", output_field=CharField())


def customer_document() -> SearchVector:
    digits = _digits("phone")
    last_four = Func(digits, Value(4), function="right", output_field=CharField())
    return SearchVector("first_name", "last_name", _spaced("email"), digits, last_four, config=SEARCH_CONFIG)


def product_document() -> SearchVector:
    return SearchVector("name", "brand", weight="A", config=SEARCH_CONFIG) + SearchVector(
        _spaced("sku"), "category", weight="B", config=SEARCH_CONFIG
    )


def ticket_document() -> Func:
    """The subject (weight A) and body (weight B), through ``world_ticket_document`` (migration 0009: the same
    document as a function the planner prices as costly, so a common word reads the index, not every ticket)."""
    return Func(F("subject"), F("body"), function="world_ticket_document", output_field=SearchVectorField())


def article_document() -> SearchVector:
    return SearchVector("title", _spaced("slug"), weight="A", config=SEARCH_CONFIG) + SearchVector(
        "body", weight="B", config=SEARCH_CONFIG
    )


def _matches(document: SearchVector, tsquery: str) -> SearchVectorExact:
    return SearchVectorExact(document, SearchQuery(tsquery, search_type="raw", config=SEARCH_CONFIG))


def _term_query(term: str) -> str:
    return LookupQuery(text=term, terms=[term]).tsquery()


def _id_start(name: str, model: type[models.Model], term: str) -> Q:
    """An id matched by its start, only for a word that starts like one ("ord-2508"): any other word would make
    the planner read every row instead of the full-text index."""
    prefix = f"{model.ID_PREFIX}-"
    if term.startswith(prefix) or prefix.startswith(term):
        return Q(**{f"{name}__istartswith": term})
    return Q(pk__in=[])


def _order_term(term: str) -> Q:
    """An order matches a word through its id, status, customer (name, email, phone) or a product on it."""
    tsquery = _term_query(term)
    match = _id_start("pk", Order, term) | _id_start("customer__id", Customer, term)
    statuses = [value for value in OrderStatus.values if value.startswith(term)]
    if statuses:
        match |= Q(status__in=statuses)
    if tsquery:
        # The customers and products a word names, read first through their full-text indexes (a few ids): as
        # subqueries of the order query they were planned as hashed scans of every customer and line, and the
        # query's cost put it over Postgres's JIT threshold (~120 ms of compiling per look-up at scale 10).
        customers = _ids(Customer.objects.filter(_matches(customer_document(), tsquery)))
        products = _ids(Product.objects.filter(_matches(product_document(), tsquery)))
        if customers:
            match |= Q(customer_id__in=customers)
        if products:
            match |= Q(Exists(OrderLineItem.objects.filter(order_id=OuterRef("pk"), product_id__in=products)))
    return match


def _ids(rows: QuerySet, most: int = 1000) -> list[str] | QuerySet:
    """The ids of ``rows`` as a list, or the subquery itself when more than ``most`` match (a one-letter word)."""
    ids = list(rows.order_by().values_list("pk", flat=True)[: most + 1])
    return ids if len(ids) <= most else rows.values("pk")


def _ticket_term(term: str) -> Q:
    tsquery = _term_query(term)
    match = (
        _id_start("pk", SupportTicket, term)
        | _id_start("customer__id", Customer, term)
        | _id_start("order__id", Order, term)
    )
    if tsquery:
        customers = Customer.objects.filter(_matches(customer_document(), tsquery)).values("pk")
        # as a subquery, so the planner reads the full-text index instead of every ticket's body
        own = SupportTicket.objects.filter(_matches(ticket_document(), tsquery)).values("pk")
        match |= Q(pk__in=own) | Q(customer_id__in=customers)
    return match


def _amount_match(name: str, amounts: list[Decimal]) -> Q:
    match = Q()
    for amount in amounts:
        slack = max(Decimal("1.00"), amount * Decimal("0.005"))  # what a person remembers of a total
        match |= Q(**{f"{name}__gte": amount - slack, f"{name}__lte": amount + slack})
    return match


def _distance_to(center: date) -> Func:
    """Seconds between a row's created_at and noon (world time) of the day a person remembers."""
    moment = datetime.combine(center, time(12), tzinfo=world_zone())
    return Func(
        F("created_at"),
        Value(moment),
        template="abs(extract(epoch from (%(expressions)s)))",
        arg_joiner=" - ",
        output_field=FloatField(),
    )


def _window_match(window: DateWindow, *, delivery: bool = False) -> Q:
    start = datetime.combine(window.start, time(0), tzinfo=world_zone())
    end = datetime.combine(window.end + timedelta(days=1), time(0), tzinfo=world_zone())
    match = Q(created_at__gte=start, created_at__lt=end)
    if delivery:
        match |= Q(estimated_delivery__gte=window.start, estimated_delivery__lte=window.end)
    return match


def _ranked(kind: str, parsed: LookupQuery) -> QuerySet:
    """The rows of ``kind`` matching every word, date and amount of ``parsed``, best first (Postgres)."""
    spec = LOOKUP_KINDS[kind]
    rows = spec.model.objects.select_related(*spec.related)
    tsquery = parsed.tsquery()
    if kind == "order":
        for term in parsed.terms:
            rows = rows.filter(_order_term(term))
        if parsed.amounts:
            lines = OrderLineItem.objects.filter(
                Q(order_id=OuterRef("pk")) & _amount_match("unit_price", parsed.amounts)
            )
            rows = rows.filter(_amount_match("total", parsed.amounts) | Q(Exists(lines)))
        names = (
            OrderLineItem.objects.filter(order_id=OuterRef("pk"))
            .values("order_id")
            .annotate(names=StringAgg("product__name", ", ", order_by="id"))
            .values("names")
        )
        rows = rows.annotate(product_names=Subquery(names[:1]))
        if parsed.window:
            rows = rows.filter(_window_match(parsed.window.widened(WINDOW_SLACK_DAYS), delivery=True))
            return rows.order_by(_distance_to(parsed.window.center), "id")
        return rows.order_by("-created_at", "id")
    if kind == "ticket":
        for term in parsed.terms:
            rows = rows.filter(_ticket_term(term))
        if parsed.window:
            rows = rows.filter(_window_match(parsed.window.widened(WINDOW_SLACK_DAYS)))
        if parsed.window and not tsquery:
            return rows.order_by(_distance_to(parsed.window.center), "id")
        if tsquery:
            rank = SearchRank(ticket_document(), SearchQuery(tsquery, search_type="raw", config=SEARCH_CONFIG))
            return rows.annotate(rank=rank).order_by("-rank", "-created_at", "id")
        return rows.order_by("-created_at", "id")
    document = {"customer": customer_document, "product": product_document, "kb": article_document}[kind]()
    for term in parsed.terms:
        term_tsquery = _term_query(term)
        match = _id_start("pk", spec.model, term)
        if term_tsquery:
            match |= _matches(document, term_tsquery)
        rows = rows.filter(match)
    if kind == "product" and parsed.amounts:
        rows = rows.filter(_amount_match("price", parsed.amounts))
    if tsquery:
        rank = SearchRank(document, SearchQuery(tsquery, search_type="raw", config=SEARCH_CONFIG))
        return rows.annotate(rank=rank).order_by("-rank", "id")
    return rows.order_by("id")


def _contains_everywhere(kind: str, query: str) -> QuerySet:
    """Off Postgres (a SQLite live world in a test or a laptop): every word must be in one of the kind's fields."""
    spec = LOOKUP_KINDS[kind]
    rows = spec.model.objects.select_related(*spec.related)
    for term in query.split()[:MAX_TERMS]:
        match = Q()
        for name in spec.fields:
            lookup = "istartswith" if name.endswith("id") else "icontains"
            match |= Q(**{f"{name}__{lookup}": term})
        rows = rows.filter(match)
    return rows.order_by("id")


def world_lookup(*, kind: str, query: str = "", page: int = 1, page_size: int = PAGE_SIZE) -> LookupPage:
    """One page of ``kind`` rows of the live world for what a person typed, best first, in one query (orders:
    after reading the ids of the customers and products each word names).

    Every word must match (as a prefix, by full text on Postgres: names, emails, phones, product names on an
    order's lines, ticket and article text, or an id's start); a date ("mid august", "aug 14", "2025-08-14",
    "40 days ago") narrows orders and tickets to that window (a week either side) and ranks the nearest first;
    an amount ("$299", "1,299.00") matches an order's total or a line's price, or a product's price.
    """
    spec = LOOKUP_KINDS.get(kind)
    if spec is None:
        raise ValueError(f"unknown look-up {kind!r}; one of: {', '.join(LOOKUP_KINDS)}")
    page = max(1, page)
    parsed = lookup_query_parse(query, today=world_now().astimezone(world_zone()).date())
    rows = _ranked(kind, parsed) if connection.vendor == "postgresql" else _contains_everywhere(kind, query)
    found = list(rows[(page - 1) * page_size : page * page_size + 1])
    understood = parsed.understood if kind in ("order", "ticket") or parsed.amounts else []
    if kind in ("customer", "kb", "ticket"):
        understood = [u for u in understood if not u.startswith("amount")]
    result = LookupPage(kind=kind, query=query, page=page, has_more=len(found) > page_size, understood=understood)
    for row in found[:page_size]:
        title, detail = _describe(kind, row)
        result.rows.append(LookupRow(entity_type=spec.model._meta.model_name, id=row.pk, title=title, detail=detail))
    return result
