import functools
import logging
import uuid

import anyio
import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.utils.module_loading import import_string

from trainer_bridge.mcp.episodes import SnapshotVersionUnknown, mcp_episode_create, mcp_episode_status
from trainer_bridge.mcp.http import LOOPBACK_HOSTS, McpSite, mcp_http_app
from trainer_bridge.mcp.stdio import mcp_stdio_serve
from trainer_bridge.mcp.tasks import mcp_task_provider_load
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
        parser.add_argument(
            "--public-url",
            default=None,
            help="The URL clients reach this server at (default: MCP_PUBLIC_URL, else http://HOST:PORT on loopback).",
        )
        parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])

    def handle(
        self, *args, transport: str, host: str, port: int, episode, snapshot_version, log_level, public_url, **options
    ):
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
            f"MCP (streamable HTTP) on http://{host}:{port}: POST /mcp/episodes, then use /mcp/episodes/<id> "
            "(Authorization: Bearer <an API token with the episodes scope>)"
        )
        if log_level != "debug":
            # Stateless mode ends a transport per request, and the SDK logs each end at INFO.
            logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
        site = self._site(host=host, port=port, public_url=public_url)
        app = mcp_http_app(
            site=site,
            verify=import_string(settings.MCP_CREDENTIAL_VERIFIER),
            snapshot_version=snapshot_version,
            tasks=mcp_task_provider_load(settings.MCP_TASK_PROVIDER),
        )
        connections.close_all()
        uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on")

    def _site(self, *, host: str, port: int, public_url: str | None) -> McpSite:
        public_url = public_url or settings.MCP_PUBLIC_URL
        if not public_url:
            if host not in LOOPBACK_HOSTS:
                raise CommandError(
                    f"--host {host} is reachable from other machines: set MCP_PUBLIC_URL (or --public-url) to the "
                    "URL clients use, so that Host/Origin are checked against it and mcp_url is built from it"
                )
            shown = f"[{host}]" if ":" in host else host
            public_url = f"http://{shown}:{port}"
        try:
            return McpSite.build(public_url=public_url, extra_hosts=tuple(settings.MCP_ALLOWED_HOSTS))
        except ValueError as exc:
            raise CommandError(str(exc)) from None

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
