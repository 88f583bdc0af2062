import functools
import logging
import uuid

import anyio
import uvicorn
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from world_app.mcp.episodes import SnapshotVersionUnknown, mcp_episode_create, mcp_episode_status
from world_app.mcp.http import mcp_http_app
from world_app.mcp.stdio import mcp_stdio_serve
from world_app.models import Episode, WorldSnapshot
from world_app.snapshots import SnapshotNotPublished


class Command(BaseCommand):
    help = (
        "Serve the 23 agent tools over MCP. Streamable HTTP (default): POST /mcp/episodes creates an episode, "
        "/mcp/episodes/<id> is its MCP endpoint. Stdio: serves one episode (--episode, or a new one)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=["streamable-http", "stdio"], default="streamable-http")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--episode", help="stdio: the episode to serve (default: a new one).")
        parser.add_argument(
            "--snapshot-version",
            type=int,
            help="Snapshot version of the episodes this server creates (default: the latest).",
        )
        parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])

    def handle(self, *args, transport: str, host: str, port: int, episode, snapshot_version, log_level, **options):
        if snapshot_version is not None and not WorldSnapshot.objects.filter(version=snapshot_version).exists():
            raise CommandError(f"no world snapshot version {snapshot_version}")
        if transport == "stdio":
            episode_id = self._stdio_episode(episode, snapshot_version)
            connections.close_all()  # the served calls open their own, in Django's sync thread
            anyio.run(functools.partial(mcp_stdio_serve, episode_id=episode_id))
            return
        if episode:
            raise CommandError("--episode is for stdio: over HTTP each request names its episode in the URL")
        # stdout stays free for whoever runs this; the server talks on stderr like uvicorn does.
        self.stderr.write(
            f"MCP (streamable HTTP) on http://{host}:{port}: POST /mcp/episodes, then use /mcp/episodes/<id>"
        )
        if log_level != "debug":
            # Stateless mode ends a transport per request, and the SDK logs each end at INFO.
            logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
        app = mcp_http_app(host=host, snapshot_version=snapshot_version)
        connections.close_all()
        uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on")

    def _stdio_episode(self, episode: str | None, snapshot_version: int | None) -> uuid.UUID:
        """The episode to serve; a new one is announced on stderr (stdout is the MCP stream)."""
        if episode:
            try:
                episode_id = uuid.UUID(episode)
            except ValueError:
                raise CommandError(f"--episode {episode!r} is not an episode id (a UUID)") from None
            status = mcp_episode_status(episode_id)
            if status is None:
                raise CommandError(f"no episode {episode_id}")
            if status != Episode.Status.OPEN:
                raise CommandError(f"episode {episode_id} is {status}: it takes no more steps")
            return episode_id
        try:
            episode_id, version = mcp_episode_create(snapshot_version=snapshot_version, label="mcp stdio")
        except (SnapshotVersionUnknown, SnapshotNotPublished) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"episode {episode_id} (world v{version})")
        return episode_id
