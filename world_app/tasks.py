"""Celery tasks of the world: thin wrappers that call a service."""

from __future__ import annotations

from celery import shared_task

from world_app.episodes import episodes_close_idle


@shared_task(name="world_app.tasks.close_idle_episodes")
def close_idle_episodes() -> int:
    """Close the episodes idle longer than EPISODE_IDLE_TIMEOUT_S; returns how many were closed."""
    return episodes_close_idle()
