"""Generate the Corecraft world from a seed: ``manage.py seed_world --seed 7 --scale 1``."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from world_app.checksum import world_content_checksum
from world_app.generator import DEFAULT_MESS_RATE, WorldExistsError, world_exists, world_seed


class Command(BaseCommand):
    help = "Generate the world deterministically (same seed, scale and mess rate: same checksum)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--scale", type=float, default=1.0, help="1 = about 4,300 entities; 100 works too.")
        parser.add_argument(
            "--mess-rate", type=float, default=DEFAULT_MESS_RATE, help="Share of records given realistic mess (0-0.5)."
        )
        parser.add_argument("--reset", action="store_true", help="Delete the existing world first (world tables only).")
        parser.add_argument("--if-empty", action="store_true", help="Do nothing if the database already has a world.")
        parser.add_argument("--manifest", type=Path, help="Write the manifest (counts, anomalies) as JSON here.")

    def handle(self, *args, **options) -> None:
        if options["if_empty"] and not options["reset"] and world_exists():
            self.stdout.write("A world is already there; nothing done (--if-empty).")
            return
        started = time.perf_counter()
        try:
            manifest = world_seed(
                seed=options["seed"], scale=options["scale"], mess_rate=options["mess_rate"], reset=options["reset"]
            )
        except WorldExistsError as exc:
            raise CommandError(f"{exc}. Run with --reset to replace it, or --if-empty to keep it.") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        elapsed = time.perf_counter() - started
        manifest.checksum = world_content_checksum()
        width = max(len(name) for name in manifest.counts)
        for name, count in manifest.counts.items():
            self.stdout.write(f"  {name:<{width}}  {count:>9,}")
        self.stdout.write(f"  {'total':<{width}}  {manifest.total:>9,}")
        children = ", ".join(f"{name} {count:,}" for name, count in manifest.child_counts.items())
        self.stdout.write(f"  child rows: {children}")
        anomalies = ", ".join(f"{kind} {len(records)}" for kind, records in manifest.anomalies.items() if records)
        self.stdout.write(f"  mess (rate {manifest.mess_rate:g}): {anomalies or 'none'}")
        if options["manifest"]:
            options["manifest"].write_text(manifest.to_json() + "\n")
            self.stdout.write(f"  manifest: {options['manifest']}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Seeded world (seed {manifest.seed}, scale {manifest.scale:g}) in {elapsed:.1f}s; "
                f"checksum {manifest.checksum}"
            )
        )
