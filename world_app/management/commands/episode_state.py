import json

from django.core.management.base import BaseCommand, CommandError

from world_app.episodes import EpisodeNotFound, episode_state_from_log


class Command(BaseCommand):
    help = "Rebuild an episode from storage (snapshot + logged row images) and print its state checksum and diff."

    def add_arguments(self, parser):
        parser.add_argument("episode_id")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object.")

    def handle(self, *args, episode_id: str, as_json: bool, **options):
        try:
            state = episode_state_from_log(episode_id)
        except EpisodeNotFound as exc:
            raise CommandError(str(exc)) from None
        if as_json:
            self.stdout.write(json.dumps(state, sort_keys=True))
            return
        diff = state["diff"]
        self.stdout.write(
            f"episode {state['episode']} on world v{state['snapshot_version']} ({state['status']}, "
            f"{state['step_count']} steps)\nstate checksum {state['state_checksum']}\n"
            f"created {len(diff['created'])}, updated {len(diff['updated'])}, deleted {len(diff['deleted'])} rows"
        )
