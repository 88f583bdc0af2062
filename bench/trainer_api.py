"""Benchmark: the trainer-time API over real HTTP with one client: open, tool calls, finish; p50/p95 and the
Postgres round trips each call costs.

Run by hand: ``.venv/bin/python bench/trainer_api.py [--episodes 30] [--tools 8] [--runs 3] [--port 8466]
[--server asgi]``
against the database named by DATABASE_URL. Prepares what it needs when missing (as ``bench/trainer_load.py``:
the seed-7 world, a snapshot, the starter library, a frozen release ``bench-trainer-load``, a token). Then it
starts gunicorn (one gthread worker, the deployment's settings, DEBUG off) with ``bench/gunicorn_count.py``,
which counts every Postgres statement the worker sends at the psycopg level (the ORM, raw cursors, connection
set-up, and background threads such as the token-usage flusher) and psycopg's BEGIN/COMMIT/ROLLBACK.

One client on one keep-alive connection loops: open an episode on a train row (naming the tool schemas it holds by
their ``tools_sha256``, as ``trainer_bridge.client`` does, so they are sent once), ``--tools`` tool calls
(``get_product``, ``search_orders``, ``get_order_details``, ``search_tickets`` in turn, real ids), finish.
Statements are read from the worker's counter around each request; what the worker sends between requests
(background flushers) is counted too and spread over every request in the per-call averages. ``--runs`` repeats
the whole loop; the figures are the medians over runs.

Beside it, measured in the same run: the floor (``GET /healthz`` on the same server and connection: HTTP, WSGI,
Django's middleware, one ``SELECT 1`` and one Redis SET: about what a call that sends one statement costs), and
the same tool calls in process (``trainer_episode_tool_call``, no HTTP).
tau2-bench has no trainer API over HTTP to compare with (no episodes to open or rewards to fetch; its environment
server, tau2/environment/server.py, puts one shared environment's tools behind FastAPI): its in-process tool call
(``Environment.get_response``, measured in the same run under tau2's Python, ``--tau2-python``) is printed as the floor.

It prints a table, then last a one-line JSON object with every figure.
Bars: tool call p50 <= 4 ms, open <= 6 ms, finish <= 15 ms, <= 1 Postgres statement per tool call.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import trainer_load  # noqa: E402  (sets Django up)
from django.contrib.auth import get_user_model  # noqa: E402

from bench.tau2_peer import HELP, tau2_python, tau2_run  # noqa: E402
from trainer_bridge.authentication import secret_digest  # noqa: E402
from trainer_bridge.models import ApiTokenUse  # noqa: E402
from trainer_bridge.services import api_token_create  # noqa: E402
from trainer_bridge.trainer_services import trainer_episode_open, trainer_episode_tool_call  # noqa: E402
from world_app.models import Product  # noqa: E402

# The server under the API: gunicorn's arguments for the app and its worker.
SERVERS = {
    "wsgi": ("corecraft_site.wsgi", "--worker-class", "gthread", "--threads", "2"),
    "asgi": ("corecraft_site.asgi:application", "--worker-class", "uvicorn.workers.UvicornWorker"),
}
BARS = {"tool": 4.0, "open": 6.0, "finish": 15.0}
KINDS = ("open", "tool", "finish")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else 0.0


def load_average() -> float:
    return os.getloadavg()[0]


class Counter:
    def __init__(self, path: str) -> None:
        self.path = path
        Path(path).write_bytes(b"\0" * 16)

    def read(self) -> tuple[int, int]:
        return struct.unpack("<qq", Path(self.path).read_bytes()[:16])


class Client:
    def __init__(self, port: int, secret: str, counter: Counter) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.counter = counter
        self.token_requests = 0
        self.tools_sha256 = ""  # as a trainer's client: the tool schemas it holds, named in each open
        self.last_bytes = 0

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None, float, int, int]:
        before = self.counter.read()
        self.token_requests += path.startswith("/api/")  # logged uses (the health check is not a token API)
        started = time.perf_counter()
        self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
        response = self.conn.getresponse()
        raw = response.read()
        ms = (time.perf_counter() - started) * 1000
        self.last_bytes = len(raw)
        after = self.counter.read()
        payload = (
            json.loads(raw) if raw and response.getheader("Content-Type", "").startswith("application/json") else None
        )
        return response.status, payload, ms, after[0] - before[0], after[1] - before[1]


def tool_calls(data: dict, count: int, offset: int) -> list[tuple[str, dict]]:
    calls = []
    for i in range(count):
        k = offset + i
        choice = k % 4
        if choice == 0:
            calls.append(("get_product", {"product_id": data["products"][k % len(data["products"])]}))
        elif choice == 1:
            calls.append(("search_orders", {"customer_id": data["customers"][k % len(data["customers"])], "limit": 10}))
        elif choice == 2:
            calls.append(("get_order_details", {"order_id": data["orders"][k % len(data["orders"])]}))
        else:
            calls.append(
                ("search_tickets", {"customer_id": data["customers"][k % len(data["customers"])], "limit": 10})
            )
    return calls


def one_run(client: Client, *, release: str, rows: list[int], data: dict, episodes: int, tools: int) -> dict:
    latency: dict[str, list[float]] = {kind: [] for kind in (*KINDS, "floor")}
    statements: dict[str, list[int]] = {kind: [] for kind in (*KINDS, "floor")}
    commands: dict[str, list[int]] = {kind: [] for kind in (*KINDS, "floor")}
    per_tool: dict[str, list[float]] = {}
    open_bytes: list[int] = []
    errors = 0
    start_counts = client.counter.read()
    for e in range(episodes):
        status, body, ms, st, cm = client.call("GET", "/healthz")
        latency["floor"].append(ms)
        statements["floor"].append(st)
        commands["floor"].append(cm)
        opening = {"release": release, "row_id": rows[e % len(rows)]}
        if client.tools_sha256:
            opening["tools_sha256"] = client.tools_sha256
        status, body, ms, st, cm = client.call("POST", "/api/v1/rollouts/episodes/", opening)
        if status != 201:
            errors += 1
            continue
        open_bytes.append(client.last_bytes)
        if "tools" in body:
            client.tools_sha256 = body["tools_sha256"]
        latency["open"].append(ms)
        statements["open"].append(st)
        commands["open"].append(cm)
        episode_id = body["episode_id"]
        for name, arguments in tool_calls(data, tools, e * tools):
            status, _, ms, st, cm = client.call(
                "POST", f"/api/v1/rollouts/episodes/{episode_id}/tools/{name}/", {"arguments": arguments}
            )
            errors += status != 200
            latency["tool"].append(ms)
            statements["tool"].append(st)
            commands["tool"].append(cm)
            per_tool.setdefault(name, []).append(ms)
        status, _, ms, st, cm = client.call(
            "POST", f"/api/v1/rollouts/episodes/{episode_id}/finish/", {"final_answer": "Done."}
        )
        errors += status != 200
        latency["finish"].append(ms)
        statements["finish"].append(st)
        commands["finish"].append(cm)
    time.sleep(2.5)  # let background flushers (token usage: every second) send what they hold
    end_counts = client.counter.read()
    requests = sum(len(v) for v in latency.values())
    in_requests = sum(sum(v) for v in statements.values())
    background = (end_counts[0] - start_counts[0]) - in_requests
    background_cmd = (end_counts[1] - start_counts[1]) - sum(sum(v) for v in commands.values())
    share, share_cmd = background / requests, background_cmd / requests
    return {
        "p50": {k: statistics.median(v) for k, v in latency.items() if v},
        "p95": {k: percentile(v, 0.95) for k, v in latency.items() if v},
        "statements": {k: statistics.fmean(v) + share for k, v in statements.items() if v},
        "commands": {k: statistics.fmean(v) + share_cmd for k, v in commands.items() if v},
        "background_statements": background,
        "per_tool_p50": {k: statistics.median(v) for k, v in per_tool.items()},
        "open_bytes": statistics.median(open_bytes) if open_bytes else 0,
        "errors": errors,
        "load": load_average(),
    }


def in_process_tool_p50(release, data: dict, tools: int) -> float:
    row = release.rows.filter(split="train").first()
    admin = get_user_model().objects.get(username="admin")
    token = api_token_create(name="bench in-process", scopes=["train:read", "episodes"], created_by=admin).token
    opened = trainer_episode_open(row=row, token=token, credential=token.episode_credential)
    timings = []
    for name, arguments in tool_calls(data, max(tools * 10, 80), 0):
        started = time.perf_counter()
        trainer_episode_tool_call(trainer_episode=opened, name=name, arguments=arguments)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--tools", type=int, default=8, help="tool calls per episode")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8066")))
    parser.add_argument("--tau2-python", help=HELP)
    parser.add_argument(
        "--server",
        choices=("wsgi", "asgi"),
        default="wsgi",
        help="wsgi: gunicorn's gthread worker on the WSGI app (the deployment's); asgi: gunicorn with uvicorn's "
        "worker on the ASGI app (Django runs the sync views in its thread-sensitive executor)",
    )
    args = parser.parse_args()

    release, secret, orders, customers = trainer_load.prepare()
    products = list(Product.objects.order_by("pk").values_list("pk", flat=True)[:200])
    data = {"orders": orders, "customers": customers, "products": products}
    rows = list(release.rows.filter(split="train").values_list("pk", flat=True))

    counter = Counter(tempfile.mkstemp(prefix="trainer-api-count-")[1])
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-" + "x" * 50),
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "COUNT_FILE": counter.path}  # fmt: skip
    log = ROOT / ".run"
    log.mkdir(exist_ok=True)
    with (log / "bench-trainer-api.log").open("wb") as out:
        server = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), *SERVERS[args.server], "-c", str(ROOT / "bench/gunicorn_count.py"),
             "--bind", f"127.0.0.1:{args.port}", "--workers", "1", "--keep-alive", "30", "--timeout", "120"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        for _ in range(240):
            try:
                probe = http.client.HTTPConnection("127.0.0.1", args.port, timeout=2)
                probe.request("GET", "/healthz")
                probe.getresponse().read()
                break
            except OSError:
                time.sleep(0.25)
        client = Client(args.port, secret, counter)
        one_run(client, release=release.slug, rows=rows, data=data, episodes=3, tools=args.tools)  # warm-up
        runs = [
            one_run(client, release=release.slug, rows=rows, data=data, episodes=args.episodes, tools=args.tools)
            for _ in range(args.runs)
        ]
    finally:
        server.terminate()
        server.wait(timeout=30)
        Path(counter.path).unlink(missing_ok=True)
    # Every API request must be a logged use once the server stopped (the flusher's last batch is written at the
    # worker's exit).
    uses_logged = ApiTokenUse.objects.filter(token__secret_sha256=secret_digest(secret)).count()
    in_process = in_process_tool_p50(release, data, args.tools)

    def med(key: str, kind: str) -> float:
        return statistics.median(run[key][kind] for run in runs)

    loads = [round(run["load"], 2) for run in runs]
    print(
        f"trainer API over HTTP, one client, gunicorn 1 worker ({args.server}); {args.runs} runs x "
        f"{args.episodes} episodes x {args.tools} tool calls; load average per run {loads}; medians over runs"
    )
    print(f"{'call':<22}{'p50 ms':>9}{'p95 ms':>9}{'statements':>12}{'+BEGIN/COMMIT':>15}{'bar p50':>9}")
    for kind in ("floor", *KINDS):
        label = {
            "floor": "floor: GET /healthz",
            "open": "open",
            "tool": "tool call",
            "finish": "finish",
        }
        bar = f"{BARS[kind]:.0f}" if kind in BARS else "-"
        print(f"{label[kind]:<22}{med('p50', kind):>9.2f}{med('p95', kind):>9.2f}{med('statements', kind):>12.2f}"
              f"{med('commands', kind):>15.2f}{bar:>9}")  # fmt: skip
    tools_p50 = {name: statistics.median(run["per_tool_p50"][name] for run in runs) for name in runs[0]["per_tool_p50"]}
    open_bytes = statistics.median(run["open_bytes"] for run in runs)
    print(
        f"open answer: {open_bytes / 1000:.1f} KB p50 (the client names the tool schemas it holds by tools_sha256, as "
        "trainer_bridge.client does: they come once per client, in the warm-up's first open)"
    )
    print("tool call p50 by tool: " + ", ".join(f"{name} {ms:.2f} ms" for name, ms in tools_p50.items()))
    tool_p50 = med("p50", "tool")
    print(
        f"same tool calls in process (no HTTP): p50 {in_process:.2f} ms; HTTP tool call / in process = "
        f"{tool_p50 / in_process:.2f}x; HTTP overhead over the floor: {tool_p50 - med('p50', 'floor'):.2f} ms"
    )
    print(
        f"background statements (sent between requests, spread over every request above): "
        f"{[run['background_statements'] for run in runs]}; errors {[run['errors'] for run in runs]}"
    )
    print(f"token uses logged after the server stopped: {uses_logged} of {client.token_requests} API requests")
    peer = tau2_run(tau2_python(args.tau2_python), "tools", "--calls", "20")
    if peer:
        print(
            f"tau2-bench: no trainer API over HTTP to compare; its tool call in process (get_response, tau2 "
            f"{peer['tau2_version']}, this run; a floor, not a peer of HTTP): read p50 {peer['read_p50_ms']:.3f} ms, "
            f"write p50 {peer['write_p50_ms']:.3f} ms"
        )
    figures = {
        "server": args.server,
        "runs": args.runs,
        "episodes": args.episodes,
        "tools_per_episode": args.tools,
        "load_average": loads,
        **{f"{kind}_p50_ms": round(med("p50", kind), 2) for kind in ("floor", *KINDS)},
        **{f"{kind}_p95_ms": round(med("p95", kind), 2) for kind in ("floor", *KINDS)},
        **{f"{kind}_statements": round(med("statements", kind), 2) for kind in ("floor", *KINDS)},
        **{f"{kind}_tx_commands": round(med("commands", kind), 2) for kind in ("floor", *KINDS)},
        "tool_p50_by_tool_ms": {k: round(v, 2) for k, v in tools_p50.items()},
        "open_answer_bytes": open_bytes,
        "in_process_tool_p50_ms": round(in_process, 2),
        "tau2_in_process_read_p50_ms": peer["read_p50_ms"] if peer else None,
        "tau2_in_process_write_p50_ms": peer["write_p50_ms"] if peer else None,
        "errors": sum(run["errors"] for run in runs),
        "token_requests": client.token_requests,
        "token_uses_logged": uses_logged,
        "bars_met": {
            **{f"{kind}_p50": med("p50", kind) <= BARS[kind] for kind in KINDS},
            "tool_statements": med("statements", "tool") <= 1.0,
        },
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
