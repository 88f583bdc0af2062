"""Support tickets with their message threads, resolutions and escalations.

Tickets grow out of what happened in commerce (a refund had a ticket, a damaged parcel, a build whose parts
clash, a warranty that just ran out), plus everyday questions. Resolved and closed tickets always have an
assignee and a resolution; a refund_issued resolution links the refund of the ticket's own order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from world_app.generator.builds import BuildFacts
from world_app.generator.commerce import RETURN_WINDOW_DAYS, Commerce, OrderFacts, RefundFacts, warranty_end
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.mess import MessPlan
from world_app.generator.people import CustomerFacts, EmployeeFacts, People
from world_app.generator.sink import RowSink
from world_app.generator.timeline import Timeline, cents
from world_app.generator.voice import customer_voice, staff_voice, system_voice
from world_app.models import Escalation, Resolution, SupportTicket, TicketMessage, WarrantyClaim
from world_app.store_rules import WARRANTY_EXCLUSIONS

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


@dataclass
class Support:
    tickets: list[TicketDraft]
    scenarios: dict[str, list[str]]
    numbers: RowNumbers | None = None


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


# --- Scenario writers -----------------------------------------------------------------------------------


def _refund_ticket(desk: _Desk, refund: RefundFacts) -> TicketDraft | None:
    rng, order = desk.rng, refund.order
    line = refund.lines[0][0] if refund.lines else order.lines[0]
    product = line.product.name
    before = refund.created_at - timedelta(hours=rng.randint(2, 40))
    floor = (order.delivered_at or order.created_at) + timedelta(hours=1)
    created = max(before, floor)
    if created >= refund.created_at:
        created = refund.created_at - timedelta(minutes=30)
    ref = _order_ref(rng, order)
    amount = cents(refund.amount)
    if refund.reason == "shipping_issue":
        kind, subject = "shipping", f"Package for {order.id} came back damaged"
        body = f"Tracking for {ref} says the parcel was damaged and is going back to you. What happens now?"
        reply = f"The carrier damaged the parcel. I've refunded ${amount} (merchandise and tax) to your payment method."
    elif refund.reason == "price_match":
        kind, subject = "billing", "Price match request"
        body = f"I bought the {product} ({ref}) and it's now cheaper at another authorized store. Can you match it?"
        reply = f"Confirmed the lower price within 14 days of your purchase; ${amount} is on its way back to you."
    elif refund.reason == "other":
        kind, subject = "shipping", f"{order.id} arrived late"
        body = f"{ref.capitalize()} arrived days after the estimate and I needed it for the weekend. Not happy."
        reply = f"Sorry about the delay. I've added a ${amount} goodwill credit back to your payment method."
    elif refund.reason == "defective":
        kind, subject = "return", f"Defective {line.product.category}: {product}"
        body = rng.choice(
            (
                f"The {product} from {ref} is dead out of the box. Tried two systems. I want a refund.",
                f"The {product} I got ({ref}) stopped working after a few days. Can I return it?",
            )
        )
        reply = f"Sorry about the faulty {product}. Your refund of ${amount} is approved; a return label follows."
    else:
        kind = "return"
        subject = f"Return request: {product}"
        why = "It doesn't fit my build." if refund.reason == "incompatible" else "I changed my mind."
        body = f"I'd like to return the {product} from {ref}. {why}"
        reply = f"Your return of the {product} is approved; the refund is ${amount}."
        if refund.fee:
            reply += f" As the item was opened, a ${cents(refund.fee)} (15%) restocking fee applies."
    ticket = desk.open(
        order.customer,
        order=order,
        kind=kind,
        subject=subject,
        body=_signed(rng, order.customer, body),
        created=created,
        priority="high" if kind == "shipping" else "normal",
    )
    if refund.status == "rejected":
        reply = (
            f"I'm sorry, but {order.id} was delivered on {order.delivered_at:%Y-%m-%d}, more than 30 days ago, "
            f"so the return window has closed. If the item is faulty, it's still covered by its warranty."
        )
        return desk.settle(
            ticket,
            reply=reply,
            outcome="no_action",
            summary="Return refused: outside the 30-day window from delivery.",
            resolve_at=refund.decided_at,
            status="resolved",
        )
    if refund.status == "pending":
        return desk.settle(
            ticket,
            reply=reply,
            outcome="refund_issued",
            summary="",
            status="pending_customer",
            pending_ask="Please ship the item back with the prepaid label; the refund is issued on arrival.",
        )
    summary = f"Refund {refund.reason.replace('_', ' ')}: ${amount} for {order.id}."
    return desk.settle(
        ticket,
        reply=reply,
        outcome="refund_issued",
        summary=summary,
        refund=refund,
        resolve_at=refund.created_at + timedelta(minutes=rng.randint(5, 90)),
        status="closed" if desk.timeline.days_ago(refund.created_at) > 30 and rng.random() < 0.4 else "resolved",
    )


def _exception_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft:
    rng = desk.rng
    exception_at = datetime.fromisoformat(order.shipment.events[-1]["at"])
    created = desk.later(exception_at, 2, 48)
    body = _signed(
        rng,
        order.customer,
        f"Tracking for {order.id} shows an exception and says it's being returned."
        " I still need these parts. Can you reship?",
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="shipping",
        subject=f"Shipping exception on {order.id}",
        body=body,
        created=min(created, desk.timeline.now - timedelta(hours=1)),
        priority="high",
    )
    return desk.settle(
        ticket,
        reply="The carrier confirmed damage in transit. We'll refund or reship as soon as the parcel is back.",
        outcome="order_updated",
        summary="Carrier damage confirmed; awaiting the parcel's return.",
        escalate=(
            "policy_exception",
            "support",
            f"Carrier exception on {order.shipment.tracking_number}; "
            "customer wants a reship before the parcel is back.",
        ),
        status=rng.choice(("open", "escalated", "pending_customer")),
        pending_ask="Would you prefer a refund or a replacement shipment once the parcel is back with us?",
    )


_BUILD_SYMPTOMS = {
    "GPU fits case": (
        "The graphics card doesn't fit",
        "The {gpu} hits the front of the {case}; the side panel won't close.",
    ),
    "CPU socket matches motherboard": (
        "CPU won't go in the socket",
        "The {cpu} doesn't sit in the {board} socket at all.",
    ),
    "Memory type matches motherboard": (
        "RAM doesn't fit the slots",
        "The memory sticks won't go into the {board}'s slots.",
    ),
    "Cooler supports CPU socket": (
        "Cooler won't mount",
        "The cooler's bracket doesn't line up with the {cpu}'s socket.",
    ),
    "Motherboard fits case": (
        "Board doesn't fit the case",
        "The {board} doesn't line up with the standoffs in the {case}.",
    ),
    "Air cooler fits case": ("Side panel won't close", "The CPU cooler is too tall for the {case}; the panel hits it."),
    "Radiator fits case": ("Radiator won't mount", "There's nowhere in the {case} to mount the radiator of my cooler."),
    "PSU form factor fits case": ("PSU doesn't fit", "The power supply doesn't fit the {case}'s PSU bay."),
    "PSU covers total power draw": (
        "PC shuts off in games",
        "It boots fine but switches off as soon as a game starts.",
    ),
    "PSU headroom": ("Random restarts under load", "Restarts now and then during long renders."),
    "GPU recommended PSU": ("Shutdowns with new graphics card", "Since fitting the {gpu} the PC sometimes powers off."),
    "Cooler handles CPU heat": ("CPU at 95C", "The {cpu} hits 95C and throttles in every benchmark."),
}


def _build_ticket(desk: _Desk, build: BuildFacts, order: OrderFacts, rule_name: str) -> TicketDraft | None:
    rng = desk.rng
    delivered = order.delivered_at
    if delivered is None:
        return None
    created = desk.within(delivered, 6, 24 * 12)
    if created is None:
        return None
    parts = {p.category: p.name for p, _ in build.parts}
    subject, symptom = _BUILD_SYMPTOMS.get(rule_name, ("Build problem", "Something in my build isn't working."))
    text = symptom.format(
        gpu=parts.get("gpu", "card"),
        case=parts.get("case", "case"),
        cpu=parts.get("cpu", "CPU"),
        board=parts.get("motherboard", "board"),
    )
    body = _signed(rng, order.customer, f"I put together the parts from {_order_ref(rng, order)}. {text} What now?")
    ticket = desk.open(
        order.customer,
        order=order,
        build=build,
        kind="troubleshooting",
        subject=subject,
        body=body,
        created=created,
        priority="high",
    )
    reply = (
        f'I ran your build through our compatibility checker: it breaks the rule "{rule_name}". I\'ve suggested a '
        f"compatible replacement part; the mismatched part can be returned within 30 days of delivery."
    )
    return desk.settle(
        ticket,
        reply=reply,
        outcome="recommendation_provided",
        summary=f'Build {build.id} breaks "{rule_name}"; recommended a compatible replacement part.',
        escalate=(
            "product_specialist",
            "product_management",
            f'Build {build.id} fails "{rule_name}". Need a like-for-like replacement suggestion.',
        )
        if rng.random() < 0.5
        else None,
        pending_ask="Could you send a photo of the parts installed so far?",
    )


_COMPLAINTS = {
    "gpu": ("No picture from the graphics card", "The {p} gives no display output; fans spin, screen stays black."),
    "cpu": ("CPU overheating", "The {p} hits 95C within a minute of gaming."),
    "motherboard": ("Board won't POST", "The {p} won't POST; the DRAM debug light stays on."),
    "memory": ("Memory unstable", "The {p} crashes my PC whenever I enable the XMP/EXPO profile."),
    "storage": ("Drive not showing up", "The {p} doesn't show up in Windows."),
    "psu": ("PSU shuts down", "The {p} clicks and the PC turns off under load."),
    "case": ("Front USB not working", "The front USB-C port on the {p} doesn't work."),
    "cooling": ("Cooler noise", "The {p} makes a gurgling noise and temps are high."),
    "prebuilt": ("PC keeps restarting", "My {p} restarts randomly while gaming."),
    "workstation": ("Workstation freezes", "My {p} freezes during long renders."),
    "monitor": ("Monitor flickering", "The {p} flickers when variable refresh is on."),
    "keyboard": ("Keys double typing", "Some keys on the {p} type twice."),
    "mouse": ("Mouse disconnects", "The {p} keeps disconnecting and lags."),
    "headset": ("Mic not working", "Nobody can hear me through the {p}'s microphone."),
    "networking": ("Wi-Fi keeps dropping", "The {p} drops the connection every few minutes."),
    "cable": ("Cable not working", "The {p} gives no signal."),
    "accessory": ("Accessory issue", "The {p} doesn't fit as described."),
}


def _troubleshooting_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    line = rng.choice(order.lines)
    created = desk.within(order.delivered_at, 12, 24 * 90)
    if created is None:
        return None
    subject, complaint = _COMPLAINTS[line.product.category]
    body = _signed(rng, order.customer, f"{complaint.format(p=line.product.name)} It's from {_order_ref(rng, order)}.")
    ticket = desk.open(order.customer, order=order, kind="troubleshooting", subject=subject, body=body, created=created)
    guide = desk.kb.guide_by_category.get(line.product.category)
    pointer = f" (guide {guide})" if guide else ""
    return desk.settle(
        ticket,
        reply=f"Let's try the steps in our troubleshooting guide{pointer}. They fix most cases like this one.",
        outcome="troubleshooting_steps",
        summary=f"Walked the customer through the {line.product.category} guide{pointer}; issue fixed.",
        escalate=(
            "technical",
            "engineering",
            f"Guide exhausted for {line.product.id}; suspect a defect, needs bench test.",
        )
        if rng.random() < 0.3
        else None,
        pending_ask="Which steps from the guide have you tried so far, and what did the debug lights show?",
    )


_DENIALS = (
    ("physical damage", "the photos show a cracked PCB, which is physical damage"),
    ("liquid damage", "the unit shows liquid damage"),
    ("overclocking", "the failure followed running the part beyond the manufacturer's voltage settings"),
    ("improper installation", "the socket pins were bent during installation"),
    ("wear and tear", "worn keycaps and switches are normal wear and tear"),
)


def _coverage_text(delivered: datetime, months: int, ends, on) -> str:
    """The coverage as the warranty tool words it, as of the day ``on``."""
    base = f"delivered {delivered:%Y-%m-%d} with a {months}-month warranty running through {ends.isoformat()}"
    if on <= ends:
        return f"{base}; {(ends - on).days} days left"
    return f"{base}; it expired {(on - ends).days} days ago"


def _warranty_ticket(desk: _Desk, order: OrderFacts, *, near_boundary: bool) -> TicketDraft | None:
    rng, timeline = desk.rng, desk.timeline
    delivered = order.delivered_at
    lines = [line for line in order.lines if not near_boundary or line.product.warranty_months == 12]
    if not lines:
        return None
    line = rng.choice(lines)
    months = line.product.warranty_months
    ends = warranty_end(delivered, months)
    if near_boundary:
        created = timeline.now - timedelta(days=rng.randint(0, 12), hours=rng.randint(1, 9))
    else:
        days = (timeline.now - delivered).days
        if days < 60:
            return None
        created = delivered + timedelta(days=rng.randint(45, days), hours=rng.randint(0, 10))
    if created <= delivered:
        return None
    product = line.product.name
    issue = rng.choice(
        (
            f"My {product} from {_order_ref(rng, order)} has stopped working. Is it still under warranty?",
            f"The {product} I bought from you died today. I'd like a warranty replacement.",
        )
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="warranty",
        subject=f"Warranty claim: {product}",
        body=_signed(rng, order.customer, issue),
        created=created,
    )
    covered = created.date() <= ends
    when = f"delivered {delivered:%Y-%m-%d} with a {months}-month warranty (through {ends})"
    coverage = _coverage_text(delivered, months, ends, created.date())

    def claim(category: str, status: str, reason: str, remedy: str = "replacement") -> ClaimDraft:
        return ClaimDraft(line.id, line.product.id, category, remedy, status, reason, ends, issue)

    if covered and rng.random() < 0.25:
        cause, why = rng.choice(_DENIALS)
        desk.settle(
            ticket,
            reply=f"I'm sorry: I can't approve this claim because {why}; the warranty covers "
            "manufacturing defects only.",
            outcome="no_action",
            summary=f"Warranty claim denied ({cause}); {when}.",
            pending_ask="Could you send photos of the part, front and back?",
        )
        if ticket.status in ("resolved", "closed"):
            category = cause.replace(" ", "_")
            ticket.claim = claim(
                category,
                "denied",
                f"{cause} is not covered: the warranty covers manufacturing "
                f"defects only (excluded: {', '.join(WARRANTY_EXCLUSIONS)})",
            )
        return ticket
    if covered:
        outcome = rng.choice(("warranty_claim_filed", "replacement_sent"))
        desk.settle(
            ticket,
            reply=f"Your {product} is under warranty ({when}). A replacement is on its way.",
            outcome=outcome,
            summary=f"In warranty ({when}); {outcome.replace('_', ' ')}.",
            pending_ask="Could you describe when it fails and send a photo of the label?",
        )
        if ticket.status in ("resolved", "closed"):
            ticket.claim = claim(
                "manufacturing_defect", "approved", f"manufacturing defect within warranty: {coverage}"
            )
        elif ticket.status == "open":
            ticket.claim = claim(
                "unknown",
                "pending_inspection",
                f"within warranty ({coverage}); the cause is unknown, so the part is inspected first",
            )
        return ticket
    late_by = (created.date() - ends).days
    escalate = None
    if late_by <= 30:
        escalate = ("policy_exception", "support", f"Warranty expired {late_by} days before the claim ({when}).")
    desk.settle(
        ticket,
        reply=(
            f"I'm sorry: the {product} was {when}, so the warranty ended before your request. I can offer your "
            "loyalty discount on a replacement, or the manufacturer may help."
        ),
        outcome="no_action",
        summary=f"Out of warranty by {late_by} days ({when}); offered alternatives.",
        escalate=escalate,
        status="new" if near_boundary and rng.random() < 0.5 else None,
    )
    if ticket.status in ("resolved", "closed", "escalated"):
        ticket.claim = claim("unknown", "denied", f"warranty expired: {coverage}")
    return ticket


def _where_is_my_order_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    start = order.created_at + timedelta(hours=rng.randint(20, 96))
    if start >= desk.timeline.now - timedelta(hours=1):
        return None
    body = _signed(rng, order.customer, f"Where is {_order_ref(rng, order)}? I haven't had an update in days.")
    ticket = desk.open(
        order.customer, order=order, kind="shipping", subject="Where is my order?", body=body, created=start
    )
    shipment = order.shipment
    if shipment and shipment.shipped_at and shipment.shipped_at < start:
        reply = (
            f"It's on its way with {shipment.carrier.upper()}, tracking {shipment.tracking_number}, expected "
            f"by {shipment.eta}."
        )
        summary = "Shared tracking and ETA."
    else:
        reply = "It hasn't left the warehouse yet; it ships within 1 to 2 business days and you'll get tracking then."
        summary = "Not yet shipped; explained handling times."
    return desk.settle(ticket, reply=reply, outcome="no_action", summary=summary)


def _order_issue_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    if order.status == "cancelled" and order.cancelled_at:
        created = order.created_at + (order.cancelled_at - order.created_at) / 2
        created = created.replace(microsecond=0)
        body = _signed(rng, order.customer, f"Please cancel {order.id}, I ordered the wrong thing.")
        ticket = desk.open(
            order.customer, order=order, kind="order_issue", subject=f"Cancel {order.id}", body=body, created=created
        )
        return desk.settle(
            ticket,
            reply="Done: the order is cancelled and the payment authorization voided.",
            outcome="order_updated",
            summary="Cancelled before shipment; payment voided.",
            resolve_at=order.cancelled_at,
            status="resolved",
        )
    if order.delivered_at:
        created = desk.within(order.delivered_at, 2, 24 * 6)
        if created is None:
            return None
        line = rng.choice(order.lines)
        missing = rng.random() < 0.5
        text = (
            f"The {line.product.name} was missing from the box."
            if missing
            else f"I received the wrong item instead of the {line.product.name}."
        )
        body = _signed(rng, order.customer, f"{text} ({_order_ref(rng, order)})")
        ticket = desk.open(
            order.customer,
            order=order,
            kind="order_issue",
            subject="Missing item" if missing else "Wrong item received",
            body=body,
            created=created,
        )
        return desk.settle(
            ticket,
            reply=f"Sorry about that. A {line.product.name} is on its way at no cost.",
            outcome="replacement_sent",
            summary=f"Sent a replacement {line.product.id}.",
            pending_ask="Could you send a photo of the packing slip and the box contents?",
        )
    if order.status in ("pending", "paid", "backorder"):
        created = desk.within(order.created_at, 0.2, 6)
        if created is None:
            return None
        body = _signed(rng, order.customer, f"Can you change the shipping address on {order.id}? I've moved.")
        ticket = desk.open(
            order.customer,
            order=order,
            kind="order_issue",
            subject="Change shipping address",
            body=body,
            created=created,
        )
        return desk.settle(
            ticket,
            reply="Happy to help: please confirm the new address and I'll update the order.",
            outcome="order_updated",
            summary="Address change requested before shipment.",
            status=rng.choice(("new", "pending_customer", "open")),
            pending_ask="Please confirm the full new address, including the ZIP code.",
        )
    return None


def _billing_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = desk.within(order.created_at, 1, 24 * 5)
    if created is None:
        return None
    if len(order.payments) > 1 and order.payments[0].status == "failed":
        failed = order.payments[0]
        body = _signed(
            rng, order.customer, f"My card was declined on {order.id} and then I paid again. Was I charged twice?"
        )
        reply = (
            f"Only one payment went through; the first attempt was declined ({failed.failure_reason}) and "
            "nothing was charged for it."
        )
        summary = "Explained the declined first attempt; one charge only."
        subject = "Declined card, charged twice?"
    elif order.discount:
        body = _signed(rng, order.customer, f"Why wasn't my loyalty discount applied to the shipping on {order.id}?")
        reply = "Loyalty discounts apply to merchandise only, never to shipping or tax; your discount was applied."
        summary = "Explained that loyalty discounts exclude shipping."
        subject = "Discount question"
    else:
        body = _signed(rng, order.customer, f"Could you send me an invoice for {order.id} for my expense report?")
        reply = "Attached is the invoice for your order."
        summary = "Sent an invoice copy."
        subject = "Invoice request"
    ticket = desk.open(order.customer, order=order, kind="billing", subject=subject, body=body, created=created)
    return desk.settle(ticket, reply=reply, outcome="no_action", summary=summary)


def _recommendation_ticket(desk: _Desk, customer: CustomerFacts, build: BuildFacts | None) -> TicketDraft | None:
    rng, now = desk.rng, desk.timeline.now
    created = desk.later(build.created_at if build else customer.created_at, 1, 24 * 120)
    if created >= now:
        created = now - timedelta(hours=rng.randint(2, 200))
        if created <= customer.created_at or (build and created <= build.created_at):
            return None
    if build:
        body = f'Can you check my build "{build.name}" ({build.id})? Is the power supply big enough?'
        subject = "Build check before I order"
    else:
        body = rng.choice(
            (
                "I'm looking for a graphics card for 1440p gaming under $600. What do you suggest?",
                "Which power supply do I need for a high-end graphics card and an 8-core CPU?",
                "Is a 240 mm liquid cooler enough for a 170 W CPU?",
                "What's the best small form factor case for a long graphics card?",
            )
        )
        subject = "Product recommendation"
    ticket = desk.open(
        customer,
        build=build,
        kind="recommendation",
        subject=subject,
        body=_signed(rng, customer, body),
        created=created,
        priority="low",
    )
    return desk.settle(
        ticket,
        reply="Here are two options that fit your needs and budget; both pass our compatibility checks.",
        outcome="recommendation_provided",
        summary="Recommended compatible parts." if not build else f"Reviewed build {build.id}; suggested options.",
        escalate=(
            "product_specialist",
            "product_management",
            "Customer wants a specialist opinion on a high-end configuration.",
        )
        if rng.random() < 0.2
        else None,
        pending_ask="What's your budget, and which games or software will you run?",
    )


def _return_request_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = desk.later(order.delivered_at, 6, 24 * 20)
    if created >= desk.timeline.now:
        created = desk.timeline.now - timedelta(hours=rng.randint(1, 12))
    if created <= order.delivered_at:
        return None
    line = rng.choice(order.lines)
    why = rng.choice(
        (
            "It's not what I expected.",
            "I found I don't need it.",
            "It doesn't fit my setup.",
            "It arrived opened and scratched.",
        )
    )
    body = _signed(
        rng, order.customer, f"I want to return the {line.product.name} from {_order_ref(rng, order)}. {why}"
    )
    ticket = desk.open(
        order.customer, order=order, kind="return", subject=f"Return: {line.product.name}", body=body, created=created
    )
    # Left undecided on purpose: a task's agent works out eligibility and the refund.
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "new", "open")))


def _late_return_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft | None:
    rng = desk.rng
    created = order.delivered_at + timedelta(days=rng.randint(RETURN_WINDOW_DAYS + 3, RETURN_WINDOW_DAYS + 80))
    if created >= desk.timeline.now:
        return None
    line = rng.choice(order.lines)
    body = _signed(
        rng, order.customer, f"Can I still return the {line.product.name} from {_order_ref(rng, order)}? Never used it."
    )
    ticket = desk.open(
        order.customer, order=order, kind="return", subject="Return after a while", body=body, created=created
    )
    days = (created - order.delivered_at).days
    return desk.settle(
        ticket,
        reply=(
            f"I'm sorry: {order.id} was delivered on {order.delivered_at:%Y-%m-%d}, {days} days ago, and returns "
            "are accepted within 30 days of delivery. The item remains covered by its warranty for defects."
        ),
        outcome="no_action",
        summary=f"Return declined: {days} days after delivery, outside the 30-day window.",
        escalate=("policy_exception", "support", f"Customer asks for a return {days} days after delivery.")
        if days <= RETURN_WINDOW_DAYS + 15
        else None,
    )


def _other_ticket(desk: _Desk, customer: CustomerFacts) -> TicketDraft | None:
    rng, now = desk.rng, desk.timeline.now
    created = desk.later(customer.created_at, 2, 24 * 300)
    if created >= now:
        created = now - timedelta(hours=rng.randint(2, 48))
        if created <= customer.created_at:
            return None
    if customer.duplicate_of is not None:
        body = f"I think I have two accounts, this one and one under {customer.duplicate_of.email}. Can you merge them?"
        subject, reply = "Two accounts", "I can merge them once you confirm both email addresses from each inbox."
        summary = "Duplicate accounts: asked the customer to verify both emails."
    else:
        body, subject, reply, summary = rng.choice(
            (
                (
                    "Please take me off your marketing emails.",
                    "Unsubscribe",
                    "Done: you're unsubscribed.",
                    "Marketing opt-out recorded.",
                ),
                (
                    "How do I update the phone number on my account?",
                    "Update phone number",
                    "You can change it under Account > Profile; I've noted the new number too.",
                    "Explained profile edits.",
                ),
                (
                    "Do you have a store I can visit?",
                    "Store location",
                    "We're online only, shipping from three US warehouses.",
                    "Answered a store question.",
                ),
            )
        )
    ticket = desk.open(
        customer, kind="other", subject=subject, body=_signed(rng, customer, body), created=created, priority="low"
    )
    return desk.settle(
        ticket,
        reply=reply,
        outcome="no_action",
        summary=summary,
        pending_ask="Please reply from the other email address too so I can verify it.",
    )


def _missing_parcel_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft:
    rng = desk.rng
    created = min(desk.later(order.delivered_at, 24, 24 * 4), desk.timeline.now - timedelta(hours=3))
    body = _signed(
        rng,
        order.customer,
        f"{order.id} never arrived. I've been home all week and nothing came. Please send it again or refund me.",
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="shipping",
        subject=f"{order.id} never arrived",
        body=body,
        created=created,
        priority="high",
    )
    desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))
    return ticket


def _duplicate_charge_ticket(desk: _Desk, order: OrderFacts) -> TicketDraft:
    rng = desk.rng
    created = desk.later(order.created_at, 24, 24 * 4)
    body = _signed(
        rng, order.customer, f"My bank shows two charges of ${cents(order.total)} for {order.id}. Please refund one."
    )
    ticket = desk.open(
        order.customer,
        order=order,
        kind="billing",
        subject="Charged twice",
        body=body,
        created=min(created, desk.timeline.now - timedelta(hours=2)),
        priority="high",
    )
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status=rng.choice(("new", "open")))


def _tier_claim_ticket(desk: _Desk, customer: CustomerFacts, order: OrderFacts | None) -> TicketDraft:
    rng = desk.rng
    base = order.created_at if order else customer.created_at
    created = max(desk.later(base, 2, 24 * 10), customer.created_at + timedelta(hours=1))
    created = min(created, desk.timeline.now - timedelta(hours=2))
    ref = f" on {order.id}" if order else ""
    body = _signed(
        rng,
        customer,
        f"My account notes say I'm a higher loyalty tier, but I didn't get that discount"
        f"{ref}. Please fix it and refund the difference.",
    )
    ticket = desk.open(
        customer, order=order, kind="billing", subject="Loyalty discount missing", body=body, created=created
    )
    return desk.settle(ticket, reply="", outcome="no_action", summary="", status="new")


# --- Assembly -----------------------------------------------------------------------------------------


def build_support(
    *,
    rng: random.Random,
    scale: float,
    timeline: Timeline,
    people: People,
    commerce: Commerce,
    builds: list[BuildFacts],
    kb: KnowledgeBase,
    rule_names: dict[str, str],
    mess: MessPlan,
    sink: RowSink,
) -> Support:
    desk = _Desk(rng, timeline, people, kb)
    tickets: list[TicketDraft] = []

    def keep(ticket: TicketDraft | None) -> None:
        if ticket is not None:
            tickets.append(ticket)

    orders = commerce.orders
    for refund in commerce.refunds:
        if refund.reason == "shipping_issue" or rng.random() < 0.62:
            keep(_refund_ticket(desk, refund))
    for order in orders:
        shipment = order.shipment
        if shipment and shipment.status == "exception" and not order.refunds:
            keep(_exception_ticket(desk, order))
    by_id = {order.id: order for order in orders}
    for build in builds:
        if build.violated_rule and build.order_id and rng.random() < 0.85:
            keep(_build_ticket(desk, build, by_id[build.order_id], rule_names[build.violated_rule]))
    mess_tickets: dict[str, list[tuple[str, tuple[str, ...]]]] = {
        "delivered_but_reported_missing": [],
        "duplicate_charge": [],
    }
    for order in orders:
        if "delivered_but_reported_missing" in order.mess:
            ticket = _missing_parcel_ticket(desk, order)
            tickets.append(ticket)
            mess_tickets["delivered_but_reported_missing"].append((order, ticket))
        if "duplicate_charge" in order.mess:
            tickets.append(_duplicate_charge_ticket(desk, order))
    latest_order: dict[str, OrderFacts] = {}
    for order in orders:
        latest_order[order.customer.id] = order
    claimants = [record.id for record in mess.anomalies["tier_claim_mismatch"]]
    by_customer = {c.id: c for c in people.customers}
    claim_tickets = []
    for customer_id in claimants:
        ticket = _tier_claim_ticket(desk, by_customer[customer_id], latest_order.get(customer_id))
        tickets.append(ticket)
        claim_tickets.append((customer_id, ticket))

    delivered = [o for o in orders if o.delivered_at and not o.mess]
    boundary_ids = set(commerce.scenarios["warranty_boundary_orders"])
    boundary = [o for o in delivered if o.id in boundary_ids]
    window_ids = set(commerce.scenarios["return_window_open_orders"])
    in_window = [o for o in delivered if o.id in window_ids]
    moving = [o for o in orders if o.status in ("paid", "fulfilled") and not o.delivered_at and not o.mess]
    changeable = [
        o
        for o in orders
        if o.status in ("pending", "paid", "backorder", "cancelled") or (o.delivered_at and not o.mess)
    ]
    saved_builds = [b for b in builds if not b.order_id]
    target = max(len(tickets) + 5, round(TICKETS_AT_SCALE_1 * scale))
    names, weights = zip(*EVERYDAY_WEIGHTS, strict=True)
    guard = 0
    while len(tickets) < target and guard < target * 20:
        guard += 1
        kind = rng.choices(names, weights=weights)[0]
        if kind == "troubleshooting" and delivered:
            keep(_troubleshooting_ticket(desk, _recent(rng, delivered)))
        elif kind == "warranty" and delivered:
            near = bool(boundary) and rng.random() < 0.35
            keep(_warranty_ticket(desk, rng.choice(boundary if near else delivered), near_boundary=near))
        elif kind == "where_is_my_order" and moving:
            keep(_where_is_my_order_ticket(desk, rng.choice(moving)))
        elif kind == "order_issue" and changeable:
            keep(_order_issue_ticket(desk, _recent(rng, changeable)))
        elif kind == "billing" and orders:
            keep(_billing_ticket(desk, _recent(rng, orders)))
        elif kind == "recommendation":
            build = rng.choice(saved_builds) if saved_builds and rng.random() < 0.4 else None
            customer = build.customer if build else rng.choice(people.customers)
            keep(_recommendation_ticket(desk, customer, build))
        elif kind == "return_request" and in_window:
            keep(_return_request_ticket(desk, rng.choice(in_window)))
        elif kind == "late_return" and delivered:
            keep(_late_return_ticket(desk, rng.choice(delivered)))
        elif kind == "other":
            keep(_other_ticket(desk, rng.choice(people.customers)))
    tickets.sort(key=lambda t: (t.created_at, t.customer.id, t.subject))
    for number, ticket in enumerate(tickets, start=1):
        ticket.id = f"tkt-{number:05d}"
    for order, ticket in mess_tickets["delivered_but_reported_missing"]:
        mess.record(
            "delivered_but_reported_missing",
            ticket.id,
            related=(order.id, order.shipment.id),
            note=f"carrier scan: delivered {order.delivered_at:%Y-%m-%d %H:%M}",
        )
    for customer_id, ticket in claim_tickets:
        record = next(r for r in mess.anomalies["tier_claim_mismatch"] if r.id == customer_id)
        mess.anomalies["tier_claim_mismatch"].remove(record)
        mess.record("tier_claim_mismatch", customer_id, related=(ticket.id,), note=record.note)
    numbers = write_tickets(tickets, sink=sink)
    return Support(tickets=tickets, scenarios=_scenarios(tickets), numbers=numbers)


def _recent(rng: random.Random, pool: list):
    """One of ``pool`` (oldest first), the recent ones more often: support queues are about recent orders."""
    return pool[min(len(pool) - 1, int(len(pool) * rng.random() ** 0.25))]


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


def _scenarios(tickets: list[TicketDraft]) -> dict[str, list[str]]:
    cap = 200
    return {
        "open_return_requests": [t.id for t in tickets if t.ticket_type == "return" and t.status in ("new", "open")][
            :cap
        ],
        "open_warranty_tickets": [
            t.id for t in tickets if t.ticket_type == "warranty" and t.status in ("new", "open", "escalated")
        ][:cap],
        "open_build_tickets": [t.id for t in tickets if t.build and t.status in ("new", "open", "escalated")][:cap],
        "escalated_tickets": [t.id for t in tickets if t.status == "escalated"][:cap],
    }


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
