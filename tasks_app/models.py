"""Tasks, their immutable versions, reviews, comments and reference-solution runs (issue 4).

A ``Task`` is the mutable head (status, review lease, the fields lists filter on); every save makes a new
``TaskVersion`` holding the authored content, and versions are never edited afterwards.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


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
    difficulty = models.CharField(max_length=16, choices=Difficulty.choices, db_index=True)
    family = models.CharField(max_length=100, blank=True, db_index=True)
    tags = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=TaskStatus.choices, default=TaskStatus.DRAFT, db_index=True)
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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class TaskVersion(models.Model):
    """One immutable save of a task: everything authored, pinned to the world snapshot it was written against."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32, choices=TaskType.choices)
    difficulty = models.CharField(max_length=16, choices=Difficulty.choices)
    family = models.CharField(max_length=100, blank=True)
    tags = models.JSONField(default=list, blank=True)
    instruction = models.TextField(help_text="What the agent receives: a customer's message, a ticket, a request.")
    snapshot = models.ForeignKey("world_app.WorldSnapshot", on_delete=models.PROTECT, related_name="task_versions")
    reviewer_notes = models.TextField(blank=True)
    reference_solution = models.JSONField(
        default=dict, blank=True, help_text='{"calls": [{"tool", "arguments"}], "final_answer": "..."}'
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    content_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["task", "number"]
        constraints = [models.UniqueConstraint(fields=["task", "number"], name="task_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.task_id} v{self.number}"


class ReviewDecision(models.TextChoices):
    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes", "Request changes"
    REJECT = "reject"


class Review(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reviews")
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=20, choices=ReviewDecision.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["task", "created_at"]

    def __str__(self) -> str:
        return f"{self.decision} on {self.version}"


class Comment(models.Model):
    """A remark on a task version, or on one criterion of it (by the criterion's stable key)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="comments")
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="comments")
    criterion_key = models.UUIDField(null=True, blank=True, db_index=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["task", "created_at"]

    def __str__(self) -> str:
        return f"comment by {self.author_id} on {self.version}"


class ReferenceRun(models.Model):
    """One run of a version's reference solution in a fresh episode, with a verdict per criterion."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="reference_runs")
    episode = models.ForeignKey("world_app.Episode", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    call_results = models.JSONField(default=list, help_text="[{tool, arguments, is_error, result}] per call")
    verdicts = models.JSONField(default=list)
    reward = models.FloatField(null=True, blank=True, help_text="Empty while llm criteria are pending.")
    passed = models.BooleanField(null=True, blank=True)
    outcome = models.JSONField(default=dict, help_text="reward() of the verdicts")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"reference run of {self.version}"
