"""Calibration runs: the list with progress, planning and starting a run, a run's page, its progress bar (polled),
cancel and resume."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corecraft_site.roles import ADMIN, REVIEWER, user_roles
from corecraft_site.service_errors import add_service_errors
from tasks_app.calibration.charts import difficulty_histogram
from tasks_app.calibration.forms import RUN_FIELDS, RunForm
from tasks_app.calibration.selectors_runs import (
    calibrated_difficulties,
    calibration_run_policies,
    calibration_run_results,
    calibration_run_rollouts,
    run_progress,
)
from tasks_app.calibration.services.calibration import (
    calibration_run_cancel,
    calibration_run_create,
    calibration_run_resume,
    calibration_run_start,
    calibration_runs_item_counts,
)
from tasks_app.calibration.views import PAGE_SIZE, forbidden_as_page
from tasks_app.models import CalibrationRun
from tasks_app.permissions import calibration_run_check, calibration_view_check

# htmx stops polling when the server answers 286.
HTMX_STOP_POLLING = 286


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
    labels = calibrated_difficulties()
    context = {
        "page": page,
        "can_run": bool({REVIEWER, ADMIN} & user_roles(request.user)),
        "difficulty_chart": difficulty_histogram(labels, title="Difficulty of the calibrated tasks (current versions)"),
        "n_calibrated": len(labels),
    }
    return render(request, "calibration/runs.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@forbidden_as_page
def run_create(request: HttpRequest) -> HttpResponse:
    """Plan a run (frozen as items) and start it; bad input shows the form again with what was typed."""
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
            add_service_errors(form, exc, aliases=RUN_FIELDS)
        else:
            messages.success(request, f"Started run {run.name}.")
            return redirect("calibration:run", run_id=run.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "calibration/run_form.html", {"form": form}, status=status)


def _run_get(run_id: int) -> CalibrationRun:
    return get_object_or_404(CalibrationRun.objects.select_related("created_by", "judge_config"), pk=run_id)


def _progress_context(run: CalibrationRun) -> dict:
    return {"run": run, "progress": run_progress(run, calibration_runs_item_counts([run.pk]).get(run.pk, {}))}


@require_GET
@login_required
@forbidden_as_page
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: live progress, cancel / resume, the per-task results and plots."""
    calibration_view_check(request.user)
    run = _run_get(run_id)
    context = {
        **_progress_context(run),
        **calibration_run_results(run),
        "rollouts": Paginator(calibration_run_rollouts(run), PAGE_SIZE).get_page(request.GET.get("page")),
        "policies": calibration_run_policies(run),
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


def _run_act(request: HttpRequest, run_id: int, service: Callable[..., Any], done: str) -> HttpResponse:
    """Call ``service(run=)`` on the run (reviewers and admins); a refusal becomes a message; back to the run."""
    calibration_run_check(request.user)
    run = _run_get(run_id)
    try:
        service(run=run)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, done.format(name=run.name))
    return redirect("calibration:run", run_id=run.pk)


@require_POST
@login_required
@forbidden_as_page
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    return _run_act(request, run_id, calibration_run_cancel, "Cancelled run {name}; finished rollouts are kept.")


@require_POST
@login_required
@forbidden_as_page
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    return _run_act(request, run_id, calibration_run_resume, "Resumed run {name}: the items left are queued again.")
