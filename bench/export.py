"""Benchmark: freeze and export a release of 10,000 synthetic tasks to JSONL and verl parquet; time, memory, bytes.

Run by hand: ``.venv/bin/python bench/export.py [--tasks 10000] [--database-url postgres://.../corecraft_bench_export]``.
Uses its own database (default ``corecraft_bench_export`` on the DATABASE_URL server; created and migrated when
missing). It bulk-creates the synthetic approved tasks once (instructions from a seeded vocabulary, two criteria
each, one family of five per 50 tasks), then for releases of 2,500 and 10,000 rows:

- freezes the release (selection, near-duplicate groups, the stratified split, rows with checksums, manifest);
- exports both splits to JSONL (``jsonl``: rows name their tool schemas by ``tools_sha256``, the tools file holds
  them once; ``jsonl-inline``: the schemas on every line, as every JSONL export was before issue 18) and to verl
  parquet with the streaming writers, and, for comparison, with a non-streaming alternative that loads every row
  first (a list of rows, one ``json.dumps`` per file / one ``pa.Table`` for the whole file);
- counts the bytes of each file (a ``jsonl`` export's with its tools file), per row and in all.

Memory is the peak RSS above the process's RSS before the export, measured in a fresh child process per
(release size, format, mode), so arrow's C++ allocations count too. Each child is given the database by name
(``--database-url``) and reports the one it measured; the run stops if it is not the one given. Streaming keeps
memory flat as the release grows; the non-streaming alternative grows with it. Target: freeze + JSONL (``jsonl``)
+ parquet of 10,000 tasks <= 10 s.
Prints a table, then last a one-line JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

LABEL = "bench/export.py"
BENCH_USER = "bench-export"
SIZES = (2500, 10000)
FORMATS = ("jsonl", "jsonl-inline", "verl-parquet")
TARGET_S = 10.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10000, help="Synthetic approved tasks in the pool.")
    parser.add_argument(
        "--database-url", help="Use this database (default: corecraft_bench_export on DATABASE_URL's server)."
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: "slug,split,format,mode"
    return parser.parse_args()


ARGS = parse_args()


def _bench_database_url() -> str:
    if ARGS.database_url:
        return ARGS.database_url
    base = urlparse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/corecraft"))
    return urlunparse(base._replace(path="/corecraft_bench_export"))


def _ensure_database(url: str) -> None:
    import psycopg

    parts = urlparse(url)
    name = parts.path.lstrip("/")
    admin_url = urlunparse(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_database where datname = %s", [name]).fetchone():
            conn.execute(f'create database "{name}"')


if not ARGS.measure:
    _ensure_database(_bench_database_url())
os.environ["DATABASE_URL"] = _bench_database_url()
os.environ.setdefault("DB_POOL", "0")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --- the synthetic pool ---------------------------------------------------------------------------------------------

VOCAB = (  # noqa: SIM905 (a sentence reads better than a list of 58 strings)
    "order refund warranty gpu cpu motherboard ram ssd psu case cooler fan cable monitor keyboard mouse build "
    "shipment tracking delayed damaged cracked missing invoice total discount loyalty tier return window policy "
    "replacement exchange compatible socket chipset wattage bios driver ticket escalate priority customer account "
    "address payment card charged twice credit store pickup express standard ground carrier label weight"
).split()
TYPES = ("information_retrieval", "communication", "reasoning", "multi_step_workflow")
LEVELS = ("easy", "medium", "hard", "expert")


def ensure_pool(n: int) -> None:
    from django.contrib.auth import get_user_model

    from tasks_app.models import Criterion, Task, TaskStatus, TaskVersion
    from world_app.models import WorldSnapshot

    have = Task.objects.filter(source_key__startswith="bench:").count()
    if have >= n:
        return
    print(f"creating {n - have:,} synthetic approved tasks...", flush=True)
    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    snapshot = WorldSnapshot.objects.defer("image").order_by("-version").first()
    if snapshot is None:
        from django.utils import timezone

        snapshot = WorldSnapshot.objects.create(
            version=1,
            note=LABEL,
            image=b"bench",
            image_sha256="0" * 64,
            image_bytes=5,
            content_checksum="0" * 64,
            schema_fingerprint="0" * 64,
            world_now=timezone.now(),
        )
    rng = random.Random(7)
    for start in range(have, n, 1000):
        with transaction.atomic():
            batch = range(start, min(n, start + 1000))
            tasks, versions, criteria = [], [], []
            for i in batch:
                task_type, level = TYPES[i % 4], LEVELS[(i // 4) % 4]
                family = f"bench-family-{i // 5}" if (i // 5) % 10 == 0 else ""
                tasks.append(
                    Task(
                        title=f"Bench task {i}",
                        task_type=task_type,
                        difficulty=level,
                        family=family,
                        status=TaskStatus.APPROVED,
                        author=user,
                        revision=1,
                        source_key=f"bench:{i:06d}",
                    )
                )
            Task.objects.bulk_create(tasks)
            for task in tasks:
                # Real messages name orders, products and amounts: ids and numbers keep them apart.
                words = " ".join(
                    rng.choice(VOCAB)
                    if k % 4
                    else rng.choice(
                        (
                            f"ord-{rng.randrange(10**6):06d}",
                            f"${rng.randrange(20, 3000)}.{rng.randrange(100):02d}",
                            f"prd-{rng.randrange(10**4):04d}",
                        )
                    )
                    for k in range(40)
                )
                versions.append(
                    TaskVersion(
                        task=task,
                        number=1,
                        title=task.title,
                        task_type=task.task_type,
                        difficulty=task.difficulty,
                        family=task.family,
                        tags=["bench"],
                        instruction=f"Customer {task.source_key}: {words}",
                        snapshot=snapshot,
                        created_by=user,
                        content_hash=f"{task.pk:064d}",
                    )
                )
            TaskVersion.objects.bulk_create(versions)
            for version in versions:
                criteria.append(
                    Criterion(
                        version=version,
                        position=0,
                        kind="llm",
                        text="The reply is polite.",
                        category="tone",
                        weight=1.0,
                        content_hash="a" * 64,
                    )
                )
                criteria.append(
                    Criterion(
                        version=version,
                        position=1,
                        kind="response",
                        text="States the order total.",
                        spec={"op": "number", "value": 549.98},
                        category="correctness",
                        weight=2.0,
                        required=True,
                        content_hash="b" * 64,
                    )
                )
            Criterion.objects.bulk_create(criteria)
            for task, version in zip(tasks, versions, strict=True):
                task.current_version = version
            Task.objects.bulk_update(tasks, ["current_version"])


# --- measuring ------------------------------------------------------------------------------------------------------


def measure_child(spec: str) -> None:
    """In a fresh process: export one split in one format, streaming or not; print time and peak RSS growth."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from django.db import connection

    from trainer_bridge.exports import JsonlLines, export_write, verl_record, verl_schema, write_tool_sets
    from trainer_bridge.models import Release
    from trainer_bridge.selectors import release_row_payloads, release_tool_sets

    slug, split, fmt, mode = spec.split(",")
    release = Release.objects.get(slug=slug)
    tool_names = [s["function"]["name"] for s in release.tools]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out"
        # A worker has pyarrow's parquet writer (and what it imports lazily, pandas) loaded already.
        pq.write_table(pa.table({"warm": [1]}), Path(tmp) / "warm.parquet")
        base = rss_bytes()
        started, cpu_started = time.perf_counter(), time.process_time()
        with path.open("wb") as out:
            if mode == "streaming":
                rows = export_write(release=release, split=split, format=fmt, out=out)
            else:
                inline = fmt != "jsonl"
                payloads = list(release_row_payloads(release=release, split=split, inline_tools=inline))
                rows = len(payloads)
                if fmt.startswith("jsonl"):
                    encoder = JsonlLines(inline_tools=inline)
                    out.write("".join(encoder.line(p) for p in payloads).encode())
                else:
                    records = [verl_record(p, i) for i, p in enumerate(payloads)]
                    pq.write_table(
                        pa.Table.from_pylist(records, schema=verl_schema(tool_names)), out, compression="zstd"
                    )
            if fmt == "jsonl":  # the export job writes the tools file beside the lines
                with (Path(tmp) / "tools.json").open("wb") as tools_out:
                    write_tool_sets(release_tool_sets(release=release, splits={split}), tools_out)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        size = path.stat().st_size
        tools_size = (Path(tmp) / "tools.json").stat().st_size if fmt == "jsonl" else 0
    growth = peak_rss_bytes() - base
    figures = {"rows": rows, "seconds": seconds, "cpu": cpu, "peak_rss_growth": growth, "bytes": size + tools_size}
    print(json.dumps({**figures, "tools_file_bytes": tools_size, "database": connection.settings_dict["NAME"]}))


