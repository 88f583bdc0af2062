"""Release pages: list, create (filters, sizes, seed) -> preview per stratum -> freeze; detail with exports; compare.

Admins only: a release holds the holdout's rubrics, which authors and reviewers of training tasks must not read.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corecraft_site.roles import ADMIN, user_roles
from tasks_app.models import Difficulty, TaskType
from trainer_bridge import export_jobs, services
from trainer_bridge.exports import CONTENT_TYPES
from trainer_bridge.models import ExportFormat, ExportJob, ExportStatus, Release, Split
from trainer_bridge.selectors import export_jobs_for, release_compare, release_get, release_list
from trainer_bridge.selectors_dashboard import lead_dashboard
from trainer_bridge.splits import SplitError


def admin_page(view):
    """Logged in, and an admin; anyone else gets a 403 page that says why."""

    @login_required
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if ADMIN not in user_roles(request.user):
            return render(request, "releases/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


class ReleaseForm(forms.Form):
    slug = forms.SlugField(max_length=80, help_text="Stable name used in the API, e.g. corecraft-2026-11.")
    name = forms.CharField(max_length=200, required=False)
    seed = forms.IntegerField(initial=7, min_value=-(2**62), max_value=2**62)
    train = forms.DecimalField(initial=1000, min_value=0, max_digits=12, decimal_places=6,
                               help_text="A count (1000) or a fraction of the qualifying tasks (0.87).")  # fmt: skip
    holdout = forms.DecimalField(initial=150, min_value=0, max_digits=12, decimal_places=6)
    task_types = forms.MultipleChoiceField(
        choices=TaskType.choices, required=False, widget=forms.CheckboxSelectMultiple, help_text="None: every type."
    )
    difficulties = forms.MultipleChoiceField(choices=Difficulty.choices, required=False,
                                             widget=forms.CheckboxSelectMultiple)  # fmt: skip
    pass_rate_min = forms.FloatField(required=False, min_value=0, max_value=1, label="Pass rate at least")
    pass_rate_max = forms.FloatField(required=False, min_value=0, max_value=1, label="Pass rate at most")
    min_reward_variance = forms.FloatField(required=False, min_value=0, label="Reward variance at least")
    include_flagged = forms.BooleanField(
        required=False,
        label="Include tasks the gate flags",
        help_text="Off: tasks whose gate is refused (reference fails, gameable, over-specified: approved over it by "
        "an admin) or whose calibration flags them gameable or over-specified are left out.",
    )

    def release_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        filters = {k: data[k] for k in ("task_types", "difficulties") if data.get(k)}
        filters.update(
            {k: data[k] for k in ("pass_rate_min", "pass_rate_max", "min_reward_variance") if data.get(k) is not None}
        )
        if data.get("include_flagged"):
            filters["include_flagged"] = True
        sizes = {name: format(data[name].normalize(), "f") for name in ("train", "holdout")}
        return {"slug": data["slug"], "name": data["name"], "seed": data["seed"], "filters": filters, "sizes": sizes}


def release_initial(release: Release) -> dict[str, Any]:
    """The form's fields of a saved draft (to edit it)."""
    filters, sizes = release.filters or {}, release.sizes or {}
    initial: dict[str, Any] = {"slug": release.slug, "name": release.name, "seed": release.seed}
    initial.update({k: filters[k] for k in ("task_types", "difficulties") if filters.get(k)})
    initial.update({k: filters[k] for k in ("pass_rate_min", "pass_rate_max", "min_reward_variance") if k in filters})
    initial["include_flagged"] = bool(filters.get("include_flagged"))
    initial.update({k: sizes.get(k) for k in ("train", "holdout")})
    return initial


