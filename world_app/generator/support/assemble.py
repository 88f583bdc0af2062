"""The support desk assembled: ``build_support`` picks which tickets the world's orders, builds and warranties give
rise to (plus everyday questions), in a seeded order, and lists the ticket ids behind each scenario.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from world_app.generator.builds import BuildFacts
from world_app.generator.commerce import Commerce, OrderFacts
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.mess import MessPlan
from world_app.generator.people import People
from world_app.generator.sink import RowSink
from world_app.generator.support.drafts import EVERYDAY_WEIGHTS, TICKETS_AT_SCALE_1, TicketDraft, _Desk
from world_app.generator.support.order_tickets import (
    _billing_ticket,
    _duplicate_charge_ticket,
    _late_return_ticket,
    _missing_parcel_ticket,
    _order_issue_ticket,
    _other_ticket,
    _recommendation_ticket,
    _return_request_ticket,
    _tier_claim_ticket,
    _where_is_my_order_ticket,
)
from world_app.generator.support.product_tickets import (
    _build_ticket,
    _exception_ticket,
    _refund_ticket,
    _troubleshooting_ticket,
    _warranty_ticket,
)
from world_app.generator.support.rows import RowNumbers, write_tickets
from world_app.generator.timeline import Timeline


@dataclass
class Support:
    tickets: list[TicketDraft]
    scenarios: dict[str, list[str]]
    numbers: RowNumbers | None = None


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
