"""Tasks, their immutable versions and rubric criteria, reviews, comments, reference-solution runs, rollouts and
calibration runs.

A ``Task`` is the mutable head (status, review lease, the fields lists filter on); every save makes a new
``TaskVersion`` holding the authored content (its ``Criterion`` rows included), and versions are never edited
afterwards.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from rubrics_app.models import CriterionCategory, CriterionKind, JudgeConfig, ModelEndpoint
from world_app.models import Episode, WorldSnapshot


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
    gate = models.JSONField(default=dict, blank=True, help_text="The gate's checklist when the task was approved")
    gate_override_reason = models.TextField(blank=True, help_text="An admin's reason for approving over the gate")
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


# --- Rollouts and calibration -------------------------------------------------------------------------


class RolloutPolicy(models.TextChoices):
    MODEL = "model"
    REFERENCE = "reference"
    PERTURBED_REFERENCE = "perturbed_reference", "Perturbed reference"
    RED_TEAM = "red_team", "Red team (must-fail and must-pass policies)"


class RolloutStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Rollout(models.Model):
    """One trajectory of a policy on a task version, in its own episode, with its verdicts and reward."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="rollouts")
    policy = models.CharField(max_length=24, choices=RolloutPolicy.choices, db_index=True)
    endpoint = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="rollouts"
    )
    policy_label = models.CharField(
        max_length=200, help_text='Who made it: "model:<name>", "reference", "perturbed_reference:<key>".'
    )
    perturbation = models.JSONField(default=dict, blank=True, help_text="{key, description} for perturbed runs.")
    sample = models.PositiveIntegerField(default=0)
    episode = models.ForeignKey(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=12, choices=RolloutStatus.choices, default=RolloutStatus.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    messages = models.JSONField(default=list, blank=True, help_text="The conversation, OpenAI message format.")
    tool_calls = models.JSONField(
        default=list, blank=True, help_text="[{turn, name, arguments, result, is_error, latency_ms}]"
    )
    final_answer = models.TextField(blank=True)
    turns = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    malformed_tool_calls = models.PositiveIntegerField(default=0)
    endpoint_retries = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    trajectory_hash = models.CharField(max_length=64, blank=True, db_index=True)
    contract_version = models.CharField(
        max_length=32, blank=True, db_index=True, help_text="The agent contract (world_app.contract) it ran under."
    )
    verdicts = models.JSONField(default=list, blank=True)
    reward = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    judged_at = models.DateTimeField(null=True, blank=True)
    judge_errors = models.PositiveIntegerField(default=0)
    run = models.ForeignKey("CalibrationRun", null=True, blank=True, on_delete=models.CASCADE, related_name="rollouts")
    # The calibration item this rollout executes: at most one rollout per item (redeliveries reuse it).
    item = models.ForeignKey(
        "CalibrationItem", null=True, blank=True, on_delete=models.SET_NULL, related_name="rollouts"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["version", "policy", "status"], name="rollout_version_policy")]
        constraints = [models.UniqueConstraint(fields=["item"], name="rollout_unique_item")]

    def __str__(self) -> str:
        return f"{self.policy_label} on {self.version} #{self.sample}"


class CalibrationRunStatus(models.TextChoices):
    PLANNED = "planned"
    RUNNING = "running"
    CANCELLED = "cancelled"
    FINISHED = "finished"
    FAILED = "failed"


class CalibrationRun(models.Model):
    """Task versions x policies x samples. The plan is frozen as CalibrationItem rows when the run is created."""

    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(
        max_length=12, choices=CalibrationRunStatus.choices, default=CalibrationRunStatus.PLANNED, db_index=True
    )
    policies = models.JSONField(default=list, help_text='[{"policy": "model"|"reference"|…, "endpoint": id|null}]')
    samples = models.PositiveIntegerField(default=1)
    judge_config = models.ForeignKey(
        JudgeConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="calibration_runs"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # Set by the sweeper while no worker makes progress (why, in words); cleared when work moves again.
    stalled_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.CheckConstraint(condition=models.Q(samples__gte=1), name="calibration_run_samples_min")]

    def __str__(self) -> str:
        return self.name


class CalibrationItemStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class CalibrationItem(models.Model):
    """One unit of a run's frozen plan: a (version, policy, endpoint, perturbation, sample) to roll out once."""

    run = models.ForeignKey(CalibrationRun, on_delete=models.CASCADE, related_name="items")
    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="calibration_items")
    policy = models.CharField(max_length=24, choices=RolloutPolicy.choices)
    endpoint = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="calibration_items"
    )
    perturbation = models.CharField(max_length=200, blank=True, default="", help_text="Perturbation key, or empty.")
    sample = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=12, choices=CalibrationItemStatus.choices, default=CalibrationItemStatus.QUEUED, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    rollout = models.ForeignKey(Rollout, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    claimed_at = models.DateTimeField(null=True, blank=True)
    # When its message was last handed to the broker (None: never, e.g. the broker was down): the sweeper
    # re-enqueues a queued item whose message is older than CALIBRATION_REQUEUE_AFTER_S.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "version", "policy", "endpoint", "perturbation", "sample"],
                name="calibration_item_unique_plan",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["run", "status"], name="calibration_item_run_status")]

    def __str__(self) -> str:
        label = self.policy + (f":{self.perturbation}" if self.perturbation else "")
        return f"run {self.run_id}: {label} on {self.version} #{self.sample}"


class DifficultyLabel(models.TextChoices):
    """The calibrated difficulty: from model rollouts only, else not calibrated."""

    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    UNSOLVED = "unsolved"
    NOT_CALIBRATED = "not_calibrated", "Not calibrated"


class CalibrationFlag(models.TextChoices):
    REFERENCE_FAILS = "reference_fails", "Reference fails"
    NO_REWARD_VARIANCE = "no_reward_variance", "No reward variance"
    PERTURBED_PASSES = "perturbed_passes", "A perturbed reference passes unnoticed"
    JUDGE_UNSTABLE = "judge_unstable", "Judge unstable"
    GAMEABLE = "gameable", "Gameable: a red-team policy that must fail passes"
    OVER_SPECIFIED = "over_specified", "Over-specified: a valid alternative fails"


class TaskCalibration(models.Model):
    """The calibration summary of one task version (per judge configuration), refreshed after each run."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="calibrations")
    judge_config = models.ForeignKey(
        JudgeConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="task_calibrations"
    )
    run = models.ForeignKey(
        CalibrationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="task_calibrations"
    )
    n_rollouts = models.PositiveIntegerField(default=0)
    pass_at_1 = models.FloatField(null=True, blank=True)
    pass_at_k = models.JSONField(default=dict, blank=True, help_text="{k: pass@k}")
    pass_hat_k = models.JSONField(default=dict, blank=True, help_text="{k: pass^k} (all k samples pass)")
    reward_mean = models.FloatField(null=True, blank=True)
    reward_std = models.FloatField(null=True, blank=True)
    criterion_pass_rates = models.JSONField(default=dict, blank=True, help_text="{criterion_key: rate}")
    judge_agreement = models.FloatField(null=True, blank=True)
    # From model rollouts only (never from reference, perturbed or red-team runs); the author's expected
    # difficulty is the task's ``difficulty``, a different thing.
    calibrated_difficulty = models.CharField(
        max_length=16, choices=DifficultyLabel.choices, default=DifficultyLabel.NOT_CALIBRATED, db_index=True
    )
    difficulty_provenance = models.JSONField(
        default=dict, blank=True, help_text="{policies, model_rollouts, contract_versions, judge_config}"
    )
    flags = models.JSONField(default=list, blank=True, help_text="CalibrationFlag values")
    per_policy = models.JSONField(default=dict, blank=True)
    red_team = models.JSONField(
        default=dict,
        blank=True,
        help_text="{reference_passes, gameable: [{policy, why, criteria}], over_specified: [...], policies}",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["version"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "judge_config"], name="task_calibration_unique", nulls_distinct=False
            )
        ]

    def __str__(self) -> str:
        return f"calibration of {self.version}"


class RubricGate(models.Model):
    """The gate's result for one task version on one snapshot: the reference passes, no must-fail red-team policy
    passes, every must-pass one does (``tasks_app.red_team``). Computed once and kept: approving, loading the
    library and building releases read it; a calibration run with the red_team policy refreshes it. A row whose
    ``gate_key`` is not the version's current one (the gate's code changed) is stale and computed again."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="gates")
    snapshot = models.ForeignKey(WorldSnapshot, on_delete=models.CASCADE, related_name="+")
    reference_passes = models.BooleanField()
    gameable = models.JSONField(default=list, blank=True, help_text="[{policy, why, criteria}]")
    over_specified = models.JSONField(default=list, blank=True, help_text="[{policy, why, criteria}]")
    passes = models.BooleanField(db_index=True)
    policies = models.JSONField(default=list, blank=True, help_text="[{key, expect, passed, partial_reward}]")
    gate_key = models.CharField(
        max_length=64,
        help_text="sha256 of what the result was computed for: the version's instruction, criteria and reference "
        "solution, the snapshot and the gate's code (tasks_app.services.gates.gate_key); another key = stale",
    )
    source = models.CharField(max_length=100, help_text="'red team check' or 'calibration run N'")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "snapshot"], name="rubric_gate_unique")]

    def __str__(self) -> str:
        return f"gate of {self.version}: {'passes' if self.passes else 'refused'}"


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
