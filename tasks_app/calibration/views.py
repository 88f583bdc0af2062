"""Calibration pages: model endpoints and judge configurations, runs with live progress, a task's calibration,
the trajectory page, and the judge against humans (labels and agreement).

Views stay thin: reads are queries shaped for the page (bounded, no N+1), writes go through the services
(``rubrics_app.endpoints`` and ``rubrics_app.judge`` for the registry, ``tasks_app.calibration.services.calibration``
for runs, ``rubrics_app.agreement`` for labels). Plots are inline SVG drawn by the server from geometry computed here;
no JS library.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from types import SimpleNamespace
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corecraft_site.canonical import sorted_json
from corecraft_site.refusals import forbidden_as_page as refusal_page
from corecraft_site.roles import ADMIN, REVIEWER, is_admin, user_roles
from rubrics_app.agreement import (
    judge_agreement_report,
    thresholds,
    verdict_label_set,
    verdict_labeller_check,
    verdicts_to_label,
)
from rubrics_app.endpoints import base_url_check, model_endpoint_save, model_endpoint_test, registry_admin_check
from rubrics_app.judge import JUDGE_PROMPTS, judge_config_save
from rubrics_app.models import JudgeConfig, ModelEndpoint, Verdict
from tasks_app.calibration.metrics import DIFFICULTIES, EASY_MIN_PASS_RATE, MEDIUM_MIN_PASS_RATE, perturbed_unnoticed
from tasks_app.calibration.selectors import criterion_texts
from tasks_app.calibration.services.calibration import calibration_runs_item_counts
from tasks_app.models import (
    CalibrationFlag,
    CalibrationRun,
    CalibrationRunStatus,
    Criterion,
    Difficulty,
    Rollout,
    RolloutPolicy,
    Task,
    TaskCalibration,
    TaskStatus,
    TaskType,
    TaskVersion,
)
from tasks_app.permissions import calibration_run_check, calibration_view_check, task_view_check
from world_app.episodes import EpisodeError, episode_diff

PAGE_SIZE = 25
LABEL_BATCH = 10
MAX_SAMPLES = 64
DONE_RUN_STATUSES = (CalibrationRunStatus.FINISHED, CalibrationRunStatus.CANCELLED, CalibrationRunStatus.FAILED)
# htmx stops polling when the server answers 286.
HTMX_STOP_POLLING = 286


# --- access ------------------------------------------------------------------------------------------------------


# A refusal (from a check here or a service) renders the 403 page with its reason, never a 500.
forbidden_as_page = refusal_page(page="calibration/forbidden.html")


# Service messages read "field: why"; these service field names are form fields under another name.
FIELD_ALIASES = {"versions": "tasks", "policies": "endpoints", "judge_config": "judge_config"}


def _field_errors(form: forms.Form, exc: ValidationError) -> None:
    """Attach a service's ValidationError to the form: per field where it names one ("field: why")."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return
    for message in exc.messages:
        field, sep, why = message.partition(": ")
        field = FIELD_ALIASES.get(field, field)
        if sep and field in form.fields:
            form.add_error(field, why)
        else:
            form.add_error(None, message)


# --- plots (inline SVG geometry) ---------------------------------------------------------------------------------


def bar_chart(rows: list[tuple[str, float | None, str]], *, title: str, width: int = 560) -> dict:
    """Horizontal bars of values in [0, 1]: ``rows`` are (label, value, note shown after the bar)."""
    label_w, bar_w, row_h = 200, width - 200 - 90, 24
    bars = []
    for index, (label, value, note) in enumerate(rows):
        share = max(0.0, min(1.0, value or 0.0))
        bars.append(
            {
                "label": label if len(label) <= 30 else label[:29] + "…",
                "full_label": label,
                "y": index * row_h + 4,
                "text_y": index * row_h + 18,
                "w": round(share * bar_w, 1),
                "note": note,
                "note_x": label_w + round(share * bar_w, 1) + 6,
                "missing": value is None,
            }
        )
    return {
        "kind": "bars",
        "title": title,
        "width": width,
        "height": max(len(rows), 1) * row_h + 8,
        "label_w": label_w,
        "bar_w": bar_w,
        "bars": bars,
    }


