from django.core.management.base import BaseCommand

from world_app.episodes import episodes_purge_closed


class Command(BaseCommand):
    help = "Delete closed episodes (and their logged steps) closed more than N days ago."

    def add_arguments(self, parser):
        parser.add_argument("--closed-before-days", type=int, required=True, metavar="N")

    def handle(self, *args, closed_before_days: int, **options):
        deleted = episodes_purge_closed(closed_before_days=closed_before_days)
        self.stdout.write(f"deleted {deleted} closed episodes")
