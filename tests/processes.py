"""Running the project in another process (a worker, a command) against the test database."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent


def app_process_env(**extra: str) -> dict[str, str]:
    """This environment, with DATABASE_URL naming the test database and this process's Redis."""
    db = connections["default"].settings_dict
    credentials = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    url = f"postgres://{credentials}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "REDIS_URL": settings.REDIS_URL, "DB_POOL": "0", **extra}
