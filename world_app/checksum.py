"""A checksum of the world's content, the same on Postgres (live world) and SQLite (snapshot, episode).

Rows are read through the ORM in primary-key order and serialised canonically (decimals as fixed-point
strings, times in UTC ISO 8601, JSON with sorted keys), so the same content gives the same digest on any
database, machine and run.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db import connections, models
from django.db.models import F
from django.db.models.functions import Collate


def _canonical(value):
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def table_rows(model: type[models.Model], *, using: str | None = None):
    """(pk, canonical row) of one world table in primary-key order (byte order, on every database)."""
    fields = [f.attname for f in model._meta.concrete_fields]
    manager = model._base_manager.using(using) if using else model._base_manager
    alias = manager.db
    # String keys sort by the database's collation: Postgres' default (e.g. en_US) differs from SQLite's
    # BINARY, so Postgres is told to sort bytewise ("C"), which is what SQLite does.
    order = Collate("pk", "C") if connections[alias].vendor == "postgresql" else F("pk")
    for row in manager.order_by(order).values_list(*fields).iterator(chunk_size=5000):
        yield row[0], [_canonical(v) for v in row]


def world_content_checksum(*, using: str | None = None) -> str:
    """SHA-256 over every world table (entities, line items, parts and messages)."""
    from world_app.models import WORLD_MODELS

    digest = hashlib.sha256()
    for model in WORLD_MODELS:
        digest.update(f"\x00table:{model._meta.db_table}\n".encode())
        for _pk, row in table_rows(model, using=using):
            digest.update(json.dumps(row, sort_keys=True, separators=(",", ":"), default=str).encode())
            digest.update(b"\n")
    return digest.hexdigest()
