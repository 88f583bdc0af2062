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

It prints a table, then last a one-line JSON object with every figure.
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
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measuring import free_port, gunicorn_start, pct  # noqa: E402

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
    return parser.parse_args()


ARGS = parse_args()
if ARGS.database_url:
    os.environ["DATABASE_URL"] = ARGS.database_url

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connections  # noqa: E402
from django.db.models import Exists, OuterRef  # noqa: E402

from world_app import clock  # noqa: E402
from world_app.episodes import episode_create, episode_log_settle, episode_step, episode_world  # noqa: E402
from world_app.episodes.cache import episode_cache  # noqa: E402
from world_app.episodes.step_log import step_writer  # noqa: E402
from world_app.generator import world_exists, world_seed  # noqa: E402
from world_app.models import (  # noqa: E402
    Build,
    BuildComponent,
    Customer,
    Employee,
    Episode,
    EpisodeStep,
    Escalation,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Shipment,
    SupportTicket,
)
from world_app.snapshots import snapshot_publish  # noqa: E402
from world_app.tool_examples import example_arguments  # noqa: E402
from world_app.tools import call_tool, world_tools  # noqa: E402
from world_app.tools.coverage import warranty_coverage  # noqa: E402

ArgumentsFor = Callable[[int], dict]


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


# --- arguments: reads rotate over real ids, writes are chosen to succeed ---------------------------------------


def _cycle(values: list, fallback) -> Callable[[int], object]:
    values = values or [fallback]
    return lambda i: values[i % len(values)]


def _units_under_warranty(limit: int) -> list[tuple[str, str]]:
    """(order id, line id) per unit of delivered lines still under warranty, on orders with money taken and no
    refund yet (a refunded unit can be neither refunded nor claimed again)."""
    taken = Payment.objects.filter(order_id=OuterRef("order_id"), status__in=("captured", "completed"))
    refunded = Refund.objects.filter(payment__order_id=OuterRef("order_id"))
    delivered = dict(
        Shipment.objects.filter(status="delivered", delivered_at__isnull=False)
        .order_by("order_id", "delivered_at")
        .values_list("order_id", "delivered_at")
    )
    lines = (
        OrderLineItem.objects.filter(order__status="fulfilled", order_id__in=list(delivered))
        .filter(Exists(taken))
        .exclude(Exists(refunded))
        .select_related("product")
        .order_by("-order__created_at", "id")
    )
    units: list[tuple[str, str]] = []
    for line in lines.iterator():
        if warranty_coverage(delivered[line.order_id], line.product.warranty_months).is_active:
            units.extend((line.order_id, line.id) for _ in range(line.quantity))
            if len(units) >= limit:
                break
    return units


