"""How a snapshot's image is kept in Postgres: compressed with zstd, and read back in binary.

A first process on a machine reads the image from Postgres and decompresses it before any episode of that snapshot
runs (later processes open the shared file: ``shared_image``). At scale 100 the image is 816 MB; measured on this
machine with the other core busy: reading the 205 MB compressed column through Django (bytea as hex text) took
1.9-3.8 s against 0.5-1.6 s in binary, and zlib level 6 decompressed it in 4.9-6.7 s (compressed in 26.4 s)
against zstd level 3's 2.7 s (compressed in 3.2 s, 209 MB). Images published before are zlib streams: the first
bytes tell them apart (zstd frames begin with its magic number, zlib streams with 0x78), so they load as before.
"""

from __future__ import annotations

import zlib

import psycopg
import pyarrow as pa
from django.db import DEFAULT_DB_ALIAS, connections

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_LEVEL = 3


def image_compress(image: bytes) -> bytes:
    return pa.Codec("zstd", compression_level=ZSTD_LEVEL).compress(image, asbytes=True)


def image_decompress(stored: bytes, size: int) -> bytes:
    """The image from its stored form (zstd, or zlib for images published before), ``size`` bytes long."""
    if stored[:4] == ZSTD_MAGIC:
        return pa.Codec("zstd").decompress(stored, decompressed_size=size, asbytes=True)
    return zlib.decompress(stored)


def stored_image_read(snapshot_id: int) -> bytes:
    """The snapshot's compressed image, read in binary where the database is Postgres."""
    from world_app.models import WorldSnapshot

    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":
        return bytes(WorldSnapshot.objects.using(DEFAULT_DB_ALIAS).values_list("image", flat=True).get(pk=snapshot_id))
    connection.ensure_connection()
    # Django's cursors are client-side (text results: bytea comes as hex); a plain psycopg cursor takes it in
    # binary, on the same connection and in its transaction.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"SELECT image FROM {WorldSnapshot._meta.db_table} WHERE id = %s",  # noqa: S608 (the model's table)
            [snapshot_id],
            binary=True,
        )
        row = cursor.fetchone()
    if row is None:
        raise WorldSnapshot.DoesNotExist(f"no world snapshot {snapshot_id}")
    return bytes(row[0])
