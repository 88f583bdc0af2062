"""Django's PostgreSQL backend, whose pooled connections fail fast and say why.

With the psycopg pool, a connection the server refuses (a database that does not exist, a wrong role) is retried
by the pool in the background until ``DB_POOL_TIMEOUT`` runs out, and the caller sees only ``PoolTimeout:
couldn't get a connection after 10.00 sec``. Before a pool's first connection, this backend connects once
directly: a refusal surfaces at once as Django's ``OperationalError`` with the server's own words
(``database "corecraft" does not exist``).
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from django.db.backends.postgresql import base

_checked: set[tuple[str, str]] = set()
_lock = threading.Lock()
PROBE_CONNECT_TIMEOUT_S = 5


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        key = (self.alias, str(conn_params.get("dbname", "")))
        if self.pool is not None and key not in _checked:
            with _lock:
                if key not in _checked:
                    probe = {**conn_params, "connect_timeout": PROBE_CONNECT_TIMEOUT_S, "autocommit": True}
                    psycopg.connect(**probe).close()  # raises psycopg.OperationalError naming the cause
                    _checked.add(key)
        return super().get_new_connection(conn_params)
