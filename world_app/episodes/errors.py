"""What the snapshot and episode services raise; API layers turn them into 404/409s or tool errors."""

from __future__ import annotations


class SnapshotNotPublished(LookupError):
    def __init__(self) -> None:
        super().__init__('no world snapshot is published yet: run `python manage.py publish_world --note "..."`')


class SnapshotIntegrityError(RuntimeError):
    """A snapshot image that does not match its checksums (never load it)."""


class EpisodeError(Exception):
    pass


class EpisodeNotFound(EpisodeError, LookupError):
    def __init__(self, episode_id: object) -> None:
        super().__init__(f"no episode {episode_id}")


class EpisodeClosed(EpisodeError):
    def __init__(self, episode_id: object) -> None:
        super().__init__(f"episode {episode_id} is closed: it takes no more steps")


class EpisodeStepAborted(EpisodeError):
    """The call left the episode's transaction marked for rollback, so nothing it did can be logged."""
