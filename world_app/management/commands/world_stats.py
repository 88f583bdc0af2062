"""Counts per entity type and the content checksum of the live world: ``manage.py world_stats --json``."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from world_app.checksum import world_content_checksum
from world_app.selectors import world_child_counts, world_counts


class Command(BaseCommand):
    help = "Print the world's counts per entity type, their total and the content checksum."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options) -> None:
        counts = world_counts()
        stats = {
            "counts": counts,
            "total": sum(counts.values()),
            "child_counts": world_child_counts(),
            "checksum": world_content_checksum(),
        }
        if options["json"]:
            self.stdout.write(json.dumps(stats, indent=2))
            return
        width = max(len(name) for name in [*counts, *stats["child_counts"]])
        for name, count in counts.items():
            self.stdout.write(f"{name:<{width}}  {count:>9,}")
        self.stdout.write(f"{'total':<{width}}  {stats['total']:>9,}")
        self.stdout.write("child rows:")
        for name, count in stats["child_counts"].items():
            self.stdout.write(f"{name:<{width}}  {count:>9,}")
        self.stdout.write(f"checksum  {stats['checksum']}")
