"""Reads behind the API: snapshots without their images, episodes with their snapshot's version."""

from __future__ import annotations

import uuid

from django.db.models import F, QuerySet

from world_app.episodes import EpisodeNotFound
from world_app.models import Episode, EpisodeStep, WorldSnapshot

# Postgres integer columns: a bigger number is no version and must not reach the database.
MAX_VERSION = 2**31 - 1


def snapshot_list() -> QuerySet[WorldSnapshot]:
    return WorldSnapshot.objects.defer("image").order_by("-version")


def snapshot_get(*, version: int) -> WorldSnapshot | None:
    if not 0 < version <= MAX_VERSION:
        return None
    return snapshot_list().filter(version=version).first()


def snapshot_versions() -> list[int]:
    return list(WorldSnapshot.objects.order_by("-version").values_list("version", flat=True))


def snapshot_checksum_of_episode(*, episode_id: uuid.UUID) -> str:
    checksum = WorldSnapshot.objects.filter(episodes__pk=episode_id).values_list("content_checksum", flat=True).first()
    if checksum is None:
        raise EpisodeNotFound(episode_id)
    return checksum


def episode_get(*, episode_id: uuid.UUID) -> Episode:
    """The episode with ``snapshot_version`` annotated (no snapshot image loaded); raises ``EpisodeNotFound``."""
    episode = (
        Episode.objects.annotate(snapshot_version=F("snapshot__version"))
        .defer("final_diff")
        .filter(pk=episode_id)
        .first()
    )
    if episode is None:
        raise EpisodeNotFound(episode_id)
    return episode


def episode_exists(*, episode_id: uuid.UUID) -> bool:
    return Episode.objects.filter(pk=episode_id).exists()


def episode_step_list(*, episode_id: uuid.UUID, with_changes: bool = False) -> QuerySet[EpisodeStep]:
    """The episode's log, oldest first (deferred steps written first, this process's and others')."""
    from world_app.episodes import episode_log_settle

    episode_log_settle(episode_id)
    steps = EpisodeStep.objects.filter(episode_id=episode_id).order_by("seq")
    return steps if with_changes else steps.defer("changes")
