"""The world's calendar: when its history starts, and random moments drawn from it."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from world_app.clock import world_now, world_zone

# Customers joined from here on; orders start at ORDERS_START (the brief: 2023 to the world's now).
CUSTOMERS_START = date(2021, 1, 1)
ORDERS_START = date(2023, 1, 1)


@dataclass(frozen=True)
class Timeline:
    now: datetime

    @classmethod
    def current(cls) -> Timeline:
        # World times are kept in the world's one zone, to the second.
        return cls(now=world_now().astimezone(world_zone()).replace(microsecond=0))

    @property
    def today(self) -> date:
        return self.now.date()

    def at(self, day: date, hour: int = 9, minute: int = 0, second: int = 0) -> datetime:
        return datetime.combine(day, time(hour, minute, second), tzinfo=self.now.tzinfo)

    def between(self, rng: random.Random, start: datetime, end: datetime) -> datetime:
        """A moment in [start, end], to the second; ``start`` when the span is empty."""
        span = int((end - start).total_seconds())
        if span <= 0:
            return start
        return start + timedelta(seconds=rng.randint(0, span))

    def daytime(self, rng: random.Random, day: date, *, first_hour: int = 7, last_hour: int = 22) -> datetime:
        return self.at(day, rng.randint(first_hour, last_hour), rng.randint(0, 59), rng.randint(0, 59))

    def days_ago(self, moment: datetime) -> float:
        return (self.now - moment).total_seconds() / 86400


def add_months(day: date, months: int) -> date:
    """The same day ``months`` later, clamped to the month's end (Jan 31 + 1 month = Feb 28/29)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return date(year, month, min(day.day, _month_length(year, month)))


def _month_length(year: int, month: int) -> int:
    following = date(year + (month // 12), month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def cents(amount: int) -> Decimal:
    """Integer cents as a money Decimal with two places."""
    return (Decimal(amount) / 100).quantize(Decimal("0.01"))
