"""World snapshots: the live world frozen into an immutable, numbered, checksummed SQLite image.

The image is what every episode starts from: a serialized SQLite database with every world table (schema by
Django's own SQLite schema editor, so the ORM runs on it unchanged) and the change-capture triggers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from world_app.checksum import (
    checksum_from_digests,
    table_digests_stored,
    world_content_checksum,
    world_table_digests,
)
from world_app.episodes.errors import SnapshotIntegrityError, SnapshotNotPublished
from world_app.episodes.image_codec import image_compress
from world_app.episodes.images import snapshot_image
from world_app.episodes.search_index import fts5_available, has_search_index, search_index_build
from world_app.episodes.world_db import (
    change_capture_sql,
    current_schema_fingerprint,
    schema_fingerprint,
    table_sql,
    world_bound,
    world_connection_open,
    world_schema_create,
)
from world_app.models import WORLD_MODELS, WorldSnapshot
from world_app.routers import EPISODE_ALIAS
from world_app.selectors import world_counts

__all__ = ["SnapshotIntegrityError", "SnapshotNotPublished", "snapshot_latest", "snapshot_publish"]

# pg_advisory_xact_lock key that serialises publishers ("snapshot" in ASCII).
_PUBLISH_LOCK_KEY = 0x736E617073686F74
_COPY_BATCH = 2000


@dataclass(frozen=True)
class WorldImage:
    image: bytes
    content_checksum: str
    schema_fingerprint: str
    entity_counts: dict[str, int]
    table_digests: dict[str, list]


def snapshot_latest() -> WorldSnapshot:
    """The newest snapshot (its image is loaded only when read)."""
    latest = WorldSnapshot.objects.defer("image").order_by("-version").first()
    if latest is None:
        raise SnapshotNotPublished()
    return latest


@contextmanager
def _consistent_read() -> Iterator[None]:
    """One Postgres snapshot for every read inside: a concurrent edit cannot split the image from its checksum."""
    connection = connections[DEFAULT_DB_ALIAS]
    outermost = not connection.in_atomic_block
    with transaction.atomic(using=DEFAULT_DB_ALIAS):
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _copy_rows(conn) -> None:
    """Copy every world table from Postgres in primary-key order, values adapted as the ORM would write them."""
    sqlite = connections[EPISODE_ALIAS]
    for model in WORLD_MODELS:
        fields = model._meta.concrete_fields
        rows = (
            model._base_manager.using(DEFAULT_DB_ALIAS)
            .order_by("pk")
            .values_list(*[f.attname for f in fields])
            .iterator(chunk_size=_COPY_BATCH)
        )
        conn.executemany(
            table_sql(model._meta.db_table).insert_row,
            ([f.get_db_prep_save(v, connection=sqlite) for f, v in zip(fields, row, strict=True)] for row in rows),
        )


def _world_image_build() -> WorldImage:
    """Build the SQLite image of the live world (call inside ``_consistent_read``)."""
    conn = world_connection_open()
    try:
        with world_bound(conn, now=settings.WORLD_NOW):
            world_schema_create(conn)
            conn.execute("BEGIN")
            _copy_rows(conn)
            conn.execute("COMMIT")
            # After the copy, so that copying is not recorded as an episode's change.
            conn.executescript(change_capture_sql())
            digests = world_table_digests(using=EPISODE_ALIAS)
            checksum = checksum_from_digests(digests)
            counts = world_counts()
        conn.execute("VACUUM")
        if fts5_available():
            search_index_build(conn)  # after VACUUM, which may renumber the rowids the indexes point at
        return WorldImage(
            image=conn.serialize(),
            content_checksum=checksum,
            schema_fingerprint=schema_fingerprint(conn),
            entity_counts=counts,
            table_digests=table_digests_stored(digests),
        )
    finally:
        conn.close()


def snapshot_publish(*, note: str, user=None, if_changed: bool = False) -> WorldSnapshot:
    """Freeze the live world into the next snapshot version.

    With ``if_changed``, return the latest snapshot instead when the live world's content equals it and its image
    serves this code as a new one would (the same world models, and the search indexes this code builds: an image
    published before them is searched by scanning, so the same world is published again).
    Two transactions: the build reads one Postgres snapshot; the store takes the version under a lock.
    """
    with _consistent_read():
        live_checksum = world_content_checksum()
        if if_changed:
            latest = WorldSnapshot.objects.defer("image").order_by("-version").first()
            if latest is not None and latest.content_checksum == live_checksum:
                if _image_current(latest):
                    return latest
                if_changed = False  # the same content in a current image: a new version
        built = _world_image_build()
    if built.content_checksum != live_checksum:
        raise SnapshotIntegrityError(
            f"the image's content checksum {built.content_checksum} differs from the live world's {live_checksum}"
        )
    return _snapshot_store(built=built, note=note, user=user, if_changed=if_changed)


def _image_current(snapshot: WorldSnapshot) -> bool:
    """Whether ``snapshot``'s image has this code's world models and, where this process can build them, its
    search indexes."""
    if snapshot.schema_fingerprint != current_schema_fingerprint():
        return False
    if not fts5_available():
        return True
    conn = world_connection_open(snapshot_image(snapshot.pk).image)
    try:
        return has_search_index(conn)
    finally:
        conn.close()


@transaction.atomic
def _snapshot_store(*, built: WorldImage, note: str, user, if_changed: bool) -> WorldSnapshot:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_PUBLISH_LOCK_KEY])
    latest = WorldSnapshot.objects.defer("image").order_by("-version").first()
    if if_changed and latest is not None and latest.content_checksum == built.content_checksum:
        return latest  # a concurrent publisher froze the same world first
    return WorldSnapshot.objects.create(
        version=(latest.version if latest else 0) + 1,
        note=note,
        image=image_compress(built.image),
        image_sha256=hashlib.sha256(built.image).hexdigest(),
        image_bytes=len(built.image),
        content_checksum=built.content_checksum,
        schema_fingerprint=built.schema_fingerprint,
        world_now=settings.WORLD_NOW,
        entity_counts=built.entity_counts,
        table_digests=built.table_digests,
        created_by=user,
    )
