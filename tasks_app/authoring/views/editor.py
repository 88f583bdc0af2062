"""The task editor: create and edit a task with its criteria (htmx actions that add, move and remove criterion
blocks), and the check of one criterion block as it is typed. The editor never loses what was typed: bad input, a
criterion that does not validate and an edit conflict all show the page again with every field as it was."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

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
from tasks_app.authoring.forms import TaskForm
from tasks_app.authoring.selectors_authoring import (
    snapshots_for_choice,
    task_families,
    task_open_comments,
    version_criteria,
)
from tasks_app.authoring.services.tasks import EDITABLE_STATUSES, TaskConflict, task_create
from tasks_app.authoring.services.tasks import task_update as task_update_service
from tasks_app.authoring.views.authoring import forbidden_as_page, task_or_404
from tasks_app.models import Task
from tasks_app.permissions import task_create_check, task_edit_check
from world_app.selectors_lookup import LOOKUP_KINDS


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
    task = task_or_404(task_id)
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
