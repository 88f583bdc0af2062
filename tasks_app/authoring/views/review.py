"""Review pages: a task's review page (lease, comments, decisions, the gate) and diffs between its versions.

Views stay thin: they read through ``tasks_app.authoring.selectors`` and write through
``tasks_app.authoring.services.reviews``; the services decide who may do what, and a refusal becomes the 403 page (never
a 500). The queue, its saved filters and the author's own queue are ``review_queue``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from corecraft_site.refusals import forbidden_as_page as refusal_page
from corecraft_site.roles import ADMIN, REVIEWER, user_roles
from tasks_app.authoring.criterion_words import criterion_spec_summary
from tasks_app.authoring.selectors import (
    reference_run_latest,
    task_comments,
    task_for_review,
    task_history,
    task_version_diff,
)
from tasks_app.authoring.selectors_review import QUEUE_FILTERS, second_review_context
from tasks_app.authoring.services.reviews import (
    ClaimUnavailable,
    comment_add,
    comment_resolve,
    review_approve,
    review_claim,
    review_reject,
    review_release,
    review_request_changes,
)
from tasks_app.authoring.services.second_review import decision_words
from tasks_app.calibration.services.gates import gate_checklist, rubric_gate_current, rubric_gate_ensure
from tasks_app.models import Comment, Criterion, ReviewDecision, Task, TaskStatus, TaskVersion
from tasks_app.permissions import review_check, task_discuss_check

DECISIONS = {
    ReviewDecision.APPROVE: (review_approve, "Approved"),
    ReviewDecision.REQUEST_CHANGES: (review_request_changes, "Changes requested on"),
    ReviewDecision.REJECT: (review_reject, "Rejected"),
}


# Refusals from the services or the permission checks render the 403 page, with the reason.
forbidden_as_page = refusal_page(page="review/forbidden.html", htmx_page="review/_forbidden.html")


# --- a task's review page -----------------------------------------------------------------------------------------


def _load(task_id: int) -> Task:
    try:
        return task_for_review(task_id=task_id)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None


def _review_context(request: HttpRequest, task: Task, **extra: Any) -> dict[str, Any]:
    """Everything the review page shows, in a fixed number of queries whatever the number of criteria/comments."""
    user = request.user
    version: TaskVersion | None = task.current_version
    criteria = list(Criterion.objects.filter(version=version).order_by("position")) if version else []
    comments = task_comments(task=task)
    by_key: dict[Any, list[Comment]] = {}
    for comment in comments:
        by_key.setdefault(comment.criterion_key, []).append(comment)
    for criterion in criteria:
        criterion.spec_summary = criterion_spec_summary(criterion)
        criterion.comment_list = by_key.get(criterion.key, [])
    run = reference_run_latest(version=version) if version else None
    verdicts = {str(v.get("key")): v for v in (run.verdicts if run else [])}
    for criterion in criteria:
        criterion.verdict = verdicts.get(str(criterion.key))
    solution = (version.reference_solution or {}) if version else {}
    solution_calls = [
        {
            "tool": call.get("tool", "?"),
            "arguments": json.dumps(call.get("arguments", {}), indent=2, ensure_ascii=False),
        }
        for call in solution.get("calls", [])
    ]
    run_calls = [
        {**call, "shown": json.dumps(call.get("result"), indent=2, ensure_ascii=False, default=str)[:4000]}
        for call in (run.call_results if run else [])
    ]
    now = timezone.now()
    held = task.claimed_by_id is not None and task.claim_expires_at is not None and task.claim_expires_at > now
    try:
        review_check(user, task)
        may_review, why_not = True, ""
    except PermissionDenied as exc:
        may_review, why_not = False, str(exc)
    roles = user_roles(user)
    in_review = task.status == TaskStatus.IN_REVIEW
    held_by_me = held and task.claimed_by_id == user.pk
    history = task_history(task=task, viewer=user)
    second = second_review_context(task=task, user=user, history=history)
    if not in_review:
        decide_note = f"This task is {task.get_status_display().lower()}: there is nothing to decide."
    elif user.pk in (task.author_id, version.created_by_id if version else None):
        decide_note = (
            "You wrote this task or made its latest version, so another reviewer decides on it: "
            "nobody reviews (or approves) their own work."
        )
    elif not may_review:
        decide_note = f"You can't review this task: {why_not}."
    elif second["first_is_mine"]:
        may_review = False  # the second of two reviews is a different reviewer's
        decide_note = "You gave the first of two reviews: a different reviewer gives the second, without seeing yours."
    elif not held_by_me:
        decide_note = "Claim the task to decide: only the reviewer holding it approves, requests changes or rejects."
    else:
        decide_note = ""
    gate = rubric_gate_current(version) if version else None
    return {
        "task": task,
        "version": version,
        "gate": gate,
        "gate_checks": gate_checklist(gate) if gate else [],
        "decision_override": "",
        "criteria": criteria,
        "task_comment_list": by_key.get(None, []),
        "history": history,
        "run": run,
        "run_calls": run_calls,
        "solution_calls": solution_calls,
        "final_answer": solution.get("final_answer", ""),
        "is_admin": ADMIN in roles,
        "held": held,
        "held_by_me": held_by_me,
        "may_review": may_review,
        "why_not": why_not,
        "may_claim": may_review and in_review and (not held or held_by_me),
        "may_decide": may_review and in_review and held_by_me,
        "may_release": held and (held_by_me or ADMIN in roles),
        "decide_note": decide_note,
        "decision_errors": [],
        "decision_comment": "",
        "decision_choice": "",
        "decisions": ReviewDecision,
        **second,
        **extra,
    }


@require_GET
@login_required
@forbidden_as_page
def task_page(request: HttpRequest, task_id: int) -> HttpResponse:
    task = _load(task_id)
    task_discuss_check(request.user, task)
    kept = {name: request.GET[name] for name in QUEUE_FILTERS if request.GET.get(name)}
    context = _review_context(
        request, task, queue_query=urlencode(kept), may_review_queue=bool({REVIEWER, ADMIN} & user_roles(request.user))
    )
    return render(request, "review/task.html", context)


@require_POST
@login_required
@forbidden_as_page
def claim(request: HttpRequest, task_id: int) -> HttpResponse:
    task = _load(task_id)
    try:
        task = review_claim(task=task, user=request.user)
    except ClaimUnavailable as exc:
        messages.error(request, exc.messages[0])
    except ValidationError as exc:
        messages.error(request, "Can't claim: " + "; ".join(exc.messages))
    else:
        messages.success(request, f"You hold “{task.title}” until {timezone.localtime(task.claim_expires_at):%H:%M}.")
    return redirect("review:task", task_id=task_id)


@require_POST
@login_required
@forbidden_as_page
def release(request: HttpRequest, task_id: int) -> HttpResponse:
    task = review_release(task=_load(task_id), user=request.user)
    messages.success(request, f"Released “{task.title}”: another reviewer can take it.")
    return redirect("review:task", task_id=task_id)


@require_POST
@login_required
@forbidden_as_page
def decide(request: HttpRequest, task_id: int) -> HttpResponse:
    """Approve, request changes or reject; an empty comment where one is needed is a form error keeping the rest."""
    task = _load(task_id)
    review_check(request.user, task)  # before anything: the refused get no page of the task
    choice = request.POST.get("decision", "")
    comment = request.POST.get("comment", "")
    override = request.POST.get("override_reason", "")
    if choice not in DECISIONS:
        errors = ["Choose approve, request changes or reject."]
    else:
        service, done = DECISIONS[choice]
        extra = {"override_reason": override} if choice == ReviewDecision.APPROVE else {}
        try:
            review = service(task=task, user=request.user, comment=comment, **extra)
        except ValidationError as exc:
            errors = exc.messages
        else:
            messages.success(request, decision_words(review, done))
            return redirect("review:queue")
    context = _review_context(
        request,
        task,
        decision_errors=errors,
        decision_comment=comment,
        decision_choice=choice,
        decision_override=override,
    )
    return render(request, "review/task.html", context, status=400)


@require_POST
@login_required
@forbidden_as_page
def gate_check(request: HttpRequest, task_id: int) -> HttpResponse:
    """Run the gate (the red team on the version's snapshot) now, so the checklist shows before deciding."""
    task = _load(task_id)
    task_discuss_check(request.user, task)
    if task.current_version is None:
        raise Http404("This task has no version yet.")
    gate = rubric_gate_ensure(version=task.current_version)
    messages.success(
        request, "The gate passes." if gate.passes else "The gate refuses this version: see the checklist."
    )
    return redirect(reverse("review:task", kwargs={"task_id": task_id}) + "#gate")


@require_POST
@login_required
@forbidden_as_page
def comment_create(request: HttpRequest, task_id: int) -> HttpResponse:
    """A comment on the task or on one criterion; htmx gets the thread back with the comment appended."""
    task = _load(task_id)
    body = request.POST.get("body", "")
    key = request.POST.get("criterion_key") or None
    errors: list[str] = []
    try:
        comment_add(task=task, user=request.user, body=body, criterion_key=key)
    except ValidationError as exc:
        errors = exc.messages
    if not request.htmx:
        if errors:
            messages.error(request, "Comment not added: " + "; ".join(errors))
        return redirect(reverse("review:task", kwargs={"task_id": task_id}) + (f"#thread-{key}" if key else "#thread"))
    thread = [c for c in task_comments(task=task) if str(c.criterion_key or "") == str(key or "")]
    context = {
        "task": task,
        "thread_key": key or "",
        "comment_list": thread,
        "comment_errors": errors,
        "comment_body": body if errors else "",
        "oob_count": True,
        "is_admin": ADMIN in user_roles(request.user),
    }
    return render(request, "review/task.html#comment-thread", context)


@require_POST
@login_required
@forbidden_as_page
def comment_resolve_view(request: HttpRequest, comment_id: int) -> HttpResponse:
    comment = comment_resolve(comment=get_object_or_404(Comment, pk=comment_id), user=request.user)
    if request.htmx:
        comment = Comment.objects.select_related("author", "version", "task").get(pk=comment.pk)
        context = {"comment": comment, "task": comment.task, "is_admin": ADMIN in user_roles(request.user)}
        return render(request, "review/task.html#comment", context)
    return redirect(reverse("review:task", kwargs={"task_id": comment.task_id}) + f"#comment-{comment.pk}")


@require_GET
@login_required
@forbidden_as_page
def diff(request: HttpRequest, task_id: int, a: int, b: int) -> HttpResponse:
    """What changed between two versions of a task, by version number."""
    task = _load(task_id)
    task_discuss_check(request.user, task)
    versions = {v.number: v for v in TaskVersion.objects.filter(task=task, number__in=(a, b))}
    if a not in versions or b not in versions:
        raise Http404("No such version.")
    changes = task_version_diff(versions[a], versions[b])
    return render(request, "review/diff.html", {"task": task, "a": versions[a], "b": versions[b], "diff": changes})
