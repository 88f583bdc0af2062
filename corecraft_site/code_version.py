"""A content version of some source files: what a stored result computed by that code is keyed by, so a result
computed by other code is recognised as stale instead of being trusted."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=16)
def code_version(paths: tuple[str, ...]) -> str:
    """sha256 over ``paths`` (relative to the repository; a directory means every .py file under it): each file's
    path and bytes, in path order."""
    files: list[Path] = []
    for name in paths:
        path = ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    digest = hashlib.sha256()
    for path in sorted(set(files)):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
