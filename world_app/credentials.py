"""What a request or an MCP connection authenticated as, for the episode APIs (no model imports: token models
of other apps build one)."""

from __future__ import annotations

from dataclasses import dataclass, field

EPISODES_SCOPE = "episodes"
# The grants behind a session's credential (the same scope name as a token's).
OPEN_EPISODE = "world_app.open_episode"
DRIVE_ANY_EPISODE = "world_app.drive_any_episode"


@dataclass(frozen=True)
class Credential:
    key: str
    user_id: int | None
    scopes: frozenset[str] = field(default_factory=frozenset)
    any_episode: bool = False

    @property
    def may_open_episodes(self) -> bool:
        return EPISODES_SCOPE in self.scopes
