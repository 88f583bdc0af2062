"""Requiring a second review of a task (``services.second_review``), from its review page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from tasks_app.authoring.services.second_review import second_review_set
from tasks_app.authoring.views.review import forbidden_as_page
from tasks_app.models import Task


@require_POST
@login_required
@forbidden_as_page
def second_review(request: HttpRequest, task_id: int) -> HttpResponse:
    """``required=1`` asks for a second, independent reviewer; ``required=0`` goes back to one review."""
    try:
        task = Task.objects.get(pk=task_id)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None
    required = request.POST.get("required") == "1"
    try:
        task = second_review_set(task=task, user=request.user, required=required)
    except ValidationError as exc:
        messages.error(request, "Not changed: " + "; ".join(exc.messages))
    else:
        messages.success(
            request,
            "Two reviewers decide this task: approved only when both approve."
            if task.second_review_required
            else "One reviewer decides this task.",
        )
    return redirect(reverse("review:task", kwargs={"task_id": task_id}) + "#decision")
