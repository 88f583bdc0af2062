"""What bench/pages.py measures with: a logged-in session cookie for the bench's users, the htmx request headers, one
page timed over a keep-alive connection, each page's SQL statements and CPU in this process (Django's test client),
and the diffs a reviewer's page shows.

Imported by bench/pages.py once Django is set up against its database.
"""

from __future__ import annotations

import http.client
import sys
import time

from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse

from bench.measuring import pct
from tasks_app.models import Task

# --- HTTP ---------------------------------------------------------------------------------------------------------


def session_cookie(user) -> str:
    from importlib import import_module

    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return store.session_key


def htmx_headers(path: str) -> dict[str, str]:
    """A path marked ``hx=1`` is asked as htmx asks it (the results partial, as one types)."""
    return {"HX-Request": "true"} if "hx=1" in path else {}


def measure(port: int, cookie: str, paths: list[str], requests: int) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Cookie": f"sessionid={cookie}"}
    timings, sizes = [], 0
    for i in range(requests + 5):
        path = paths[i % len(paths)]
        started = time.perf_counter()
        conn.request("GET", path, headers={**headers, **htmx_headers(path)})
        response = conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            sys.exit(f"GET {path}: HTTP {response.status}: {body[:300]!r}")
        if i >= 5:  # the first requests warm both workers' caches
            timings.append(elapsed)
            sizes += len(body)
    conn.close()
    return timings, sizes // max(1, requests)


def in_process_costs(user, pages: dict[str, list[str]], repeat: int = 20) -> dict[str, dict]:
    """Per page, in this process (Django's test client, no HTTP): SQL statements, and the CPU milliseconds the
    process spends per request (Python: view, template; the database's own time is not in it). Unlike wall
    time, CPU time hardly moves with what else the machine runs."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    costs = {}
    for name, paths in pages.items():
        hx = {"HTTP_HX_REQUEST": "true"} if htmx_headers(paths[0]) else {}
        client.get(paths[0], **hx)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(paths[0], **hx)
        if response.status_code != 200:
            sys.exit(f"{name}: {paths[0]} answered {response.status_code} in process")
        statements = len(captured)  # now: the next request resets the connection's query log
        cpu: list[float] = []
        for i in range(repeat):
            started = time.process_time()
            client.get(paths[i % len(paths)], **hx)
            cpu.append((time.process_time() - started) * 1000)
        costs[name] = {"statements": statements, "cpu_ms": pct(cpu, 0.5)}
    return costs


def diffs_seen_by(user, task_ids: list[int], count: int = 10) -> list[int]:
    """Up to ``count`` of ``task_ids`` whose diff pages ``user`` may open (a reviewer is refused drafts and
    held-out tasks), checked by the permission the diff view itself applies."""
    from django.core.exceptions import PermissionDenied

    from tasks_app.permissions import task_discuss_check

    seen = []
    for task in Task.objects.filter(pk__in=task_ids).select_related("current_version").order_by("pk"):
        try:
            task_discuss_check(user, task)
        except PermissionDenied:
            continue
        seen.append(task.pk)
        if len(seen) == count:
            break
    return seen


def url_or_none(name: str, *args) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None
