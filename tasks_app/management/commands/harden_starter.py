from __future__ import annotations

import re

import yaml
from django.core.management.base import BaseCommand

from tasks_app.library.rubric_hardening import criteria_reharden
from tasks_app.library.services.library_files import STARTER_DIR, starter_files

_TOP_KEY = re.compile(r"^[A-Za-z_]+:", re.M)


def criteria_block_replace(text: str, criteria: list[dict]) -> str:
    """The fixture text with its top-level ``criteria:`` block replaced (the rest kept byte for byte)."""
    start = re.search(r"^criteria:.*\n", text, re.M)
    if start is None:
        raise ValueError("no top-level criteria")
    following = _TOP_KEY.search(text, start.end())
    end = following.start() if following else len(text)
    block = yaml.safe_dump({"criteria": criteria}, sort_keys=False, width=110, allow_unicode=True)
    return text[: start.start()] + block + text[end:]


class Command(BaseCommand):
    help = (
        "Apply tasks_app.library.rubric_hardening again to the starter files' criteria (the conversions and "
        "weights that need only the reference answer): prints the files it would change; --write rewrites their "
        "criteria block."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--write", action="store_true")
        parser.add_argument("--path", default=None)

    def handle(self, *args, write: bool = False, path=None, **options) -> None:
        changed = 0
        for file in starter_files(path):
            text = file.read_text(encoding="utf-8")
            data = yaml.safe_load(text)
            criteria = data.get("criteria") or []
            new = criteria_reharden(criteria=[dict(c) for c in criteria], instruction=str(data["instruction"]).strip(),
                                    solution=data["reference_solution"])  # fmt: skip
            if new == criteria:
                continue
            changed += 1
            self.stdout.write(f"{file.relative_to(STARTER_DIR) if file.is_relative_to(STARTER_DIR) else file}")
            if write:
                file.write_text(criteria_block_replace(text, new), encoding="utf-8")
        self.stdout.write(f"{changed} file(s) {'rewritten' if write else 'would change'}")
