"""Tasks, their immutable versions and their rubric criteria.

A ``Task`` is the mutable head (status, review lease, the fields lists filter on); every save makes a new
``TaskVersion`` holding the authored content (its ``Criterion`` rows included), and versions are never edited
afterwards.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from rubrics_app.models import CriterionCategory, CriterionKind
from world_app.models import WorldSnapshot


class TaskType(models.TextChoices):
    INFORMATION_RETRIEVAL = "information_retrieval", "Information retrieval"
    COMMUNICATION = "communication", "Communication"
    REASONING = "reasoning", "Reasoning"
    MULTI_STEP_WORKFLOW = "multi_step_workflow", "Multi-step workflow"


class Difficulty(models.TextChoices):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    EXPERT = "expert"


class TaskStatus(models.TextChoices):
    """draft -> in_review (submit) -> approved | changes_requested (edit, resubmit) | retired (reject).

    Editing keeps draft and changes_requested as they are and sends approved back to draft; in_review and
    retired are never edited. Admins retire from any status.
    """

    DRAFT = "draft"
    IN_REVIEW = "in_review", "In review"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved"
    RETIRED = "retired"


class Task(models.Model):
    """The head of a task: its workflow status, review lease, and a copy of the current version's list fields."""

    title = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32, choices=TaskType.choices, db_index=True)
    # The author's expected difficulty (what split strata use); the calibrated one is on TaskCalibration.
    difficulty = models.CharField(
        "expected difficulty", max_length=16, choices=Difficulty.choices, db_index=True,
        help_text="The author's expectation; the calibrated difficulty comes from model rollouts.",
    )  # fmt: skip
    family = models.CharField(max_length=100, blank=True, db_index=True)
    tags = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=TaskStatus.choices, default=TaskStatus.DRAFT, db_index=True)
    # Stable id of a task loaded from a fixture file or instantiated from a family ("starter:<key>").
    source_key = models.CharField(max_length=200, unique=True, null=True, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="authored_tasks")
    current_version = models.ForeignKey(
        "TaskVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Bumped by every save: an editor sends the revision it started from, a stale one is a conflict.
    revision = models.PositiveIntegerField(default=0)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="claimed_tasks"
    )
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Two reviewers decide, the second without seeing the first decision; approved only when both approve.
    second_review_required = models.BooleanField(
        default=False, help_text="A second reviewer decides independently; approved only when both approve."
    )
    # Set when a frozen release holds the task out of training: then it, its rubric and its episodes are read
    # only with eval:read (the ``read_holdout`` permission). Written by the release freeze, never cleared.
    held_out = models.BooleanField(default=False, db_index=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        permissions = [("read_holdout", "Read held-out tasks, their rubrics and episodes (eval:read)")]
        # The task list's order: without it every page sorts all tasks (13 ms -> 0.06 ms at 10,000 tasks).
        indexes = [models.Index(fields=["-updated_at", "-id"], name="task_updated_desc_idx")]

    def __str__(self) -> str:
        return self.title


class TaskVersion(models.Model):
    """One immutable save of a task: everything authored, pinned to the world snapshot it was written against."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32, choices=TaskType.choices)
    difficulty = models.CharField("expected difficulty", max_length=16, choices=Difficulty.choices)
    family = models.CharField(max_length=100, blank=True)
    tags = models.JSONField(default=list, blank=True)
    instruction = models.TextField(help_text="What the agent receives: a customer's message, a ticket, a request.")
    snapshot = models.ForeignKey(WorldSnapshot, on_delete=models.PROTECT, related_name="task_versions")
    reviewer_notes = models.TextField(blank=True)
    reference_solution = models.JSONField(
        default=dict, blank=True, help_text='{"calls": [{"tool", "arguments"}], "final_answer": "..."}'
    )
    simulated_user = models.JSONField(
        default=dict,
        blank=True,
        help_text="The facts the instruction holds back and the replies the user gives when asked "
        "(world_app.conversation); empty: no one answers ask_user.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    content_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["task", "number"]
        constraints = [models.UniqueConstraint(fields=["task", "number"], name="task_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.task_id} v{self.number}"


class Criterion(models.Model):
    """One check of a task version's rubric.

    ``key`` names the criterion across versions (verdict caches and comments use it); ``content_hash`` changes
    whenever what is checked changes (not when it is only moved).
    """

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="criteria")
    key = models.UUIDField(default=uuid.uuid4, db_index=True)
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=CriterionKind.choices)
    text = models.TextField(help_text="What is checked, in plain language.")
    spec = models.JSONField(default=dict, blank=True)
    weight = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    category = models.CharField(max_length=16, choices=CriterionCategory.choices)
    required = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "position"], name="criterion_unique_position"),
            models.UniqueConstraint(fields=["version", "key"], name="criterion_unique_key"),
            models.CheckConstraint(condition=models.Q(weight__gt=0), name="criterion_weight_positive"),
        ]
        verbose_name_plural = "criteria"
        db_table = "rubrics_app_criterion"  # made by rubrics_app's migrations before it moved here

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:60]}"
