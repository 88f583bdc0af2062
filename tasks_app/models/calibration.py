"""Rollouts, calibration runs and their items, a task version's calibration, and the stored rubric gates."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.models.tasks import TaskVersion
from world_app.models import Episode, WorldSnapshot


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
