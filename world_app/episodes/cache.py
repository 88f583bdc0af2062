"""The episodes this process holds materialised (an LRU); any other episode is rebuilt from its log."""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings


@dataclass(eq=False)
class HotEpisode:
    """An episode's private world in this process, and how far along its log it is."""

    episode_id: uuid.UUID
    snapshot_id: int
    world_now: datetime
    conn: sqlite3.Connection
    seq: int = 0
    # The id of the step at ``seq``: ids are never reused, so a step rolled back elsewhere is noticed.
    last_step_id: int | None = None
    touched: set[tuple[str, str]] = field(default_factory=set)
    # Serialises use by threads of this process; other processes are kept out by the episode row lock.
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0
    evicted: bool = False

    def rewind(self, conn: sqlite3.Connection) -> None:
        """Start again from the snapshot (``conn`` holds a fresh copy of its image)."""
        self.conn.close()
        self.conn = conn
        self.seq = 0
        self.last_step_id = None
        self.touched = set()


class EpisodeCache:
    """LRU of hot episodes. An episode in use (checked out) is never closed under its user."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[uuid.UUID, HotEpisode] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, episode_id: uuid.UUID) -> bool:
        return episode_id in self._items

    def checkout(self, episode_id: uuid.UUID) -> HotEpisode | None:
        with self._lock:
            hot = self._items.get(episode_id)
            if hot is not None:
                self._items.move_to_end(episode_id)
                hot.users += 1
            return hot

    def add_and_checkout(self, hot: HotEpisode) -> HotEpisode:
        """Keep ``hot`` (or the copy another thread added first) and check it out."""
        with self._lock:
            kept = self._items.get(hot.episode_id)
            if kept is None:
                kept = self._items[hot.episode_id] = hot
            kept.users += 1
            victims = self._evict(settings.EPISODE_CACHE_SIZE)
        if kept is not hot:
            hot.conn.close()
        for victim in victims:
            victim.conn.close()
        return kept

    def checkin(self, hot: HotEpisode) -> None:
        with self._lock:
            hot.users -= 1
            free = hot.evicted and hot.users == 0
        if free:
            hot.conn.close()

    def discard(self, episode_id: uuid.UUID) -> None:
        """Forget an episode (closed, or its state is in doubt); its memory goes when its last user leaves."""
        with self._lock:
            hot = self._items.pop(episode_id, None)
            if hot is None:
                return
            hot.evicted = True
            free = hot.users == 0
        if free:
            hot.conn.close()

    def clear(self) -> None:
        with self._lock:
            ids = list(self._items)
        for episode_id in ids:
            self.discard(episode_id)

    def forget_after_fork(self) -> None:
        # A forked child (prefork worker) must not use its parent's SQLite connections: it starts empty.
        self._lock = threading.Lock()
        self._items = OrderedDict()

    def _evict(self, capacity: int) -> list[HotEpisode]:
        victims = []
        for episode_id in list(self._items):
            if len(self._items) <= capacity:
                break
            hot = self._items[episode_id]
            if hot.users == 0:
                del self._items[episode_id]
                hot.evicted = True
                victims.append(hot)
        return victims


episode_cache = EpisodeCache()
os.register_at_fork(after_in_child=episode_cache.forget_after_fork)
