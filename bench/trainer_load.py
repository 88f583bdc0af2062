"""Benchmark: 32 concurrent trainer clients against gunicorn for 60 s, each looping open -> 2-4 tool calls -> finish.

Run by hand against the database named by DATABASE_URL: ``.venv/bin/python bench/trainer_load.py [--clients 32]
[--seconds 60] [--workers 4] [--port 8057]``. Prepares what it needs when missing: the seed-7 world, a snapshot,
the starter library (approved), a frozen release ``bench-trainer-load`` of 40 of its tasks, and a token
(train:read, episodes, reward) of the admin. Then it starts gunicorn on the port and runs the clients (a thread
each, one HTTP connection each) through the trainer-time API, and reports:

- requests and errors (anything but the expected 2xx) per call kind, p50/p95 latency per call kind;
- the rows in Postgres against the calls made: one ``EpisodeStep`` per tool call answered, one finished
  ``TrainerEpisode`` per finish answered (a lost or doubled write shows as a difference);
- the alternative measured in the same run: the same tool call in process (``trainer_episode_tool_call``, no
  HTTP, no concurrency), and the ratio of the HTTP p50 under load to it.

It prints a table, then last a one-line JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from tasks_app.models import Task, TaskStatus  # noqa: E402
from tasks_app.role_grants import demo_users_ensure  # noqa: E402
from trainer_bridge.models import Release, ReleaseStatus  # noqa: E402
from trainer_bridge.services import api_token_create, release_create, release_freeze  # noqa: E402
from trainer_bridge.trainer_models import TrainerEpisode  # noqa: E402
from trainer_bridge.trainer_services import trainer_episode_open, trainer_episode_tool_call  # noqa: E402
from world_app.models import Customer, EpisodeStep, Order, Product, WorldSnapshot  # noqa: E402

SLUG = "bench-trainer-load"
KINDS = ("open", "tool", "finish")


def prepare() -> tuple[Release, str, list[str], list[str]]:
    call_command("migrate", "--noinput", verbosity=0)
    call_command("seed_world", "--seed", "7", "--scale", "1", "--if-empty", verbosity=0)
    call_command("publish_world", "--note", "bench/trainer_load.py", "--if-changed", verbosity=0)
    demo_users_ensure()
    admin = get_user_model().objects.get(username="admin")
    release = Release.objects.filter(slug=SLUG, status=ReleaseStatus.FROZEN).first()
    if release is None:
        if Task.objects.filter(status=TaskStatus.APPROVED).count() < 40:
            call_command("load_tasks", verbosity=0)
        Release.objects.filter(slug=SLUG).delete()
        release = release_create(slug=SLUG, name="trainer load", seed=7, sizes={"train": 36, "holdout": 4}, user=admin)
        release = release_freeze(release=release, user=admin)
    secret = api_token_create(name=f"bench {timezone.now():%H:%M:%S}", scopes=["train:read", "episodes", "reward"],
                              created_by=admin).secret  # fmt: skip
    orders = list(Order.objects.order_by("pk").values_list("pk", flat=True)[:200])
    customers = list(Customer.objects.order_by("pk").values_list("pk", flat=True)[:200])
    return release, secret, orders, customers


def tool_call(orders: list[str], customers: list[str], products: list[str]) -> tuple[str, dict]:
    choice = random.randrange(4)
    if choice == 0:
        return "get_order_details", {"order_id": random.choice(orders)}
    if choice == 1:
        return "search_orders", {"customer_id": random.choice(customers), "limit": 10}
    if choice == 2:
        return "search_tickets", {"customer_id": random.choice(customers), "limit": 10}
    return "get_product", {"product_id": random.choice(products)}


class Client(threading.Thread):
    def __init__(self, base: str, secret: str, release: str, rows: list[int], deadline: float, data: dict) -> None:
        super().__init__(daemon=True)
        self.base, self.release, self.rows, self.deadline, self.data = base, release, rows, deadline, data
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.latency: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.errors: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.answered: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.episodes: list[str] = []
        self.samples: list[str] = []

    def post(self, kind: str, path: str, body: dict) -> dict | None:
        request = urllib.request.Request(  # noqa: S310 - our own server on loopback
            self.base + path, data=json.dumps(body).encode(), headers=self.headers, method="POST"
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                payload = json.loads(response.read())
                ok = 200 <= response.status < 300
        except urllib.error.HTTPError as exc:
            payload, ok = None, False
            if len(self.samples) < 3:
                self.samples.append(f"{kind} {exc.code}: {exc.read()[:200]!r}")
        except OSError as exc:
            payload, ok = None, False
            if len(self.samples) < 3:
                self.samples.append(f"{kind}: {exc!r}")
        self.latency[kind].append((time.perf_counter() - started) * 1000)
        if ok:
            self.answered[kind] += 1
        else:
            self.errors[kind] += 1
        return payload

    def run(self) -> None:
        while time.monotonic() < self.deadline:
            opened = self.post("open", "/api/v1/rollouts/episodes/", {"release": self.release,
                                                                      "row_id": random.choice(self.rows)})  # fmt: skip
            if not opened:
                continue
            episode_id = opened["episode_id"]
            self.episodes.append(episode_id)
            for _ in range(random.randint(2, 4)):
                name, arguments = tool_call(self.data["orders"], self.data["customers"], self.data["products"])
                self.post("tool", f"/api/v1/rollouts/episodes/{episode_id}/tools/{name}/", {"arguments": arguments})
            self.post("finish", f"/api/v1/rollouts/episodes/{episode_id}/finish/", {"final_answer": "Done."})


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def in_process_tool_ms(release: Release, data: dict, calls: int = 200) -> float:
    """The alternative: the same tool calls through the service in this process, one at a time."""
    row = release.rows.filter(split="train").first()
    admin = get_user_model().objects.get(username="admin")
    token = api_token_create(name="bench in-process", scopes=["train:read", "episodes"], created_by=admin).token
    opened = trainer_episode_open(row=row, token=token, credential=token.episode_credential)
    timings = []
    for _ in range(calls):
        name, arguments = tool_call(data["orders"], data["customers"], data["products"])
        started = time.perf_counter()
        trainer_episode_tool_call(trainer_episode=opened, name=name, arguments=arguments)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8, help="gunicorn threads per worker")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8057")) + 7)
    args = parser.parse_args()

    release, secret, orders, customers = prepare()
    products = list(Product.objects.order_by("pk").values_list("pk", flat=True)[:200])
    data = {"orders": orders, "customers": customers, "products": products}
    rows = list(release.rows.filter(split="train").values_list("pk", flat=True))
    snapshot = WorldSnapshot.objects.order_by("-version").values_list("version", flat=True).first()
    print(f"release {release.slug}: {len(rows)} train rows; snapshot v{snapshot}")

    env = {**os.environ, "DB_POOL": "1", "DB_POOL_MAX": str(max(4, args.threads + 2))}
    log = (ROOT / ".run").resolve()
    log.mkdir(exist_ok=True)
    with (log / "bench-trainer-load.log").open("wb") as out:
        server = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "corecraft_site.wsgi", "--bind", f"127.0.0.1:{args.port}",
             "--workers", str(args.workers), "--threads", str(args.threads), "--worker-class", "gthread",
             "--timeout", "120"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).read()  # noqa: S310
                break
            except OSError:
                time.sleep(0.5)
        started_at = timezone.now()
        deadline = time.monotonic() + args.seconds
        clients = [Client(base, secret, release.slug, rows, deadline, data) for _ in range(args.clients)]
        wall = time.monotonic()
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=args.seconds + 120)
        wall = time.monotonic() - wall
    finally:
        server.terminate()
        server.wait(timeout=30)

    latency = {kind: [ms for c in clients for ms in c.latency[kind]] for kind in KINDS}
    errors = {kind: sum(c.errors[kind] for c in clients) for kind in KINDS}
    answered = {kind: sum(c.answered[kind] for c in clients) for kind in KINDS}
    episode_ids = [e for c in clients for e in c.episodes]
    step_rows = EpisodeStep.objects.filter(episode_id__in=episode_ids).count()
    finished_rows = TrainerEpisode.objects.filter(pk__in=episode_ids, status="finished").count()
    in_process_ms = in_process_tool_ms(release, data)
    requests = sum(len(v) for v in latency.values())

    print(f"{args.clients} clients for {args.seconds:.0f} s against gunicorn ({args.workers} workers x "
          f"{args.threads} threads), started {started_at:%H:%M:%S}, wall {wall:.1f} s")  # fmt: skip
    print(f"{'call':<8}{'requests':>10}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}")
    for kind in KINDS:
        print(f"{kind:<8}{len(latency[kind]):>10}{errors[kind]:>8}{statistics.median(latency[kind] or [0]):>10.1f}"
              f"{percentile(latency[kind], 0.95):>10.1f}")  # fmt: skip
    print(f"requests {requests}, {requests / wall:.1f}/s; errors {sum(errors.values())}")
    print(f"rows: episode steps {step_rows} = tool calls answered {answered['tool']}; "
          f"finished episodes {finished_rows} = finishes answered {answered['finish']}")  # fmt: skip
    tool_p50 = statistics.median(latency["tool"] or [0])
    print(f"tool call in process (no HTTP, one at a time): p50 {in_process_ms:.2f} ms; "
          f"HTTP p50 under load / in process = {tool_p50 / in_process_ms:.1f}x")  # fmt: skip
    samples = [s for c in clients for s in c.samples][:5]
    if samples:
        print("first errors: " + " | ".join(samples))
    figures = {
        "clients": args.clients,
        "seconds": args.seconds,
        "requests": requests,
        "requests_per_s": round(requests / wall, 1),
        "errors": sum(errors.values()),
        "errors_by_call": errors,
        **{f"{kind}_p50_ms": round(statistics.median(latency[kind] or [0]), 1) for kind in KINDS},
        **{f"{kind}_p95_ms": round(percentile(latency[kind], 0.95), 1) for kind in KINDS},
        "tool_calls_answered": answered["tool"],
        "episode_step_rows": step_rows,
        "finishes_answered": answered["finish"],
        "finished_episode_rows": finished_rows,
        "rows_match_calls": step_rows == answered["tool"] and finished_rows == answered["finish"],
        "in_process_tool_p50_ms": round(in_process_ms, 2),
        "http_under_load_vs_in_process": round(tool_p50 / in_process_ms, 1),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
