"""The rows authoring and review leave: reviews, comments, reference-solution runs and saved filters."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tasks_app.models.tasks import Task, TaskVersion
from world_app.models import Episode


class ReviewDecision(models.TextChoices):
    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes", "Request changes"
    REJECT = "reject"


class ReviewStage(models.TextChoices):
    """A task that needs one review gets ``single`` ones; one that needs two (``Task.second_review_required``)
    gets a ``first`` decision, sealed until a different reviewer gives the ``second`` (``paired_with`` the first)."""

    SINGLE = "single"
    FIRST = "first", "First of two"
    SECOND = "second", "Second of two"


class Review(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reviews")
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=20, choices=ReviewDecision.choices)
    comment = models.TextField(blank=True)
    gate = models.JSONField(default=dict, blank=True, help_text="The gate's checklist when the task was approved")
    gate_override_reason = models.TextField(blank=True, help_text="An admin's reason for approving over the gate")
    stage = models.CharField(max_length=8, choices=ReviewStage.choices, default=ReviewStage.SINGLE)
    paired_with = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="second_review",
        help_text="On a second review: the first review it was given blind to.",
    )  # fmt: skip
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
    episode = models.ForeignKey(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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


class SavedFilterPage(models.TextChoices):
    REVIEW_QUEUE = "review_queue", "Review queue"


class SavedFilter(models.Model):
    """A person's named filters and order of a list page (the review queue), opened again in one click."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_filters")
    page = models.CharField(max_length=40, choices=SavedFilterPage.choices)
    name = models.CharField(max_length=80)
    query = models.CharField(max_length=1000, blank=True, help_text="The page's query string: its filters and order.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["user", "page", "name"], name="saved_filter_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_page_display()})"
