"""Running the project in another process (a worker, a command) against the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def web_server() -> Iterator[str]:
    """gunicorn serving the project against the test database, threaded as in production (trainers run a group's
    rollouts at once; Django's live_server shares one in-memory episode connection between its threads)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryFile() as log:
        command = [sys.executable, "-m", "gunicorn", "corecraft_site.wsgi", "--bind", f"127.0.0.1:{port}"]
        proc = subprocess.Popen(  # noqa: S603
            [*command, "--workers", "1", "--threads", "8"], cwd=ROOT, env=app_process_env(), stdout=log, stderr=log
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the web server did not start")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            log.seek(0)
            print(f"--- web server ---\n{log.read().decode(errors='replace')[-4000:]}")
