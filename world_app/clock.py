"""The world's own clock.

Everything time-dependent in the world (return windows, warranty expiry, "orders of the last 30 days") is
computed against a fixed "now", so a task means the same thing on every run. A snapshot records the "now"
it was published with; an episode uses its snapshot's.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo

from django.conf import settings

# Set by the episode engine while code runs inside an episode: the "now" of the episode's snapshot.
episode_now: ContextVar[datetime | None] = ContextVar("episode_now", default=None)


def world_now() -> datetime:
    return episode_now.get() or settings.WORLD_NOW


def world_zone() -> tzinfo:
    return ZoneInfo(settings.WORLD_TIME_ZONE)
