"""The judgement's rows: what a criterion is (its kinds and categories), the model endpoints and judge configurations
that decide llm criteria, the verdicts (also the judge's cache) and the reviewers' labels of verdicts.

The criteria themselves are rows of a task version (``tasks_app.models.Criterion``): the judgement reads any object
with a criterion's fields, so it needs no task.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class CriterionKind(models.TextChoices):
    LLM = "llm", "LLM judge"
    STATE = "state", "Final world state"
    TOOL_CALL = "tool_call", "Tool call"
    RESPONSE = "response", "Final response"


class CriterionCategory(models.TextChoices):
    COMPLETENESS = "completeness"
    CORRECTNESS = "correctness"
    CONSTRAINT = "constraint"
    FORMAT = "format"
    TONE = "tone"


PROGRAMMATIC_KINDS = (CriterionKind.STATE, CriterionKind.TOOL_CALL, CriterionKind.RESPONSE)


class ModelEndpoint(models.Model):
    """An OpenAI-compatible model to run rollouts or judge with. The key lives in an environment variable."""

    name = models.CharField(max_length=100, unique=True)
    base_url = models.URLField(max_length=500, help_text="OpenAI-compatible base URL, e.g. http://host:8000/v1")
    model = models.CharField(max_length=200, help_text="Model id sent with every request.")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="NAME of the environment variable holding the API key (never the key itself).",
    )
    sampling = models.JSONField(
        default=dict, blank=True, help_text="temperature, top_p, max_tokens, seed… sent with every request."
    )
    timeout_s = models.FloatField(default=60.0)
    max_retries = models.PositiveIntegerField(default=4)
    is_active = models.BooleanField(default=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_check = models.JSONField(default=dict, blank=True, help_text="Outcome of the last test connection.")

    class Meta:
        ordering = ["name"]
        db_table = "tasks_app_modelendpoint"  # made by tasks_app's migrations before it moved here

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


class JudgeConfig(models.Model):
    """How llm criteria are judged: which endpoint, how many samples (majority vote), which prompt.

    ``config_hash`` covers everything that can change a verdict; cached verdicts are keyed by it.
    """

    name = models.CharField(max_length=100, unique=True)
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="judge_configs")
    samples = models.PositiveIntegerField(default=1, help_text="Samples per criterion; the majority decides.")
    temperature = models.FloatField(default=0.0)
    prompt_version = models.CharField(max_length=32, default="v1")
    max_retries = models.PositiveIntegerField(default=2, help_text="Retries of invalid judge output.")
    config_hash = models.CharField(max_length=64, blank=True, db_index=True)
    is_active = models.BooleanField(default=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=models.Q(samples__gte=1), name="judge_config_samples_min")]

    def __str__(self) -> str:
        return self.name


class VerdictStatus(models.TextChoices):
    MET = "met"
    NOT_MET = "not_met", "Not met"
    ERROR = "error"


class Verdict(models.Model):
    """A decision on one criterion for one trajectory; also the judge's cache.

    Keyed by (trajectory hash, criterion content hash, judge config); ``judge_config`` empty = programmatic, and
    then ``judge_version`` says which code decided it (a change to the programmatic judge re-decides it).
    """

    trajectory_hash = models.CharField(max_length=64)
    criterion_key = models.UUIDField(db_index=True)
    criterion_hash = models.CharField(max_length=64)
    judge_config = models.ForeignKey(
        JudgeConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="verdicts"
    )
    met = models.BooleanField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=VerdictStatus.choices, db_index=True)
    rationale = models.TextField(blank=True)
    evidence = models.JSONField(default=list, blank=True)
    samples = models.JSONField(default=list, blank=True, help_text="Each judge sample's raw verdict.")
    agreement = models.FloatField(null=True, blank=True, help_text="Share of samples agreeing with the majority.")
    judge_version = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="Programmatic verdicts: the programmatic judge's code version that decided it "
        "(rubrics_app.judgement.PROGRAMMATIC_VERSION); a row of another version is stale and decided again",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory_hash", "criterion_hash", "judge_config"],
                name="verdict_unique_cache_key",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        return f"{self.status} {self.criterion_key} @ {self.trajectory_hash[:10]}"


class VerdictLabel(models.Model):
    """A reviewer's agree / disagree on a verdict (judge against humans)."""

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="labels")
    labeller = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="verdict_labels")
    agrees = models.BooleanField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["verdict", "labeller"], name="verdict_label_unique_labeller")]

    def __str__(self) -> str:
        return f"{'agree' if self.agrees else 'disagree'} by {self.labeller_id} on {self.verdict_id}"
