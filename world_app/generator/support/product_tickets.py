"""Tickets about what a customer bought: refunds, policy exceptions, builds whose parts clash, troubleshooting,
and warranty claims with their coverage.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from world_app.generator.builds import BuildFacts
from world_app.generator.commerce import OrderFacts, RefundFacts, warranty_end
from world_app.generator.support.drafts import ClaimDraft, TicketDraft, _Desk, _order_ref, _signed
from world_app.generator.timeline import cents
from world_app.store_rules import WARRANTY_EXCLUSIONS

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
