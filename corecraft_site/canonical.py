"""Canonical JSON and its sha256: the one way this project hashes a structured value.

Keys sorted, no whitespace, UTF-8 kept as is, anything JSON cannot say (dates, Decimals, UUIDs) as its ``str``.
Two values that mean the same JSON hash the same, whichever process or app computed them.

``sorted_json`` / ``sorted_json_sha256`` are the older form (Python's default separators, non-ASCII escaped): the
content hashes stored on criteria, task versions and gates were computed with it, so those keep it (a new form
would make every stored hash stale); it is also the identity key of a value (two equal values, one text).
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


def sorted_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and ``str`` for the rest, Python's default separators: an identity key."""
    return json.dumps(value, sort_keys=True, default=str)


def sorted_json_sha256(value: Any) -> str:
    """The hex sha256 of ``sorted_json(value)``: the stored content hashes of criteria, task versions and gates."""
    return hashlib.sha256(sorted_json(value).encode()).hexdigest()
