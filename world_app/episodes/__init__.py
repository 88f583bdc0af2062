"""Episodes: private, persistent worlds made from a snapshot (see ``engine`` and docs/adr/0001)."""

from world_app.episodes.engine import episode_log_settle, episode_step
from world_app.episodes.errors import (
    EpisodeClosed,
    EpisodeError,
    EpisodeNotFound,
    EpisodeStepAborted,
    SnapshotIntegrityError,
    SnapshotNotPublished,
)
from world_app.episodes.housekeeping import episode_world_free, episodes_close_idle, episodes_purge_closed
from world_app.episodes.lifecycle import episode_close, episode_create
from world_app.episodes.step_log import steps_appended_now
from world_app.episodes.world_state import (
    episode_diff,
    episode_state_checksum,
    episode_state_from_log,
    episode_world,
    episode_world_diff,
    scratch_world,
)

__all__ = [
    "EpisodeClosed",
    "EpisodeError",
    "EpisodeNotFound",
    "EpisodeStepAborted",
    "SnapshotIntegrityError",
    "SnapshotNotPublished",
    "episode_close",
    "episode_create",
    "episode_diff",
    "episode_log_settle",
    "episode_state_checksum",
    "episode_state_from_log",
    "episode_step",
    "episode_world",
    "episode_world_diff",
    "episode_world_free",
    "episodes_close_idle",
    "episodes_purge_closed",
    "scratch_world",
    "steps_appended_now",
]
