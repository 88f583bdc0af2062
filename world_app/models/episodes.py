from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class WorldSnapshot(models.Model):
    """An immutable, numbered image of the live world that any process can load.

    ``image`` is a serialized SQLite database (zstd-compressed; zlib for snapshots published before) holding every
    world table; an episode deserializes it into memory. ``content_checksum`` is the world's content checksum (the
    same one ``world_stats`` prints), so a snapshot can be matched to the live world it came from.
    """

    version = models.PositiveIntegerField(unique=True)
    note = models.CharField(max_length=300, blank=True)
    image = models.BinaryField(editable=False)
    image_sha256 = models.CharField(max_length=64, editable=False)
    image_bytes = models.PositiveIntegerField(editable=False, help_text="Size of the uncompressed image.")
    content_checksum = models.CharField(max_length=64, db_index=True, editable=False)
    schema_fingerprint = models.CharField(max_length=64, editable=False)
    world_now = models.DateTimeField(help_text="The world clock this snapshot was published with.")
    entity_counts = models.JSONField(default=dict, editable=False)
    table_digests = models.JSONField(
        default=dict,
        editable=False,
        help_text="Per-table content digests at publish ({table: [rows, row-hash sum]}, world_app.checksum): an "
        "episode's checksum is these updated by its changed rows, with no scan of the world.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        get_latest_by = "version"

    def __str__(self) -> str:
        return f"world v{self.version}"


class Episode(models.Model):
    """A private world for one rollout: a snapshot plus the append-only log of steps taken in it."""

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    snapshot = models.ForeignKey(WorldSnapshot, on_delete=models.PROTECT, related_name="episodes")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN, db_index=True)
    label = models.CharField(max_length=200, blank=True, help_text="Who opened it and why (run, task, policy).")
    step_count = models.PositiveIntegerField(default=0)
    # The id of the step at ``step_count`` (ids are never reused): a copy that took a step Postgres lost, and
    # was then overtaken by another process's step of the same number, still differs from the log here.
    head_step_id = models.BigIntegerField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # Filled on close so a closed episode's outcome reads without rebuilding it.
    final_diff = models.JSONField(null=True, blank=True)
    final_checksum = models.CharField(max_length=64, blank=True)
    # Who opened it: the user, and the credential ("user:<id>" for a session, "token:<id>" for an API or MCP
    # token). Only that user (any of their credentials), or an admin, reaches it through the APIs; internal
    # ones (rollouts, the playground) have no owner and are reached by admins only.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="episodes"
    )
    credential = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    # Who answers the agent's questions (``ask_user``): a simulated user spec (``world_app.conversation``), the
    # task's; empty: no one is on the other end.
    simulated_user = models.JSONField(default=dict, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("open_episode", "Open and drive episodes of its own (the episodes scope of a session)"),
            ("drive_any_episode", "Read, drive and close anyone's episode"),
        ]

    def __str__(self) -> str:
        return f"episode {self.id} on {self.snapshot}"


class EpisodeStep(models.Model):
    """One call made in an episode, with the row images it wrote (what a rebuild replays)."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="steps")
    seq = models.PositiveIntegerField()
    name = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict)
    result = models.JSONField(null=True)
    is_error = models.BooleanField(default=False)
    changes = models.JSONField(default=list, help_text="[{table, pk, op, row}] written by this step")
    duration_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["episode", "seq"]
        constraints = [models.UniqueConstraint(fields=["episode", "seq"], name="episode_step_unique_seq")]

    def __str__(self) -> str:
        return f"{self.episode_id}#{self.seq} {self.name}"
