"""A small per-process LRU, thread-safe: what the trainer API holds between requests (open trainer episodes, frozen
release rows, snapshots without their image)."""

from __future__ import annotations

import threading
from collections import OrderedDict


class Held:
    """A least-recently-used map of at most ``size`` items, safe to share between threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict = OrderedDict()

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def drop(self, key) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
