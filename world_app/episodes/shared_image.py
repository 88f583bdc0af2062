"""Snapshot images shared copy-on-write by every episode of a process.

An image is written once per process into a memory file; each episode maps that file privately
(``ACCESS_COPY``) and SQLite runs on the mapping in place (``sqlite3_deserialize`` without a copy). Pages an
episode never writes stay shared, so an open episode costs the pages it wrote plus SQLite's own
bookkeeping, not a copy of the world, and a reset is a mapping, not a copy (docs/adr/0001).

Python's ``Connection.deserialize`` always copies; the in-place call goes through ctypes to the very SQLite
library the ``_sqlite3`` module uses. It is checked once per process and, where it does not hold, every
episode falls back to ``deserialize`` (a private copy: same behaviour, more memory).
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import sqlite3
import tempfile
from functools import cache

logger = logging.getLogger(__name__)

# Room for an episode's world to grow past its snapshot (virtual memory: only pages written cost RAM).
GROWTH_BYTES = 32 * 2**20


class SharedImage:
    """One snapshot image held once per process, in a memory file each episode maps copy-on-write."""

    def __init__(self, image: bytes) -> None:
        self.size = len(image)
        self.capacity = self.size + GROWTH_BYTES
        if hasattr(os, "memfd_create"):
            self._file = os.fdopen(os.memfd_create("corecraft-world", os.MFD_CLOEXEC), "w+b")
        else:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115  (closed with the image)
        self._file.write(image)
        self._file.truncate(self.capacity)  # a hole: reads as zeros, costs nothing until a page is written
        self._file.flush()

    def map(self) -> mmap.mmap:
        return mmap.mmap(self._file.fileno(), self.capacity, access=mmap.ACCESS_COPY)

    def read(self) -> bytes:
        with self.map() as mapping:
            return mapping[: self.size]

    def __del__(self) -> None:
        # Whoever still maps the file keeps its memory until the mapping goes: closing it here is safe.
        if hasattr(self, "_file"):
            self._file.close()


class WorldConnection(sqlite3.Connection):
    """A SQLite connection that may run on a mapped image, and unmaps it only after SQLite let go of it."""

    _mapping: mmap.mmap | None = None
    _pinned: ctypes.Array | None = None

    def close(self) -> None:
        try:
            if self.in_transaction:
                self.rollback()  # closing never has to write pages into a mapping about to go away
        except sqlite3.ProgrammingError:
            pass  # already closed
        super().close()
        if self._mapping is not None:
            self._pinned = None
            self._mapping.close()
            self._mapping = None

    def __del__(self) -> None:
        self.close()


# sqlite3_db_status() verb: whether deferred foreign-key violations are still unresolved.
_DBSTATUS_DEFERRED_FKS = 10


@cache
def _sqlite_library() -> ctypes.CDLL | None:
    """The SQLite library that ``_sqlite3`` links, or None where ctypes cannot reach it."""
    try:
        import _sqlite3

        return ctypes.CDLL(_sqlite3.__file__)
    except (ImportError, OSError):
        return None


@cache
def _sqlite_api():
    """ctypes handles on the SQLite library that ``_sqlite3`` links, or None where in-place loading can't work."""
    library = _sqlite_library()
    try:
        deserialize = library.sqlite3_deserialize
        limit = library.sqlite3_limit
    except AttributeError:
        return None
    deserialize.argtypes = [
        ctypes.c_void_p,  # sqlite3*
        ctypes.c_char_p,  # schema name
        ctypes.c_void_p,  # the image's bytes
        ctypes.c_int64,  # size of the database
        ctypes.c_int64,  # size of the buffer (room to grow)
        ctypes.c_uint,  # flags
    ]
    deserialize.restype = ctypes.c_int
    limit.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    limit.restype = ctypes.c_int
    probe = sqlite3.connect(":memory:")
    try:
        # The handle must be the sqlite3* this interpreter's connection object holds: set a limit through
        # Python, read it through ctypes.
        probe.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 31337)
        if limit(_db_handle(probe), sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, -1) != 31337:
            raise OSError("connection layout differs")
    except (OSError, AttributeError, ValueError) as exc:
        logger.warning("episode worlds will be private copies of their snapshot (%s)", exc)
        return None
    finally:
        probe.close()
    return deserialize


def _db_handle(conn: sqlite3.Connection) -> int:
    # CPython's connection object starts with its sqlite3* right after the object header.
    return ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value or 0


def in_place_loading() -> bool:
    return _sqlite_api() is not None


def image_load(conn: WorldConnection, image: SharedImage) -> None:
    """Make ``conn``'s main database the image: a copy-on-write mapping where possible, else a copy."""
    deserialize = _sqlite_api()
    if deserialize is None:
        conn.deserialize(image.read())
        return
    mapping = image.map()
    pinned = (ctypes.c_char * image.capacity).from_buffer(mapping)  # also forbids unmapping while pinned
    code = deserialize(_db_handle(conn), b"main", ctypes.addressof(pinned), image.size, image.capacity, 0)
    if code != 0:
        del pinned
        mapping.close()
        raise sqlite3.OperationalError(f"sqlite3_deserialize failed with code {code}")
    conn._mapping, conn._pinned = mapping, pinned
    # Reads straight from the mapping instead of copying pages into SQLite's cache.
    conn.execute(f"PRAGMA mmap_size = {image.capacity}")


@cache
def _db_status():
    """``sqlite3_db_status`` where the connection handle is known to be right (see ``_sqlite_api``), else None."""
    if _sqlite_api() is None:
        return None
    try:
        db_status = _sqlite_library().sqlite3_db_status
    except AttributeError:
        return None
    db_status.argtypes = [
        ctypes.c_void_p,  # sqlite3*
        ctypes.c_int,  # verb
        ctypes.POINTER(ctypes.c_int),  # current value
        ctypes.POINTER(ctypes.c_int),  # highwater
        ctypes.c_int,  # reset flag
    ]
    db_status.restype = ctypes.c_int
    return db_status


def foreign_keys_pending(conn: sqlite3.Connection) -> bool:
    """Whether the open transaction holds deferred foreign-key violations (its COMMIT would fail)."""
    db_status = _db_status()
    if db_status is None:
        # Slower, same answer: the worlds' snapshots hold no violation, so any found is this transaction's.
        return conn.execute("PRAGMA foreign_key_check").fetchone() is not None
    current, highwater = ctypes.c_int(0), ctypes.c_int(0)
    if db_status(_db_handle(conn), _DBSTATUS_DEFERRED_FKS, ctypes.byref(current), ctypes.byref(highwater), 0) != 0:
        return conn.execute("PRAGMA foreign_key_check").fetchone() is not None
    return current.value != 0