def column_chart(columns: list[tuple[str, int]], *, title: str, width: int = 420, height: int = 180) -> dict:
    """Vertical bars of counts (a histogram over named bins)."""
    top = max((count for _, count in columns), default=0) or 1
    plot_h, base = height - 40, height - 24
    slot = width / max(len(columns), 1)
    bars = []
    for index, (label, count) in enumerate(columns):
        h = round(count / top * plot_h, 1)
        bars.append(
            {
                "label": label,
                "count": count,
                "x": round(index * slot + slot * 0.15, 1),
                "w": round(slot * 0.7, 1),
                "y": round(base - h, 1),
                "h": h,
                "mid": round(index * slot + slot / 2, 1),
                "count_y": round(base - h - 4, 1),
            }
        )
    return {
        "kind": "columns",
        "title": title,
        "width": width,
        "height": height,
        "base": base,
        "bars": bars,
        "label_y": height - 8,
    }


REWARD_BINS = 10


def reward_bins(rewards: list[float]) -> list[int]:
    """Counts of rewards in ten equal bins over [0, 1] (1.0 falls in the last)."""
    counts = [0] * REWARD_BINS
    for reward in rewards:
        counts[min(REWARD_BINS - 1, max(0, int(float(reward) * REWARD_BINS)))] += 1
    return counts


def strip_chart(rows: list[tuple[str, list[float]]], *, title: str, width: int = 560) -> dict:
    """A small reward histogram per row (task or policy): ten bins over [0, 1], bar height = share of rollouts."""
    label_w, row_h, plot_w = 200, 30, width - 200 - 60
    bin_w = plot_w / REWARD_BINS
    strips = []
    for index, (label, rewards) in enumerate(rows):
        counts = reward_bins(rewards)
        top = max(counts) or 1
        base = index * row_h + row_h - 4
        cells = []
        for b, count in enumerate(counts):
            h = round(count / top * (row_h - 8), 1)
            cells.append(
                {
                    "x": round(label_w + b * bin_w + 1, 1),
                    "w": round(bin_w - 2, 1),
                    "y": round(base - h, 1),
                    "h": h,
                    "count": count,
                    "low": b / REWARD_BINS,
                    "high": (b + 1) / REWARD_BINS,
                }
            )
        strips.append(
            {
                "label": label if len(label) <= 30 else label[:29] + "…",
                "full_label": label,
                "text_y": index * row_h + 19,
                "base": base,
                "cells": cells,
                "n": len(rewards),
            }
        )
    height = max(len(rows), 1) * row_h + 22
    return {
        "kind": "strips",
        "title": title,
        "width": width,
        "height": height,
        "label_w": label_w,
        "plot_w": plot_w,
        "axis_y": height - 6,
        "strips": strips,
        "end_x": label_w + plot_w,
    }


def difficulty_histogram(labels: list[str], *, title: str = "Difficulty of the tasks") -> dict:
    counts = Counter(labels)
    return column_chart([(name, counts.get(name, 0)) for name in DIFFICULTIES], title=title)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


# --- model endpoints -----------------------------------------------------------------------------------------------


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


