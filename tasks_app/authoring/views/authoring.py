"""Authoring pages: the task list, the task editor with its criterion editors, the task page and version diffs.

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
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from corecraft_site.refusals import forbidden_as_page as refusal_page
from corecraft_site.roles import ADMIN, AUTHOR, user_roles
from rubrics_app.models import CriterionCategory, CriterionKind
from tasks_app.authoring.criterion_draft import ARG_OPS, FILTER_OPS, RESPONSE_OPS, STATE_OPS, CriterionDraft
from tasks_app.authoring.criterion_editor import (
    PREFIX,
    criteria_apply,
    criteria_from_post,
    criterion_draft_from_post,
    criterion_draft_from_row,
    entity_field_paths,
    entity_type_choices,
    tool_argument_names,
    tool_choices,
)
from tasks_app.authoring.criterion_words import criterion_spec_summary
from tasks_app.authoring.forms import TaskFilterForm, TaskForm
from tasks_app.authoring.selectors import reference_run_latest, task_history, task_version_diff
from tasks_app.authoring.selectors_authoring import (
    snapshots_for_choice,
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
    TaskConflict,
    task_create,
    task_retire,
    task_submit_for_review,
)
from tasks_app.authoring.services.tasks import task_update as task_update_service
from tasks_app.calibration.selectors import tasks_calibrated, with_cells
from tasks_app.models import Task, TaskStatus
from tasks_app.permissions import (
    review_check,
    task_create_check,
    task_discuss_check,
    task_edit_check,
    task_retire_check,
    task_view_check,
    task_visible_q,
)
from world_app.selectors_lookup import LOOKUP_KINDS

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


def _load(task_id: int) -> Task:
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


# --- The editor ----------------------------------------------------------------------------------------------


def _editor_choices() -> dict[str, Any]:
    return {
        "criterion_kinds": CriterionKind.choices,
        "categories": CriterionCategory.choices,
        "entity_types": entity_type_choices(),
        "state_ops": STATE_OPS,
        "filter_ops": FILTER_OPS,
        "arg_ops": ARG_OPS,
        "response_ops": RESPONSE_OPS,
        "tools": tool_choices(),
    }


def _criterion_context(draft: CriterionDraft, **extra: Any) -> dict[str, Any]:
    return {
        "c": draft,
        "field_paths": entity_field_paths(draft.entity_type) if draft.kind == CriterionKind.STATE else [],
        "arg_names": tool_argument_names(draft.tool) if draft.kind == CriterionKind.TOOL_CALL else [],
        **_editor_choices(),
        **extra,
    }


def _editor_render(
    request: HttpRequest,
    *,
    form: TaskForm,
    drafts: list[CriterionDraft],
    task: Task | None,
    focus: str | None = None,
    focus_action: str = "",
    conflict: dict | None = None,
    problems: list[str] | None = None,
    partial: bool = False,
) -> HttpResponse:
    # Open comments shown where the author fixes them: on their criterion, until resolved (one query)
    open_comments = task_open_comments(task=task) if task is not None else []
    by_key: dict[str, list] = {}
    for comment in open_comments:
        by_key.setdefault(comment.criterion_key and str(comment.criterion_key), []).append(comment)
    criteria = [_criterion_context(d, comments=by_key.pop(str(d.key), []) if d.key else []) for d in drafts]
    context = {
        "form": form,
        "task": task,
        "criteria": criteria,
        "task_comments": [c for key, found in by_key.items() for c in found],  # on the task, or a removed criterion
        "focus": focus,
        "focus_action": focus_action,
        "conflict": conflict,
        "problems": problems or [],
        "action_url": reverse("tasks:edit", args=[task.pk]) if task else reverse("tasks:create"),
        "families": task_families(),
        "lookup_kinds": LOOKUP_KINDS.values(),
        **_editor_choices(),
    }
    if partial:
        return render(request, "tasks/edit.html#criteria", context)
    return render(request, "tasks/edit.html", context)


def _save_criteria(drafts: list[CriterionDraft]) -> bool:
    return all([d.check() for d in drafts])  # a list: every criterion is checked, not only up to the first bad one


@login_required
@forbidden_as_page
def task_create_page(request: HttpRequest) -> HttpResponse:
    task_create_check(request.user)
    if request.method != "POST":
        latest = snapshots_for_choice().first()
        form = TaskForm(initial={"snapshot": latest.pk if latest else None, "task_type": "information_retrieval"})
        problems = [] if latest else ["No world snapshot is published yet: an admin publishes one first."]
        return _editor_render(request, form=form, drafts=[], task=None, problems=problems)
    drafts = criteria_from_post(request.POST)
    action = request.POST.get("action", "save")
    if action != "save":
        drafts, focus = criteria_apply(drafts, action, request.POST)
        form = TaskForm(initial=request.POST.dict())  # an editor action (add, move, remove) validates nothing yet
        return _editor_render(
            request, form=form, drafts=drafts, task=None, focus=focus, focus_action=action, partial=bool(request.htmx)
        )
    form = TaskForm(request.POST)
    form_ok = form.is_valid()
    criteria_ok = _save_criteria(drafts)
    if form_ok and criteria_ok:
        try:
            task = task_create(user=request.user, **form.service_fields(), criteria=[d.as_input() for d in drafts])
        except ValidationError as exc:
            problems = form.add_service_errors(exc)
            return _editor_render(request, form=form, drafts=drafts, task=None, problems=problems)
        messages.success(request, f"Task “{task.title}” created as a draft (version 1).")
        return redirect("tasks:detail", task.pk)
    return _editor_render(request, form=form, drafts=drafts, task=None, problems=_summary(form, drafts))


def _summary(form: TaskForm, drafts: list[CriterionDraft]) -> list[str]:
    problems = []
    if form.errors:
        problems.append("Some fields need attention (marked below).")
    bad = [i + 1 for i, d in enumerate(drafts) if d.errors or d.field_errors]
    if bad:
        if len(bad) == 1:
            problems.append(f"Criterion {bad[0]} needs attention.")
        else:
            problems.append(f"Criteria {', '.join(map(str, bad[:-1]))} and {bad[-1]} need attention.")
    return problems


def _initial(task: Task) -> dict[str, Any]:
    version = task.current_version
    return {
        "base_revision": task.revision,
        "base_version": version.number,
        "title": version.title,
        "task_type": version.task_type,
        "difficulty": version.difficulty,
        "instruction": version.instruction,
        "snapshot": version.snapshot_id,
        "family": version.family,
        "tags": ", ".join(version.tags),
        "reviewer_notes": version.reviewer_notes,
    }


@login_required
@forbidden_as_page
def task_edit_page(request: HttpRequest, task_id: int) -> HttpResponse:
    task = _load(task_id)
    task_edit_check(request.user, task)
    if task.status not in EDITABLE_STATUSES:
        messages.error(request, f"A task {task.get_status_display().lower()} can't be edited.")
        return redirect("tasks:detail", task.pk)
    if request.method != "POST":
        drafts = [
            criterion_draft_from_row(c, prefix=f"c{i}")
            for i, c in enumerate(version_criteria(version=task.current_version))
        ]
        return _editor_render(request, form=TaskForm(initial=_initial(task)), drafts=drafts, task=task)
    drafts = criteria_from_post(request.POST)
    action = request.POST.get("action", "save")
    if action != "save":
        drafts, focus = criteria_apply(drafts, action, request.POST)
        form = TaskForm(initial=request.POST.dict())
        return _editor_render(
            request, form=form, drafts=drafts, task=task, focus=focus, focus_action=action, partial=bool(request.htmx)
        )
    form = TaskForm(request.POST)
    form_ok = form.is_valid()
    criteria_ok = _save_criteria(drafts)
    if not (form_ok and criteria_ok):
        return _editor_render(request, form=form, drafts=drafts, task=task, problems=_summary(form, drafts))
    base_revision = form.cleaned_data["base_revision"]
    override = request.POST.get("overwrite_revision")
    if override and override.isdigit():
        base_revision = int(override)  # the author chose to save over the other person's version
    try:
        saved = task_update_service(
            task=task,
            user=request.user,
            base_revision=base_revision if base_revision is not None else -1,
            **form.service_fields(),
            criteria=[d.as_input() for d in drafts],
        )
    except TaskConflict as exc:
        return _editor_render(request, form=form, drafts=drafts, task=task, conflict=_conflict(task, form, exc))
    except ValidationError as exc:
        problems = form.add_service_errors(exc)
        return _editor_render(request, form=form, drafts=drafts, task=task, problems=problems)
    if saved.current_version_id == task.current_version_id:
        messages.info(request, "Nothing changed, so no new version was made.")
    else:
        messages.success(request, f"Saved as version {saved.current_version.number}.")
    return redirect("tasks:detail", saved.pk)


def _conflict(task: Task, form: TaskForm, exc: TaskConflict) -> dict[str, Any]:
    current = exc.current_version
    base_version = form.cleaned_data.get("base_version")
    diff_url = None
    if base_version and current and base_version != current.number:
        diff_url = reverse("tasks:diff", args=[task.pk, base_version, current.number])
    return {
        "editor": current.created_by.get_username() if current else "someone",
        "at": current.created_at if current else None,
        "number": current.number if current else None,
        "revision": exc.task.revision,
        "diff_url": diff_url,
    }


@require_POST
@login_required
@forbidden_as_page
def criterion_validate(request: HttpRequest) -> HttpResponse:
    """Check one criterion block of the editor (htmx, on change): its feedback and each field's errors come back,
    never its inputs, so nothing typed meanwhile is lost."""
    if not {AUTHOR, ADMIN} & user_roles(request.user):
        raise PermissionDenied("only authors and admins write criteria")
    prefix = request.POST.get("validate", "")
    if not PREFIX.match(prefix):
        return HttpResponse("Unknown criterion.", status=400)
    draft = criterion_draft_from_post(request.POST, prefix)
    draft.check()
    context = _criterion_context(draft)
    return render(request, "tasks/_criterion_check.html", context)


# --- The task page ----------------------------------------------------------------------------------------


def _history_template() -> str | None:
    try:
        get_template(HISTORY_TEMPLATE)
    except TemplateDoesNotExist:
        return None
    return HISTORY_TEMPLATE


@require_GET
@login_required
@forbidden_as_page
def task_detail_page(request: HttpRequest, task_id: int) -> HttpResponse:
    task = _load(task_id)
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
        "history_template": _history_template(),
    }
    return render(request, "tasks/detail.html", context)


def _review_url(task: Task) -> str | None:
    if task.status != TaskStatus.IN_REVIEW:
        return None
    return reverse("review:task", args=[task.pk])


def _task_act(request: HttpRequest, task_id: int, service: Callable[..., Any], done: str) -> HttpResponse:
    """Call ``service(task=, user=)`` on the task; its refusals become messages; back to the task's page."""
    task = _load(task_id)
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
    task = _load(task_id)
    task_discuss_check(request.user, task)
    versions = versions_by_number(task=task, numbers=(a, b))
    if a not in versions or b not in versions:
        raise Http404("No such version.")
    diff = task_version_diff(versions[a], versions[b])
    return render(request, "tasks/diff.html", {"task": task, "a": versions[a], "b": versions[b], "diff": diff})
