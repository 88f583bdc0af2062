from django.core.management.base import BaseCommand
from django.db.models import Max

from world_app.models import WorldSnapshot
from world_app.snapshots import snapshot_publish


class Command(BaseCommand):
    help = "Freeze the live world into the next immutable, numbered, checksummed snapshot."

    def add_arguments(self, parser):
        parser.add_argument("--note", required=True, help="What this snapshot is (shown with its version).")
        parser.add_argument(
            "--if-changed", action="store_true", help="Publish nothing if the latest snapshot equals the live world."
        )

    def handle(self, *args, note: str, if_changed: bool, **options):
        previous = WorldSnapshot.objects.aggregate(v=Max("version"))["v"] or 0
        snapshot = snapshot_publish(note=note, if_changed=if_changed)
        if snapshot.version <= previous:
            self.stdout.write(f"world v{snapshot.version} is unchanged: content {snapshot.content_checksum}")
            return
        self.stdout.write(
            f"published world v{snapshot.version} ({snapshot.note}): content {snapshot.content_checksum}, "
            f"image {snapshot.image_bytes / 1e6:.2f} MB, {sum(snapshot.entity_counts.values())} entities"
        )
