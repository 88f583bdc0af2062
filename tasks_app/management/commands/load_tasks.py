from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tasks_app.library.families import family_tasks_load
from tasks_app.library.services.library_files import TaskLibraryError
from tasks_app.library.services.task_library import LoadReport, task_library_load
from tasks_app.models import TaskStatus


class Command(BaseCommand):
    help = (
        "Load the starter task library (tasks_app/fixtures/starter_tasks/**.yaml) and the task families' instances "
        "as tasks pinned to the latest world snapshot. Idempotent: unchanged tasks are left alone, changed files "
        "make a new version, tasks edited in the studio are kept."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--path", help="A directory of task files (or one file); default: the starter library.")
        parser.add_argument(
            "--status",
            choices=[TaskStatus.APPROVED, TaskStatus.DRAFT],
            default=TaskStatus.APPROVED,
            help="approved (default: submitted and approved by the library reviewer) or draft.",
        )
        families = parser.add_mutually_exclusive_group()
        families.add_argument(
            "--families",
            type=int,
            metavar="N",
            default=None,
            help="Also instantiate every task family, at most N instances per family (0 = all of them).",
        )
        families.add_argument("--no-families", action="store_true", help="Load the fixture files only (default).")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, path=None, status=TaskStatus.APPROVED, families=None, json: bool = False, **options):
        try:
            report = task_library_load(path=path, status=status)
            if families is not None and not options.get("no_families"):
                report.merge(family_tasks_load(limit=families or None, status=status))
        except (TaskLibraryError, ValidationError) as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self._print(report, as_json=json)
        if report.errors:
            raise CommandError(f"{len(report.errors)} task(s) could not be loaded (listed above)")

    def _print(self, report: LoadReport, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json_dumps(report.as_dict()))
            return
        for error in report.errors:
            self.stderr.write(f"  {error}")
        self.stdout.write(f"Task library: {report.summary()}")


def json_dumps(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True)
