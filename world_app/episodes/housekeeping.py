"""Housekeeping of episodes: episodes idle past their time closed (a Celery task), closed ones purged after
the retention period with their logs, and a process's own copy of an episode's world freed.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from world_app.episodes.cache import episode_cache
from world_app.episodes.engine import EpisodeRef, _episode_id
from world_app.episodes.errors import EpisodeNotFound
from world_app.episodes.lifecycle import _episode_close
from world_app.models import Episode


def episode_world_free(episode: EpisodeRef) -> None:
    """Free this process's copy of the episode's world (one ``episode_close(keep_world=True)`` kept)."""
    episode_cache.discard(_episode_id(episode))


def episodes_close_idle(*, idle_seconds: int | None = None) -> int:
    """Close the open episodes idle longer than ``idle_seconds`` (default: settings); returns how many."""
    idle = settings.EPISODE_IDLE_TIMEOUT_S if idle_seconds is None else idle_seconds
    cutoff = timezone.now() - timedelta(seconds=idle)
    idle_ids = Episode.objects.filter(status=Episode.Status.OPEN, last_activity_at__lt=cutoff).values_list(
        "id", flat=True
    )
    closed = 0
    for episode_id in list(idle_ids):
        try:
            closed += _episode_close(episode_id, idle_before=cutoff)[1]
        except EpisodeNotFound:
            continue  # purged meanwhile
    return closed


@transaction.atomic
def episodes_purge_closed(*, closed_before_days: int) -> int:
    """Delete closed episodes (and their steps) closed more than ``closed_before_days`` days ago."""
    cutoff = timezone.now() - timedelta(days=closed_before_days)
    doomed = Episode.objects.filter(status=Episode.Status.CLOSED, closed_at__lt=cutoff)
    ids = list(doomed.values_list("id", flat=True))
    doomed.delete()
    for episode_id in ids:
        episode_cache.discard(episode_id)
    return len(ids)
