"""A gunicorn configuration (``-c bench/gunicorn_count.py``) that counts every Postgres round trip of its workers.

Used by ``bench/trainer_api.py``. Each worker counts, at the psycopg level (below Django, so nothing escapes: the
ORM, raw cursors, connection set-up, the pool, background threads such as the token-usage flusher):

- ``statements``: every ``Cursor.execute`` / ``executemany`` (one SQL statement sent);
- ``commands``: psycopg's internal commands (``BEGIN``, ``COMMIT``, ``ROLLBACK``), each a round trip too.

The counts are added into a small shared file named by ``COUNT_FILE`` (two little-endian int64), which the
bench reads between requests.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading

_lock = threading.Lock()


def _counter(path: str):
    handle = open(path, "r+b")  # noqa: SIM115 - kept open for the worker's life
    shared = mmap.mmap(handle.fileno(), 16)

    def add(index: int) -> None:
        with _lock:
            offset = index * 8
            (value,) = struct.unpack_from("<q", shared, offset)
            struct.pack_into("<q", shared, offset, value + 1)

    return add


def post_worker_init(worker) -> None:  # gunicorn hook
    path = os.environ.get("COUNT_FILE")
    if not path:
        return
    import psycopg
    from psycopg._connection_base import BaseConnection

    add = _counter(path)
    execute, executemany, exec_command = (
        psycopg.Cursor.execute,
        psycopg.Cursor.executemany,
        BaseConnection._exec_command,
    )

    def counted_execute(self, *args, **kwargs):
        add(0)
        return execute(self, *args, **kwargs)

    def counted_executemany(self, *args, **kwargs):
        add(0)
        return executemany(self, *args, **kwargs)

    def counted_command(self, *args, **kwargs):
        add(1)
        return exec_command(self, *args, **kwargs)

    psycopg.Cursor.execute = counted_execute
    psycopg.Cursor.executemany = counted_executemany
    BaseConnection._exec_command = counted_command
