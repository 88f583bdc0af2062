"""API tokens for trainers, frozen train/holdout releases of approved tasks, and their export jobs.

A token's secret is shown once when it is made and never stored: the row keeps a short prefix (to recognise it
in lists) and the secret's sha256. A frozen release is a copy, not a reference: each row holds the authored
content of the task version it was made from, so editing the task later changes nothing in the release.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from tasks_app.models import Task, TaskVersion
from world_app.credentials import Credential


class Scope(models.TextChoices):
    TRAIN_READ = "train:read", "Read the train split"
    EVAL_READ = "eval:read", "Read the holdout split"
    EPISODES = "episodes", "Create and drive episodes"
    REWARD = "reward", "Score trajectories"


SCOPES = tuple(Scope.values)


class ApiToken(models.Model):
    name = models.CharField(max_length=100, help_text="Who or what uses it: a training job, a team.")
    prefix = models.CharField(max_length=16, unique=True, help_text="The secret's first characters, to recognise it.")
    secret_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list, help_text="Any of train:read, eval:read, episodes, reward.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_tokens"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        # A user granted one of these holds that scope with a session too (eval:read is tasks_app.read_holdout,
        # episodes world_app.open_episode);
        # being staff grants none of them.
        permissions = [
            ("scope_train_read", "Use the API with train:read from a session"),
            ("scope_reward", "Use the API with reward from a session"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, scope: str) -> bool:
        return scope in (self.scopes or [])

    @property
    def credential_key(self) -> str:
        return f"token:{self.pk}"

    @property
    def episode_credential(self) -> Credential:
        """What the world API and MCP see: this token's own episodes, with its scopes."""
        return Credential(key=self.credential_key, user_id=self.created_by_id, scopes=frozenset(self.scopes or []))


class ApiTokenUse(models.Model):
    """One request made with a token (refused ones included)."""

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="uses")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    status = models.PositiveSmallIntegerField()
    scope = models.CharField(max_length=20, blank=True, help_text="The scope that allowed the request, if any.")

    class Meta:
        ordering = ["-at"]
        verbose_name = "API token use"

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status}"


class ReleaseStatus(models.TextChoices):
    DRAFT = "draft"
    FROZEN = "frozen"


class Split(models.TextChoices):
    TRAIN = "train"
    HOLDOUT = "holdout"


class Release(models.Model):
    """A choice of approved tasks split into train and holdout; immutable once frozen."""

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    seed = models.BigIntegerField(default=0)
    filters = models.JSONField(default=dict, blank=True, help_text="What tasks qualify (see trainer_bridge.splits).")
    sizes = models.JSONField(default=dict, blank=True, help_text='{"train": 1000, "holdout": 150} or fractions.')
    status = models.CharField(max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.DRAFT)
    manifest = models.JSONField(default=dict, blank=True)
    # The OpenAI schemas of the tools, frozen once per release (every row names the tools it offers).
    tools = models.JSONField(default=list, blank=True)
    # The agent contract the release was frozen under: its version, system prompt and limits (world_app.contract).
    contract_version = models.CharField(max_length=32, blank=True)
    contract = models.JSONField(default=dict, blank=True)
    checksum = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="releases")
    created_at = models.DateTimeField(auto_now_add=True)
    frozen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_frozen(self) -> bool:
        return self.status == ReleaseStatus.FROZEN


class ReleaseRow(models.Model):
    """One task of a frozen release, with the content it had at freeze time."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="rows")
    split = models.CharField(max_length=10, choices=Split.choices)
    position = models.PositiveIntegerField(help_text="Order within its split.")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="release_rows")
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="release_rows")
    task_key = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32)
    difficulty = models.CharField("expected difficulty", max_length=16, help_text="The author's, as frozen.")
    family = models.CharField(max_length=100, blank=True)
    # instruction, rubric (criteria), snapshot_version, tools (names), metadata: a copy, never a reference.
    content = models.JSONField()
    checksum = models.CharField(max_length=64)

    class Meta:
        ordering = ["release", "split", "position"]
        constraints = [
            models.UniqueConstraint(fields=["release", "split", "position"], name="release_row_unique_position"),
            models.UniqueConstraint(fields=["release", "task"], name="release_row_unique_task"),
        ]
        indexes = [models.Index(fields=["release", "split", "position"], name="release_row_split_idx")]

    def __str__(self) -> str:
        return f"{self.release_id}/{self.split}/{self.position}"


class ExportFormat(models.TextChoices):
    JSONL = "jsonl", "Generic JSONL (tools once, in its tools file)"
    JSONL_INLINE = "jsonl-inline", "Generic JSONL, tools on every line"
    VERL_PARQUET = "verl-parquet", "verl parquet"
    HF = "hf", "Hugging Face datasets / TRL (parquet)"


class ExportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


def export_job_id() -> int:
    """A random id (below 2**53, so JavaScript reads it exactly): job URLs tell nothing about other jobs."""
    return secrets.randbelow(2**53 - 1) + 1


class ExportJob(models.Model):
    """One file of one split of a frozen release in one format; made once, then served with its sha256 as ETag."""

    id = models.BigIntegerField(primary_key=True, default=export_job_id, editable=False)

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="exports")
    split = models.CharField(max_length=10, choices=Split.choices)
    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    status = models.CharField(max_length=10, choices=ExportStatus.choices, default=ExportStatus.QUEUED)
    rows_total = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    file_path = models.CharField(max_length=500, blank=True, help_text="Relative to MEDIA_ROOT.")
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["release", "split", "format"], name="export_job_unique_file"),
        ]

    def __str__(self) -> str:
        return f"{self.release_id} {self.split} {self.format} ({self.status})"

    @property
    def progress(self) -> float:
        if self.status == ExportStatus.DONE:
            return 1.0
        return self.rows_written / self.rows_total if self.rows_total else 0.0

    @property
    def etag(self) -> str:
        return f'"{self.sha256}"' if self.sha256 else ""


from trainer_bridge.trainer_models import TrainerEpisode, TrainerEpisodeStatus  # noqa: E402,F401 (helper "bridge")
