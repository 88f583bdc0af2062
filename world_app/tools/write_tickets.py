"""Write tools on a ticket's case: a warranty claim for a line of the ticket's order (coverage, the claim day and
the remedy checked), and the ticket's status (a final status needs a resolution).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from world_app import clock
from world_app.models import (
    DefectCategory,
    Refund,
    Resolution,
    SupportTicket,
    TicketStatus,
    WarrantyClaim,
    WarrantyClaimStatus,
    WarrantyRemedy,
)
from world_app.store_rules import (
    TICKET_TRANSITIONS,
    WARRANTY_EXCLUSIONS,
    WARRANTY_INSPECTION_CATEGORIES,
    WARRANTY_REFUND_LIFECYCLES,
    WARRANTY_REMEDIES,
)
from world_app.tools.baked import BakedQuery, create_row, save_fields
from world_app.tools.coverage import delivered_at, warranty_claim_day, warranty_coverage
from world_app.tools.ids import new_id
from world_app.tools.ledger import refunded_quantities
from world_app.tools.lookups import ORDER_SHIPMENTS, fetch, resolve_line
from world_app.tools.params import EntityId, LineRefParams, ToolParams
from world_app.tools.records import (
    ticket_record,
    warranty_claim_record,
)
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError, day, error_result
from world_app.tools.write_support import FINAL_TICKET_STATUSES, _active_employee

LIVE_LINE_CLAIMS = BakedQuery(
    WarrantyClaim,
    lambda line_id: (
        WarrantyClaim.objects.filter(line_item_id=line_id).exclude(status=WarrantyClaimStatus.DENIED).order_by("id")
    ),
)

# Baked (see baked.py): these look-ups run on every call of their tool.
ORDER_REFUNDS = BakedQuery(Refund, lambda order_id: Refund.objects.filter(payment__order_id=order_id).order_by("id"))
TICKET_RESOLUTION = BakedQuery(
    Resolution, lambda ticket_id: Resolution.objects.filter(ticket_id=ticket_id).order_by("id")[:1]
)


# --- warranty claims -----------------------------------------------------------------------------------------


class CreateWarrantyClaimParams(LineRefParams):
    issue_description: str = Field(min_length=10, max_length=4000, description="The fault, as the customer reports it.")
    defect_category: Literal[tuple(DefectCategory.values)] = Field(
        description="The cause: manufacturing_defect is covered; physical_damage, liquid_damage, overclocking, "
        "improper_installation and wear_and_tear are not; unknown sends the part to inspection."
    )
    remedy: Literal[tuple(sorted(WARRANTY_REMEDIES))] = Field(
        description="What the customer gets if approved: a replacement; a refund only when the product is no longer "
        "sold (discontinued or end of life). Parts are not repaired."
    )
    quantity: int = Field(1, ge=1, le=1000, description="How many units of the line are faulty (default 1).")
    ticket_id: EntityId | None = Field(None, description="The support ticket the claim comes from.")


@tool(group="write", params=CreateWarrantyClaimParams)
def create_warranty_claim(p: CreateWarrantyClaimParams) -> dict:
    """File a warranty claim for units of an order line and decide it by the warranty policy.

    Approved: a manufacturing defect within the warranty (delivery date + the product's warranty months) on the
    day the claim is made: the day the customer reported it, i.e. the creation of ``ticket_id`` when that ticket is
    about this order; filed without such a ticket, today.
    Pending inspection: cause unknown, within the warranty. Denied (recorded with the reason, and returned as a
    policy_violation error that also carries the claim): warranty expired, or an excluded cause (physical or
    liquid damage, overclocking, improper installation, wear and tear). An item not yet delivered has no
    warranty running: refused without a record.
    """
    line = resolve_line(line_item_id=p.line_item_id, order_id=p.order_id, product_id=p.product_id)
    customer_id = line.order.customer_id
    ticket = None
    if p.ticket_id:
        ticket = fetch(SupportTicket, p.ticket_id, field="ticket_id")
        if ticket.customer_id != customer_id:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"ticket {ticket.id} belongs to customer {ticket.customer_id}, but line {line.id} was bought by "
                f"{customer_id}",
                field="ticket_id",
            )
    claimed = sum(claim.quantity for claim in LIVE_LINE_CLAIMS(line.id))
    # A refunded unit went back to the store: it cannot also be claimed under warranty.
    refunded = refunded_quantities(ORDER_REFUNDS(line.order_id)).get(line.id, 0)
    available = line.quantity - refunded - claimed
    if p.quantity > available:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"line {line.id} has {line.quantity} unit(s): {refunded} refunded and {claimed} already under an open or "
            f"approved claim, so at most {max(available, 0)} more can be claimed",
            field="quantity",
        )
    if p.remedy == WarrantyRemedy.REFUND and line.product.lifecycle not in WARRANTY_REFUND_LIFECYCLES:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"{line.product.name} is still sold ({line.product.lifecycle}): an approved claim is met with a "
            "replacement; a refund only when the product is no longer sold",
            field="remedy",
        )
    delivered = delivered_at(ORDER_SHIPMENTS(line.order_id))
    # The claim is made the day the customer reported the defect (kb-0003): their ticket about this order.
    claimed_on, basis = warranty_claim_day(ticket, order_id=line.order_id)
    coverage = warranty_coverage(delivered, line.product.warranty_months, today=claimed_on)
    if coverage.status == "not_started":
        raise ToolError(ErrorCode.POLICY_VIOLATION, coverage.explain(), field="line_item_id")
    if not coverage.is_active:
        status, reason = WarrantyClaimStatus.DENIED, f"warranty expired: claim made {basis}; {coverage.explain()}"
    elif p.defect_category in WARRANTY_EXCLUSIONS:
        status = WarrantyClaimStatus.DENIED
        reason = (
            f"{p.defect_category.replace('_', ' ')} is not covered: the warranty covers manufacturing defects only "
            f"(excluded: {', '.join(WARRANTY_EXCLUSIONS)})"
        )
    elif p.defect_category in WARRANTY_INSPECTION_CATEGORIES:
        status = WarrantyClaimStatus.PENDING_INSPECTION
        reason = (
            f"within warranty (claim made {basis}; {coverage.explain()}); the cause is unknown, so the part is "
            "inspected first"
        )
    else:
        status = WarrantyClaimStatus.APPROVED
        reason = f"manufacturing defect within warranty: claim made {basis}; {coverage.explain()}"
    now = clock.world_now()
    claim = create_row(
        WarrantyClaim,
        id=new_id(WarrantyClaim),
        line_item=line,
        product=line.product,
        customer_id=customer_id,
        ticket=ticket,
        quantity=p.quantity,
        issue_description=p.issue_description,
        defect_category=p.defect_category,
        remedy=p.remedy,
        status=status,
        decision_reason=reason,
        warranty_expires_on=coverage.expires_on,
        created_at=now,
        updated_at=now,
    )
    record = warranty_claim_record(claim)
    if status == WarrantyClaimStatus.DENIED:
        # The refusal is the answer, and the denied claim stays on record: both go back to the agent.
        at_fault = "defect_category" if coverage.is_active else None
        refusal = error_result(ErrorCode.POLICY_VIOLATION, f"claim denied: {reason}", field=at_fault)
        return {**refusal, "claim": record}
    steps = []
    if status == WarrantyClaimStatus.APPROVED and p.remedy == WarrantyRemedy.REFUND:
        steps.append("issue the refund with create_refund (reason defective, the claimed units as lines)")
    return {"claim": record, "warranty": {**coverage.as_dict(), "claim_made_on": day(claimed_on)}, "next_steps": steps}


# --- ticket status -------------------------------------------------------------------------------------------


class UpdateTicketStatusParams(ToolParams):
    ticket_id: EntityId = Field(description="The ticket to change.")
    status: Literal[tuple(TicketStatus.values)] = Field(
        description="The new status: open, pending_customer, resolved, closed (escalated comes from create_escalation)."
    )
    assignee_id: EntityId | None = Field(None, description="Assign the ticket to this employee at the same time.")
    closure_reason: str = Field("", max_length=200, description="Why it is closed; stored with a closed ticket.")


@tool(group="write", params=UpdateTicketStatusParams)
def update_ticket_status(p: UpdateTicketStatusParams) -> dict:
    """Move a ticket along the ticket state machine, optionally assigning it.

    new -> open, pending_customer, escalated, resolved, closed; open and pending_customer -> each other, resolved,
    closed; resolved -> open (reopen) or closed; closed -> open. Resolving needs an assignee and a resolution
    record (create_resolution) first; closing needs an assignee. Escalating is done by create_escalation.
    """
    ticket = fetch(SupportTicket, p.ticket_id, field="ticket_id")
    current = ticket.status
    if p.assignee_id:
        ticket.assignee = _active_employee(p.assignee_id, field="assignee_id")
    if p.status == current and not p.assignee_id:
        raise ToolError(ErrorCode.INVALID_TRANSITION, f"ticket {ticket.id} is already {current}", field="status")
    if p.status != current:
        allowed = TICKET_TRANSITIONS.get(current, frozenset())
        if p.status not in allowed:
            raise ToolError(
                ErrorCode.INVALID_TRANSITION,
                f"ticket {ticket.id} is {current}; from {current} it can move to: {', '.join(sorted(allowed))}",
                field="status",
            )
    if p.status == TicketStatus.ESCALATED and current != TicketStatus.ESCALATED:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            "a ticket is escalated by create_escalation, which records where it goes and why",
            field="status",
        )
    if p.status in FINAL_TICKET_STATUSES and not ticket.assignee_id:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"a {p.status} ticket needs an assignee: give assignee_id",
            field="assignee_id",
        )
    resolving = p.status == TicketStatus.RESOLVED and current != TicketStatus.RESOLVED
    if resolving and not TICKET_RESOLUTION(ticket.id):
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"ticket {ticket.id} has no resolution record: resolving a ticket takes an assignee and a resolution "
            "(create_resolution) first",
            field="status",
        )
    now = clock.world_now()
    ticket.status = p.status
    ticket.updated_at = now
    if resolving:
        ticket.resolved_at = now
    elif p.status == TicketStatus.OPEN:
        ticket.resolved_at = None
        ticket.closure_reason = ""
    if p.status == TicketStatus.CLOSED and p.closure_reason:
        ticket.closure_reason = p.closure_reason
    save_fields(ticket, ["status", "updated_at", "resolved_at", "closure_reason", "assignee"])
    return {"ticket": ticket_record(ticket), "previous_status": current}
