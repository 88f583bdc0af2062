"""A checksum of the world's content, the same on Postgres (live world) and SQLite (snapshot, episode).

Rows are read through the ORM and serialised canonically (decimals as fixed-point strings, times in UTC
ISO 8601, JSON with sorted keys), so the same content gives the same digest on any database, machine and run.

The digest is built so that it can be updated instead of recomputed: each table's digest is its row count
and the sum (mod 2**256) of its rows' SHA-256s, and the world's checksum is the SHA-256 of the tables'
digests in model order. An episode that changed a few rows gets its checksum from the snapshot's table
digests, minus the old rows, plus the new ones: O(rows changed) instead of a scan of the world (ADR 0001).
The row sum is a multiset hash: fit to tell worlds apart, not to resist someone forging a collision.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
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


_MODULUS = 2**256

# A table's digest: (row count, sum of the rows' SHA-256 as integers mod 2**256).
TableDigest = tuple[int, int]


def row_hash(values: Iterable) -> int:
    """The SHA-256 of one canonical row (its values in field order), as an integer."""
    encoded = json.dumps(list(values), sort_keys=True, separators=(",", ":"), default=str).encode()
    return int.from_bytes(hashlib.sha256(encoded).digest(), "big")


def table_digest(model: type[models.Model], *, using: str | None = None) -> TableDigest:
    count = total = 0
    for _pk, row in table_rows(model, using=using):
        count += 1
        total += row_hash(row)
    return count, total % _MODULUS


def world_table_digests(*, using: str | None = None) -> dict[str, TableDigest]:
    """Every world table's digest by table name (a full scan)."""
    from world_app.models import WORLD_MODELS

    return {model._meta.db_table: table_digest(model, using=using) for model in WORLD_MODELS}


def checksum_from_digests(digests: Mapping[str, TableDigest]) -> str:
    """The world checksum of table digests (every world table must be there)."""
    from world_app.models import WORLD_MODELS

    digest = hashlib.sha256()
    for model in WORLD_MODELS:
        count, total = digests[model._meta.db_table]
        digest.update(f"{model._meta.db_table}:{count}:{total:064x}\n".encode())
    return digest.hexdigest()


def digests_updated(
    digests: Mapping[str, TableDigest],
    changes: Iterable[tuple[str, list | None, list | None]],
) -> dict[str, TableDigest]:
    """``digests`` after rows changed: each change is (table, old row values or None, new row values or None)."""
    updated = dict(digests)
    for table, old, new in changes:
        count, total = updated[table]
        if old is not None:
            count, total = count - 1, total - row_hash(old)
        if new is not None:
            count, total = count + 1, total + row_hash(new)
        updated[table] = (count, total % _MODULUS)
    return updated


def table_digests_stored(digests: Mapping[str, TableDigest]) -> dict[str, list]:
    """Table digests as a snapshot stores them (JSON): {table: [row count, row sum as 64 hex digits]}."""
    return {table: [count, f"{total:064x}"] for table, (count, total) in digests.items()}


def table_digests_read(stored: Mapping[str, list] | None) -> dict[str, TableDigest] | None:
    """Stored table digests back as digests, or None when there are none (a snapshot published before them)."""
    if not stored:
        return None
    return {table: (int(count), int(total, 16)) for table, (count, total) in stored.items()}


def world_content_checksum(*, using: str | None = None) -> str:
    """The checksum of every world table (entities, line items, parts and messages), by a full scan."""
    return checksum_from_digests(world_table_digests(using=using))