@require_GET
@login_required
@forbidden_as_page
def endpoints(request: HttpRequest) -> HttpResponse:
    """The model endpoint registry with the last connection check of each, and the judge configurations."""
    calibration_view_check(request.user)
    context = {
        "endpoints": ModelEndpoint.objects.annotate(n_judges=Count("judge_configs")).order_by("name"),
        "judges": JudgeConfig.objects.select_related("endpoint").annotate(n_verdicts=Count("verdicts")),
        "can_edit": is_admin(request.user),
    }
    return render(request, "calibration/endpoints.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@forbidden_as_page
def endpoint_edit(request: HttpRequest, endpoint_id: int | None = None) -> HttpResponse:
    """Create or edit an endpoint (admins); bad input shows the form again with what was typed."""
    registry_admin_check(request.user)
    endpoint = get_object_or_404(ModelEndpoint, pk=endpoint_id) if endpoint_id else None
    initial = None
    if endpoint is not None:
        initial = {name: getattr(endpoint, name) for name in EndpointForm.base_fields}
    form = EndpointForm(request.POST or None, initial=initial, endpoint=endpoint)
    if request.method == "POST" and form.is_valid():
        try:
            saved = model_endpoint_save(user=request.user, fields=form.cleaned_data, endpoint=endpoint)
        except ValidationError as exc:
            _field_errors(form, exc)
        else:
            messages.success(request, f"Saved endpoint {saved.name}.")
            return redirect("calibration:endpoints")
    status = 400 if request.method == "POST" else 200
    return render(request, "calibration/endpoint_form.html", {"form": form, "endpoint": endpoint}, status=status)


@require_POST
@login_required
@forbidden_as_page
def endpoint_test(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """Send a tiny chat completion through the endpoint and store the outcome; htmx swaps the row's status cell."""
    registry_admin_check(request.user)
    endpoint = get_object_or_404(ModelEndpoint, pk=endpoint_id)
    outcome = model_endpoint_test(endpoint=endpoint)
    endpoint.refresh_from_db(fields=["last_check", "last_checked_at"])
    if request.htmx:
        return render(request, "calibration/endpoints.html#check", {"endpoint": endpoint})
    if outcome.get("ok"):
        messages.success(request, f"{endpoint.name} answered in {outcome.get('latency_ms')} ms.")
    else:
        messages.error(request, f"{endpoint.name} failed: {outcome.get('error') or outcome.get('reason')}")
    return redirect("calibration:endpoints")


# --- judge configurations -----------------------------------------------------------------------------------------


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


@require_http_methods(["GET", "POST"])
@login_required
@forbidden_as_page
def judge_edit(request: HttpRequest, judge_id: int | None = None) -> HttpResponse:
    """Create or edit a judge configuration (admins)."""
    registry_admin_check(request.user)
    judge = get_object_or_404(JudgeConfig, pk=judge_id) if judge_id else None
    initial = {name: getattr(judge, name) for name in JudgeConfigForm.base_fields} if judge else None
    form = JudgeConfigForm(request.POST or None, initial=initial, judge_config=judge)
    if request.method == "POST" and form.is_valid():
        try:
            saved = judge_config_save(user=request.user, fields=form.cleaned_data, judge_config=judge)
        except ValidationError as exc:
            _field_errors(form, exc)
        else:
            messages.success(request, f"Saved judge configuration {saved.name}.")
            return redirect("calibration:endpoints")
    status = 400 if request.method == "POST" else 200
    return render(request, "calibration/judge_form.html", {"form": form, "judge": judge}, status=status)


# --- calibration runs ----------------------------------------------------------------------------------------------


def run_progress(run: CalibrationRun, counts: dict[str, int]) -> dict:
    """The progress bar's figures from ``calibration_runs_item_counts``: a whole percent of the settled items
    among those that will run; a finished run with no items reads 100."""
    counts = counts or {}
    total, settled, to_run = counts.get("total", 0), counts.get("settled", 0), counts.get("to_run", 0)
    finished = run.status in DONE_RUN_STATUSES
    return {
        "total": total,
        "settled": settled,
        **{status: counts.get(status, 0) for status in ("done", "failed", "running", "queued", "cancelled")},
        "percent": round(100 * settled / to_run) if to_run else (100 if finished or total else 0),
        "finished": finished,
    }


@require_GET
@login_required
@forbidden_as_page
def runs(request: HttpRequest) -> HttpResponse:
    """Calibration runs, newest first, with their progress, and the difficulty of every calibrated task."""
    calibration_view_check(request.user)
    page = Paginator(
        CalibrationRun.objects.select_related("created_by", "judge_config").order_by("-created_at"), PAGE_SIZE
    ).get_page(request.GET.get("page"))
    counts = calibration_runs_item_counts([run.pk for run in page.object_list])
    for run in page.object_list:
        run.progress = run_progress(run, counts.get(run.pk, {}))
    # One label per calibrated task: its current version's most recent calibration (any judge configuration).
    labels = list(
        TaskCalibration.objects.filter(version__task__current_version=F("version"))
        .exclude(calibrated_difficulty="")
        .order_by("version_id", "-updated_at")
        .distinct("version_id")
        .values_list("calibrated_difficulty", flat=True)
    )
    context = {
        "page": page,
        "can_run": bool({REVIEWER, ADMIN} & user_roles(request.user)),
        "difficulty_chart": difficulty_histogram(labels, title="Difficulty of the calibrated tasks (current versions)"),
        "n_calibrated": len(labels),
    }
    return render(request, "calibration/runs.html", context)


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
        data = super().clean()
        if self.errors:
            return data
        if data["selection"] == self.SELECT_TASKS:
            tasks = list(data.get("tasks") or [])
            if not tasks:
                self.add_error("tasks", "Tick at least one task, or choose the filter.")
        else:
            found = Task.objects.filter(status=TaskStatus.APPROVED, current_version__isnull=False)
            for field in ("task_type", "difficulty", "family"):
                if data.get(field):
                    found = found.filter(**{field: data[field]})
            tasks = list(found.order_by("pk"))
            if not tasks:
                self.add_error("selection", "No approved task matches this filter.")
        data["versions"] = [task.current_version for task in tasks] if tasks else []
        policies = []
        if data.get("reference"):
            policies.append({"policy": RolloutPolicy.REFERENCE.value, "endpoint": None})
        if data.get("perturbed_reference"):
            policies.append({"policy": RolloutPolicy.PERTURBED_REFERENCE.value, "endpoint": None})
        policies += [{"policy": RolloutPolicy.MODEL.value, "endpoint": e.pk} for e in data.get("endpoints") or []]
        if not policies:
            self.add_error("endpoints", "Choose at least one policy: the reference, perturbed references or a model.")
        data["policies"] = policies
        return data


@require_http_methods(["GET", "POST"])
@login_required
@forbidden_as_page
def run_create(request: HttpRequest) -> HttpResponse:
    """Plan a run (frozen as items) and start it; bad input shows the form again with what was typed."""
    from tasks_app.calibration.services.calibration import calibration_run_create, calibration_run_start

    calibration_run_check(request.user)
    form = RunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = calibration_run_create(
                name=data["name"],
                versions=data["versions"],
                policies=data["policies"],
                samples=data["samples"],
                judge_config=data["judge_config"],
                user=request.user,
            )
            calibration_run_start(run=run)
        except ValidationError as exc:
            _field_errors(form, exc)
        else:
            messages.success(request, f"Started run {run.name}.")
            return redirect("calibration:run", run_id=run.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "calibration/run_form.html", {"form": form}, status=status)


def _run_get(run_id: int) -> CalibrationRun:
    return get_object_or_404(CalibrationRun.objects.select_related("created_by", "judge_config"), pk=run_id)


def _run_results(run: CalibrationRun) -> dict:
    """Per task version of the run: its rollouts' figures, and the plots; a fixed number of queries."""
    versions = {
        v.pk: v
        for v in TaskVersion.objects.filter(calibration_items__run=run).distinct().select_related("task").order_by("pk")
    }
    rollouts = list(
        Rollout.objects.filter(run=run)
        .order_by("version_id", "policy_label", "sample")
        .values("id", "version_id", "policy", "policy_label", "status", "reward", "passed", "verdicts")
    )
    calibrations = {
        c.version_id: c
        for c in TaskCalibration.objects.filter(version_id__in=list(versions), judge_config=run.judge_config)
    }
    by_version: dict[int, list[dict]] = defaultdict(list)
    by_label: dict[str, list[dict]] = defaultdict(list)
    for rollout in rollouts:
        by_version[rollout["version_id"]].append(rollout)
        by_label[rollout["policy_label"]].append(rollout)
    rows = []
    for version_id, version in versions.items():
        items = by_version.get(version_id, [])
        model = [r for r in items if r["policy"] == RolloutPolicy.MODEL and r["passed"] is not None]
        references = [
            SimpleNamespace(**r) for r in items if r["policy"] == RolloutPolicy.REFERENCE and r["passed"] is not None
        ]
        reference = [r.passed for r in references]
        perturbed = [r for r in items if r["policy"] == RolloutPolicy.PERTURBED_REFERENCE and r["passed"] is not None]
        rows.append(
            {
                "version": version,
                "task": version.task,
                "rollouts": len(items),
                "finished": sum(1 for r in items if r["status"] == "finished"),
                "failed": sum(1 for r in items if r["status"] == "failed"),
                "model_pass_rate": (sum(1 for r in model if r["passed"]) / len(model)) if model else None,
                "model_judged": len(model),
                "reference": (all(reference) if reference else None),
                # Caught: the copy failed, or a criterion judged it differently from the reference.
                "perturbed_caught": sum(
                    1 for r in perturbed if not perturbed_unnoticed(SimpleNamespace(**r), references)
                ),
                "perturbed": len(perturbed),
                "rewards": [r["reward"] for r in items if r["reward"] is not None],
                "calibration": calibrations.get(version_id),
            }
        )
    policy_rows = []
    for label, items in sorted(by_label.items()):
        judged = [r for r in items if r["passed"] is not None]
        rate = (sum(1 for r in judged if r["passed"]) / len(judged)) if judged else None
        policy_rows.append((label, rate, f"{_percent(rate)} of {len(judged)}"))
    return {
        "rows": rows,
        "reward_chart": strip_chart(
            [(f"{row['task'].title} v{row['version'].number}", row["rewards"]) for row in rows],
            title="Reward distribution per task",
        ),
        "policy_chart": bar_chart(policy_rows, title="Pass rate per policy / model"),
        "difficulty_chart": difficulty_histogram(
            [c.calibrated_difficulty for c in calibrations.values() if c.calibrated_difficulty],
            title="Difficulty of these tasks",
        ),
    }


def _progress_context(run: CalibrationRun) -> dict:
    return {"run": run, "progress": run_progress(run, calibration_runs_item_counts([run.pk]).get(run.pk, {}))}


@require_GET
@login_required
@forbidden_as_page
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: live progress, cancel / resume, the per-task results and plots."""
    calibration_view_check(request.user)
    run = _run_get(run_id)
    policies = run.policies or []
    endpoint_ids = [p.get("endpoint") for p in policies if p.get("endpoint")]
    endpoints_by_id = {e.pk: e for e in ModelEndpoint.objects.filter(pk__in=endpoint_ids)}
    rollouts = Paginator(
        Rollout.objects.filter(run=run)
        .select_related("version__task", "endpoint")
        .only(
            "id",
            "policy_label",
            "sample",
            "status",
            "reward",
            "passed",
            "turns",
            "failure_reason",
            "judge_errors",
            "version__number",
            "version__task__title",
            "version__task_id",
            "endpoint__name",
        )
        .order_by("version_id", "policy_label", "sample", "pk"),
        PAGE_SIZE,
    ).get_page(request.GET.get("page"))
    context = {
        **_progress_context(run),
        **_run_results(run),
        "rollouts": rollouts,
        "policies": [{"policy": p.get("policy"), "endpoint": endpoints_by_id.get(p.get("endpoint"))} for p in policies],
        "can_run": bool({REVIEWER, ADMIN} & user_roles(request.user)),
    }
    return render(request, "calibration/run.html", context)


@require_GET
@login_required
@forbidden_as_page
def run_progress_partial(request: HttpRequest, run_id: int) -> HttpResponse:
    """The progress bar alone, polled every 2 s; 286 (htmx: stop polling) and a page refresh once settled."""
    calibration_view_check(request.user)
    context = _progress_context(_run_get(run_id))
    response = render(request, "calibration/run.html#progress", context)
    if context["progress"]["finished"]:
        response.status_code = HTMX_STOP_POLLING
        response["HX-Refresh"] = "true"  # the results table below is filled now: show it
    return response


@require_POST
@login_required
@forbidden_as_page
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    from tasks_app.calibration.services.calibration import calibration_run_cancel

    calibration_run_check(request.user)
    run = _run_get(run_id)
    try:
        calibration_run_cancel(run=run)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Cancelled run {run.name}; finished rollouts are kept.")
    return redirect("calibration:run", run_id=run.pk)


@require_POST
@login_required
@forbidden_as_page
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    from tasks_app.calibration.services.calibration import calibration_run_resume

    calibration_run_check(request.user)
    run = _run_get(run_id)
    try:
        calibration_run_resume(run=run)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Resumed run {run.name}: the items left are queued again.")
    return redirect("calibration:run", run_id=run.pk)


# --- a task's calibration --------------------------------------------------------------------------------------------


@require_GET
@login_required
@forbidden_as_page
def task_page(request: HttpRequest, task_id: int) -> HttpResponse:
    """A task version's calibration: pass@k, pass^k, reward spread, criteria, flags, difficulty, its rollouts."""
    calibration_view_check(request.user)
    task = get_object_or_404(Task.objects.select_related("current_version"), pk=task_id)
    task_view_check(request.user, task)
    versions = list(task.versions.order_by("-number").only("id", "number", "task_id"))
    if not versions:
        raise Http404("This task has no version yet.")
    wanted = request.GET.get("version", "")
    version = next((v for v in versions if str(v.number) == wanted), None)
    if version is None:
        version = next((v for v in versions if v.pk == task.current_version_id), versions[0])
    calibrations = list(
        TaskCalibration.objects.filter(version=version).select_related("judge_config", "run").order_by("-updated_at")
    )
    criteria = list(Criterion.objects.filter(version=version).order_by("position"))
    for calibration in calibrations:
        calibration.criteria_rows = [
            {"criterion": c, "rate": calibration.criterion_pass_rates.get(str(c.key))} for c in criteria
        ]
        calibration.flag_labels = [CalibrationFlag(f).label for f in calibration.flags if f in CalibrationFlag.values]
        calibration.k_rows = [
            {"k": k, "at": calibration.pass_at_k.get(k), "hat": calibration.pass_hat_k.get(k)}
            for k in sorted(calibration.pass_at_k, key=int)
        ]
        calibration.policy_rows = sorted((calibration.per_policy or {}).items())
    rollouts = (
        Rollout.objects.filter(version=version)
        .select_related("run", "endpoint")
        .defer("messages", "tool_calls", "verdicts")
        .order_by("-created_at")
    )
    page = Paginator(rollouts, PAGE_SIZE).get_page(request.GET.get("page"))
    stats = list(
        Rollout.objects.filter(version=version, status="finished")
        .order_by()
        .values_list("policy_label", "reward", "passed")
    )
    rewards_by_label: dict[str, list[float]] = defaultdict(list)
    passes_by_label: dict[str, list[bool]] = defaultdict(list)
    for label, reward_value, passed in stats:
        if reward_value is not None:
            rewards_by_label[label].append(reward_value)
        if passed is not None:
            passes_by_label[label].append(passed)
    policy_bars = [
        (label, sum(p) / len(p) if p else None, f"{_percent(sum(p) / len(p) if p else None)} of {len(p)}")
        for label, p in sorted(passes_by_label.items())
    ]
    context = {
        "task": task,
        "version": version,
        "versions": versions,
        "calibrations": calibrations,
        "criteria": criteria,
        "page": page,
        "reward_chart": strip_chart(sorted(rewards_by_label.items()), title="Reward distribution per policy"),
        "policy_chart": bar_chart(policy_bars, title="Pass rate per policy / model"),
        "thresholds": {"easy": EASY_MIN_PASS_RATE, "medium": MEDIUM_MIN_PASS_RATE},
    }
    return render(request, "calibration/task.html", context)


# --- the trajectory page ---------------------------------------------------------------------------------------------


@require_GET
@login_required
@forbidden_as_page
def rollout_page(request: HttpRequest, rollout_id: int) -> HttpResponse:
    """One trajectory: who made it, the conversation, each tool call and result, the state diff, the verdicts."""
    calibration_view_check(request.user)
    rollout = get_object_or_404(
        Rollout.objects.select_related("version__task", "endpoint", "run__judge_config", "episode"), pk=rollout_id
    )
    task_view_check(request.user, rollout.version.task)  # a held-out task's trajectories are its rubric's too
    criteria = {str(c.key): c for c in Criterion.objects.filter(version=rollout.version_id)}
    verdicts = [
        {**verdict, "criterion": criteria.get(verdict.get("key")), "evidence_text": _evidence_text(verdict)}
        for verdict in rollout.verdicts or []
    ]
    diff, diff_error = None, ""
    if rollout.episode_id is not None:
        try:
            diff = episode_diff(rollout.episode)
        except EpisodeError as exc:
            diff_error = f"The episode's world could not be read: {exc}"
    results_by_turn: dict[Any, list[dict]] = defaultdict(list)
    for call in rollout.tool_calls or []:
        results_by_turn[call.get("turn")].append(call)
    conversation = [_message_view(m) for m in rollout.messages or []]
    context = {
        "rollout": rollout,
        "task": rollout.version.task,
        "verdicts": verdicts,
        "diff": diff,
        "diff_rows": _diff_rows(diff) if diff else [],
        "diff_error": diff_error,
        "conversation": conversation,
        "tool_calls": [
            {**call, "arguments_text": _pretty(call.get("arguments")), "result_text": _pretty(call.get("result"))}
            for call in rollout.tool_calls or []
        ],
        "can_label": bool({REVIEWER, ADMIN} & user_roles(request.user)),
    }
    return render(request, "calibration/rollout.html", context)


def _pretty(value: Any, limit: int = 6000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit} more characters)"


def _evidence_text(verdict: dict) -> str:
    evidence = verdict.get("evidence")
    if evidence in (None, "", [], {}):
        return ""
    return evidence if isinstance(evidence, str) else sorted_json(evidence)


def _message_view(message: dict) -> dict:
    calls = [
        {"name": (c.get("function") or {}).get("name", "?"), "arguments": (c.get("function") or {}).get("arguments")}
        for c in message.get("tool_calls") or []
    ]
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in content)
    role = message.get("role", "?")
    return {
        "role": role,
        "content": _pretty(content, 4000) if content else "",
        "calls": calls,
        "name": message.get("name") or message.get("tool_call_id") or "",
    }


