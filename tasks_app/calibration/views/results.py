"""A task's calibration page and the trajectory page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from corecraft_site.roles import ADMIN, REVIEWER, user_roles
from tasks_app.calibration.metrics import EASY_MIN_PASS_RATE, MEDIUM_MIN_PASS_RATE
from tasks_app.calibration.selectors_results import rollout_trajectory, task_calibration_figures, task_version_shown
from tasks_app.calibration.views import PAGE_SIZE, forbidden_as_page
from tasks_app.models import Rollout, Task
from tasks_app.permissions import calibration_view_check, task_view_check


@require_GET
@login_required
@forbidden_as_page
def task_page(request: HttpRequest, task_id: int) -> HttpResponse:
    """A task version's calibration: pass@k, pass^k, reward spread, criteria, flags, difficulty, its rollouts."""
    calibration_view_check(request.user)
    task = get_object_or_404(Task.objects.select_related("current_version"), pk=task_id)
    task_view_check(request.user, task)
    versions, version = task_version_shown(task, request.GET.get("version", ""))
    if version is None:
        raise Http404("This task has no version yet.")
    rollouts = (
        Rollout.objects.filter(version=version)
        .select_related("run", "endpoint")
        .defer("messages", "tool_calls", "verdicts")
        .order_by("-created_at")
    )
    context = {
        "task": task,
        "version": version,
        "versions": versions,
        **task_calibration_figures(version),
        "page": Paginator(rollouts, PAGE_SIZE).get_page(request.GET.get("page")),
        "thresholds": {"easy": EASY_MIN_PASS_RATE, "medium": MEDIUM_MIN_PASS_RATE},
    }
    return render(request, "calibration/task.html", context)


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
    context = {
        "rollout": rollout,
        "task": rollout.version.task,
        **rollout_trajectory(rollout),
        "can_label": bool({REVIEWER, ADMIN} & user_roles(request.user)),
    }
    return render(request, "calibration/rollout.html", context)
