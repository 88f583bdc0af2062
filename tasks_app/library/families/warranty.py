"""A warranty claim on an order delivered N days ago: in warranty (file it) or out of it (explain, file nothing).

Selector: one line per delivered order (the most expensive product with a warranty), not refunded and without
a claim yet. The warranty runs from the delivery date for the product's ``warranty_months``
(``world_app.tools.coverage``); a manufacturing defect within it is approved, an expired warranty is not.
"""

from __future__ import annotations

from world_app.models import Order, ShipmentStatus
from world_app.tools.coverage import delivered_at, warranty_coverage
from world_app.tools.results import local_date, world_today

from .base import (
    Family,
    FamilyInstance,
    called,
    date_pattern,
    first_name,
    long_date,
    pick,
    reply_tone,
    says,
    says_pattern,
    state,
    tidy,
)

SYMPTOMS = {
    "gpu": ("shows coloured artifacts and then the screen goes black", "makes the driver crash under any load"),
    "cpu": ("causes random reboots even at idle", "fails to post unless I drop the memory speed"),
    "motherboard": ("won't post and shows a red DRAM light", "loses its BIOS settings at every restart"),
    "memory": ("fails MemTest within minutes", "causes blue screens that point at memory"),
    "storage": ("disappears from the system after a few minutes", "reports SMART errors and corrupts files"),
    "psu": ("clicks and shuts the system down under load", "won't power on at all any more"),
    "case": ("has front USB ports that stopped working", "has a power button that no longer responds"),
    "cooling": ("has a pump that stopped spinning", "makes a grinding noise and lets the CPU hit 100 C"),
    "monitor": ("has a line of dead pixels across the middle", "flickers constantly at any refresh rate"),
    "keyboard": ("has several keys that stopped registering", "disconnects every few minutes"),
    "mouse": ("double-clicks on every single click", "has a scroll wheel that no longer works"),
    "headset": ("has no sound in the left ear", "has a microphone that stopped working"),
    "networking": ("keeps dropping the connection every few minutes", "won't get an IP address any more"),
}
DEFAULT_SYMPTOMS = ("stopped working properly", "fails intermittently and then stops responding")

OPENINGS = (
    "Hi, this is {name}. The {product} from my order {order} {symptom}.",
    "Hello Corecraft support, {name} here. My {product} (order {order}) {symptom}, and I did nothing unusual with it.",
    "{name} here. I bought a {product} on order {order} and it now {symptom}.",
    "Good morning. Order {order} included a {product} that {symptom}. My name is {name}.",
    "Hey, I need help with the {product} from order {order}: it {symptom}. This is {name}.",
)
ASKS = (
    "It was delivered on {delivered}. Can you get me a {remedy} under the warranty?",
    "It arrived {delivered}. Is it still under warranty, and if so please start a {remedy}.",
    "Delivery was on {delivered}. I'd like a {remedy} if the warranty still covers it.",
    "It came on {delivered}, so please check the warranty and arrange a {remedy} if you can.",
)