def _diff_rows(diff: dict) -> list[dict]:
    rows = []
    for change in ("created", "updated", "deleted"):
        for entry in diff.get(change, []):
            if change == "updated":
                fields = [
                    {"name": name, "before": _pretty(v.get("before"), 300), "after": _pretty(v.get("after"), 300)}
                    for name, v in sorted(entry.get("fields", {}).items())
                ]
            else:
                fields = [
                    {
                        "name": name,
                        "before": "" if change == "created" else _pretty(value, 300),
                        "after": "" if change == "deleted" else _pretty(value, 300),
                    }
                    for name, value in sorted((entry.get("row") or {}).items())
                ]
            rows.append({"change": change, "model": entry.get("model"), "pk": entry.get("pk"), "fields": fields})
    return rows


# --- judge against humans ------------------------------------------------------------------------------------------


class LabelForm(forms.Form):
    agrees = forms.TypedChoiceField(
        choices=[("yes", "Agree"), ("no", "Disagree")], coerce=lambda v: v == "yes", widget=forms.RadioSelect
    )
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


def _label_cards(verdicts: list[Verdict]) -> list[dict]:
    """Each verdict with its criterion and one rollout that has its trajectory (two queries for the batch)."""
    keys = {(v.criterion_key, v.criterion_hash) for v in verdicts}
    criteria = {
        (c.key, c.content_hash): c
        for c in Criterion.objects.filter(key__in={k for k, _ in keys}, content_hash__in={h for _, h in keys})
    }
    rollouts: dict[str, dict] = {}
    for row in (
        Rollout.objects.filter(trajectory_hash__in={v.trajectory_hash for v in verdicts})
        .order_by("trajectory_hash", "-created_at")
        .values("id", "trajectory_hash", "final_answer", "policy_label", "version__instruction", "version__task__title")
    ):
        rollouts.setdefault(row["trajectory_hash"], row)
    return [
        {
            "verdict": v,
            "criterion": criteria.get((v.criterion_key, v.criterion_hash)),
            "rollout": rollouts.get(v.trajectory_hash),
            "form": LabelForm(prefix=f"v{v.pk}"),
        }
        for v in verdicts
    ]


