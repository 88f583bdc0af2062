"""Benchmark: every search tool as the world grows, the first episode close and the image load of a fresh process.

Run by hand: ``.venv/bin/python bench/search.py [--scale 100] [--database-url postgres://...]``.
Uses the database named by DATABASE_URL (or ``--database-url``); its world must be seeded already (seed it with
``manage.py seed_world --seed 7 --scale 100`` on an empty database: minutes) and published (a publish builds the
search indexes into the image). Measures the latest snapshot (``--publish``: publish the live world first when
it differs from it; at scale 100 the comparison alone takes minutes), then:

- every search tool, in process on one episode's world (``invoke_tool``: validation, the query, the records;
  no step log), with text queries taken from the world (names, emails, notes, subjects, ids, tracking numbers:
  fragments of 3-8 characters, one or two words) and with the filters an agent uses most (a customer's orders,
  an order's shipments...). Each call runs twice, interleaved: with the trigram indexes (what tools do) and
  with them switched off for the connection (the scan every search did before: the peer in the same run);
  both must answer the same, byte for byte, or the bench says so;
- in a fresh process: the load of the snapshot's image (from the shared file, and as the first process on the
  machine, from Postgres: read, decompressed, checked) and the first close of an episode (its checksum
  needs the snapshot's per-table digests, stored with it at publish);
- memory: ``--workers`` fresh processes at once (4), each serving ``--episodes`` open episodes (100) that took
  a search and a write: each process's PSS above its own baseline (after Django's setup), all of them alive.
  Image files shared between processes (``WORLD_IMAGE_DIR``, a directory in /dev/shm by default) count once
  for all of them; ``WORLD_IMAGE_DIR=`` gives each process its own copy (the peer, measured in the same run).

It prints a table, then last a one-line JSON object with every figure.
Bars (issue 18, scale 100): every search p50 <= 5 ms; the first close in a fresh process <= 0.5 s; PSS of each
of 4 workers serving 100 open episodes <= 150 MB above its baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measuring import pct  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

LABEL = "bench/search.py"
BAR_SEARCH_P50_MS = 5.0
BAR_FIRST_CLOSE_S = 0.5
BAR_WORKER_PSS_MB = 150


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="The scale the world was seeded at (reported).")
    parser.add_argument("--database-url", help="Use this database instead of DATABASE_URL.")
    parser.add_argument("--calls", type=int, default=40, help="Timed calls per search and kind of query.")
    parser.add_argument(
        "--publish", action="store_true", help="Publish the live world first when it differs from the latest."
    )
    parser.add_argument("--workers", type=int, default=4, help="Worker processes for the memory figure (0: skip).")
    parser.add_argument("--episodes", type=int, default=100, help="Open episodes per worker process.")
    parser.add_argument("--fresh-process", choices=["close", "serve"], help=argparse.SUPPRESS)
    parser.add_argument("--snapshot", type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


ARGS = parse_args()
if ARGS.database_url:
    os.environ["DATABASE_URL"] = ARGS.database_url

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connections  # noqa: E402

from world_app.episodes import episode_close, episode_create, episode_world  # noqa: E402
from world_app.episodes.cache import episode_cache  # noqa: E402
from world_app.episodes.search_index import world_searchable  # noqa: E402
from world_app.models import (  # noqa: E402
    Build,
    Customer,
    Episode,
    Order,
    Payment,
    Shipment,
    SupportTicket,
    WorldSnapshot,
)
from world_app.routers import EPISODE_ALIAS  # noqa: E402
from world_app.tools.registry import invoke_tool  # noqa: E402


def _fragments(rng: random.Random, values, count: int) -> list[str]:
    """Pieces of 3-8 characters of real values, as an agent types part of a name or an id."""
    values = [str(v) for v in values if v and len(str(v).strip()) >= 3]
    out = []
    while values and len(out) < count:
        value = rng.choice(values).strip()
        size = rng.randint(3, min(8, len(value)))
        start = rng.randrange(len(value) - size + 1)
        piece = value[start : start + size].strip()
        if len(piece) >= 3 and " " not in piece:
            out.append(piece)
    return out


def _sample(model, field: str, limit: int = 400) -> list:
    return list(model.objects.order_by("?").values_list(field, flat=True)[:limit])


def query_sets(rng: random.Random, n: int) -> dict[str, dict[str, list[dict]]]:
    """Per search tool, per kind of query, ``n`` arguments (read from the episode's world)."""
    last_names = _sample(Customer, "last_name")
    emails = _sample(Customer, "email")
    customers = _sample(Customer, "id")
    orders = _sample(Order, "id")
    notes = [w for note in _sample(Order, "notes") if note for w in note.split()]
    subjects = [w for s in _sample(SupportTicket, "subject") for w in s.split()]
    tracking = _sample(Shipment, "tracking_number")
    transactions = _sample(Payment, "transaction_id")
    build_names = [w for s in _sample(Build, "name") for w in s.split()]

    def words(*pools: list[str]) -> list[dict]:
        picked = []
        for i in range(n):
            pool = pools[i % len(pools)]
            picked.append(pool[i % len(pool)])
        return [{"query": w} for w in picked]

    def two_words(a: list[str], b: list[str]) -> list[dict]:
        return [{"query": f"{a[i % len(a)]} {b[(i * 7) % len(b)]}"} for i in range(n)]

    name_parts = _fragments(rng, last_names, n)
    email_parts = _fragments(rng, emails, n)
    return {
        "search_customers": {
            "text": words([*last_names[:n]], name_parts, email_parts),
            "two words": two_words(_fragments(rng, last_names, n), _fragments(rng, _sample(Customer, "first_name"), n)),
            "filter": [{"loyalty_tier": ("gold", "silver", "platinum")[i % 3]} for i in range(n)],
        },
        "search_orders": {
            "text": words(_fragments(rng, orders, n), _fragments(rng, notes, n), name_parts, email_parts),
            "filter": [{"customer_id": customers[i % len(customers)]} for i in range(n)],
            "status": [{"status": ("paid", "fulfilled", "cancelled")[i % 3]} for i in range(n)],
        },
        "search_tickets": {
            "text": words(_fragments(rng, subjects, n)),
            "filter": [{"customer_id": customers[i % len(customers)]} for i in range(n)],
        },
        "search_shipments": {
            "text": words(_fragments(rng, tracking, n), _fragments(rng, orders, n)),
            "filter": [{"order_id": orders[i % len(orders)]} for i in range(n)],
        },
        "search_payments": {
            "text": words(_fragments(rng, transactions, n), _fragments(rng, orders, n)),
            "filter": [{"order_id": orders[i % len(orders)]} for i in range(n)],
        },
        "search_builds": {
            "text": words(_fragments(rng, build_names, n)),
            "filter": [{"customer_id": customers[i % len(customers)]} for i in range(n)],
        },
        "search_products": {"text": [{"query": q} for q in (["rtx", "ryzen", "ddr5", "nvme", "1000w"] * n)[:n]]},
        "search_employees": {"text": [{"query": q} for q in (["support", "lee", "eng", "manager"] * n)[:n]]},
        "search_knowledge_base": {
            "text": [{"query": q} for q in (["warranty", "return window", "refund", "bios"] * n)[:n]]
        },
    }


def bench_searches(snapshot, calls: int) -> tuple[dict, int, bool]:
    episode = episode_create(snapshot=snapshot, label=LABEL)
    figures: dict[str, dict] = {}
    mismatches = 0
    with episode_world(episode):
        conn = connections[EPISODE_ALIAS].connection
        indexed_world = world_searchable(conn)
        sets = query_sets(random.Random(7), calls)
        for name, kinds in sets.items():
            for kind, argument_list in kinds.items():
                # Warm-up: the compiled forms of both paths.
                for searchable in (True, False):
                    conn.searchable = searchable and indexed_world
                    invoke_tool(name, argument_list[0])
                indexed_ms, scan_ms = [], []
                for args in argument_list:
                    answers = []
                    for searchable, timings in ((True, indexed_ms), (False, scan_ms)):
                        conn.searchable = searchable and indexed_world
                        started = time.perf_counter()
                        answers.append(invoke_tool(name, args))
                        timings.append((time.perf_counter() - started) * 1000)
                    if json.dumps(answers[0], default=str) != json.dumps(answers[1], default=str):
                        mismatches += 1
                figures[f"{name} ({kind})"] = {
                    "p50_ms": round(pct(indexed_ms, 0.5), 3),
                    "p95_ms": round(pct(indexed_ms, 0.95), 3),
                    "scan_p50_ms": round(pct(scan_ms, 0.5), 3),
                    "scan_p95_ms": round(pct(scan_ms, 0.95), 3),
                }
        conn.searchable = indexed_world
    return figures, mismatches, indexed_world


def fresh_close(snapshot_id: int) -> dict:
    """In this (fresh) process: the image's cold load, then an episode's first close."""
    from world_app.episodes.images import snapshot_image

    started = time.perf_counter()
    snapshot_image(snapshot_id)
    load_s = time.perf_counter() - started
    snapshot = WorldSnapshot.objects.defer("image").get(pk=snapshot_id)
    episode = episode_create(snapshot=snapshot, label=LABEL)
    invoke_started = time.perf_counter()
    with episode_world(episode):
        invoke_tool("search_customers", {"query": "smith"})
    first_call_s = time.perf_counter() - invoke_started
    started = time.perf_counter()
    episode_close(episode)
    close_s = time.perf_counter() - started
    return {
        "cold_image_load_s": round(load_s, 3),
        "first_world_s": round(first_call_s, 3),
        "first_close_s": round(close_s, 3),
    }


def serve_episodes(snapshot_id: int, count: int) -> None:
    """In this (fresh) process: ``count`` open episodes, each after a search and a write; then wait for the
    parent to read this process's memory (it says when on stdin)."""
    import psutil

    from world_app.episodes import episode_step
    from world_app.tools import call_tool

    base = psutil.Process().memory_full_info().pss
    snapshot = WorldSnapshot.objects.defer("image").get(pk=snapshot_id)
    customers = list(Customer.objects.order_by("id").values_list("id", flat=True)[:count])

    def touch(customer_id: str):
        return lambda: {"updated": Customer.objects.filter(pk=customer_id).update(notes="bench/search.py")}

    for i in range(count):
        episode = episode_create(snapshot=snapshot, label=LABEL)
        call_tool(episode, "search_customers", {"query": "smith"})
        episode_step(episode=episode, name="touch", arguments={}, fn=touch(customers[i % len(customers)]))
    print(json.dumps({"pid": os.getpid(), "base_pss": base, "hot": len(episode_cache)}), flush=True)
    sys.stdin.readline()


def bench_memory(snapshot, workers: int, episodes: int, *, shared: bool) -> list[float]:
    """PSS growth (MB) of each of ``workers`` processes serving ``episodes`` episodes, all alive at once."""
    import psutil

    env = dict(os.environ)
    if not shared:
        env["WORLD_IMAGE_DIR"] = ""
    command = [sys.executable, __file__, "--fresh-process", "serve", "--snapshot", str(snapshot.pk)]
    children = [
        subprocess.Popen(
            [*command, "--episodes", str(episodes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(workers)
    ]
    try:
        ready = [json.loads(child.stdout.readline()) for child in children]
        growth = [(psutil.Process(r["pid"]).memory_full_info().pss - r["base_pss"]) / 1e6 for r in ready]
    finally:
        for child in children:
            with contextlib.suppress(OSError):
                child.stdin.write("\n")
                child.stdin.flush()
            child.wait(timeout=120)
    return [round(g, 1) for g in growth]


def main() -> None:
    settings.DEBUG = False
    if ARGS.fresh_process == "close":
        print(json.dumps(fresh_close(ARGS.snapshot)))
        return
    if ARGS.fresh_process == "serve":
        serve_episodes(ARGS.snapshot, ARGS.episodes)
        return
    from world_app.snapshots import snapshot_latest, snapshot_publish

    if ARGS.publish or not WorldSnapshot.objects.exists():
        snapshot = snapshot_publish(note=f"{LABEL} (scale {ARGS.scale:g})", if_changed=True)
    else:
        snapshot = snapshot_latest()
    entities = sum(snapshot.entity_counts.values())
    try:
        figures, mismatches, indexed_world = bench_searches(snapshot, ARGS.calls)
        child = subprocess.run(
            [sys.executable, __file__, "--fresh-process", "close", "--snapshot", str(snapshot.pk)],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ,
        )
        fresh = json.loads(child.stdout.strip().splitlines()[-1])
        # The first process on a machine: no shared image file yet (an empty private directory for them, in memory
        # as the default one is), so it reads the compressed image from Postgres, decompresses and checks it.
        memory_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 (mkdtemp: a new 0700 directory)
        with tempfile.TemporaryDirectory(dir=memory_dir) as empty:
            child = subprocess.run(
                [sys.executable, __file__, "--fresh-process", "close", "--snapshot", str(snapshot.pk)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "WORLD_IMAGE_DIR": empty},
            )
        first = json.loads(child.stdout.strip().splitlines()[-1])
        fresh["first_process_image_load_s"] = first["cold_image_load_s"]
        memory = {}
        if ARGS.workers:
            memory["worker_pss_growth_mb"] = bench_memory(snapshot, ARGS.workers, ARGS.episodes, shared=True)
            memory["worker_pss_growth_private_mb"] = bench_memory(snapshot, ARGS.workers, ARGS.episodes, shared=False)
    finally:
        ids = list(Episode.objects.filter(label=LABEL).values_list("id", flat=True))
        Episode.objects.filter(pk__in=ids).delete()
        for episode_id in ids:
            episode_cache.discard(episode_id)

    print(
        f"world: scale {ARGS.scale:g}, {entities:,} entities, snapshot v{snapshot.version} "
        f"({snapshot.image_bytes / 1e6:.1f} MB image, search indexes: {'yes' if indexed_world else 'no'})"
    )
    print(f"{'search (queries)':42s} {'p50 ms':>8s} {'p95':>8s} {'scan p50':>9s} {'scan p95':>9s} {'scan/index':>10s}")
    for name, f in figures.items():
        ratio = f["scan_p50_ms"] / f["p50_ms"] if f["p50_ms"] else float("nan")
        print(
            f"{name:42s} {f['p50_ms']:8.2f} {f['p95_ms']:8.2f} {f['scan_p50_ms']:9.2f} {f['scan_p95_ms']:9.2f} "
            f"{ratio:9.1f}x"
        )
    worst = max(figures.items(), key=lambda item: item[1]["p50_ms"])
    print(f"slowest search p50: {worst[0]} {worst[1]['p50_ms']:.2f} ms (bar <= {BAR_SEARCH_P50_MS} ms)")
    print(f"answers differing between the index and the scan: {mismatches} (must be 0)")
    print(
        f"fresh process: image load {fresh['cold_image_load_s']:.3f} s (the shared file), "
        f"{fresh['first_process_image_load_s']:.3f} s (the first process on the machine: from Postgres), "
        f"first close {fresh['first_close_s']:.3f} s (bar <= {BAR_FIRST_CLOSE_S} s)"
    )
    if memory:
        print(
            f"PSS above baseline of {ARGS.workers} workers x {ARGS.episodes} open episodes: "
            f"{memory['worker_pss_growth_mb']} MB with the shared image file, "
            f"{memory['worker_pss_growth_private_mb']} MB with a copy per process (bar <= {BAR_WORKER_PSS_MB} MB each)"
        )
    print(
        json.dumps(
            {
                "bench": LABEL,
                "scale": ARGS.scale,
                "entities": entities,
                "snapshot_version": snapshot.version,
                "image_mb": round(snapshot.image_bytes / 1e6, 2),
                "search_indexes": indexed_world,
                "calls": ARGS.calls,
                "searches": figures,
                "slowest_search_p50_ms": worst[1]["p50_ms"],
                "mismatches": mismatches,
                **fresh,
                **memory,
            }
        )
    )


if __name__ == "__main__":
    main()