class WarrantyClaimFamily(Family):
    name = "warranty_claim"
    title = "Warranty claim on a delivered order"
    description = "A customer reports a defect; file the claim when the warranty still runs, explain when it doesn't."
    task_type = "multi_step_workflow"

    def candidates(self):
        orders = (
            Order.objects.filter(shipments__status=ShipmentStatus.DELIVERED)
            .distinct()
            .select_related("customer")
            .prefetch_related("shipments", "line_items__product", "line_items__warranty_claims")
            .order_by("id")
        )
        for order in orders:
            if order.status not in ("fulfilled", "partially_refunded"):
                continue
            lines = [
                li
                for li in order.line_items.all()
                if li.product.warranty_months > 0 and not li.warranty_claims.all() and li.quantity == 1
            ]
            if lines:
                yield max(lines, key=lambda li: (li.unit_price, li.id))

    def branch_of(self, line) -> str:
        coverage = warranty_coverage(delivered_at(line.order.shipments.all()), line.product.warranty_months)
        return {"active": "in warranty", "expired": "out of warranty"}.get(coverage.status, "(none)")

    def entity_ids(self, line) -> tuple[str, ...]:
        return (line.id,)

    def distinct_key(self, line):
        return (line.order.customer_id, line.product_id)

    def build(self, line, sim) -> FamilyInstance | None:
        order = line.order
        delivered = delivered_at(order.shipments.all())
        coverage = warranty_coverage(delivered, line.product.warranty_months)
        if coverage.status not in ("active", "expired"):
            return None
        key = line.id
        customer = order.customer
        name = f"{customer.first_name} {customer.last_name}"
        product = line.product.name
        asked = pick(("replacement", "repair"), key, "remedy")
        remedy = "replacement"  # the warranty replaces; we never repair parts (world_app.store_rules.WARRANTY_REMEDIES)
        symptom = pick(SYMPTOMS.get(line.product.category, DEFAULT_SYMPTOMS), key, "symptom")
        delivered_on = local_date(delivered)
        instruction = tidy(
            pick(OPENINGS, key, "open").format(name=name, product=product, order=order.id, symptom=symptom)
            + " "
            + pick(ASKS, key, "ask").format(delivered=long_date(delivered_on), remedy=asked)
        )
        days = (world_today() - delivered_on).days
        expires = coverage.expires_on
        reads = [
            {"tool": "get_order_details", "arguments": {"order_id": order.id}},
            {"tool": "check_warranty_status", "arguments": {"line_item_id": line.id}},
        ]
        tone = reply_tone(customer.first_name)
        if coverage.is_active:
            claim_call = {
                "tool": "create_warranty_claim",
                "arguments": {
                    "line_item_id": line.id,
                    "issue_description": f"Customer reports the {product} {symptom}.",
                    "defect_category": "manufacturing_defect",
                    "remedy": remedy,
                },
            }
            results = sim.run([claim_call])  # reads write nothing: the claim alone decides
            claim = results[-1].get("claim") if "error" not in results[-1] else None
            if claim is None or claim.get("status") != "approved":
                return None
            answer = (
                f"Hi {first_name(name)}, thanks for the details and sorry about the trouble with your {product}. "
                f"Its {line.product.warranty_months}-month warranty runs until {long_date(expires)}, so the fault "
                "is covered.\n"
                + ("We don't repair parts under warranty, we replace them. " if asked == "repair" else "")
                + f"I filed warranty claim {claim['id']} for a {remedy}, and it has been approved.\n"
                "You'll receive an email with the return label and the next steps shortly."
            )
            criteria = [
                state(
                    f"A warranty claim for line {line.id} was filed and approved (a manufacturing defect in warranty).",
                    "warrantyclaim",
                    {"line_item": line.id},
                    "eq",
                    field="status",
                    value="approved",
                ),
                state(
                    f"The claim asks for a {remedy}"
                    + (
                        " (the customer asked for a repair; the warranty replaces, it never repairs)."
                        if asked == "repair"
                        else ", as the customer requested."
                    ),
                    "warrantyclaim",
                    {"line_item": line.id},
                    "eq",
                    field="remedy",
                    value=remedy,
                    weight=1,
                    required=False,
                ),
                called("The warranty was checked before filing.", "check_warranty_status", weight=1),
                says_pattern(
                    f"The reply gives the warranty's end date ({expires.isoformat()}).",
                    date_pattern(expires),
                    weight=1,
                ),
                says(f"The reply gives the claim number {claim['id']}.", claim["id"], weight=1),
                tone,
            ]
            calls = [*reads, claim_call]
            difficulty = "easy" if days < 200 else "medium"
            outcome = "in warranty"
        else:
            answer = (
                f"Hi {first_name(name)}, thank you for reaching out, and I'm sorry the {product} is failing. "
                f"Its {line.product.warranty_months}-month warranty started at delivery and ended on "
                f"{long_date(expires)}, so I can't file a warranty claim for it.\n"
                "If it helps, our technical team can still suggest troubleshooting steps or a paid repair."
            )
            criteria = [
                state(
                    f"No approved warranty claim exists for line {line.id}: the warranty has expired.",
                    "warrantyclaim",
                    {"line_item": line.id, "status": "approved"},
                    "count_eq",
                    value=0,
                ),
                called(
                    f"The warranty of line {line.id} was checked.",
                    "check_warranty_status",
                    {"line_item_id": line.id},
                    weight=1,
                    required=True,
                ),
                says_pattern(
                    f"The reply says when the warranty ended ({expires.isoformat()}).",
                    date_pattern(expires),
                    weight=2,
                    required=True,
                ),
                says(
                    f"The reply names the warranty length ({line.product.warranty_months} months).",
                    f"{line.product.warranty_months}-month",
                    weight=1,
                ),
                tone,
            ]
            calls = reads
            difficulty = "medium"
            outcome = "out of warranty"
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=(line.id,),
            title=f"Warranty: {product} on {order.id} ({outcome})",
            branch=outcome,
            difficulty=difficulty,
            instruction=instruction,
            criteria=criteria,
            tags=["warranty", "time-window", "family", outcome.replace(" ", "-")],
            reviewer_notes=(
                f"Delivered {delivered_on.isoformat()} ({days} days before the world's today), "
                f"{line.product.warranty_months}-month warranty: {coverage.status}, ends {expires.isoformat()}."
            ),
        )
