"""Rubric criteria: rows of a task version, copied into each new version and never edited afterwards."""

from __future__ import annotations

import uuid

from django.core.validators import MinValueValidator
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


class Criterion(models.Model):
    """One check of a task version's rubric.

    ``key`` names the criterion across versions (verdict caches and comments use it); ``content_hash`` changes
    whenever what is checked changes (not when it is only moved).
    """

    version = models.ForeignKey("tasks_app.TaskVersion", on_delete=models.CASCADE, related_name="criteria")
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

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:60]}"
