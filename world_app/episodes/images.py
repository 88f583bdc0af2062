"""Snapshot images as this process holds them: decompressed, verified, shared by every episode (immutable)."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS

from world_app.episodes.errors import SnapshotIntegrityError
from world_app.episodes.image_codec import image_decompress, stored_image_read
from world_app.episodes.shared_image import SharedImage, shared_image_open, shared_image_write
from world_app.episodes.world_db import current_schema_fingerprint
from world_app.models import WorldSnapshot

logger = logging.getLogger(__name__)

# Snapshots a process serves at once are few (a release pins a handful); each costs one image in memory.
IMAGE_CACHE_SIZE = 4


@dataclass(frozen=True)
class SnapshotImage:
    snapshot_id: int
    version: int
    image: SharedImage
    world_now: datetime
    content_checksum: str
    # Per-table digests stored at publish (world_app.checksum); None for a snapshot published before them.
    table_digests: dict | None = None


_lock = threading.Lock()
_images: OrderedDict[int, SnapshotImage] = OrderedDict()


def snapshot_image(snapshot_id: int) -> SnapshotImage:
    with _lock:
        found = _images.get(snapshot_id)
        if found is not None:
            _images.move_to_end(snapshot_id)
            return found
    version, sha256, size, fingerprint, now, checksum, stored_digests = (
        WorldSnapshot.objects.using(DEFAULT_DB_ALIAS)
        .values_list(
            "version",
            "image_sha256",
            "image_bytes",
            "schema_fingerprint",
            "world_now",
            "content_checksum",
            "table_digests",
        )
        .get(pk=snapshot_id)
    )
    if fingerprint != current_schema_fingerprint():
        raise SnapshotIntegrityError(
            f"world v{version} was published with other world models than this code's: publish a new snapshot"
        )
    # Another process of this machine may hold the image already, decompressed and checked: open its file.
    shared = shared_image_open(sha256, size)
    if shared is None:
        compressed = stored_image_read(snapshot_id)
        image = image_decompress(compressed, size)
        if hashlib.sha256(image).hexdigest() != sha256:
            raise SnapshotIntegrityError(f"world v{version}: the stored image does not match its sha256")
        shared = shared_image_write(sha256, image)
        del image, compressed
    loaded = SnapshotImage(
        snapshot_id=snapshot_id,
        version=version,
        image=shared,
        world_now=now,
        content_checksum=checksum,
        table_digests=_digests_checked(stored_digests, checksum=checksum, version=version),
    )
    with _lock:
        loaded = _images.setdefault(snapshot_id, loaded)  # another thread may have loaded it meanwhile
        while len(_images) > IMAGE_CACHE_SIZE:
            # Episodes still mapping an evicted image keep its memory until they close.
            _images.popitem(last=False)
    return loaded


_digests: dict[int, dict] = {}


def _digests_checked(stored: dict | None, *, checksum: str, version: int) -> dict | None:
    """The snapshot's stored table digests, when they are the ones its content checksum was made of."""
    from world_app.checksum import checksum_from_digests, table_digests_read

    try:
        digests = table_digests_read(stored)
        if digests is not None and checksum_from_digests(digests) == checksum:
            return digests
    except (KeyError, TypeError, ValueError):
        pass
    if stored:
        logger.warning("world v%s: its stored table digests do not make its checksum; they are recomputed", version)
    return None


def snapshot_table_digests(snapshot: SnapshotImage) -> dict:
    """The snapshot's per-table checksum digests: stored with it at publish, or (a snapshot published before
    they were stored) computed once per process from its image, a full scan (9-17 s at scale 100)."""
    from world_app.checksum import checksum_from_digests, world_table_digests
    from world_app.episodes.world_db import world_bound, world_connection_open
    from world_app.routers import EPISODE_ALIAS

    if snapshot.table_digests is not None:
        return snapshot.table_digests
    found = _digests.get(snapshot.snapshot_id)
    if found is not None:
        return found
    conn = world_connection_open(snapshot.image)
    try:
        with world_bound(conn, now=snapshot.world_now):
            digests = world_table_digests(using=EPISODE_ALIAS)
    finally:
        conn.close()
    if checksum_from_digests(digests) != snapshot.content_checksum:
        # Published before checksums were made of table digests (or the image is damaged, which its sha256
        # check on load rules out): episodes' checksums are then of the new kind, the snapshot's of the old.
        logger.warning(
            "world v%s: its stored checksum is not of table digests; publish a new snapshot", snapshot.version
        )
    with _lock:
        return _digests.setdefault(snapshot.snapshot_id, digests)


def snapshot_images_clear() -> None:
    with _lock:
        _images.clear()
        _digests.clear()
