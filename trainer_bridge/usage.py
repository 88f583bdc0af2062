"""The log of token uses, written in batches off the request path.

Every request made with a token is one ``ApiTokenUse`` row and moves the token's ``last_used_at``. Written per
request that was two statements in their own transaction (BEGIN, INSERT, UPDATE, COMMIT: four round trips, a
quarter of a trainer tool call). Now ``usage_record`` appends the use to a buffer in memory and a background
thread of the process (started on the first use) writes the buffer every ``API_USAGE_FLUSH_MS`` in ONE
autocommitted statement: a multi-row INSERT of the uses and, in the same statement, the UPDATE of each token's
``last_used_at`` to its newest use (never backwards).

What this costs, stated as the contract:
- A use is in the table at most ``API_USAGE_FLUSH_MS`` (default 1 s) after its request answered, with the time
  the request was answered (``at``), not the time of the flush.
- The buffer is flushed when the process exits normally (``atexit``: gunicorn's graceful stop, a management
  command's end, a Celery worker's warm shutdown). A process killed outright (SIGKILL, OOM, power loss) loses
  the uses of its last ``API_USAGE_FLUSH_MS``; uses are an audit log of requests, not a part of any result.
- Uses of a token deleted before the flush are dropped (the token's uses would have been deleted with it).
- ``API_USAGE_FLUSH_MS=0`` writes every use on the request path (the same one statement per use): what the
  test suite uses, so a test sees its uses at once (its transaction is invisible to another thread).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from trainer_bridge.models import ApiToken, ApiTokenUse

logger = logging.getLogger(__name__)

# A burst this large is written at once instead of waiting for the flush interval.
FLUSH_AT_ENTRIES = 1000
WRITE_AT_MOST = 5000


@dataclass(frozen=True, slots=True)
class Use:
    token_id: int
    at: datetime
    method: str
    path: str
    status: int
    scope: str


def _write_sql(count: int) -> str:
    uses, tokens = ApiTokenUse._meta.db_table, ApiToken._meta.db_table
    values = ", ".join(["(%s::bigint, %s::timestamptz, %s, %s, %s::smallint, %s)"] * count)
    # The INSERT keeps only uses of tokens that still exist; the UPDATE moves each token's last use forward only.
    return f"""
        WITH batch (token_id, at, method, path, status, scope) AS (VALUES {values}),
        inserted AS (
            INSERT INTO {uses} (token_id, at, method, path, status, scope)
            SELECT b.token_id, b.at, b.method, b.path, b.status, b.scope
            FROM batch b JOIN {tokens} t ON t.id = b.token_id
        )
        UPDATE {tokens} t SET last_used_at = latest.at
        FROM (SELECT token_id, max(at) AS at FROM batch GROUP BY token_id) latest
        WHERE t.id = latest.token_id AND (t.last_used_at IS NULL OR t.last_used_at < latest.at)
    """  # noqa: S608  (table names from model metadata; every value is a bound parameter)


def usage_write(uses: list[Use]) -> None:
    """Write ``uses`` (and move their tokens' ``last_used_at``) in one statement, on this thread's connection."""
    for start in range(0, len(uses), WRITE_AT_MOST):  # Postgres takes at most 65,535 parameters a statement
        chunk = uses[start : start + WRITE_AT_MOST]
        params: list = []
        for use in chunk:
            params.extend((use.token_id, use.at, use.method, use.path, use.status, use.scope))
        with connection.cursor() as cursor:
            cursor.execute(_write_sql(len(chunk)), params)


class UsageRecorder:
    """The process's buffer of uses and the thread that writes it."""

    def __init__(self, *, background: bool = True) -> None:
        self.background = background  # False: nothing is written until ``flush`` (tests drive it themselves)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._buffer: list[Use] = []
        self._thread: threading.Thread | None = None
        self._pid = 0

    def record(self, use: Use) -> None:
        if settings.API_USAGE_FLUSH_MS <= 0:
            usage_write([use])
            return
        with self._lock:
            self._buffer.append(use)
            if self.background:
                self._ensure_thread()
            if len(self._buffer) >= FLUSH_AT_ENTRIES:
                self._wake.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._buffer)

    def flush(self) -> int:
        """Write what the buffer holds now, on the calling thread's connection; how many uses were written."""
        with self._lock:
            taken, self._buffer = self._buffer, []
        try:
            usage_write(taken)
        except DatabaseError:
            logger.exception("writing %d token uses failed; they are lost", len(taken))
            return 0
        return len(taken)

    def _ensure_thread(self) -> None:
        # A forked child (gunicorn, Celery prefork) inherits the parent's thread object but not the thread.
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="token-usage-flusher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._wake.wait(timeout=max(settings.API_USAGE_FLUSH_MS, 1) / 1000)
                empty = not self._buffer
            if empty:
                continue  # nothing to write: this thread touches no database
            self.flush()
            connection.close_if_unusable_or_obsolete()


recorder = UsageRecorder()


def usage_record(*, token: ApiToken, method: str, path: str, status: int, scope: str = "") -> None:
    """Log one use of ``token`` (written within ``API_USAGE_FLUSH_MS``, see the module's contract)."""
    recorder.record(
        Use(token_id=token.pk, at=timezone.now(), method=method[:10], path=path[:500], status=status, scope=scope[:20])
    )


def usage_flush() -> int:
    """Write the buffered uses now (tests, shutdown); how many."""
    return recorder.flush()


@atexit.register
def _flush_at_exit() -> None:
    if recorder.pending():
        usage_flush()