def _labels_context(request: HttpRequest, *, bound: dict | None = None) -> dict:
    judges = list(JudgeConfig.objects.order_by("name"))
    judge = next((j for j in judges if str(j.pk) == request.GET.get("judge", "")), None)
    pending = verdicts_to_label(user=request.user, judge_config=judge)
    cards = _label_cards(list(pending[:LABEL_BATCH]))
    if bound is not None:
        # The card just posted with errors goes first, with what was typed.
        cards = [bound, *[c for c in cards if c["verdict"].pk != bound["verdict"].pk]]
    return {
        "cards": cards,
        "judges": judges,
        "judge": judge,
        "remaining": pending.count(),
        "labelled": request.user.verdict_labels.count(),
    }


@require_GET
@login_required
@forbidden_as_page
def labels(request: HttpRequest) -> HttpResponse:
    """A batch of llm verdicts this reviewer has not labelled, each with agree / disagree and a note."""
    verdict_labeller_check(request.user)
    return render(request, "calibration/labels.html", _labels_context(request))


@require_POST
@login_required
@forbidden_as_page
def label_verdict(request: HttpRequest, verdict_id: int) -> HttpResponse:
    """Record this reviewer's label; htmx swaps the card, bad input keeps the card with its errors (400)."""
    verdict_labeller_check(request.user)
    verdict = get_object_or_404(Verdict.objects.select_related("judge_config"), pk=verdict_id)
    form = LabelForm(request.POST, prefix=f"v{verdict.pk}")
    label = None
    if form.is_valid():
        try:
            label = verdict_label_set(
                verdict=verdict, user=request.user, agrees=form.cleaned_data["agrees"], note=form.cleaned_data["note"]
            )
        except ValidationError as exc:
            _field_errors(form, exc)
    [card] = _label_cards([verdict])
    card["form"], card["label"] = form, label
    status = 200 if label is not None else 400
    if request.htmx:
        return render(request, "calibration/labels.html#card", {"card": card}, status=status)
    if label is not None:
        messages.success(request, "Label saved.")
        return redirect(reverse("calibration:labels"))
    return render(request, "calibration/labels.html", _labels_context(request, bound=card), status=status)


@require_GET
@login_required
@forbidden_as_page
def agreement(request: HttpRequest) -> HttpResponse:
    """Judge against humans: agreement and Cohen's kappa per judge configuration and per criterion, flags."""
    calibration_view_check(request.user)
    report = judge_agreement_report(criterion_texts=criterion_texts)
    judges = {j.pk: j for j in JudgeConfig.objects.all()}
    for row in [*report["criteria"], *report["configs"]]:
        row.judge = judges.get(row.judge_config_id)
    min_labels, max_kappa, min_agreement = thresholds()
    context = {
        **report,
        "min_labels": min_labels,
        "max_kappa": max_kappa,
        "min_agreement": min_agreement,
        "kappa_chart": bar_chart(
            [
                (
                    f"{row.judge.name if row.judge else '?'} · {row.criterion_text[:40]}",
                    max(row.kappa or 0, 0),
                    f"κ {row.kappa:.2f}" if row.kappa is not None else "κ —",
                )
                for row in report["criteria"]
            ],
            title="Cohen's kappa per criterion (negative shown as 0)",
        ),
    }
    return render(request, "calibration/agreement.html", context)
