"""Authoring pages: the task list, the task page, its actions (submit, retire) and version diffs. The editor
(create, edit, one criterion's check) is in ``editor``.

Views read the request, call one service and render; the services decide who may do what (a refusal is the
403 page). The editor never loses what was typed: bad input, a criterion that does not validate and an edit
conflict all show the page again with every field as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from corecraft_site.refusals import forbidden_as_page as refusal_page
from corecraft_site.roles import ADMIN, AUTHOR, user_roles
from tasks_app.authoring.criterion_words import criterion_spec_summary
from tasks_app.authoring.forms import TaskFilterForm
from tasks_app.authoring.selectors import reference_run_latest, task_history, task_version_diff
from tasks_app.authoring.selectors_authoring import (
    task_families,
    task_for_page,
    task_list,
    task_open_comments,
    task_versions,
    version_criteria,
    versions_by_number,
)
from tasks_app.authoring.services.tasks import (
    EDITABLE_STATUSES,
    task_retire,
    task_submit_for_review,
)
from tasks_app.calibration.selectors import tasks_calibrated, with_cells
from tasks_app.models import Task, TaskStatus
from tasks_app.permissions import (
    review_check,
    task_discuss_check,
    task_edit_check,
    task_retire_check,
    task_view_check,
    task_visible_q,
)

PAGE_SIZE = 25
HISTORY_TEMPLATE = "review/_history.html"


# A refusal from a permission check or a service is the 403 page with its reason, never a 500.
forbidden_as_page = refusal_page(page="tasks/forbidden.html", htmx_page="tasks/forbidden.html#reason")


def allowed(check, *args) -> bool:
    try:
        check(*args)
    except PermissionDenied:
        return False
    return True


def task_or_404(task_id: int) -> Task:
    try:
        return task_for_page(task_id=task_id)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None


# --- The list ----------------------------------------------------------------------------------------------


@require_GET
@login_required
def task_list_page(request: HttpRequest) -> HttpResponse:
    """Every task, filtered by a GET form; htmx requests get the table only."""
    form = TaskFilterForm(request.GET)
    filters = form.filters()
    tasks = tasks_calibrated(task_list(**filters).filter(task_visible_q(request.user)), **form.calibration())
    paginator = Paginator(tasks, PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    with_cells(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    roles = user_roles(request.user)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "families": task_families() if not request.htmx else [],
        "can_create": bool({AUTHOR, ADMIN} & roles),
    }
    if request.htmx:
        return render(request, "tasks/list.html#table", context)
    return render(request, "tasks/list.html", context)


# --- The task page ----------------------------------------------------------------------------------------


@require_GET
@login_required
@forbidden_as_page
def task_detail_page(request: HttpRequest, task_id: int) -> HttpResponse:
    task = task_or_404(task_id)
    task_view_check(request.user, task)
    user = request.user
    version = task.current_version
    criteria = version_criteria(version=version)
    comments = task_open_comments(task=task)
    by_criterion: dict[str, list] = {}
    task_comments = []
    for comment in comments:
        if comment.criterion_key:
            by_criterion.setdefault(str(comment.criterion_key), []).append(comment)
        else:
            task_comments.append(comment)

    rows = [
        {"criterion": c, "summary": criterion_spec_summary(c), "comments": by_criterion.get(str(c.key), [])}
        for c in criteria
    ]
    run = reference_run_latest(version=version)
    texts = {str(c.key): c.text for c in criteria}
    can_edit = allowed(task_edit_check, user, task)
    history = task_history(task=task, viewer=user)
    reviews = [event["object"] for event in history if event["kind"] == "review"]
    context = {
        "task": task,
        "version": version,
        "rows": rows,
        "task_comments": task_comments,
        "orphan_comments": [c for k, cs in by_criterion.items() if k not in texts for c in cs],
        "versions": task_versions(task=task),
        "run": run,
        "run_rows": [
            {"verdict": v, "text": texts.get(v["key"], "(a criterion of another version)")} for v in run.verdicts
        ]
        if run
        else [],
        "can_edit": can_edit and task.status in EDITABLE_STATUSES,
        "can_submit": can_edit and task.status in (TaskStatus.DRAFT, TaskStatus.CHANGES_REQUESTED),
        "can_retire": allowed(task_retire_check, user) and task.status != TaskStatus.RETIRED,
        "can_play": allowed(task_discuss_check, user, task),
        "review_url": _review_url(task) if allowed(review_check, user, task) else None,
        "history": history,
        "latest_review": reviews[-1] if reviews else None,
        "criteria": criteria,
        "history_template": HISTORY_TEMPLATE,
    }
    return render(request, "tasks/detail.html", context)


def _review_url(task: Task) -> str | None:
    if task.status != TaskStatus.IN_REVIEW:
        return None
    return reverse("review:task", args=[task.pk])


def _task_act(request: HttpRequest, task_id: int, service: Callable[..., Any], done: str) -> HttpResponse:
    """Call ``service(task=, user=)`` on the task; its refusals become messages; back to the task's page."""
    task = task_or_404(task_id)
    try:
        service(task=task, user=request.user)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, done)
    return redirect("tasks:detail", task.pk)


@require_POST
@login_required
@forbidden_as_page
def task_submit(request: HttpRequest, task_id: int) -> HttpResponse:
    return _task_act(
        request, task_id, task_submit_for_review, "Submitted for review. Reviewers see it in their queue now."
    )


@require_POST
@login_required
@forbidden_as_page
def task_retire_view(request: HttpRequest, task_id: int) -> HttpResponse:
    return _task_act(request, task_id, task_retire, "The task is retired: it has left every queue.")


@require_GET
@login_required
@forbidden_as_page
def task_diff_page(request: HttpRequest, task_id: int, a: int, b: int) -> HttpResponse:
    """What changed between two versions (by number), readable."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    versions = versions_by_number(task=task, numbers=(a, b))
    if a not in versions or b not in versions:
        raise Http404("No such version.")
    diff = task_version_diff(versions[a], versions[b])
    return render(request, "tasks/diff.html", {"task": task, "a": versions[a], "b": versions[b], "diff": diff})
