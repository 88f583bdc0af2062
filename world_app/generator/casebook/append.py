"""The casebook appended: ``append_casebook`` runs each part (business accounts, the carrier disruption, unpaid
orders, lapsed and recent buyers, agents on leave, tickets left behind) on its own random stream, after the base
world's last ids, and records each deliberate anomaly in the manifest.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from world_app.generator.casebook.base import _base_ids, _Casebook, _spend_before, _tier_for_cents
from world_app.generator.casebook.business import _business_accounts
from world_app.generator.casebook.buyers import (
    _desk_staff,
    _lapsed_buyers,
    _recent_buyers,
    _tickets_left_behind,
    _unpaid_orders,
)
from world_app.generator.casebook.disruption import _carrier_disruption
from world_app.generator.catalog import Catalog
from world_app.generator.commerce import Commerce, _refund_row, _write_order
from world_app.generator.knowledge_base import KnowledgeBase
from world_app.generator.mess import MessPlan
from world_app.generator.people import People
from world_app.generator.sink import RowSink
from world_app.generator.support import Support, TicketDraft, write_tickets
from world_app.generator.timeline import Timeline
from world_app.models import Customer

# --- Writing ------------------------------------------------------------------------------------------------------


def append_casebook(
    *,
    rng_for: Callable[[str], random.Random],
    scale: float,
    timeline: Timeline,
    catalog: Catalog,
    people: People,
    commerce: Commerce,
    support: Support,
    kb: KnowledgeBase,
    mess: MessPlan,
    sink: RowSink,
) -> dict[str, list[str]]:
    """Generate and write the casebook after the base world; returns its scenarios for the manifest."""
    book = _Casebook(rng_for, timeline, catalog, people, kb, mess, _base_ids(people, commerce, support), mess.rate > 0)
    away, desk = _desk_staff(book, scale=scale)
    book.desk = People(customers=[], employees=[facts for facts, _ in desk])
    _business_accounts(book, scale=scale)
    _carrier_disruption(book, scale=scale, agents_on_leave=[facts for facts, _ in away])
    _unpaid_orders(book, scale=scale)
    _lapsed_buyers(book, scale=scale)
    _recent_buyers(book, scale=scale)
    if book.messy:
        _tickets_left_behind(book, away)

    for _, row in away + desk:
        sink.add(row)
    for account in book.accounts:
        # The tier the account's spend of the last year earns today (world_app.loyalty), no exception needed.
        account.facts.tier = _tier_for_cents(_spend_before(account, timeline.today))
        sink.add(
            Customer(
                id=account.facts.id,
                first_name=account.facts.first_name,
                last_name=account.facts.last_name,
                email=account.facts.email,
                loyalty_tier=account.facts.tier,
                created_at=account.facts.created_at,
                updated_at=account.facts.created_at,
                **account.row,
            )
        )
    orders = sorted((o for a in book.accounts for o in a.orders), key=lambda o: o.id)
    for order in orders:
        _write_order(order, sink=sink)
    book.refunds.sort(key=lambda r: (r.created_at, r.order.id))
    for refund in book.refunds:
        book.ids.refunds += 1
        refund.id = f"ref-{book.ids.refunds:05d}"
        sink.add(_refund_row(refund))
    book.tickets.sort(key=lambda t: (t.created_at, t.customer.id, t.subject))
    for ticket in book.tickets:
        book.ids.tickets += 1
        ticket.id = f"tkt-{book.ids.tickets:05d}"
        if ticket.assignee is None and ticket.status not in ("new",):
            ticket.assignee = book.desk.employees[0]
    write_tickets(book.tickets, sink=sink, numbers=book.ids.support_rows)
    for kind, subject, related, note in book.anomalies:
        mess.record(kind, subject.id if isinstance(subject, TicketDraft) else subject, related=related, note=note)
    return {
        "business_accounts": [a.facts.id for a in book.accounts if a.row["notes"].startswith("Business account")],
        "open_disruption_tickets": [
            t.id for t in book.tickets if t.ticket_type == "shipping" and t.status in ("new", "open")
        ][:200],
        "agents_on_leave": [facts.id for facts, _ in away],
    }
