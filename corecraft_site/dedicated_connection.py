"""A Postgres connection of the process's own, outside Django's connections: for session-level advisory locks.

Django hands its connection back to the pool between requests (and a rollout hands it back while the model
thinks); a session lock left on it would outlive the work and be held by whoever takes the connection next. A
lock taken on a connection of its own lives at most as long as that connection, and so its process.
"""

from __future__ import annotations

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections


def dedicated_connection_key(alias: str = DEFAULT_DB_ALIAS) -> tuple:
    """What identifies the database ``alias`` points at now (tests switch it): reconnect when it changes."""
    db = connections[alias].settings_dict
    return db["NAME"], db["HOST"], db["PORT"], db["USER"]


def dedicated_connection(application_name: str, *, alias: str = DEFAULT_DB_ALIAS) -> psycopg.Connection:
    """A new autocommit connection to the database of ``alias``, named ``application_name`` in pg_stat_activity."""
    db = connections[alias].settings_dict
    return psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        autocommit=True,
        application_name=application_name,
    )
