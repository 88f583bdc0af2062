"""Model endpoints and judge configurations: the registry pages (admins edit; reviewers read)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corecraft_site.roles import is_admin
from corecraft_site.service_errors import add_service_errors
from rubrics_app.endpoints import model_endpoint_save, model_endpoint_test, registry_admin_check
from rubrics_app.judge import judge_config_save
from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.calibration.forms import EndpointForm, JudgeConfigForm
from tasks_app.calibration.views import forbidden_as_page
from tasks_app.permissions import calibration_view_check


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
    save = partial(model_endpoint_save, user=request.user, endpoint=endpoint)
    return _registry_form(request, form, save, "endpoint", "calibration/endpoint_form.html", {"endpoint": endpoint})


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


@require_http_methods(["GET", "POST"])
@login_required
@forbidden_as_page
def judge_edit(request: HttpRequest, judge_id: int | None = None) -> HttpResponse:
    """Create or edit a judge configuration (admins)."""
    registry_admin_check(request.user)
    judge = get_object_or_404(JudgeConfig, pk=judge_id) if judge_id else None
    initial = {name: getattr(judge, name) for name in JudgeConfigForm.base_fields} if judge else None
    form = JudgeConfigForm(request.POST or None, initial=initial, judge_config=judge)
    save = partial(judge_config_save, user=request.user, judge_config=judge)
    return _registry_form(request, form, save, "judge configuration", "calibration/judge_form.html", {"judge": judge})


def _registry_form(
    request: HttpRequest, form: forms.Form, save: Callable[..., Any], what: str, template: str, context: dict
) -> HttpResponse:
    """A registry form's POST: ``save(fields=...)`` the valid form and go back to the registry, or show the form
    again (400) with the service's refusals on their fields; a GET shows the form."""
    if request.method == "POST" and form.is_valid():
        try:
            saved = save(fields=form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved {what} {saved.name}.")
            return redirect("calibration:endpoints")
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form, **context}, status=status)