def _toggle(pool: list[tuple[str, str]], states: tuple[str, str]) -> Callable[[int], tuple[str, str]]:
    """Call ``i`` moves row ``i % len(pool)`` (``(id, current state)``) to the other of two states, and back on
    the next round: stateless, so any call order stays valid."""

    def step(i: int) -> tuple[str, str]:
        row, current = pool[i % len(pool)]
        other = states[1] if current == states[0] else states[0]
        return row, other if (i // len(pool)) % 2 == 0 else current

    return step


def bench_arguments(samples: int) -> dict[str, ArgumentsFor]:
    """Arguments for every tool for ``samples`` calls in one episode (call inside ``episode_world``)."""
    examples = example_arguments()
    now = clock.world_now()
    orders = list(
        Order.objects.filter(status="fulfilled", created_at__gte=now - timedelta(days=120))
        .order_by("-created_at")
        .values_list("id", flat=True)[:200]
    )
    customers = list(
        SupportTicket.objects.order_by("-created_at").values_list("customer_id", flat=True).distinct()[:200]
    )
    last_names = list(Customer.objects.filter(pk__in=customers).values_list("last_name", flat=True))
    products = list(Product.objects.filter(lifecycle="active").order_by("id").values_list("id", flat=True)[:200])
    lines = list(OrderLineItem.objects.filter(order_id__in=orders).order_by("id").values_list("id", flat=True))
    with_parts = BuildComponent.objects.filter(build_id=OuterRef("pk"))
    builds = list(Build.objects.filter(Exists(with_parts)).order_by("id").values_list("id", "customer_id")[:200])
    editable = list(
        Build.objects.filter(Exists(with_parts), status__in=("draft", "saved"))
        .order_by("id")
        .values_list("id", flat=True)[:50]
    )
    open_tickets = list(
        SupportTicket.objects.filter(status="open", assignee__is_active=True)
        .order_by("id")
        .values_list("id", "assignee_id")[: max(samples, 50)]
    )
    agent = Employee.objects.filter(is_active=True, support_role="agent").order_by("id").values_list("id", flat=True)
    agent_id = agent.first()
    engineer = (
        Employee.objects.filter(is_active=True, department="engineering").order_by("id").values_list("id", flat=True)
    )
    # Escalating moves a ticket to escalated: keep those tickets apart from the ones whose status is toggled.
    escalations = _escalation_pool(samples, agent_id, engineer.first(), avoid={t for t, _ in open_tickets})
    toggled_orders = list(
        Order.objects.filter(status__in=("paid", "backorder"))
        .filter(Exists(Payment.objects.filter(order_id=OuterRef("pk"), status__in=("captured", "completed"))))
        .order_by("id")
        .values_list("id", "status")[:20]
    )
    units = _units_under_warranty(2 * samples + 10)
    refund_units, claim_units = units[0::2], units[1::2]
    categories = ["gpu", "cpu", "motherboard", "memory", "storage", "psu", "case", "cooling", "monitor"]
    kb_queries = ["return window", "warranty", "refund", "shipping", "gpu", "compatibility", "bios", "loyalty"]

    order = _cycle(orders, examples["get_order_details"]["order_id"])
    customer = _cycle(customers, examples["search_tickets"]["customer_id"])
    product = _cycle(products, examples["get_product"]["product_id"])
    build = _cycle(builds, (examples["validate_build_compatibility"]["build_id"], customer(0)))
    order_step = _toggle(toggled_orders or [(orders[0], "paid")], ("backorder", "paid"))
    ticket_step = _toggle(
        [(t, "open") for t, _ in open_tickets] or [("tkt-00001", "open")], ("pending_customer", "open")
    )
    resolver = _cycle(open_tickets, ("tkt-00001", agent_id))
    refund_unit = _cycle(refund_units, ("ord-00001", "li-00001"))
    claim_unit = _cycle(claim_units, ("ord-00001", "li-00001"))
    parts = examples["create_build"]["parts"]

    def priced(i: int) -> dict:
        return {
            **examples["calculate_price"],
            "items": [{"product_id": product(i)}, {"product_id": product(i + 7), "quantity": 2}],
        }

    return {
        "search_customers": lambda i: {"query": _cycle(last_names, "Smith")(i)},
        "search_orders": lambda i: {"customer_id": customer(i)},
        "search_products": lambda i: {
            "category": categories[i % len(categories)],
            "in_stock": True,
            "sort": "price_desc",
        },
        "search_tickets": lambda i: {"customer_id": customer(i)},
        "search_shipments": lambda i: {"order_id": order(i)},
        "search_payments": lambda i: {"order_id": order(i)},
        "search_employees": lambda i: {"department": ("support", "engineering", "finance")[i % 3], "is_active": True},
        "search_knowledge_base": lambda i: {"query": kb_queries[i % len(kb_queries)]},
        "search_builds": lambda i: {"customer_id": build(i)[1]},
        "get_order_details": lambda i: {"order_id": order(i)},
        "get_product": lambda i: {"product_id": product(i)},
        "get_customer_ticket_history": lambda i: {"customer_id": customer(i)},
        "check_warranty_status": lambda i: {"line_item_id": _cycle(lines, "li-00001")(i)},
        "calculate_price": priced,
        "validate_build_compatibility": lambda i: {"build_id": build(i)[0]},
        "create_refund": lambda i: {
            "order_id": refund_unit(i)[0],
            "reason": "defective",
            "lines": [{"line_item_id": refund_unit(i)[1], "quantity": 1}],
            "opened": True,
            "notes": "Dead on arrival.",
        },
        "update_order_status": lambda i: dict(
            zip(("order_id", "status"), order_step(i), strict=True), reason="stock check"
        ),
        "create_resolution": lambda i: {
            "ticket_id": resolver(i)[0],
            "outcome": "troubleshooting_steps",
            "summary": "Reseated the card and updated the driver; the fault is gone.",
            "resolved_by": resolver(i)[1],
        },
        "create_escalation": lambda i: escalations[i % len(escalations)],
        "create_warranty_claim": lambda i: {
            "line_item_id": claim_unit(i)[1],
            "issue_description": "Stopped powering on after normal use.",
            "defect_category": ("manufacturing_defect", "unknown")[i % 2],
            "remedy": "replacement",
        },
        "update_ticket_status": lambda i: dict(zip(("ticket_id", "status"), ticket_step(i), strict=True)),
        "create_build": lambda i: {"customer_id": customer(i), "name": f"Bench build {i}", "parts": parts},
        "update_build": lambda i: {"build_id": _cycle(editable, "bld-00001")(i), "name": f"Revised build {i}"},
    }


def _escalation_pool(samples: int, agent_id: str | None, engineer_id: str | None, *, avoid: set[str]) -> list[dict]:
    pool = []
    kinds = {"technical": engineer_id, "product_specialist": None, "policy_exception": None}
    tickets = (
        SupportTicket.objects.filter(status__in=("new", "open", "pending_customer"))
        .exclude(pk__in=avoid)
        .order_by("id")
        .values_list("id", flat=True)[: samples + 10]
    )
    for ticket_id in tickets:
        taken = set(Escalation.objects.filter(ticket_id=ticket_id).values_list("escalation_type", flat=True))
        for kind, assigned_to in kinds.items():
            if kind in taken:
                continue
            entry = {
                "ticket_id": ticket_id,
                "escalation_type": kind,
                "notes": "Customer still sees the fault after every documented fix; please take over.",
                "created_by": agent_id,
            }
            if assigned_to:
                entry["assigned_to"] = assigned_to
            pool.append(entry)
    return pool or [{"ticket_id": "tkt-00001", "escalation_type": "technical", "notes": "x" * 30}]


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
    print("targets met (scale 1 targets):", ", ".join(f"{k}={v}" for k, v in figures["targets_met"].items()))
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
