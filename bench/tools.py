"""Benchmark: the latency of every agent tool, in process and over real HTTP, and calls per second.

Run by hand: ``.venv/bin/python bench/tools.py [--scale 100] [--database-url postgres://...]``.
Uses the database named by DATABASE_URL (or ``--database-url``). If its world is empty, seeds seed 7 at the
requested scale; if it holds a world of another scale, it stops (point it at another database). Publishes a
snapshot when none matches the live world, then:

- in process: ``call_tool`` on one hot episode, every tool with realistic arguments taken from the snapshot
  (reads rotate over real ids; writes are chosen to succeed: refunds and warranty claims of units still under
  warranty, status changes that toggle, resolutions of open tickets...);
- over HTTP: the same calls through ``POST /api/v1/episodes/<id>/tools/<name>/`` on a gunicorn server started on
  127.0.0.1 (one process, keep-alive connection, token auth, DEBUG off).

Then tau2-bench's retail tools in the same run (bench/peers/tau2_retail.py under tau2's Python; skipped with a
note when it is not installed), beside ours with the ratio. It prints a table, then last a one-line JSON object.
Targets (in process, scale 1): read p50 <= 3 ms (search, read and compute tools) and write p50 <= 5 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measuring import free_port, gunicorn_start, pct  # noqa: E402
from bench.tau2_peer import HELP, tau2_python, tau2_run, tools_report  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

LABEL = "bench/tools.py"
CUSTOMERS_AT_SCALE_1 = 1428  # seed 7: about this many customers per unit of scale (618 base + the casebook's)
TARGET_READ_P50_MS = 3.0
TARGET_WRITE_P50_MS = 5.0
# Issue 18's bars (in process, scale 1): the speed of the peers' in-memory dicts.
BAR_READ_P50_MS = 0.3
BAR_WRITE_P50_MS = 0.6
BAR_STEP_OVERHEAD_P50_MS = 0.1
BENCH_USER = "bench-tools"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="World scale to measure at (seeded if empty).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", help="Use this database instead of DATABASE_URL.")
    parser.add_argument("--calls", type=int, default=60, help="Timed in-process calls per tool.")
    parser.add_argument("--http-calls", type=int, default=30, help="Timed HTTP calls per tool.")
    parser.add_argument("--no-http", action="store_true", help="Skip the HTTP half.")
    parser.add_argument("--tau2-python", help=HELP)
    return parser.parse_args()


ARGS = parse_args()
if ARGS.database_url:
    os.environ["DATABASE_URL"] = ARGS.database_url

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connections  # noqa: E402

from bench.tool_arguments import bench_arguments  # noqa: E402
from world_app.episodes import episode_create, episode_log_settle, episode_step, episode_world  # noqa: E402
from world_app.episodes.cache import episode_cache  # noqa: E402
from world_app.episodes.step_log import step_writer  # noqa: E402
from world_app.generator import world_exists, world_seed  # noqa: E402
from world_app.models import (  # noqa: E402
    Customer,
    Episode,
    EpisodeStep,
)
from world_app.snapshots import snapshot_publish  # noqa: E402
from world_app.tools import call_tool, world_tools  # noqa: E402

# --- the world ----------------------------------------------------------------------------------------------------


def ensure_migrated() -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        sys.exit("the database has unapplied migrations: run `python manage.py migrate` on it first")


def ensure_world(*, seed: int, scale: float) -> int:
    customers = Customer._base_manager.count()
    if not world_exists():
        print(f"seeding the world (seed {seed}, scale {scale:g}); at scale 100 this takes minutes...", flush=True)
        world_seed(seed=seed, scale=scale)
        customers = Customer._base_manager.count()
    expected = CUSTOMERS_AT_SCALE_1 * scale
    if abs(customers - expected) > 0.25 * expected:
        sys.exit(
            f"this database's world has {customers} customers, about scale {customers / CUSTOMERS_AT_SCALE_1:.3g}, "
            f"not {scale:g}: point --database-url at an empty database (or one seeded at scale {scale:g})"
        )
    return customers


# --- in process ---------------------------------------------------------------------------------------------------


def bench_in_process(snapshot, samples: int) -> dict[str, dict]:
    episode = episode_create(snapshot=snapshot, label=LABEL)
    with episode_world(episode):
        arguments = bench_arguments(samples)
    # Warm-up on a throwaway episode: imports, first queries, statement caches.
    warm = episode_create(snapshot=snapshot, label=LABEL)
    for found in world_tools():
        call_tool(warm, found.name, arguments[found.name](samples + 1))
    figures = {}
    episode_log_settle(episode)
    for found in world_tools():
        timings, errors, first_error = [], 0, None
        writer_before = step_writer.statements
        for i in range(samples):
            args = arguments[found.name](i)
            started = time.perf_counter()
            result = call_tool(episode, found.name, args)
            timings.append((time.perf_counter() - started) * 1000)
            if isinstance(result, dict) and "error" in result:
                errors += 1
                first_error = first_error or result["error"]["message"]
        started = time.perf_counter()
        episode_log_settle(episode)  # the tool's last batch is written before its steps are read: timed, counted
        timings[-1] += (time.perf_counter() - started) * 1000
        log_statements = (step_writer.statements - writer_before) / samples
        inside = list(
            EpisodeStep.objects.filter(episode=episode, name=found.name).values_list("duration_ms", flat=True)
        )
        figures[found.name] = {
            "group": found.group,
            "ms": timings,
            "tool_ms": inside,
            "errors": errors,
            "first_error": first_error,
            "log_statements": log_statements,
            **profile_statements(warm, found.name, [arguments[found.name](samples + 2 + k) for k in range(5)]),
        }
    return figures


def profile_statements(episode, name: str, calls: list[dict]) -> dict:
    """Statements per call and their time, on Postgres (the log) and on SQLite (the episode's world)."""
    seen = {"default": [0, 0.0], "episode": [0, 0.0]}

    def timed(alias: str):
        def wrapper(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                seen[alias][0] += 1
                seen[alias][1] += (time.perf_counter() - started) * 1000

        return wrapper

    with (
        connections["default"].execute_wrapper(timed("default")),
        connections["episode"].execute_wrapper(timed("episode")),
    ):
        for args in calls:
            call_tool(episode, name, args)
    n = len(calls)
    return {
        "pg_statements": seen["default"][0] / n,
        "pg_ms": round(seen["default"][1] / n, 3),
        "sqlite_statements": seen["episode"][0] / n,
        "sqlite_ms": round(seen["episode"][1] / n, 3),
    }


def bench_step_overhead(snapshot, samples: int = 300) -> list[float]:
    """The engine's fixed cost of one logged call: a step whose call does nothing (its batch writes included:
    the timed steps span several batches, and the last is written inside the timing)."""
    episode = episode_create(snapshot=snapshot, label=LABEL)
    for _ in range(10):
        episode_step(episode=episode, name="noop", arguments={}, fn=dict)
    episode_log_settle(episode)
    timings = []
    for i in range(samples):
        started = time.perf_counter()
        episode_step(episode=episode, name="noop", arguments={}, fn=dict)
        if i == samples - 1:
            episode_log_settle(episode)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


# --- over HTTP ----------------------------------------------------------------------------------------------------


def _token() -> str:
    """A fresh API token (episodes scope) of the bench user: the world API takes the same bearer tokens."""
    from django.contrib.auth import get_user_model

    from trainer_bridge.services import api_token_create

    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    return api_token_create(name="bench/tools.py", scopes=["episodes"], created_by=user).secret


def _request(conn: http.client.HTTPConnection, method: str, path: str, headers: dict, body: dict | None = None):
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def bench_http(snapshot, samples: int) -> dict[str, dict]:
    port = free_port()
    server = gunicorn_start(
        port, env={"SECRET_KEY": "bench-tools-not-secret", "LOG_LEVEL": "WARNING"}, workers=1, threads=1
    )
    try:
        headers = {"Authorization": f"Bearer {_token()}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        status, episode = _request(
            conn, "POST", "/api/v1/episodes/", headers, {"snapshot_version": snapshot.version, "label": LABEL}
        )
        if status != 201:
            sys.exit(f"could not open an episode over HTTP: {status} {episode}")
        status, warm = _request(conn, "POST", "/api/v1/episodes/", headers, {"label": LABEL})
        with episode_world(episode["id"]):
            arguments = bench_arguments(samples)
        for found in world_tools():
            _request(
                conn,
                "POST",
                f"/api/v1/episodes/{warm['id']}/tools/{found.name}/",
                headers,
                arguments[found.name](samples + 1),
            )
        figures = {}
        for found in world_tools():
            path = f"/api/v1/episodes/{episode['id']}/tools/{found.name}/"
            timings, errors = [], 0
            for i in range(samples):
                body = arguments[found.name](i)
                started = time.perf_counter()
                status, answer = _request(conn, "POST", path, headers, body)
                timings.append((time.perf_counter() - started) * 1000)
                if status != 200:
                    sys.exit(f"{found.name}: HTTP {status} {answer}")
                errors += answer["is_error"]
            figures[found.name] = {"group": found.group, "ms": timings, "errors": errors}
        conn.close()
        return figures
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


# --- report -------------------------------------------------------------------------------------------------------


def _group_samples(figures: dict[str, dict], *, write: bool, key: str = "ms") -> list[float]:
    return [ms for f in figures.values() if (f["group"] == "write") == write for ms in f[key]]


def main() -> None:
    settings.DEBUG = False  # no query log: measure the tools, not Django's debug cursor
    ensure_migrated()
    customers = ensure_world(seed=ARGS.seed, scale=ARGS.scale)
    snapshot = snapshot_publish(note=f"{LABEL} (scale {ARGS.scale:g})", if_changed=True)
    entities = sum(snapshot.entity_counts.values())
    try:
        local = bench_in_process(snapshot, ARGS.calls)
        overhead = bench_step_overhead(snapshot)
        remote = {} if ARGS.no_http else bench_http(snapshot, ARGS.http_calls)
        peer = tau2_run(tau2_python(ARGS.tau2_python), "tools", "--calls", str(ARGS.calls))
    finally:
        ids = list(Episode.objects.filter(label=LABEL).values_list("id", flat=True))
        Episode.objects.filter(pk__in=ids).delete()
        for episode_id in ids:
            episode_cache.discard(episode_id)
        from django.contrib.auth import get_user_model

        get_user_model().objects.filter(username=BENCH_USER).delete()

    reads, writes = _group_samples(local, write=False), _group_samples(local, write=True)
    tool_figures = {}
    print(f"world: scale {ARGS.scale:g}, {entities:,} entities ({customers:,} customers), snapshot v{snapshot.version}")
    print(
        f"{'tool':30s} {'group':8s} {'in-process p50':>14s} {'p95':>8s} {'tool p50':>9s} "
        f"{'HTTP p50':>9s} {'p95':>8s} {'errors':>7s} {'PG stmts/ms':>12s} {'SQLite stmts/ms':>16s}"
    )
    for name, f in local.items():
        http_ms = remote.get(name, {}).get("ms") or [float("nan")]
        row = {
            "group": f["group"],
            "p50_ms": round(pct(f["ms"], 0.5), 3),
            "p95_ms": round(pct(f["ms"], 0.95), 3),
            "tool_p50_ms": round(pct(f["tool_ms"], 0.5), 3),
            "http_p50_ms": round(pct(http_ms, 0.5), 3) if remote else None,
            "http_p95_ms": round(pct(http_ms, 0.95), 3) if remote else None,
            "errors": f["errors"],
            "http_errors": remote[name]["errors"] if remote else None,
            "pg_statements": f["pg_statements"],
            "pg_ms": f["pg_ms"],
            "sqlite_statements": f["sqlite_statements"],
            "sqlite_ms": f["sqlite_ms"],
        }
        tool_figures[name] = row
        errors = f"{f['errors']}/{len(f['ms'])}"
        http_cells = f"{row['http_p50_ms']:9.2f} {row['http_p95_ms']:8.2f}" if remote else f"{'-':>9s} {'-':>8s}"
        print(
            f"{name:30s} {f['group']:8s} {row['p50_ms']:14.2f} {row['p95_ms']:8.2f} {row['tool_p50_ms']:9.2f} "
            f"{http_cells} {errors:>7s} {f['pg_statements']:5.0f} /{f['pg_ms']:5.2f} "
            f"{f['sqlite_statements']:8.0f} /{f['sqlite_ms']:5.2f}"
        )
    local_calls = sum(len(f["ms"]) for f in local.values())
    local_seconds = sum(sum(f["ms"]) for f in local.values()) / 1000
    figures = {
        "scale": ARGS.scale,
        "entities": entities,
        "snapshot_version": snapshot.version,
        "calls_per_tool": ARGS.calls,
        "read_p50_ms": round(pct(reads, 0.5), 3),
        "read_p95_ms": round(pct(reads, 0.95), 3),
        "write_p50_ms": round(pct(writes, 0.5), 3),
        "write_p95_ms": round(pct(writes, 0.95), 3),
        "read_tool_only_p50_ms": round(pct(_group_samples(local, write=False, key="tool_ms"), 0.5), 3),
        "write_tool_only_p50_ms": round(pct(_group_samples(local, write=True, key="tool_ms"), 0.5), 3),
        "in_process_calls_per_s": round(local_calls / local_seconds, 1),
        "step_overhead_p50_ms": round(pct(overhead, 0.5), 3),
        "step_overhead_p95_ms": round(pct(overhead, 0.95), 3),
        "step_overhead_mean_ms": round(sum(overhead) / len(overhead), 3),
        "log_defer": settings.EPISODE_LOG_DEFER,
        "log_batch": settings.EPISODE_LOG_BATCH,
        "log_statements_per_call": round(
            sum(f["log_statements"] * len(f["ms"]) for f in local.values()) / sum(len(f["ms"]) for f in local.values()),
            3,
        ),
        "error_results": sum(f["errors"] for f in local.values()),
        "tools": tool_figures,
    }
    if remote:
        http_reads, http_writes = _group_samples(remote, write=False), _group_samples(remote, write=True)
        http_calls = sum(len(f["ms"]) for f in remote.values())
        figures |= {
            "http_calls_per_tool": ARGS.http_calls,
            "http_read_p50_ms": round(pct(http_reads, 0.5), 3),
            "http_write_p50_ms": round(pct(http_writes, 0.5), 3),
            "http_calls_per_s": round(http_calls / (sum(sum(f["ms"]) for f in remote.values()) / 1000), 1),
        }
    figures["targets_met"] = {
        "read_p50_le_3ms": figures["read_p50_ms"] <= TARGET_READ_P50_MS,
        "write_p50_le_5ms": figures["write_p50_ms"] <= TARGET_WRITE_P50_MS,
        "issue18_read_p50_le_0.3ms": figures["read_p50_ms"] <= BAR_READ_P50_MS,
        "issue18_write_p50_le_0.6ms": figures["write_p50_ms"] <= BAR_WRITE_P50_MS,
        "issue18_step_overhead_p50_le_0.1ms": figures["step_overhead_p50_ms"] <= BAR_STEP_OVERHEAD_P50_MS,
    }
    print(
        f"in process: read p50 {figures['read_p50_ms']} ms (p95 {figures['read_p95_ms']}), write p50 "
        f"{figures['write_p50_ms']} ms (p95 {figures['write_p95_ms']}); tool code alone: read p50 "
        f"{figures['read_tool_only_p50_ms']} ms, write p50 {figures['write_tool_only_p50_ms']} ms; "
        f"{figures['in_process_calls_per_s']} calls/s"
    )
    log_how = (
        f"the step deferred into its batch of {settings.EPISODE_LOG_BATCH}, written by the lease holder"
        if settings.EPISODE_LOG_DEFER
        else "the one-statement append of the step to the episode's log in Postgres (EPISODE_LOG_DEFER off)"
    )
    print(
        f"where the time goes: a logged call that does nothing costs {figures['step_overhead_p50_ms']} ms (p50; p95 "
        f"{figures['step_overhead_p95_ms']}, mean {figures['step_overhead_mean_ms']}, batch writes included: "
        f"{log_how}); the step log's own statements (the writer's lease, batch writes): "
        f"{figures['log_statements_per_call']} per call; "
        "'tool p50' is the tool's own time in the episode's SQLite world; PG/SQLite columns: statements per call "
        "on Django's connection"
    )
    print(
        f"issue 18 bars: read p50 {figures['read_p50_ms']} ms (bar {BAR_READ_P50_MS}), write p50 "
        f"{figures['write_p50_ms']} ms (bar {BAR_WRITE_P50_MS}), logged no-op step p50 "
        f"{figures['step_overhead_p50_ms']} ms (bar {BAR_STEP_OVERHEAD_P50_MS})"
    )
    if remote:
        print(
            f"over HTTP (gunicorn, 1 process, keep-alive): read p50 {figures['http_read_p50_ms']} ms, write p50 "
            f"{figures['http_write_p50_ms']} ms; {figures['http_calls_per_s']} calls/s"
        )
    print(f"error results (refusals the tools returned): {figures['error_results']} of {local_calls} in-process calls")
    for name, f in local.items():
        if f["first_error"]:
            print(f"  {name}: {f['errors']}, e.g. {f['first_error'][:160]}")
    if peer:
        tools_report(figures, peer)
        figures["tau2"] = peer
    print("targets met (scale 1 targets):", ", ".join(f"{k}={v}" for k, v in figures["targets_met"].items()))
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
