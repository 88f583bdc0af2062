"""Write tools on support work: resolutions and escalations. A warranty claim and a ticket's status are
``write_tickets``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from world_app import clock
from world_app.models import (
    Employee,
    Escalation,
    EscalationType,
    Refund,
    Resolution,
    ResolutionOutcome,
    SupportTicket,
    TicketStatus,
)
from world_app.store_rules import (
    ESCALATION_DESTINATIONS,
    POLICY_EXCEPTION_PERMISSION,
    POLICY_EXCEPTION_ROLES,
    TICKET_TRANSITIONS,
)
from world_app.tools.baked import BakedQuery, create_row, save_fields
from world_app.tools.ids import new_id
from world_app.tools.lookups import fetch
from world_app.tools.params import EntityId, ToolParams
from world_app.tools.records import (
    escalation_record,
    resolution_record,
    ticket_record,
)
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError

FINAL_TICKET_STATUSES = frozenset({TicketStatus.RESOLVED, TicketStatus.CLOSED})

# Baked (see baked.py): these look-ups run on every call of their tool, and compiling them cost more than running them.
OPEN_ESCALATIONS = BakedQuery(
    Escalation,
    lambda ticket_id, escalation_type: (
        Escalation.objects.filter(ticket_id=ticket_id, escalation_type=escalation_type)
        .exclude(status=Escalation.Status.RESOLVED)
        .order_by("id")
    ),
)


def _active_employee(employee_id: str, *, field: str) -> Employee:
    employee = fetch(Employee, employee_id, field=field)
    if not employee.is_active:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"employee {employee.id} ({employee.full_name}) no longer works here",
            field=field,
        )
    return employee


def can_decide_exceptions(employee: Employee) -> bool:
    return employee.support_role in POLICY_EXCEPTION_ROLES or POLICY_EXCEPTION_PERMISSION in (
        employee.permissions or []
    )


# --- resolutions ---------------------------------------------------------------------------------------------


class CreateResolutionParams(ToolParams):
    ticket_id: EntityId = Field(description="The ticket being resolved.")
    outcome: Literal[tuple(ResolutionOutcome.values)] = Field(description="What was done for the customer.")
    summary: str = Field(min_length=10, max_length=4000, description="What was found and done, for the record.")
    resolved_by: EntityId = Field(description="Employee id of who resolved it (an active employee).")
    refund_id: EntityId | None = Field(
        None, description="The refund issued; required when outcome is refund_issued. Must refund the ticket's order."
    )


@tool(group="write", params=CreateResolutionParams)
def create_resolution(p: CreateResolutionParams) -> dict:
    """Record how a ticket was resolved: outcome, summary, the employee who resolved it, and the refund when one
    was issued (it must belong to the ticket's order, or to the ticket's customer when the ticket names no order).

    This does not change the ticket's status: resolving a ticket takes an assignee, a resolution record, then
    update_ticket_status with status resolved.
    """
    ticket = fetch(SupportTicket, p.ticket_id, field="ticket_id")
    if ticket.status == TicketStatus.CLOSED:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"ticket {ticket.id} is closed: reopen it (update_ticket_status to open) before adding a resolution",
            field="ticket_id",
        )
    employee = _active_employee(p.resolved_by, field="resolved_by")
    refund = None
    if p.outcome == ResolutionOutcome.REFUND_ISSUED and not p.refund_id:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            "a refund_issued resolution names its refund: give refund_id",
            field="refund_id",
        )
    if p.refund_id:
        refund = fetch(Refund, p.refund_id, field="refund_id", related=("payment__order",))
        order = refund.payment.order
        if ticket.order_id and order.id != ticket.order_id:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"refund {refund.id} refunds order {order.id}, but ticket {ticket.id} is about order {ticket.order_id}",
                field="refund_id",
            )
        if not ticket.order_id and order.customer_id != ticket.customer_id:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"refund {refund.id} is for customer {order.customer_id}, not the ticket's customer "
                f"{ticket.customer_id}",
                field="refund_id",
            )
    now = clock.world_now()
    resolution = create_row(
        Resolution,
        id=new_id(Resolution),
        ticket=ticket,
        outcome=p.outcome,
        summary=p.summary,
        resolved_by=employee,
        refund=refund,
        created_at=now,
        updated_at=now,
    )
    steps = []
    if ticket.status not in FINAL_TICKET_STATUSES:
        steps.append(f"ticket {ticket.id} is still {ticket.status}: set it to resolved with update_ticket_status")
    return {"resolution": resolution_record(resolution), "ticket": ticket_record(ticket), "next_steps": steps}


# --- escalations ---------------------------------------------------------------------------------------------


class CreateEscalationParams(ToolParams):
    ticket_id: EntityId = Field(description="The ticket to escalate.")
    escalation_type: Literal[tuple(EscalationType.values)] = Field(
        description="product_specialist (product questions, goes to product management), technical (hardware or "
        "software faults, goes to engineering), policy_exception (exceptions and refunds over the approval limit, "
        "goes to a support team lead)."
    )
    notes: str = Field(
        min_length=20, max_length=4000, description="What the receiving team needs: the facts, what was tried, the ask."
    )
    created_by: EntityId | None = Field(None, description="Employee id of who escalates.")
    assigned_to: EntityId | None = Field(
        None,
        description="Employee id to hand it to; must work in the destination department (a policy_exception: a "
        "team lead or manager).",
    )


@tool(group="write", params=CreateEscalationParams)
def create_escalation(p: CreateEscalationParams) -> dict:
    """Escalate a ticket to the team that can act on it. The destination department follows from the type
    (product_specialist -> {ESCALATION_DESTINATIONS[product_specialist]}, technical ->
    {ESCALATION_DESTINATIONS[technical]}, policy_exception -> {ESCALATION_DESTINATIONS[policy_exception]}, where a
    team lead approves exceptions and refunds over ${REFUND_APPROVAL_LIMIT}).

    Notes are required. The ticket moves to escalated. Refused for a resolved or closed ticket, and when the
    ticket already has an open escalation of the same type.
    """
    ticket = fetch(SupportTicket, p.ticket_id, field="ticket_id")
    if TicketStatus.ESCALATED not in TICKET_TRANSITIONS.get(ticket.status, frozenset()) and (
        ticket.status != TicketStatus.ESCALATED
    ):
        raise ToolError(
            ErrorCode.INVALID_TRANSITION,
            f"ticket {ticket.id} is {ticket.status}: reopen it (update_ticket_status to open) before escalating",
            field="ticket_id",
        )
    open_same = next(iter(OPEN_ESCALATIONS(ticket.id, p.escalation_type)), None)
    if open_same is not None:
        raise ToolError(
            ErrorCode.CONFLICT,
            f"ticket {ticket.id} already has an open {p.escalation_type} escalation ({open_same.id}, "
            f"{open_same.status})",
            field="escalation_type",
        )
    destination = ESCALATION_DESTINATIONS[p.escalation_type]
    creator = _active_employee(p.created_by, field="created_by") if p.created_by else None
    assignee = None
    if p.assigned_to:
        assignee = _active_employee(p.assigned_to, field="assigned_to")
        if assignee.department != destination:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"a {p.escalation_type} escalation goes to {destination}; {assignee.id} ({assignee.full_name}) works "
                f"in {assignee.department}",
                field="assigned_to",
            )
        if p.escalation_type == EscalationType.POLICY_EXCEPTION and not can_decide_exceptions(assignee):
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"a policy_exception is decided by a team lead or manager; {assignee.id} ({assignee.full_name}) is "
                f"{assignee.title} ({assignee.support_role or 'no support role'})",
                field="assigned_to",
            )
    now = clock.world_now()
    escalation = create_row(
        Escalation,
        id=new_id(Escalation),
        ticket=ticket,
        escalation_type=p.escalation_type,
        destination=destination,
        assigned_to=assignee,
        created_by=creator,
        status=Escalation.Status.OPEN,
        notes=p.notes,
        created_at=now,
        updated_at=now,
    )
    previous = ticket.status
    if ticket.status != TicketStatus.ESCALATED:
        ticket.status = TicketStatus.ESCALATED
        ticket.updated_at = now
        save_fields(ticket, ["status", "updated_at"])
    return {
        "escalation": escalation_record(escalation),
        "ticket": ticket_record(ticket),
        "previous_ticket_status": previous,
    }
