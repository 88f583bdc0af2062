"""Support tickets with their message threads, resolutions and escalations.

Tickets grow out of what happened in commerce (a refund had a ticket, a damaged parcel, a build whose parts
clash, a warranty that just ran out), plus everyday questions. Resolved and closed tickets always have an
assignee and a resolution; a refund_issued resolution links the refund of the ticket's own order.
"""

from __future__ import annotations

from world_app.generator.support.assemble import Support, build_support
from world_app.generator.support.drafts import Message, TicketDraft, _Desk, _signed
from world_app.generator.support.rows import RowNumbers, write_tickets

__all__ = ["Message", "RowNumbers", "Support", "TicketDraft", "_Desk", "_signed", "build_support", "write_tickets"]
