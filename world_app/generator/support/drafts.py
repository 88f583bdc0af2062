"""What a ticket is before it is written (``TicketDraft`` with its messages, escalation and warranty claim), the
row numbers the writer continues from, and the desk (``_Desk``): who is on duty and the stock phrases agents use.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from world_app.generator.builds import BuildFacts
from world_app.generator.commerce import OrderFacts, RefundFacts
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.people import CustomerFacts, EmployeeFacts, People
from world_app.generator.timeline import Timeline

TICKETS_AT_SCALE_1 = 350
FRONT_LINE = ("agent", "senior_agent", "team_lead")
# Share of the remaining tickets per everyday scenario.
EVERYDAY_WEIGHTS = (
    ("troubleshooting", 24),
    ("warranty", 13),
    ("where_is_my_order", 10),
    ("order_issue", 12),
    ("billing", 7),
    ("recommendation", 14),
    ("return_request", 9),
    ("late_return", 5),
    ("other", 6),
)


@dataclass(slots=True)
class Message:
    sent_at: datetime
    author: str
    employee: EmployeeFacts | None
    body: str
    internal: bool = False


@dataclass(slots=True)
class EscalationDraft:
    kind: str
    destination: str
    assigned_to: EmployeeFacts | None
    notes: str
    created_at: datetime
    status: str = "open"


@dataclass(slots=True)
class ClaimDraft:
    line_id: str
    product_id: str
    defect_category: str
    remedy: str
    status: str
    decision_reason: str
    expires_on: object  # date
    issue: str


@dataclass(slots=True)
class TicketDraft:
    customer: CustomerFacts
    order: OrderFacts | None
    build: BuildFacts | None
    ticket_type: str
    channel: str
    priority: str
    created_at: datetime
    subject: str
    body: str
    status: str = "new"
    assignee: EmployeeFacts | None = None
    messages: list[Message] = field(default_factory=list)
    outcome: str | None = None
    summary: str = ""
    refund: RefundFacts | None = None
    resolved_at: datetime | None = None
    closure_reason: str = ""
    escalation: EscalationDraft | None = None
    claim: ClaimDraft | None = None
    id: str = ""


class _Desk:
    """Turns a customer's request into a ticket with a plausible life: replies, escalation, resolution."""

    def __init__(self, rng: random.Random, timeline: Timeline, people: People, kb: KnowledgeBase) -> None:
        self.rng = rng
        self.timeline = timeline
        self.people = people
        self.kb = kb

    def open(self, customer, *, order=None, build=None, kind, subject, body, created, priority="normal") -> TicketDraft:
        channel = self.rng.choices(("web", "email", "chat", "phone"), weights=(35, 35, 20, 10))[0]
        if priority == "normal" and self.rng.random() < 0.02:
            priority = "urgent"
        return TicketDraft(customer, order, build, kind, channel, priority, created, subject, body)

    def agent(self, moment: datetime, *roles: str) -> EmployeeFacts:
        staff = self.people.staff(*(roles or FRONT_LINE), on=moment.date())
        return self.rng.choice(staff or self.people.staff(*FRONT_LINE, on=self.timeline.today) or self.people.employees)

    def specialist(self, destination: str, moment: datetime) -> EmployeeFacts | None:
        roles = {
            "engineering": ("technical_specialist",),
            "product_management": ("product_specialist",),
            "support": ("team_lead", "manager"),
        }.get(destination)
        if roles:
            staff = self.people.staff(*roles, on=moment.date())
        else:
            staff = [e for e in self.people.employees if e.department == destination and e.active_until is None]
        return self.rng.choice(staff) if staff else None

    def later(self, moment: datetime, low_hours: float, high_hours: float) -> datetime:
        return moment + timedelta(minutes=self.rng.randint(int(low_hours * 60), int(high_hours * 60)))

    def within(self, moment: datetime, low_hours: float, high_hours: float) -> datetime | None:
        """A moment ``low_hours`` to ``high_hours`` after ``moment`` that is already past (None if none is)."""
        room = (self.timeline.now - moment).total_seconds() / 3600 - 1
        if room < low_hours:
            return None
        return self.later(moment, low_hours, min(high_hours, room))

    def settle(
        self,
        ticket: TicketDraft,
        *,
        reply: str,
        outcome: str,
        summary: str,
        refund: RefundFacts | None = None,
        status: str | None = None,
        escalate: tuple[str, str, str] | None = None,
        pending_ask: str = "",
        resolve_at: datetime | None = None,
        internal: str = "",
    ) -> TicketDraft:
        """Give the ticket its status and history. ``status`` forces one; else the ticket's age decides."""
        rng, now = self.rng, self.timeline.now
        age = self.timeline.days_ago(ticket.created_at)
        if status is None:
            if escalate and age < 45 and rng.random() < 0.8:
                status = "escalated"
            elif age > 14:
                status = "closed" if age > 30 and rng.random() < 0.4 else "resolved"
            else:
                status = rng.choices(("new", "open", "pending_customer", "resolved"), weights=(20, 25, 15, 40))[0]
                if status == "pending_customer" and not pending_ask:
                    status = "open"
        first_reply = self.later(ticket.created_at, 0.3, 20)
        if status != "new" and first_reply >= now:
            status = "new"
        ticket.status = status
        if status == "new":
            return ticket
        ticket.assignee = self.agent(ticket.created_at)
        name = ticket.assignee.first_name
        if status == "pending_customer":
            ticket.messages.append(Message(first_reply, "employee", ticket.assignee, f"{pending_ask}\n- {name}"))
            return ticket
        if internal:
            note_at = min(first_reply - timedelta(minutes=5), now)
            ticket.messages.append(Message(note_at, "employee", ticket.assignee, internal, internal=True))
        if status == "open":
            ticket.messages.append(
                Message(
                    first_reply,
                    "employee",
                    ticket.assignee,
                    f"Thanks, {ticket.customer.first_name}. "
                    f"I'm looking into this and will update you shortly.\n- {name}",
                )
            )
            return ticket
        if escalate:
            kind, destination, notes = escalate
            escalated_at = first_reply
            handler = self.specialist(destination, escalated_at)
            ticket.escalation = EscalationDraft(kind, destination, handler, notes, escalated_at)
            ticket.messages.append(
                Message(escalated_at, "system", None, f"Escalated to {destination.replace('_', ' ')} ({kind}).")
            )
            if status == "escalated":
                ticket.escalation.status = "acknowledged" if handler and rng.random() < 0.5 else "open"
                return ticket
            ticket.escalation.status = "resolved"
            first_reply = self.later(escalated_at, 4, 72)
        elif status in ("resolved", "closed") and not resolve_at and rng.random() < 0.5:
            # A question back and forth before the answer.
            asked_at = first_reply
            answer_at = self.later(asked_at, 1, 30)
            if answer_at < now:
                ticket.messages.append(
                    Message(asked_at, "employee", ticket.assignee, (pending_ask or _CLARIFY) + f"\n- {name}")
                )
                ticket.messages.append(Message(answer_at, "customer", None, rng.choice(_ANSWERS)))
                first_reply = self.later(answer_at, 0.5, 20)
        done = resolve_at or first_reply
        done = max(done, first_reply)
        if done >= now:
            # Not finished yet by the world's now: leave it open with the first answer.
            ticket.status = "open"
            if ticket.escalation:
                ticket.status, ticket.escalation.status = "escalated", "acknowledged"
            return ticket
        ticket.messages.append(Message(done, "employee", ticket.assignee, f"{reply}\n- {name}"))
        ticket.outcome, ticket.summary, ticket.refund = outcome, summary, refund
        ticket.resolved_at = done + timedelta(minutes=rng.randint(1, 20))
        if status == "closed":
            thanks_at = self.later(done, 2, 60)
            if thanks_at < now and rng.random() < 0.6:
                ticket.messages.append(Message(thanks_at, "customer", None, rng.choice(_THANKS)))
                ticket.closure_reason = "Resolved; the customer confirmed."
            else:
                ticket.closure_reason = "Resolved; no reply from the customer in 7 days."
        if ticket.resolved_at > now:
            ticket.resolved_at = now
        return ticket


_CLARIFY = "Thanks for reaching out. Could you confirm the order number and which item this is about?"
_ANSWERS = (
    "Sure, details and photos attached.",
    "Yes, that's the one. Anything else you need?",
    "Done, see the attached photo.",
    "Here you go. Hope that helps.",
)
_THANKS = ("Thanks, that sorted it.", "Got it, thank you!", "Perfect, appreciate the quick help.", "Thanks.")
_SIGN_OFFS = ("Thanks,", "Regards,", "Best,", "Cheers,", "")


def _signed(rng: random.Random, customer: CustomerFacts, text: str) -> str:
    sign = rng.choice(_SIGN_OFFS)
    return f"{text}\n{sign} {customer.first_name}".rstrip() if sign else f"{text}\n{customer.first_name}"


def _order_ref(rng: random.Random, order: OrderFacts) -> str:
    """How a customer names an order: usually by number, sometimes only by date."""
    if rng.random() < 0.7:
        return f"order {order.id}"
    return f"my order from {order.created_at:%B} {order.created_at.day}"
