"""Tasks in the Django admin: lists to find work, read-only records, and actions that call the services.

Content is edited through the services (every save a new version), so versions, reviews and runs are read-only
here; decisions that need a comment (request changes, reject) are left to the review pages.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError

from corecraft_site.service_admin import ReadOnlyAdmin, ReadOnlyInline
from tasks_app.authoring.services.reference_solution import reference_solution_run
from tasks_app.authoring.services.reviews import comment_resolve, review_approve, review_claim, review_release
from tasks_app.authoring.services.tasks import task_retire, task_submit_for_review
from tasks_app.calibration.services.calibration import (
    calibration_run_cancel,
    calibration_run_progress,
    calibration_run_resume,
    calibration_run_start,
)
from tasks_app.models import (
    CalibrationItem,
    CalibrationRun,
    Comment,
    Criterion,
    ReferenceRun,
    Review,
    Rollout,
    Task,
    TaskCalibration,
    TaskVersion,
)


def run_for_each(modeladmin: admin.ModelAdmin, request, queryset, *, what: str, service: Callable) -> None:
    """Call ``service(obj, user)`` per selected row; report successes and each refusal with its reason."""
    done = 0
    for obj in queryset:
        try:
            service(obj, request.user)
            done += 1
        except (PermissionDenied, ValidationError) as exc:
            reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            modeladmin.message_user(request, f"{obj}: {reason}", messages.ERROR)
    if done:
        modeladmin.message_user(request, f"{what}: {done} done.", messages.SUCCESS)


class VersionInline(ReadOnlyInline):
    model = TaskVersion
    fields = ("number", "title", "snapshot", "created_by", "created_at")
    readonly_fields = fields


class ReviewInline(ReadOnlyInline):
    model = Review
    fields = ("created_at", "version", "reviewer", "decision", "comment")
    readonly_fields = fields


class CommentInline(ReadOnlyInline):
    model = Comment
    fields = ("created_at", "version", "criterion_key", "author", "body", "resolved")
    readonly_fields = fields


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = (
        "title", "status", "task_type", "difficulty", "family", "author", "version_number", "claimed_by",
        "submitted_at", "updated_at",
    )  # fmt: skip
    list_filter = ("status", "task_type", "difficulty", "family")
    search_fields = ("title", "family", "current_version__instruction", "author__username")
    list_select_related = ("author", "current_version", "claimed_by")
    date_hierarchy = "updated_at"
    inlines = (VersionInline, ReviewInline, CommentInline)
    actions = ("submit_for_review", "claim", "release", "approve", "retire", "run_reference_solution")

    @admin.display(description="version", ordering="current_version__number")
    def version_number(self, task: Task) -> int | None:
        return task.current_version.number if task.current_version else None

    def has_change_permission(self, request, obj=None) -> bool:
        # The change page stays read-only; the actions need the "change" permission to show.
        return obj is None and request.user.has_perm("tasks_app.change_task")

    @admin.action(description="Submit for review", permissions=("change",))
    def submit_for_review(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Submitted",
                     service=lambda t, user: task_submit_for_review(task=t, user=user))  # fmt: skip

    @admin.action(description="Claim for review (30 minutes)", permissions=("change",))
    def claim(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Claimed", service=lambda t, user: review_claim(task=t, user=user))

    @admin.action(description="Release my claim", permissions=("change",))
    def release(self, request, queryset) -> None:
        run_for_each(
            self, request, queryset, what="Released", service=lambda t, user: review_release(task=t, user=user)
        )

    @admin.action(description="Approve (claimed tasks)", permissions=("change",))
    def approve(self, request, queryset) -> None:
        run_for_each(
            self, request, queryset, what="Approved", service=lambda t, user: review_approve(task=t, user=user)
        )

    @admin.action(description="Retire (admins)", permissions=("change",))
    def retire(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Retired", service=lambda t, user: task_retire(task=t, user=user))

    @admin.action(description="Run the reference solution", permissions=("change",))
    def run_reference_solution(self, request, queryset) -> None:
        run_for_each(
            self, request, queryset.select_related("current_version"), what="Reference solutions run",
            service=lambda t, user: reference_solution_run(version=t.current_version, user=user),
        )  # fmt: skip


class CriterionInline(ReadOnlyInline):
    model = Criterion
    fields = ("position", "kind", "text", "category", "weight", "required", "spec", "key")
    readonly_fields = fields
    show_change_link = False


@admin.register(TaskVersion)
class TaskVersionAdmin(ReadOnlyAdmin):
    list_display = ("task", "number", "title", "task_type", "difficulty", "snapshot", "created_by", "created_at")
    list_filter = ("task_type", "difficulty", "snapshot")
    search_fields = ("title", "instruction", "task__title", "family")
    list_select_related = ("task", "snapshot", "created_by")
    readonly_fields = ("content_hash",)
    inlines = (CriterionInline,)


@admin.register(Criterion)
class CriterionAdmin(ReadOnlyAdmin):
    list_display = ("short_text", "kind", "category", "weight", "required", "version", "position")
    list_filter = ("kind", "category", "required")
    search_fields = ("text", "version__task__title", "key")
    list_select_related = ("version__task",)
    readonly_fields = ("content_hash",)

    @admin.display(description="text")
    def short_text(self, criterion: Criterion) -> str:
        return criterion.text[:80]


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = ("task", "version", "reviewer", "decision", "created_at")
    list_filter = ("decision", "created_at")
    search_fields = ("task__title", "comment", "reviewer__username")
    list_select_related = ("task", "version", "reviewer")


@admin.register(Comment)
class CommentAdmin(ReadOnlyAdmin):
    list_display = ("task", "version", "criterion_key", "author", "resolved", "created_at")
    list_filter = ("resolved", "created_at")
    search_fields = ("task__title", "body", "author__username")
    list_select_related = ("task", "version", "author")
    actions = ("resolve",)

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None and request.user.has_perm("tasks_app.view_comment")

    @admin.action(description="Mark resolved", permissions=("change",))
    def resolve(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Resolved",
                     service=lambda c, user: comment_resolve(comment=c, user=user))  # fmt: skip


@admin.register(ReferenceRun)
class ReferenceRunAdmin(ReadOnlyAdmin):
    list_display = ("version", "passed", "reward", "created_by", "created_at")
    list_filter = ("passed", "created_at")
    search_fields = ("version__task__title",)
    list_select_related = ("version__task", "created_by")


# --- rollouts and calibration runs -------------------------------------------------------------------------


@admin.register(Rollout)
class RolloutAdmin(ReadOnlyAdmin):
    list_display = (
        "id", "version", "policy_label", "sample", "status", "reward", "passed", "turns", "malformed_tool_calls",
        "endpoint_retries", "judge_errors", "run", "created_at",
    )  # fmt: skip
    list_filter = ("status", "policy", "passed", "endpoint")
    search_fields = ("version__task__title", "policy_label", "trajectory_hash", "failure_reason")
    list_select_related = ("version__task", "run")
    date_hierarchy = "created_at"


class CalibrationItemInline(ReadOnlyInline):
    model = CalibrationItem
    fields = ("version", "policy", "endpoint", "perturbation", "sample", "status", "attempts", "rollout", "error")
    readonly_fields = fields
    show_change_link = False


@admin.register(CalibrationRun)
class CalibrationRunAdmin(ReadOnlyAdmin):
    list_display = ("name", "status", "samples", "judge_config", "progress", "created_by", "created_at", "finished_at")
    list_filter = ("status", "created_at")
    search_fields = ("name",)
    list_select_related = ("judge_config", "created_by")
    actions = ("start", "cancel", "resume")

    @admin.display(description="progress")
    def progress(self, run: CalibrationRun) -> str:

        counts = calibration_run_progress(run)
        return f"{counts['done'] + counts['failed']}/{counts['total'] - counts['cancelled']} ({counts['percent']}%)"

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None and request.user.has_perm("tasks_app.change_calibrationrun")

    @admin.action(description="Start", permissions=("change",))
    def start(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Started",
                     service=lambda run, user: calibration_run_start(run=run))  # fmt: skip

    @admin.action(description="Cancel (queued items)", permissions=("change",))
    def cancel(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Cancelled",
                     service=lambda run, user: calibration_run_cancel(run=run))  # fmt: skip

    @admin.action(description="Resume", permissions=("change",))
    def resume(self, request, queryset) -> None:
        run_for_each(self, request, queryset, what="Resumed",
                     service=lambda run, user: calibration_run_resume(run=run))  # fmt: skip


@admin.register(CalibrationItem)
class CalibrationItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "version", "policy", "perturbation", "sample", "status", "attempts", "claimed_at")
    list_filter = ("status", "policy")
    search_fields = ("run__name", "version__task__title", "error")
    list_select_related = ("run", "version__task")


@admin.register(TaskCalibration)
class TaskCalibrationAdmin(ReadOnlyAdmin):
    list_display = (
        "version", "judge_config", "n_rollouts", "pass_at_1", "reward_mean", "reward_std", "calibrated_difficulty",
        "flag_list", "updated_at",
    )  # fmt: skip
    list_filter = ("calibrated_difficulty", "judge_config")
    search_fields = ("version__task__title",)
    list_select_related = ("version__task", "judge_config")

    @admin.display(description="flags")
    def flag_list(self, calibration: TaskCalibration) -> str:
        return ", ".join(calibration.flags or [])