def run_child(spec: str) -> dict:
    # The child gets the database by name: left to its DATABASE_URL it would take that server's default bench
    # database (corecraft_bench_export) instead of the one given with --database-url.
    command = [sys.executable, __file__, "--measure", spec, "--database-url", _bench_database_url()]
    out = subprocess.run(command, env=os.environ, capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"measuring {spec} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    wanted = urlparse(_bench_database_url()).path.lstrip("/")
    if result["database"] != wanted:
        sys.exit(f"measuring {spec}: the child measured database {result['database']!r}, not {wanted!r}")
    return result


def freeze(size: int, total: int):
    from django.contrib.auth import get_user_model

    from trainer_bridge.services import release_create, release_freeze

    user = get_user_model().objects.get(username=BENCH_USER)
    holdout = round(size * 0.13)
    slug = f"bench-{size}"
    release = release_create(
        slug=slug, name=f"{LABEL} {size}", seed=7, sizes={"train": size - holdout, "holdout": holdout}, user=user
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    release = release_freeze(release=release, user=user)
    return release, time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    from trainer_bridge.models import Release

    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    ensure_pool(ARGS.tasks)
    Release.objects.filter(slug__startswith="bench-").delete()
    sizes = [s for s in SIZES if s <= ARGS.tasks] or [ARGS.tasks]
    figures: dict[str, dict] = {}
    for size in sizes:
        release, freeze_s, freeze_cpu = freeze(size, ARGS.tasks)
        entry = {
            "freeze_s": round(freeze_s, 3),
            "freeze_cpu_s": round(freeze_cpu, 3),
            "train": release.manifest["splits"]["train"]["count"],
            "holdout": release.manifest["splits"]["holdout"]["count"],
        }
        for fmt in FORMATS:
            for mode in ("streaming", "whole"):
                seconds, cpu, peak, size_bytes, tools_bytes = 0.0, 0.0, 0, 0, 0
                for split in ("train", "holdout"):
                    result = run_child(f"{release.slug},{split},{fmt},{mode}")
                    seconds += result["seconds"]
                    cpu += result["cpu"]
                    peak = max(peak, result["peak_rss_growth"])
                    size_bytes += result["bytes"]
                    tools_bytes += result["tools_file_bytes"]
                entry[f"{fmt}_{mode}_s"] = round(seconds, 3)
                entry[f"{fmt}_{mode}_cpu_s"] = round(cpu, 3)
                entry[f"{fmt}_{mode}_peak_mib"] = round(peak / 2**20, 1)
                entry[f"{fmt}_bytes"] = size_bytes
                entry[f"{fmt}_bytes_per_row"] = round(size_bytes / size, 1)
                if fmt == "jsonl":
                    entry["jsonl_tools_file_bytes"] = tools_bytes
        entry["total_streaming_s"] = round(
            entry["freeze_s"] + entry["jsonl_streaming_s"] + entry["verl-parquet_streaming_s"], 3
        )
        entry["total_streaming_cpu_s"] = round(
            entry["freeze_cpu_s"] + entry["jsonl_streaming_cpu_s"] + entry["verl-parquet_streaming_cpu_s"], 3
        )
        figures[str(size)] = entry

    load = os.getloadavg()[0]
    print(
        f"pool: {ARGS.tasks:,} synthetic approved tasks; memory = peak RSS growth during the export (both splits); "
        f"{os.cpu_count()} CPUs, load average {load:.1f} (wall times stretch under load; CPU s is this process's)"
    )
    print(
        f"{'rows':>6} {'freeze s':>9} {'format':>13} {'stream s':>9} {'stream MiB':>11} {'whole s':>8} "
        f"{'whole MiB':>10} {'file MiB':>9}"
    )
    for size, e in figures.items():
        for fmt in FORMATS:
            print(
                f"{size:>6} {e['freeze_s']:>9.2f} {fmt:>13} {e[f'{fmt}_streaming_s']:>9.2f} "
                f"{e[f'{fmt}_streaming_peak_mib']:>11.1f} {e[f'{fmt}_whole_s']:>8.2f} "
                f"{e[f'{fmt}_whole_peak_mib']:>10.1f} {e[f'{fmt}_bytes'] / 2**20:>9.1f}"
            )
    largest = figures[str(max(int(s) for s in figures))]
    small, large = figures[str(min(int(s) for s in figures))], largest
    growth = {
        mode: {fmt: round(large[f"{fmt}_{mode}_peak_mib"] - small[f"{fmt}_{mode}_peak_mib"], 1) for fmt in FORMATS}
        for mode in ("streaming", "whole")
    }
    ok = largest["total_streaming_s"] <= TARGET_S
    print(
        f"freeze + JSONL + parquet of {max(int(s) for s in figures):,} tasks: "
        f"{largest['total_streaming_s']:.2f} s wall, "
        f"{largest['total_streaming_cpu_s']:.2f} s CPU in Python "
        f"(target <= {TARGET_S:g} s: {'met' if ok else 'MISSED'})"
    )
    print(
        f"peak memory growth from the small to the large release: streaming {growth['streaming']} MiB, "
        f"non-streaming {growth['whole']} MiB"
    )
    rows = largest["train"] + largest["holdout"]
    before, after, parquet = (largest[f"{fmt}_bytes"] for fmt in ("jsonl-inline", "jsonl", "verl-parquet"))
    sizes_of = {
        "rows": rows,
        "jsonl_inline_bytes": before,
        "jsonl_bytes": after,
        "jsonl_tools_file_bytes": largest["jsonl_tools_file_bytes"],
        "verl_parquet_bytes": parquet,
        "jsonl_after_over_before": round(after / before, 4),
        "jsonl_after_over_parquet": round(after / parquet, 2),
        "jsonl_before_over_parquet": round(before / parquet, 1),
    }
    print(
        f"bytes of {rows:,} rows (train + holdout): JSONL with the tools on every line (before, jsonl-inline) "
        f"{before / 1e6:,.1f} MB = {before / rows:,.0f} B/row; JSONL naming them by tools_sha256 (after, jsonl) "
        f"{after / 1e6:,.2f} MB = {after / rows:,.0f} B/row (of which the two tools files "
        f"{largest['jsonl_tools_file_bytes'] / 1e3:,.1f} KB); verl parquet {parquet / 1e6:,.2f} MB = "
        f"{parquet / rows:,.0f} B/row"
    )
    print(
        f"after/before {sizes_of['jsonl_after_over_before']:.4f}; JSONL/parquet before "
        f"{sizes_of['jsonl_before_over_parquet']:g}x, after {sizes_of['jsonl_after_over_parquet']:g}x"
    )
    print(
        json.dumps(
            {
                "bench": LABEL,
                "tasks": ARGS.tasks,
                "sizes": figures,
                "memory_growth_mib": growth,
                "bytes_largest": sizes_of,
                "target_s": TARGET_S,
                "target_met": ok,
                "load_average": round(load, 2),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    if ARGS.measure:
        measure_child(ARGS.measure)
    else:
        main()
