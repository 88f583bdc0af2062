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

import contextlib
import ctypes
import logging
import mmap
import os
import sqlite3
import stat
import tempfile
from functools import cache
from pathlib import Path

logger = logging.getLogger(__name__)

# Room for an episode's world to grow past its snapshot (virtual memory: only pages written cost RAM).
GROWTH_BYTES = 32 * 2**20


class SharedImage:
    """One snapshot image, in a memory file each episode maps copy-on-write.

    With a shared directory (``shared_image_dir``), the file is one per image for every process of the machine
    (named by the image's SHA-256, written once, then only read), so N worker processes hold one copy of the
    world and a process loads it by opening the file; without one, a private memory file per process.
    """

    def __init__(self, image: bytes | None = None, *, path: Path | None = None, size: int = 0) -> None:
        if image is None:
            # An image file of ``size`` bytes another process (or this one) wrote and checked: opened read-only.
            self._file = path.open("rb")
            self.capacity = os.fstat(self._file.fileno()).st_size
            self.size = size
            self.path = path
            if not 0 < size <= self.capacity:
                self._file.close()
                raise OSError(f"{path} holds no image of {size} bytes")
            return
        self.size = len(image)
        self.capacity = self.size + GROWTH_BYTES
        self.path = None
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


# Image files kept in the shared directory (the most recently used); each costs its image's size in memory.
SHARED_IMAGES_KEPT = 4


def shared_image_dir() -> Path | None:
    """Where image files shared by every process live (``WORLD_IMAGE_DIR``; default: a directory in /dev/shm,
    memory), or None where there is none (then each process keeps a private copy)."""
    configured = os.environ.get("WORLD_IMAGE_DIR")
    if configured == "":
        return None
    if configured:
        return Path(configured)
    shm = Path("/dev/shm")  # noqa: S108 (a directory of this application's own, made private below)
    return shm / f"corecraft-images-{os.getuid()}" if shm.is_dir() else None


def shared_image_open(sha256: str, size: int) -> SharedImage | None:
    """The shared file of the image with this SHA-256 (``size`` bytes), when a process wrote it already."""
    folder = shared_image_dir()
    if folder is None or not _private(folder):
        return None
    path = folder / f"{sha256}.sqlite"
    try:
        found = SharedImage(path=path, size=size)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used: the last to be removed
    return found


def shared_image_write(sha256: str, image: bytes) -> SharedImage:
    """Share ``image`` (checked against ``sha256`` by the caller) with every process, or keep it private when
    there is no shared directory or it is full."""
    folder = shared_image_dir()
    if folder is None:
        return SharedImage(image)
    path = folder / f"{sha256}.sqlite"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(folder):
            raise OSError(f"{folder} is not a private directory of this user")
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".writing-") as out:
            out.write(image)
            out.truncate(len(image) + GROWTH_BYTES)
            out.flush()
            # Whole or absent: a reader never sees a part. A process that wrote the same image first keeps
            # its file, which this one then opens (one inode, one copy in memory).
            with contextlib.suppress(FileExistsError):
                os.link(out.name, path)
    except OSError as exc:
        logger.warning("world image kept private to this process (%s)", exc)
        return SharedImage(image)
    _shared_images_trim(folder)
    try:
        return SharedImage(path=path, size=len(image))
    except OSError:  # removed meanwhile by another process's trim
        return SharedImage(image)


def _private(folder: Path) -> bool:
    """A file there is trusted by its name (the image's SHA-256), so only a real directory of this user that no
    one else may write to: one planted by another user, or opened to others, is not used."""
    try:
        found = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022


def _shared_images_trim(folder: Path) -> None:
    """Remove all but the most recently used image files (a process mapping one keeps it until it unmaps)."""
    try:
        files = sorted(folder.glob("*.sqlite"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in files[SHARED_IMAGES_KEPT:]:
        with contextlib.suppress(OSError):
            old.unlink()


class WorldConnection(sqlite3.Connection):
    """A SQLite connection that may run on a mapped image, and unmaps it only after SQLite let go of it."""

    _mapping: mmap.mmap | None = None
    _pinned: ctypes.Array | None = None
    # Whether this world holds the search indexes (search_index.py), once asked.
    searchable: bool | None = None

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
