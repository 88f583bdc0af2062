from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from tasks_app.library.selectors import task_library_stats
from tasks_app.library.services.library_files import TaskLibraryError
from tasks_app.library.services.library_stats import library_stats


class Command(BaseCommand):
    help = (
        "Counts of tasks per type, status, family, difficulty and source (starter files, families, the studio), and "
        "the library's figures measured on the latest snapshot (what each reference needs: calls, joins, paging, "
        "writes, judgements, dates; ids handed over; communication criteria; family branch balance), starter files "
        "and families apart. Definitions: tasks_app/library/services/library_stats.py."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--no-library", action="store_true", help="Only the counts of the task table.")
        parser.add_argument("--no-families", action="store_true", help="Measure the starter files only.")
        parser.add_argument("--no-starter", action="store_true", help="Measure the families only.")
        parser.add_argument("--path", default=None, help="Starter fixture directory (default: the starter library).")
        parser.add_argument(
            "--per-family", type=int, default=None, help="Measure the first N instances of each family (default all)."
        )

    def handle(self, *args, json: bool = False, **options) -> None:
        stats = task_library_stats()
        if not options["no_library"]:
            if options["per_family"] is not None and options["per_family"] < 1:
                raise CommandError("--per-family: a positive number")
            try:
                stats["library"] = library_stats(
                    starter=not options["no_starter"],
                    families=not options["no_families"],
                    per_family=options["per_family"],
                    path=options["path"],
                )
            except TaskLibraryError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        if json:
            self.stdout.write(_dumps(stats))
            return
        self.stdout.write(f"tasks: {stats['total']}")
        for name in ("by_type", "by_status", "by_difficulty", "by_source", "by_family"):
            self.stdout.write(f"{name.removeprefix('by_')}:")
            for key, count in stats[name].items():
                self.stdout.write(f"  {key or '(none)':<32}{count:>6}")
        for source, figures in (stats.get("library") or {}).items():
            if not isinstance(figures, dict):
                continue
            self.stdout.write(f"library, {source}: {figures['tasks']} tasks")
            for name, row in figures["targets"].items():
                mark = "ok  " if row["met"] else "MISS"
                self.stdout.write(f"  {mark} {name:<28} {row['value']!s:>8}  (target {row['target']})")
            for family, row in (figures.get("families") or {}).items():
                mark = "ok  " if row["within_bound"] else "MISS"
                self.stdout.write(
                    f"  {mark} {family:<28} {row['instances']:>5} instances, largest branch "
                    f"{row['largest_branch']!r} {row['largest_branch_share']:.0%}"
                )


def _dumps(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True)
