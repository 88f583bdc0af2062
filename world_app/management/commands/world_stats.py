"""Counts per entity type, the content checksum and the realism figures of the live world:
``manage.py world_stats --json``."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from world_app.checksum import world_content_checksum
from world_app.realism import world_realism
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
            "realism": world_realism(),
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
        realism = stats["realism"]
        self.stdout.write("realism:")
        for name, value in realism.items():
            if name != "search_paging":
                self.stdout.write(f"  {name:<28}  {value}")
        paging = realism["search_paging"]
        self.stdout.write(
            f"  searches needing a second page at limit={paging['max_page_size']}: "
            f"{paging['needing_second_page']} of {len(paging['shapes'])} ({paging['share_needing_second_page']})"
        )
