"""Ticket drafts written as rows (tickets, messages in the customer's voice, resolutions, escalations, warranty
claims), numbered on from ``RowNumbers``.
"""

from __future__ import annotations

from dataclasses import dataclass

from world_app.generator.sink import RowSink
from world_app.generator.support.drafts import TicketDraft
from world_app.generator.voice import customer_voice, staff_voice, system_voice
from world_app.models import Escalation, Resolution, SupportTicket, TicketMessage, WarrantyClaim


@dataclass
class RowNumbers:
    """The last number used per kind of support row; a later section continues from where the base world ended."""

    messages: int = 0
    resolutions: int = 0
    escalations: int = 0
    claims: int = 0


def write_tickets(tickets: list[TicketDraft], *, sink: RowSink, numbers: RowNumbers | None = None) -> RowNumbers:
    """Write the tickets (ids already given) and their messages, escalations, claims and resolutions."""
    numbers = numbers or RowNumbers()
    message_number, resolution_number = numbers.messages, numbers.resolutions
    escalation_number, claim_number = numbers.escalations, numbers.claims
    for ticket in tickets:
        last = max(
            [ticket.created_at] + [m.sent_at for m in ticket.messages] + [ticket.resolved_at or ticket.created_at]
        )
        sink.add(
            SupportTicket(
                id=ticket.id,
                customer_id=ticket.customer.id,
                order_id=ticket.order.id if ticket.order else None,
                build_id=ticket.build.id if ticket.build else None,
                ticket_type=ticket.ticket_type,
                channel=ticket.channel,
                priority=ticket.priority,
                status=ticket.status,
                subject=ticket.subject[:200],
                body=ticket.body,
                assignee_id=ticket.assignee.id if ticket.assignee else None,
                resolved_at=ticket.resolved_at,
                closure_reason=ticket.closure_reason,
                created_at=ticket.created_at,
                updated_at=last,
            )
        )
        for message in sorted(ticket.messages, key=lambda m: m.sent_at):
            message_number += 1
            sink.add(
                TicketMessage(
                    id=f"msg-{message_number:06d}",
                    ticket_id=ticket.id,
                    author_kind=message.author,
                    employee_id=message.employee.id if message.employee else None,
                    body=_in_voice(message, ticket, key=f"{ticket.id}:{message_number}"),
                    sent_at=message.sent_at,
                    is_internal=message.internal,
                )
            )
        if ticket.escalation:
            escalation_number += 1
            escalation = ticket.escalation
            sink.add(
                Escalation(
                    id=f"esc-{escalation_number:05d}",
                    ticket_id=ticket.id,
                    escalation_type=escalation.kind,
                    destination=escalation.destination,
                    assigned_to_id=escalation.assigned_to.id if escalation.assigned_to else None,
                    created_by_id=ticket.assignee.id if ticket.assignee else None,
                    status=escalation.status,
                    notes=escalation.notes,
                    created_at=escalation.created_at,
                    updated_at=ticket.resolved_at or escalation.created_at,
                )
            )
        if ticket.claim:
            claim_number += 1
            claim = ticket.claim
            filed = next((m.sent_at for m in ticket.messages if m.author == "employee"), ticket.created_at)
            if claim.status != "denied" and filed.astimezone(ticket.created_at.tzinfo).date() > claim.expires_on:
                # Coverage was judged on the day the customer asked: the claim is on record from that moment.
                filed = ticket.created_at
            sink.add(
                WarrantyClaim(
                    id=f"wcl-{claim_number:05d}",
                    line_item_id=claim.line_id,
                    product_id=claim.product_id,
                    customer_id=ticket.customer.id,
                    ticket_id=ticket.id,
                    quantity=1,
                    issue_description=claim.issue,
                    defect_category=claim.defect_category,
                    remedy=claim.remedy,
                    status=claim.status,
                    decision_reason=claim.decision_reason,
                    warranty_expires_on=claim.expires_on,
                    created_at=filed,
                    updated_at=ticket.resolved_at or filed,
                )
            )
        if ticket.status in ("resolved", "closed"):
            resolution_number += 1
            sink.add(
                Resolution(
                    id=f"res-{resolution_number:05d}",
                    ticket_id=ticket.id,
                    outcome=ticket.outcome,
                    summary=ticket.summary,
                    resolved_by_id=ticket.assignee.id,
                    refund_id=ticket.refund.id if ticket.refund else None,
                    created_at=ticket.resolved_at,
                    updated_at=ticket.resolved_at,
                )
            )
    return RowNumbers(message_number, resolution_number, escalation_number, claim_number)


def _in_voice(message, ticket: TicketDraft, *, key: str) -> str:
    """The message's words in its writer's voice (``voice.py``: its own random stream, so nothing else moves)."""
    customer = ticket.customer
    if message.author == "customer":
        return customer_voice(message.body, key=key, first_name=customer.first_name, last_name=customer.last_name)
    if message.author == "employee" and message.employee and not message.internal:
        return staff_voice(
            message.body, key=key, customer_first=customer.first_name, staff_first=message.employee.first_name
        )
    if message.author == "system":
        return system_voice(message.body, sent_at=message.sent_at)
    return message.body