def _form_errors(form: forms.Form, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        target = field if field in form.fields else None
        for error in errors:
            form.add_error(target, error)


@require_GET
@admin_page
def release_list_page(request: HttpRequest) -> HttpResponse:
    releases = list(release_list())
    frozen = [r for r in releases if r.is_frozen]
    return render(request, "releases/list.html", {"releases": releases, "frozen": frozen})


@require_http_methods(["GET", "POST"])
@admin_page
def release_new(request: HttpRequest) -> HttpResponse:
    form = ReleaseForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            release = services.release_create(user=request.user, **form.release_fields())
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            return redirect("releases:detail", slug=release.slug)
    return render(request, "releases/new.html", {"form": form}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@admin_page
def release_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """Change a draft (slug, name, seed, sizes, filters) until it is frozen; a frozen release says so."""
    release = _release_or_404(slug)
    if release.is_frozen:
        messages.error(request, "A frozen release is never changed; make a new draft instead.")
        return redirect("releases:detail", slug=release.slug)
    form = ReleaseForm(request.POST or None, initial=release_initial(release))
    if request.method == "POST" and form.is_valid():
        try:
            release = services.release_update_draft(release=release, user=request.user, **form.release_fields())
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, f"Draft {release.slug} saved.")
            return redirect("releases:detail", slug=release.slug)
    context = {"form": form, "release": release}
    return render(request, "releases/new.html", context, status=400 if form.errors else 200)


def _release_or_404(slug: str) -> Release:
    release = release_get(slug=slug)
    if release is None:
        raise Http404("No release with that slug.")
    return release


@require_GET
@admin_page
def release_detail(request: HttpRequest, slug: str) -> HttpResponse:
    release = _release_or_404(slug)
    context: dict[str, Any] = {"release": release, "filters_text": _filters_text(release.filters)}
    if release.is_frozen:
        strata: dict[tuple[str, str], dict] = {}
        for item in release.manifest.get("strata", []):
            cell = strata.setdefault((item["task_type"], item["difficulty"]), {})
            cell[item["split"]] = item["count"]
            cell[item["split"] + "_target"] = item["target"]
        context["strata"] = [{"task_type": t, "difficulty": d, **c} for (t, d), c in sorted(strata.items())]
        context.update(_exports_context(release))
    else:
        try:
            plan = services.release_preview(release=release)
        except SplitError as exc:
            context["preview_error"] = str(exc)
        else:
            context["plan"] = plan
            context["strata"] = plan.strata()
            context["flagged_left_out"] = services.release_flagged_left_out(release=release, plan=plan)
    return render(request, "releases/detail.html", context)


def _filters_text(filters: dict) -> list[str]:
    return [
        f"{name.replace('_', ' ')}: {', '.join(map(str, value)) if isinstance(value, list) else value}"
        for name, value in (filters or {}).items()
    ]


def _exports_context(release: Release) -> dict[str, Any]:
    jobs = {(j.split, j.format): j for j in export_jobs_for(release=release)}
    grid = [
        {"split": split, "format": fmt, "label": label, "job": jobs.get((split, fmt))}
        for split in Split.values
        for fmt, label in ExportFormat.choices
    ]
    running = any(j.status in (ExportStatus.QUEUED, ExportStatus.RUNNING) for j in jobs.values())
    return {"exports": grid, "exports_running": running}


@require_http_methods(["GET", "POST"])
@admin_page
def release_freeze(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: what freezing would do now (counts, snapshots, flagged tasks left out; it cannot be undone), with the
    button that does it; POST: freeze."""
    release = _release_or_404(slug)
    if release.is_frozen:
        messages.info(request, f"Release {release.slug} is frozen already.")
        return redirect("releases:detail", slug=release.slug)
    if request.method == "GET":
        outcome = services.release_freeze_outcome(release=release)
        return render(request, "releases/confirm.html", {"release": release, "action": "freeze", "outcome": outcome})
    try:
        services.release_freeze(release=release, user=request.user)
    except ValidationError as exc:
        for errors in exc.message_dict.values():
            for error in errors:
                messages.error(request, error)
    else:
        messages.success(request, f"Release {release.slug} is frozen.")
    return redirect("releases:detail", slug=release.slug)


@require_http_methods(["GET", "POST"])
@admin_page
def release_delete(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: what deleting the draft does (it holds no rows; no task changes), with the button; POST: delete."""
    release = _release_or_404(slug)
    if request.method == "GET":
        if release.is_frozen:
            messages.error(request, "A frozen release is never deleted.")
            return redirect("releases:detail", slug=release.slug)
        return render(request, "releases/confirm.html", {"release": release, "action": "delete"})
    try:
        services.release_delete_draft(release=release)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("releases:detail", slug=release.slug)
    messages.success(request, f"Draft {slug} deleted.")
    return redirect("releases:list")


@require_POST
@admin_page
def release_export(request: HttpRequest, slug: str) -> HttpResponse:
    release = _release_or_404(slug)
    try:
        export_jobs.export_request(
            release=release, split=request.POST.get("split", ""), format=request.POST.get("format", ""),
            user=request.user,
        )  # fmt: skip
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    if request.htmx:
        return render(request, "releases/detail.html#exports", {"release": release, **_exports_context(release)})
    return redirect("releases:detail", slug=release.slug)


@require_GET
@admin_page
def release_exports(request: HttpRequest, slug: str) -> HttpResponse:
    """The exports table (polled while a job runs; 286 stops the polling once none is)."""
    release = _release_or_404(slug)
    context = {"release": release, **_exports_context(release)}
    response = render(request, "releases/detail.html#exports", context)
    if not context["exports_running"]:
        response.status_code = 286
    return response


@require_GET
@admin_page
def export_download(request: HttpRequest, job_id: int) -> HttpResponse:
    job = ExportJob.objects.select_related("release").filter(pk=job_id).first()
    if job is None or not export_jobs.export_file_ready(job):
        raise Http404("No such export file (yet).")
    if job.etag and job.etag in request.headers.get("If-None-Match", ""):
        response = HttpResponse(status=304)
        response["ETag"] = job.etag
        return response
    path = export_jobs.export_file_path(job)
    response = FileResponse(
        path.open("rb"),
        as_attachment=True,
        content_type=CONTENT_TYPES[job.format],
        filename=f"{job.release.slug}-{job.split}-{job.format}{path.suffix}",
    )
    response["ETag"] = job.etag
    return response


@require_GET
@admin_page
def release_compare_page(request: HttpRequest) -> HttpResponse:
    frozen = list(release_list(frozen_only=True))
    old_slug, new_slug = request.GET.get("old", ""), request.GET.get("new", "")
    context: dict[str, Any] = {"frozen": frozen, "old_slug": old_slug, "new_slug": new_slug}
    if old_slug or new_slug:
        old = release_get(slug=old_slug, frozen_only=True)
        new = release_get(slug=new_slug, frozen_only=True)
        if old is None or new is None:
            context["error"] = "Choose two frozen releases."
            return render(request, "releases/compare.html", context, status=400)
        context.update({"old": old, "new": new, "diff": release_compare(old=old, new=new)})
    return render(request, "releases/compare.html", context)


@require_GET
@admin_page
def lead_dashboard_page(request: HttpRequest) -> HttpResponse:
    """What an RL lead opens first: tasks by status and type, calibration and gate coverage, pass rates per model
    and task type by week, the frozen releases and their use by tokens."""
    return render(request, "releases/dashboard.html", {"board": lead_dashboard()})
