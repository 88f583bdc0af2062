"""The calibration pages' forms: model endpoints, judge configurations, a run's plan, a verdict's label.

Forms check what was typed; what the plan reads (approved tasks, the policies chosen) comes from the selectors,
and what is saved goes through the services (``rubrics_app.endpoints``, ``rubrics_app.judge``,
``tasks_app.calibration.services.calibration``, ``rubrics_app.agreement``).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q

from rubrics_app.endpoints import base_url_check
from rubrics_app.judge import JUDGE_PROMPTS
from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.calibration.selectors_runs import approved_tasks_matching, calibration_policies_chosen
from tasks_app.models import Difficulty, Task, TaskStatus, TaskType

MAX_SAMPLES = 64
# A run service's arguments, as this page's fields.
RUN_FIELDS = {"versions": "tasks", "policies": "endpoints"}


class SamplingField(forms.CharField):
    """A JSON object of sampling parameters (and the agent's limits), checked for the usual types and ranges."""

    widget = forms.Textarea(attrs={"rows": 4, "class": "mono"})
    CHECKS: dict[str, tuple[type | tuple[type, ...], float | None, float | None]] = {
        "temperature": ((int, float), 0, 2),
        "top_p": ((int, float), 0, 1),
        "max_tokens": (int, 1, None),
        "seed": (int, None, None),
        "max_turns": (int, 1, 500),
        "max_total_tokens": (int, 1, None),
        "max_wall_s": ((int, float), 1, None),
    }

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, dict):
            return json.dumps(value, indent=1, sort_keys=True) if value else ""
        return value or ""

    def to_python(self, value: Any) -> dict:
        text = (value or "").strip()
        if not text:
            return {}
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValidationError(f"Not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValidationError('A JSON object, e.g. {"temperature": 0.2, "max_tokens": 1024}.')
        problems = []
        for key, (kind, low, high) in self.CHECKS.items():
            if key not in data:
                continue
            item = data[key]
            if isinstance(item, bool) or not isinstance(item, kind):
                problems.append(f"{key} must be a {'whole ' if kind is int else ''}number")
            elif (low is not None and item < low) or (high is not None and item > high):
                problems.append(f"{key} must be between {low} and {high if high is not None else '∞'}")
        if problems:
            raise ValidationError(problems)
        return data


class EndpointForm(forms.Form):
    name = forms.CharField(max_length=100)
    base_url = forms.CharField(
        max_length=500, label="Base URL", help_text="OpenAI-compatible, e.g. http://gpu1:8000/v1"
    )
    model = forms.CharField(max_length=200, help_text="The model id sent with every request.")
    api_key_env = forms.RegexField(
        regex=r"^[A-Za-z_][A-Za-z0-9_]*$",
        max_length=100,
        required=False,
        label="API key environment variable",
        help_text="The NAME of the environment variable that holds the key, e.g. OPENAI_API_KEY. Never the key.",
        error_messages={"invalid": "A variable name (letters, digits, _), not a key."},
    )
    sampling = SamplingField(required=False, help_text="JSON: temperature, top_p, max_tokens, seed, max_turns…")
    timeout_s = forms.FloatField(min_value=1, max_value=3600, initial=60, label="Timeout (s)")
    max_retries = forms.IntegerField(min_value=0, max_value=10, initial=4)
    is_active = forms.BooleanField(required=False, initial=True, label="Active")

    def __init__(self, *args, endpoint: ModelEndpoint | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.endpoint = endpoint

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        try:
            base_url_check(url)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["base_url"]) from None
        return url

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        taken = ModelEndpoint.objects.filter(name=name)
        if self.endpoint is not None:
            taken = taken.exclude(pk=self.endpoint.pk)
        if taken.exists():
            raise ValidationError("Another endpoint has this name.")
        return name


class JudgeConfigForm(forms.Form):
    name = forms.CharField(max_length=100)
    endpoint = forms.ModelChoiceField(queryset=ModelEndpoint.objects.filter(is_active=True).order_by("name"))
    samples = forms.IntegerField(min_value=1, max_value=15, initial=1, help_text="n samples; the majority decides.")
    temperature = forms.FloatField(min_value=0, max_value=2, initial=0.0)
    prompt_version = forms.ChoiceField(choices=[(v, v) for v in sorted(JUDGE_PROMPTS)], initial="v1")
    max_retries = forms.IntegerField(min_value=0, max_value=10, initial=2, help_text="Retries of invalid output.")
    is_active = forms.BooleanField(required=False, initial=True, label="Active")

    def __init__(self, *args, judge_config: JudgeConfig | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.judge_config = judge_config
        if judge_config is not None:
            # An inactive endpoint stays selectable for the configuration already using it.
            self.fields["endpoint"].queryset = ModelEndpoint.objects.filter(
                Q(is_active=True) | Q(pk=judge_config.endpoint_id)
            ).order_by("name")

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        taken = JudgeConfig.objects.filter(name=name)
        if self.judge_config is not None:
            taken = taken.exclude(pk=self.judge_config.pk)
        if taken.exists():
            raise ValidationError("Another judge configuration has this name.")
        return name


class RunForm(forms.Form):
    """Which tasks, which policies, how many samples, which judge: a calibration run's plan."""

    SELECT_TASKS, SELECT_FILTER = "tasks", "filter"
    name = forms.CharField(max_length=200)
    selection = forms.ChoiceField(
        choices=[(SELECT_TASKS, "The tasks ticked below"), (SELECT_FILTER, "Every approved task matching the filter")],
        initial=SELECT_TASKS,
        widget=forms.RadioSelect,
    )
    tasks = forms.ModelMultipleChoiceField(
        queryset=Task.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )
    task_type = forms.ChoiceField(choices=[("", "Any type"), *TaskType.choices], required=False)
    difficulty = forms.ChoiceField(choices=[("", "Any difficulty"), *Difficulty.choices], required=False)
    family = forms.CharField(max_length=100, required=False)
    reference = forms.BooleanField(required=False, initial=True, label="Reference solution")
    perturbed_reference = forms.BooleanField(required=False, label="Perturbed references (one per fault)")
    endpoints = forms.ModelMultipleChoiceField(
        queryset=ModelEndpoint.objects.none(), required=False, widget=forms.CheckboxSelectMultiple, label="Models"
    )
    samples = forms.IntegerField(
        min_value=1,
        max_value=MAX_SAMPLES,
        initial=1,
        help_text="Samples per task for each model; the reference runs once, perturbed references once per fault.",
    )
    judge_config = forms.ModelChoiceField(
        queryset=JudgeConfig.objects.none(), required=False, empty_label="No LLM judge (llm criteria stay pending)"
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tasks"].queryset = Task.objects.filter(
            status=TaskStatus.APPROVED, current_version__isnull=False
        ).order_by("title")
        self.fields["tasks"].label_from_instance = lambda task: (
            f"{task.title} · {task.get_task_type_display()} · {task.get_difficulty_display()}"
        )
        self.fields["endpoints"].queryset = ModelEndpoint.objects.filter(is_active=True).order_by("name")
        self.fields["judge_config"].queryset = JudgeConfig.objects.filter(is_active=True).select_related("endpoint")

    def clean(self) -> dict:
        """The run's plan: ``versions`` (the chosen tasks' current versions) and ``policies``."""
        data = super().clean()
        if self.errors:
            return data
        if data["selection"] == self.SELECT_TASKS:
            tasks = list(data.get("tasks") or [])
            if not tasks:
                self.add_error("tasks", "Tick at least one task, or choose the filter.")
        else:
            tasks = approved_tasks_matching(
                task_type=data["task_type"], difficulty=data["difficulty"], family=data["family"]
            )
            if not tasks:
                self.add_error("selection", "No approved task matches this filter.")
        data["versions"] = [task.current_version for task in tasks]
        data["policies"] = calibration_policies_chosen(
            reference=data.get("reference", False),
            perturbed_reference=data.get("perturbed_reference", False),
            endpoints=data.get("endpoints") or [],
        )
        if not data["policies"]:
            self.add_error("endpoints", "Choose at least one policy: the reference, perturbed references or a model.")
        return data


class LabelForm(forms.Form):
    agrees = forms.TypedChoiceField(
        choices=[("yes", "Agree"), ("no", "Disagree")], coerce=lambda v: v == "yes", widget=forms.RadioSelect
    )
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
