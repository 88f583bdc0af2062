from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from tasks_app.calibration.services.gates import library_gates_read, library_gates_write
from tasks_app.library.services.library_files import TaskLibraryError
from tasks_app.library.services.library_gates import library_gates_compute
from tasks_app.red_team import red_team_summary


class Command(BaseCommand):
    help = (
        "The starter library's precomputed gates (tasks_app/fixtures/library_gates.json): for every starter task "
        "and family instance as `load_tasks --families N` loads them, on the latest snapshot, the gate's result "
        "under its content-addressed key (task content, snapshot, gate code). Entries the file already holds under "
        "the current key are kept, the others are computed by the red team. Prints the figures and a JSON line."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--families", type=int, default=20, metavar="N", help="Instances per family, as `load_tasks --families N`."
        )
        parser.add_argument("--path", help="The gate file (default: the library's).")
        parser.add_argument("--write", action="store_true", help="Write the file (only the current entries).")
        parser.add_argument("--check", action="store_true", help="Exit 1 when the file lacks a current entry.")
        parser.add_argument("--recompute", action="store_true", help="Compute every gate, ignoring the file.")

    def handle(self, *args, families: int = 20, path=None, write=False, check=False, recompute=False, **options):
        started = time.perf_counter()
        existing = {} if recompute else library_gates_read(path)
        try:
            result = library_gates_compute(families=families or None, stored=existing, compute=not check)
        except TaskLibraryError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        for key, problems in result.refused:
            self.stdout.write(f"  refused {key}: {problems}")
        if write:
            written = library_gates_write(result.entries, path)
            self.stdout.write(f"wrote {len(result.entries)} gate(s) to {written}")
        if result.reports:
            self.stdout.write(f"{'policy':<16} {'expect':<10} {'tasks':>5} {'passed':>7} {'partial':>8}  (computed)")
            for kind, row in red_team_summary(result.reports).items():
                partial = "-" if row["mean_partial_reward"] is None else f"{row['mean_partial_reward']:.3f}"
                self.stdout.write(
                    f"{kind:<16} {row['expect']:<10} {row['tasks']:>5} {row['passed_share']:>7.1%} {partial:>8}"
                )
        summary = {
            "tasks": result.tasks,
            "from_file": result.from_file,
            "computed": result.computed,
            "missing": result.missing,
            "passes": result.tasks - len(result.refused) - result.missing,
            "refused": len(result.refused),
            "seconds": round(time.perf_counter() - started, 1),
        }
        self.stdout.write(
            f"{summary['tasks']} task(s): {summary['from_file']} from the file, {summary['computed']} computed, "
            f"{summary['missing']} without a current entry; the gate passes {summary['passes']}, refuses "
            f"{summary['refused']}"
        )
        self.stdout.write(json.dumps(summary, sort_keys=True))
        if check and result.missing:
            raise CommandError(f"{result.missing} task(s) have no current entry: run `manage.py library_gates --write`")
