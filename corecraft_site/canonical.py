"""Canonical JSON and its sha256: the one way this project hashes a structured value.

Keys sorted, no whitespace, UTF-8 kept as is, anything JSON cannot say (dates, Decimals, UUIDs) as its ``str``.
Two values that mean the same JSON hash the same, whichever process or app computed them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text (sorted keys, compact separators, non-ASCII kept, ``str`` for the rest)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_sha256(value: Any) -> str:
    """The hex sha256 of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
