"""Search tool for support tickets (``search_tickets``), most urgent first on request."""

from __future__ import annotations

from typing import Literal

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from pydantic import Field

from world_app.models import Channel, Priority, SupportTicket, TicketStatus, TicketType
from world_app.tools.params import EntityId, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import ticket_record
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter


class SearchTicketsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the ticket id, subject or body.")
    customer_id: EntityId | None = Field(None, description="Only this customer's tickets.")
    order_id: EntityId | None = Field(None, description="Only tickets about this order.")
    build_id: EntityId | None = Field(None, description="Only tickets about this build.")
    status: Literal[choice_values(TicketStatus)] | None = Field(None, description="Only tickets in this status.")
    ticket_type: Literal[choice_values(TicketType)] | None = Field(None, description="Only tickets of this type.")
    priority: Literal[choice_values(Priority)] | None = Field(None, description="Only tickets of this priority.")
    channel: Literal[choice_values(Channel)] | None = Field(None, description="Only tickets that came in this way.")
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
TICKET_TEXT = ("id", "subject", "body")
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
        text_filter(p.query, TICKET_TEXT, SupportTicket)
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
    text_fields=TICKET_TEXT,
    sorts=TICKET_SORTS,
)
