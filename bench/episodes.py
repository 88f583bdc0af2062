"""Benchmark: how fast an episode gets its private world, and what an open episode costs.

Run by hand against the database named by DATABASE_URL: ``.venv/bin/python bench/episodes.py``.
Seeds the default world (seed 7, scale 1) when the world is empty, publishes a snapshot when none matches
the live world, then measures

- episode reset (a private world from the snapshot, ready to take a write), p50/p95, against
  (a) a Postgres schema clone of the same world (``CREATE UNLOGGED TABLE .. AS TABLE`` per table) and
  (b) a deep copy of the world loaded as Python dicts (how tau2-bench resets);
- 1,000 open episodes, each having taken one write: the process's RSS (and USS/PSS) and memory per episode;
- a cold rebuild of an episode with 20 logged steps, the latency of a step, and of a close.

Then tau2-bench's retail environment in the same run (bench/peers/tau2_retail.py under tau2's Python, ``--tau2-python``;
skipped with a note when not installed): its reset and its reward. It prints a table, then a one-line JSON object.
Targets: reset p50 <= 5 ms and >= 20x faster than (a); 1,000 open episodes within 2 GB.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measuring import pct
from bench.tau2_peer import HELP, episodes_report, tau2_python, tau2_run

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django

django.setup()

import psutil  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command, get_commands  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from world_app.episodes import (  # noqa: E402
    episode_close,
    episode_create,
    episode_step,
    episode_world,
)
from world_app.episodes.cache import episode_cache  # noqa: E402
from world_app.episodes.images import snapshot_image  # noqa: E402
from world_app.episodes.shared_image import in_place_loading  # noqa: E402
from world_app.episodes.world_db import world_connection_open  # noqa: E402
from world_app.models import WORLD_MODELS, Customer, Episode, Order, SupportTicket  # noqa: E402
from world_app.snapshots import snapshot_publish  # noqa: E402

RESETS = 200
CLONES = 20
DEEPCOPIES = 10
OPEN_EPISODES = 1000
REBUILD_STEPS = 20
REBUILDS = 20
LABEL = "bench/episodes.py"
TARGET_RESET_P50_MS = 5.0
TARGET_SPEEDUP_VS_CLONE = 20.0
TARGET_OPEN_RSS_BYTES = 2 * 2**30


def timed_ms(fn, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def memory() -> dict[str, int]:
    info = psutil.Process().memory_full_info()
    return {"rss": info.rss, "uss": info.uss, "pss": info.pss}


def ensure_world() -> int:
    rows = sum(model._base_manager.count() for model in WORLD_MODELS)
    if rows:
        return rows
    if "seed_world" not in get_commands():
        sys.exit("The world is empty: run `python manage.py seed_world --seed 7 --scale 1` first.")
    print("seeding the default world (seed 7, scale 1)...", flush=True)
    call_command("seed_world", seed=7, scale=1)
    return sum(model._base_manager.count() for model in WORLD_MODELS)


def bench_reset(snapshot) -> dict:
    image = snapshot_image(snapshot.pk).image

    def reset():
        conn = world_connection_open(image)
        conn.execute('SELECT 1 FROM "world_app_order" LIMIT 1')  # schema loaded: ready to take a write
        conn.close()

    timed_ms(reset, 20)  # warm-up
    engine = timed_ms(reset, RESETS)
    created: list[Episode] = []
    service = timed_ms(lambda: created.append(episode_create(snapshot=snapshot, label=LABEL)), RESETS)
    for episode in created:
        episode_cache.discard(episode.pk)
    return {"engine": engine, "service": service}


def bench_schema_clone() -> list[float]:
    tables = [model._meta.db_table for model in WORLD_MODELS]
    samples = []
    for _ in range(CLONES):
        schema = f"bench_clone_{uuid.uuid4().hex[:8]}"
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f'CREATE SCHEMA "{schema}"')
            for table in tables:
                cursor.execute(f'CREATE UNLOGGED TABLE "{schema}"."{table}" AS TABLE public."{table}"')
        samples.append((time.perf_counter() - started) * 1000)
        with connection.cursor() as cursor:
            cursor.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return samples


def bench_deepcopy() -> list[float]:
    world = {
        model._meta.db_table: {row["id"]: row for row in model._base_manager.order_by("pk").values()}
        for model in WORLD_MODELS
    }
    return timed_ms(lambda: copy.deepcopy(world), DEEPCOPIES)


def one_write(customer_id: str, note: str):
    def call():
        Customer.objects.filter(pk=customer_id).update(notes=note)
        return {"ok": True}

    return call


def bench_open_episodes(snapshot, customer_ids: list[str]) -> dict:
    settings.EPISODE_CACHE_SIZE = OPEN_EPISODES + 100
    episode_cache.clear()
    gc.collect()
    before = memory()
    started = time.perf_counter()
    for i in range(OPEN_EPISODES):
        episode = episode_create(snapshot=snapshot, label=LABEL)
        episode_step(
            episode=episode, name="note", arguments={}, fn=one_write(customer_ids[i % len(customer_ids)], f"n{i}")
        )
    elapsed = time.perf_counter() - started
    gc.collect()
    after = memory()
    assert len(episode_cache) >= OPEN_EPISODES
    episode_cache.clear()
    return {"before": before, "after": after, "seconds": elapsed}


def bench_rebuild_and_steps(snapshot, order_ids: list[str], ticket_ids: list[str]) -> dict:
    episode = episode_create(snapshot=snapshot, label=LABEL)
    step_ms = []
    for i in range(REBUILD_STEPS):
        order_id, ticket_id = order_ids[i % len(order_ids)], ticket_ids[i % len(ticket_ids)]

        def call(order_id=order_id, ticket_id=ticket_id, i=i):
            Order.objects.filter(pk=order_id).update(notes=f"step {i}")
            SupportTicket.objects.filter(pk=ticket_id).update(status="open", closure_reason="")
            return {"order_id": order_id, "ticket_id": ticket_id}

        started = time.perf_counter()
        episode_step(episode=episode, name="update", arguments={"i": i}, fn=call)
        step_ms.append((time.perf_counter() - started) * 1000)

    def cold_rebuild():
        episode_cache.discard(episode.pk)
        with episode_world(episode):
            pass

    rebuild_ms = timed_ms(cold_rebuild, REBUILDS)
    started = time.perf_counter()
    episode_close(episode)
    close_ms = (time.perf_counter() - started) * 1000
    # A close updates the snapshot's table digests (stored at publish; a snapshot published before they were
    # stored is scanned once per process) with the touched rows. Measure a second episode with the same 20 steps.
    second = episode_create(snapshot=snapshot, label=LABEL)
    for i in range(REBUILD_STEPS):
        order_id, ticket_id = order_ids[i % len(order_ids)], ticket_ids[i % len(ticket_ids)]
        episode_step(
            episode=second,
            name="update",
            arguments={"i": i},
            fn=lambda order_id=order_id, i=i: Order.objects.filter(pk=order_id).update(notes=f"again {i}") and {},
        )
    started = time.perf_counter()
    episode_close(second)
    close_warm_ms = (time.perf_counter() - started) * 1000
    return {"step": step_ms, "rebuild": rebuild_ms, "close_ms": close_ms, "close_warm_ms": close_warm_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tau2-python", help=HELP)
    args = parser.parse_args()
    settings.DEBUG = False  # no query log: measure the engine, not Django's debug cursor
    rows = ensure_world()
    snapshot = snapshot_publish(note="bench/episodes.py", if_changed=True)
    customer_ids = list(Customer.objects.order_by("pk").values_list("pk", flat=True)[:OPEN_EPISODES])
    order_ids = list(Order.objects.order_by("pk").values_list("pk", flat=True)[:REBUILD_STEPS])
    ticket_ids = list(SupportTicket.objects.order_by("pk").values_list("pk", flat=True)[:REBUILD_STEPS])
    if not (customer_ids and order_ids and ticket_ids):
        sys.exit("The world has no customers, orders or tickets to write to.")
    try:
        reset = bench_reset(snapshot)
        clone = bench_schema_clone()
        deep = bench_deepcopy()
        opened = bench_open_episodes(snapshot, customer_ids)
        rebuild = bench_rebuild_and_steps(snapshot, order_ids, ticket_ids)
    finally:
        Episode.objects.filter(label=LABEL).delete()
    python = tau2_python(args.tau2_python)
    peer_reset = tau2_run(python, "reset")
    peer_reward = tau2_run(python, "reward") if peer_reset else None

    reset_p50, reset_p95 = pct(reset["engine"], 0.5), pct(reset["engine"], 0.95)
    clone_p50, deep_p50 = pct(clone, 0.5), pct(deep, 0.5)
    rss_delta = opened["after"]["rss"] - opened["before"]["rss"]
    uss_delta = opened["after"]["uss"] - opened["before"]["uss"]
    figures = {
        "world_rows": rows,
        "snapshot_version": snapshot.version,
        "image_bytes": snapshot.image_bytes,
        "image_stored_bytes": len(snapshot.image) if snapshot.image is not None else None,
        "in_place_loading": in_place_loading(),
        "reset_p50_ms": round(reset_p50, 3),
        "reset_p95_ms": round(reset_p95, 3),
        "episode_create_p50_ms": round(pct(reset["service"], 0.5), 3),
        "episode_create_p95_ms": round(pct(reset["service"], 0.95), 3),
        "pg_schema_clone_p50_ms": round(clone_p50, 1),
        "pg_schema_clone_p95_ms": round(pct(clone, 0.95), 1),
        "deepcopy_p50_ms": round(deep_p50, 1),
        "deepcopy_p95_ms": round(pct(deep, 0.95), 1),
        "speedup_vs_pg_clone": round(clone_p50 / reset_p50, 1),
        "speedup_vs_deepcopy": round(deep_p50 / reset_p50, 1),
        "open_episodes": OPEN_EPISODES,
        "open_episodes_seconds": round(opened["seconds"], 2),
        "rss_before_mb": round(opened["before"]["rss"] / 1e6, 1),
        "rss_open_mb": round(opened["after"]["rss"] / 1e6, 1),
        "uss_open_mb": round(opened["after"]["uss"] / 1e6, 1),
        "pss_open_mb": round(opened["after"]["pss"] / 1e6, 1),
        "rss_per_episode_kb": round(rss_delta / OPEN_EPISODES / 1e3, 1),
        "uss_per_episode_kb": round(uss_delta / OPEN_EPISODES / 1e3, 1),
        "step_p50_ms": round(pct(rebuild["step"], 0.5), 3),
        "step_p95_ms": round(pct(rebuild["step"], 0.95), 3),
        "cold_rebuild_20_steps_p50_ms": round(pct(rebuild["rebuild"], 0.5), 3),
        "cold_rebuild_20_steps_p95_ms": round(pct(rebuild["rebuild"], 0.95), 3),
        "close_ms": round(rebuild["close_ms"], 1),
        "close_warm_ms": round(rebuild["close_warm_ms"], 1),
    }
    figures["targets_met"] = {
        "reset_p50_le_5ms": reset_p50 <= TARGET_RESET_P50_MS,
        "speedup_vs_pg_clone_ge_20x": clone_p50 / reset_p50 >= TARGET_SPEEDUP_VS_CLONE,
        "open_1000_rss_le_2gb": opened["after"]["rss"] <= TARGET_OPEN_RSS_BYTES,
    }

    print(f"world: {rows} rows, snapshot v{snapshot.version}, image {snapshot.image_bytes / 1e6:.2f} MB")
    print(f"{'measure':44s} {'p50':>10s} {'p95':>10s}")
    for name, samples in (
        ("reset: private world ready (ms)", reset["engine"]),
        ("episode_create() incl. Postgres row (ms)", reset["service"]),
        ("(a) Postgres schema clone (ms)", clone),
        ("(b) deepcopy of the world as dicts (ms)", deep),
        ("episode_step(), hot (ms)", rebuild["step"]),
        (f"cold rebuild, {REBUILD_STEPS} logged steps (ms)", rebuild["rebuild"]),
    ):
        print(f"{name:44s} {pct(samples, 0.5):10.3f} {pct(samples, 0.95):10.3f}")
    print(f"speed-up vs (a): {figures['speedup_vs_pg_clone']}x, vs (b): {figures['speedup_vs_deepcopy']}x")
    print(
        f"{OPEN_EPISODES} open episodes (one write each): RSS {figures['rss_open_mb']} MB "
        f"(was {figures['rss_before_mb']} MB), USS {figures['uss_open_mb']} MB, PSS {figures['pss_open_mb']} MB; "
        f"per episode RSS {figures['rss_per_episode_kb']} kB, USS {figures['uss_per_episode_kb']} kB"
    )
    print(
        f"close (final diff + checksum): first in the process {figures['close_ms']} ms (scans the snapshot's "
        f"table digests only when it was published without them), then {figures['close_warm_ms']} ms; "
        f"in-place image loading: {in_place_loading()}"
    )
    if peer_reset or peer_reward:
        episodes_report(figures, peer_reset, peer_reward)
        figures["tau2"] = {"reset": peer_reset, "reward": peer_reward}
        if peer_reset:
            figures["speedup_vs_tau2_reset"] = round(peer_reset["get_environment_p50_ms"] / reset_p50, 1)
    print("targets met:", ", ".join(f"{k}={v}" for k, v in figures["targets_met"].items()))
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
