"""Benchmark: the main pages with 10,000 tasks in the database, over real HTTP, under a concurrent load.

Run by hand: ``.venv/bin/python bench/pages.py [--tasks 10000] [--database-url postgres://.../corecraft_bench_pages]``.
Uses its own database (default: the DATABASE_URL server, database ``corecraft_bench_pages``): creates it if it
does not exist, migrates it, seeds the world (seed 7, scale 1) and publishes a snapshot if there is none, then
bulk-creates ``--tasks`` tasks (1-3 immutable versions each with 4 criteria, one of each kind; reviews and
comments on the reviewed ones; about a third waiting in review, some claimed) unless that many are there already.

It starts gunicorn (2 workers x 2 threads, DEBUG off) and measures, one keep-alive connection, logged in as a
reviewer who is also an admin (so every list shows everything it may):

- the task list (``tasks:list``), the review queue (``review:queue``), a task page (``tasks:detail``), and the
  reviewer's page of a task (``review:task``), rotating over tasks in review;
- the look-ups of the live world (``world:lookup``, full-text search as one types: orders by product name and a
  remembered date, tickets by words of their text, customers by name or phone, products, the knowledge base) and
  an order's entity page (``world:entity``), over the world the database holds (``--world-scale`` when it seeds
  one; scale 10 is the look-ups' target), and the RL lead's dashboard (``dashboard``);
- first alone (``idle``), then while another process hammers other pages (My work, the home page, filtered
  queue pages, diffs) with several threads (``loaded``); the loaded/idle ratio says what the load costs.

It also prints the SQL statements each page runs (a Django test client in this process). Last line: one JSON object.
Target: p95 <= 150 ms for each page under load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measuring import free_port, gunicorn_start, pct  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

LABEL = "bench/pages.py"
TARGET_P95_MS = 150.0
BENCH_DB = "corecraft_bench_pages"
SECRET_KEY = "bench-pages-not-secret"  # noqa: S105 - a throwaway server on 127.0.0.1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help=f"The bench database (default: DATABASE_URL's server, {BENCH_DB}).")
    parser.add_argument("--tasks", type=int, default=10_000, help="Tasks in the database.")
    parser.add_argument("--requests", type=int, default=150, help="Timed requests per page and phase.")
    parser.add_argument("--load-threads", type=int, default=4, help="Threads of the load process.")
    parser.add_argument(
        "--load-rate",
        type=float,
        default=20.0,
        help="Requests/s the load process sends in all (20: a team of experts clicking; 0: back to back).",
    )
    parser.add_argument("--reset", action="store_true", help="Delete the bench tasks and create them again.")
    parser.add_argument(
        "--world-scale", type=float, default=1.0, help="Scale of the world seeded when the database has none."
    )
    # internal: the load process
    parser.add_argument("--load-worker", nargs=3, metavar=("PORT", "COOKIE", "PATHS_FILE"), help=argparse.SUPPRESS)
    return parser.parse_args()


def bench_database_url(explicit: str | None) -> str:
    if explicit:
        return explicit
    base = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/corecraft"))
    return urlunsplit(base._replace(path=f"/{BENCH_DB}"))


# --- the load process ---------------------------------------------------------------------------------------------


def load_worker(port: int, cookie: str, paths_file: str, threads: int, rate: float) -> None:
    """Another process: ``threads`` threads request the given pages at ``rate`` requests/s in all (0: back to back,
    which saturates the server) until killed."""
    paths = json.loads(Path(paths_file).read_text())
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    done = [0] * threads
    refused: dict[str, int] = {}  # "STATUS PATH" -> count: a load page must be one its user may see
    started = time.perf_counter()

    def hammer(seed: int) -> None:
        rng = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        interval = threads / rate if rate > 0 else 0.0
        next_at = time.perf_counter() + rng.uniform(0, interval)
        while not stop.is_set():
            if interval:
                time.sleep(max(0.0, next_at - time.perf_counter()))
                next_at = max(next_at + interval, time.perf_counter() - interval)
            try:
                path = rng.choice(paths)
                conn.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
                response = conn.getresponse()
                response.read()
                done[seed] += 1
                if response.status != 200:
                    key = f"{response.status} {path}"
                    refused[key] = refused.get(key, 0) + 1
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    workers = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    while not stop.is_set():
        time.sleep(0.1)
    rate = sum(done) / (time.perf_counter() - started)
    Path(paths_file + ".rate").write_text(json.dumps({"requests": sum(done), "per_s": rate, "not_200": refused}))


ARGS = parse_args()
if ARGS.load_worker:
    port, cookie, paths_file = ARGS.load_worker
    load_worker(int(port), cookie, paths_file, ARGS.load_threads, ARGS.load_rate)
    sys.exit(0)

DATABASE_URL = bench_database_url(ARGS.database_url)
os.environ["DATABASE_URL"] = DATABASE_URL
os.environ["DB_POOL"] = "0"  # this process only sets up and counts statements
os.environ["SECRET_KEY"] = SECRET_KEY  # the sessions made here must be valid for the server
os.environ["DEBUG"] = "false"  # as the server: cached templates, no query log


def ensure_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            print(f"creating database {name}", flush=True)
            conn.execute(f'CREATE DATABASE "{name}"')


ensure_database(DATABASE_URL)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db.models import Max  # noqa: E402
from django.urls import reverse  # noqa: E402

from bench.pages_data import ensure_data  # noqa: E402
from bench.pages_http import diffs_seen_by, in_process_costs, measure, session_cookie, url_or_none  # noqa: E402
from tasks_app.models import (  # noqa: E402
    Comment,
    Criterion,
    Review,
    Task,
    TaskStatus,
    TaskVersion,
)
from world_app.models import Order, SupportTicket  # noqa: E402


def main() -> None:
    settings.DEBUG = False
    users, _snapshot = ensure_data(ARGS.tasks, world_scale=ARGS.world_scale, reset=ARGS.reset)
    lead = users["lead"][0]
    in_review = list(Task.objects.filter(status=TaskStatus.IN_REVIEW).order_by("?").values_list("pk", flat=True)[:50])
    any_tasks = list(Task.objects.order_by("?").values_list("pk", flat=True)[:50])
    load_user = users["reviewers"][0]  # the load process's user: a reviewer, so the queue and diffs are theirs to see
    with_two = Task.objects.annotate(n=Max("versions__number")).filter(n__gte=2)
    with_two = list(with_two.values_list("pk", flat=True)[:200])
    pages: dict[str, list[str]] = {}
    missing = []
    for label, name, ids in (
        ("task list", "tasks:list", None),
        ("review queue", "review:queue", None),
        ("task page", "tasks:detail", any_tasks),
        ("review task page", "review:task", in_review),
    ):
        if ids is None:
            url = url_or_none(name)
            found = [url] if url else []
        else:
            found = [u for u in (url_or_none(name, pk) for pk in ids) if u]
        if found:
            pages[label] = found
        else:
            missing.append(f"{label} ({name} is not installed)")
    # What experts type into the look-ups: a product and a remembered date, words of a ticket, a name, a phone's end
    lookup = reverse("world:lookup")
    lookups = [
        f"{lookup}?kind=order&q=nyra+4060+mid+august",
        f"{lookup}?kind=order&q=gpu+40+days+ago",
        f"{lookup}?kind=order&q=%24299",
        f"{lookup}?kind=ticket&q=refund+charged",
        f"{lookup}?kind=customer&q=barnes",
        f"{lookup}?kind=customer&q=5550",
        f"{lookup}?kind=product&q=nyra+4070",
        f"{lookup}?kind=kb&q=return+window",
    ]
    pages["look-ups"] = lookups
    pages["look-ups htmx"] = [f"{path}&hx=1" for path in lookups]
    orders = list(Order.objects.order_by("?").values_list("pk", flat=True)[:20])
    pages["order page"] = [reverse("world:entity", args=["order", pk]) for pk in orders]
    dashboard = url_or_none("dashboard")
    if dashboard:
        pages["dashboard"] = [dashboard]
    else:
        missing.append("dashboard (not installed)")
    load_paths = [
        reverse("review:mine"),
        reverse("home"),
        reverse("review:queue") + "?type=reasoning",
        reverse("review:queue") + "?age=30&page=2",
        *[reverse("review:diff", kwargs={"task_id": pk, "a": 1, "b": 2}) for pk in diffs_seen_by(load_user, with_two)],
    ]
    costs = in_process_costs(lead, pages)
    total = Task.objects.count()
    waiting = Task.objects.filter(status=TaskStatus.IN_REVIEW).count()
    print(
        f"{total:,} tasks ({waiting:,} in review), {TaskVersion.objects.count():,} versions, "
        f"{Criterion.objects.count():,} criteria, {Review.objects.count():,} reviews, "
        f"{Comment.objects.count():,} comments; user {lead.username} (reviewer + admin); world: "
        f"{Order.objects.count():,} orders, {SupportTicket.objects.count():,} tickets",
        flush=True,
    )
    if missing:
        print("not measured: " + "; ".join(missing))

    load_before = os.getloadavg()[0]
    port = free_port()
    server = gunicorn_start(
        port, env={"SECRET_KEY": SECRET_KEY, "DATABASE_URL": DATABASE_URL, "DB_POOL": "1"}, workers=2, threads=2
    )
    cookie = session_cookie(lead)
    load_cookie = session_cookie(load_user)
    figures: dict[str, dict] = {}
    load = None
    paths_file = Path(f"/tmp/bench_pages_load_{os.getpid()}.json")  # noqa: S108 - a throwaway list for the child
    try:
        for label, paths in pages.items():
            idle, size = measure(port, cookie, paths, ARGS.requests)
            figures[label] = {"idle": idle, "bytes": size, **costs[label]}
        paths_file.write_text(json.dumps(load_paths))
        load = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--load-threads",
                str(ARGS.load_threads),
                "--load-rate",
                str(ARGS.load_rate),
                "--load-worker",
                str(port),
                load_cookie,
                str(paths_file),
            ],
            cwd=ROOT,
            start_new_session=True,
        )
        time.sleep(2)  # let the load reach its pace
        for label, paths in pages.items():
            figures[label]["loaded"], _ = measure(port, cookie, paths, ARGS.requests)
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait(timeout=30)
        rate_file = Path(f"{paths_file}.rate")
        load_rate = json.loads(rate_file.read_text()) if rate_file.exists() else {"requests": 0, "per_s": 0.0}
        load_rate.setdefault("not_200", {})
        rate_file.unlink(missing_ok=True)
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        paths_file.unlink(missing_ok=True)

    load_after = os.getloadavg()[0]
    print(
        f"machine: {os.cpu_count()} CPUs, load average (1 min) {load_before:.1f} before the run, {load_after:.1f} "
        "after it (the machine is shared: anything above the CPU count inflates every figure)"
    )
    print(
        f"gunicorn 2 workers x 2 threads, DEBUG off; {ARGS.requests} timed requests per page and phase; "
        f"load: another process, {ARGS.load_threads} threads on {len(load_paths)} other pages, "
        + (f"{ARGS.load_rate:g} requests/s in all" if ARGS.load_rate else "back to back (saturating)")
    )
    print(
        f"{'page':18s} {'idle p50':>9s} {'p95':>7s} {'loaded p50':>11s} {'p95':>7s} {'loaded/idle p95':>16s} "
        f"{'SQL stmts':>10s} {'CPU ms':>7s} {'KB':>6s}  target p95<=150ms"
    )
    result: dict[str, object] = {
        "world_orders": Order.objects.count(),
        "tasks": total,
        "in_review": waiting,
        "requests_per_page": ARGS.requests,
    }
    pages_out = {}
    for label, f in figures.items():
        row = {
            "idle_p50_ms": round(pct(f["idle"], 0.5), 2),
            "idle_p95_ms": round(pct(f["idle"], 0.95), 2),
            "loaded_p50_ms": round(pct(f["loaded"], 0.5), 2),
            "loaded_p95_ms": round(pct(f["loaded"], 0.95), 2),
            "statements": f["statements"],
            "cpu_ms": round(f["cpu_ms"], 2),
            "bytes": f["bytes"],
        }
        row["load_ratio_p95"] = round(row["loaded_p95_ms"] / row["idle_p95_ms"], 2)
        row["target_met"] = row["loaded_p95_ms"] <= TARGET_P95_MS
        pages_out[label.replace(" ", "_")] = row
        print(
            f"{label:18s} {row['idle_p50_ms']:9.1f} {row['idle_p95_ms']:7.1f} {row['loaded_p50_ms']:11.1f} "
            f"{row['loaded_p95_ms']:7.1f} {row['load_ratio_p95']:15.2f}x {row['statements']:10d} {row['cpu_ms']:7.1f} "
            f"{row['bytes'] / 1024:6.1f}  {'met' if row['target_met'] else 'MISSED'}"
        )
    print(
        f"the load process got {load_rate['requests']:,} other pages served meanwhile "
        f"({load_rate['per_s']:.0f} requests/s)"
    )
    if load_rate["not_200"]:
        not_200 = ", ".join(f"{key} x{n}" for key, n in load_rate["not_200"].items())
        print(f"the load process was refused or failed: {not_200}")
    result["load_not_200"] = load_rate["not_200"]
    result["pages"] = pages_out
    result["load_threads"] = ARGS.load_threads
    result["load_rate_target"] = ARGS.load_rate
    result["machine_cpus"] = os.cpu_count()
    result["machine_load_avg"] = [round(load_before, 2), round(load_after, 2)]
    result["load_requests_per_s"] = round(load_rate["per_s"], 1)
    result["not_measured"] = missing
    result["targets_met"] = (
        all(row["target_met"] for row in pages_out.values()) and not missing and not load_rate["not_200"]
    )
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
