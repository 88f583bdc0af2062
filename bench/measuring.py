"""What the benchmarks share: a percentile of timings, and a throwaway gunicorn server on 127.0.0.1.

Standard library only, so each bench script imports it before it sets Django up.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pct(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gunicorn_start(port: int, *, env: dict[str, str], workers: int, threads: int) -> subprocess.Popen:
    """The project's WSGI app under gunicorn on 127.0.0.1:``port`` (``env`` added to this process's), answering
    /healthz; the bench exits with the reason when it does not come up in a minute."""
    command = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "corecraft_site.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--keep-alive",
        "30",
        "--log-level",
        "warning",
    ]
    env = {**os.environ, "DEBUG": "false", "DJANGO_SETTINGS_MODULE": "corecraft_site.settings", **env}
    server = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited with {server.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.25)
    os.killpg(server.pid, signal.SIGTERM)
    sys.exit("gunicorn did not come up")
