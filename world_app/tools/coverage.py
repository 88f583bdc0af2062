"""When an order arrived, and what that means today: the return window and each product's warranty.

Both run from the delivery date in the world's zone and the world clock (an episode's snapshot clock), never
the wall clock. An order's delivery is the latest delivery among its delivered shipments: the customer has
everything from that day on.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from world_app.models import Shipment, ShipmentStatus, TicketStatus
from world_app.store_rules import RETURN_WINDOW_DAYS, WARRANTY_EXCLUSIONS
from world_app.tools.results import day, local_date, world_today

# A ticket in one of these statuses is a past conversation: it does not date a new warranty claim.
CLOSED_TICKET_STATUSES = frozenset({TicketStatus.RESOLVED, TicketStatus.CLOSED})


def delivered_at(shipments: Iterable[Shipment]) -> datetime | None:
    times = [s.delivered_at for s in shipments if s.status == ShipmentStatus.DELIVERED and s.delivered_at]
    return max(times) if times else None


def add_months(start: date, months: int) -> date:
    """The same day ``months`` later, or that month's last day when it is shorter (Jan 31 + 1 = Feb 28)."""
    month_index = start.month - 1 + months
    year, month = start.year + month_index // 12, month_index % 12 + 1
    return date(year, month, min(start.day, calendar.monthrange(year, month)[1]))


@dataclass(frozen=True)
class ReturnWindow:
    delivered_on: date | None
    days_since_delivery: int | None
    closes_on: date | None
    is_open: bool

    def explain(self) -> str:
        if self.delivered_on is None:
            return "the order has not been delivered yet, so its return window has not started"
        state = "open" if self.is_open else "closed"
        return (
            f"delivered {self.delivered_on.isoformat()}, {self.days_since_delivery} days ago; the return window is "
            f"{RETURN_WINDOW_DAYS} days from delivery ({state}, last day {self.closes_on.isoformat()})"
        )

    def as_dict(self) -> dict:
        return {
            "delivered_on": day(self.delivered_on),
            "days_since_delivery": self.days_since_delivery,
            "window_days": RETURN_WINDOW_DAYS,
            "last_day": day(self.closes_on),
            "is_open": self.is_open,
        }


def return_window(delivered: datetime | None, *, today: date | None = None) -> ReturnWindow:
    if delivered is None:
        return ReturnWindow(None, None, None, is_open=False)
    today = today or world_today()
    delivered_on = local_date(delivered)
    days = (today - delivered_on).days
    closes_on = date.fromordinal(delivered_on.toordinal() + RETURN_WINDOW_DAYS)
    return ReturnWindow(delivered_on, days, closes_on, is_open=days <= RETURN_WINDOW_DAYS)


@dataclass(frozen=True)
class WarrantyCoverage:
    """``status`` is active, expired or not_started (not delivered yet); coverage includes ``expires_on``."""

    delivered_on: date | None
    warranty_months: int
    expires_on: date | None
    status: str
    days_left: int | None
    days_since_expiry: int | None

    @property
    def is_active(self) -> bool:
        return self.status == "active"

    def explain(self) -> str:
        if self.delivered_on is None:
            return "the item has not been delivered yet; its warranty starts on delivery"
        if self.warranty_months == 0:
            return "this product carries no warranty"
        base = (
            f"delivered {self.delivered_on.isoformat()} with a {self.warranty_months}-month warranty "
            f"running through {self.expires_on.isoformat()}"
        )
        if self.is_active:
            return f"{base}; {self.days_left} days left"
        return f"{base}; it expired {self.days_since_expiry} days ago"

    def as_dict(self) -> dict:
        return {
            "delivered_on": day(self.delivered_on),
            "warranty_months": self.warranty_months,
            "expires_on": day(self.expires_on),
            "status": self.status,
            "days_left": self.days_left,
            "days_since_expiry": self.days_since_expiry,
            "covers": "manufacturing defects",
            "exclusions": list(WARRANTY_EXCLUSIONS),
        }


def warranty_coverage(delivered: datetime | None, months: int, *, today: date | None = None) -> WarrantyCoverage:
    if delivered is None:
        return WarrantyCoverage(None, months, None, "not_started", None, None)
    today = today or world_today()
    delivered_on = local_date(delivered)
    expires_on = add_months(delivered_on, months)
    if months > 0 and today <= expires_on:
        return WarrantyCoverage(delivered_on, months, expires_on, "active", (expires_on - today).days, None)
    return WarrantyCoverage(delivered_on, months, expires_on, "expired", None, (today - expires_on).days)


def warranty_claim_day(ticket, *, order_id: str) -> tuple[date, str]:
    """The day a warranty claim is made, and why (kb-0003: claims made after the end date are out of warranty): the
    day the customer reported the defect on their open ticket about the order, else today (no ticket, a ticket about
    something else, or a past conversation already resolved or closed says nothing about when this item failed)."""
    today = world_today()
    if ticket is not None and ticket.order_id == order_id and ticket.status not in CLOSED_TICKET_STATUSES:
        reported = min(local_date(ticket.created_at), today)
        return reported, f"on {reported.isoformat()}, when the customer reported it on {ticket.id}"
    return today, f"today, {today.isoformat()}"
