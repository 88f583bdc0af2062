"""The episode look-ups and creation the MCP transports need, run in Django's sync thread."""

from __future__ import annotations

import uuid

from django.db import close_old_connections

from world_app.credentials import Credential
from world_app.episodes import episode_create
from world_app.episodes.owners import episode_reachable
from world_app.models import Episode, WorldSnapshot
from world_app.snapshots import snapshot_latest


class SnapshotVersionUnknown(LookupError):
    pass


def mcp_episode_create(
    *, snapshot_version: int | None = None, label: str = "", credential: Credential | None = None
) -> tuple[uuid.UUID, int]:
    """A new episode on that snapshot version (None: the latest), owned by ``credential``; returns its id and
    the version.

    Raises ``SnapshotVersionUnknown``, or ``SnapshotNotPublished`` when no snapshot exists at all.
    """
    close_old_connections()
    try:
        if snapshot_version is None:
            snapshot = snapshot_latest()
        else:
            snapshot = WorldSnapshot.objects.defer("image").filter(version=snapshot_version).first()
            if snapshot is None:
                raise SnapshotVersionUnknown(f"no world snapshot version {snapshot_version}")
        episode = episode_create(
            snapshot=snapshot,
            label=label or "mcp",
            owner_id=credential.user_id if credential else None,
            credential=credential.key if credential else "",
        )
        return episode.pk, snapshot.version
    finally:
        close_old_connections()


def mcp_episode_reachable(episode_id: uuid.UUID, credential: Credential) -> bool:
    """Whether the episode exists and ``credential`` may reach it (the same answer for both misses)."""
    close_old_connections()
    try:
        return episode_reachable(credential=credential, episode_id=episode_id)
    finally:
        close_old_connections()


def mcp_episode_status(episode_id: uuid.UUID) -> str | None:
    """The episode's status (open, closed), or None when there is no such episode."""
    close_old_connections()
    try:
        return Episode.objects.filter(pk=episode_id).values_list("status", flat=True).first()
    finally:
        close_old_connections()
