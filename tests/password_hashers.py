"""The password hasher the tests use: Django's PBKDF2-SHA256 with fewer rounds.

Production hashes cost ~1,000,000 rounds by design (a few hundred ms of CPU each); a test creating the demo users
and failing logins pays that per password. The algorithm and the stored format are the same (``pbkdf2_sha256$...``,
the rounds inside), so every process a test starts, on the production hasher, still checks these passwords.
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 at 1,000 rounds (Django's own tests use MD5; this keeps the production algorithm)."""

    iterations = 1_000
