"""Which judge rules the ``llm`` criteria of trainer episodes: the newest active judge configuration, read at most
every ``JUDGE_CONFIG_CACHE_S`` seconds by each process (one statement less on every trainer finish).

A judge configuration or endpoint saved or deleted in this process is seen at once (signals clear the copy); one
changed by another process within ``JUDGE_CONFIG_CACHE_S``, as a revoked token is (``API_TOKEN_CACHE_MS``).
"""

from __future__ import annotations

import threading
from time import monotonic

from rubrics_app.models import JudgeConfig

JUDGE_CONFIG_CACHE_S = 5.0

_lock = threading.Lock()
# (valid until, monotonic; the configuration or None) while a read is fresh; None: read it again.
_held: tuple[float, JudgeConfig | None] | None = None


def judge_config_for_trainer() -> JudgeConfig | None:
    """The judge for llm criteria of trainer episodes: the newest active judge configuration, if any."""
    global _held
    now = monotonic()
    with _lock:
        held = _held
    if held is not None and held[0] > now:
        return held[1]
    found = JudgeConfig.objects.filter(is_active=True).select_related("endpoint").order_by("-created_at").first()
    with _lock:
        _held = (now + JUDGE_CONFIG_CACHE_S, found)
    return found


def judge_config_forget(**_signal) -> None:
    """Drop this process's copy: the next finish reads the configuration again (a signal receiver too)."""
    global _held
    with _lock:
        _held = None
