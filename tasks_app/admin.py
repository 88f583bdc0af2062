"""Tasks in the Django admin: lists to find work, read-only records, and actions that call the services.

Content is edited through the services (every save a new version), so versions, reviews and runs are read-only
here; decisions that need a comment (request changes, reject) are left to the review pages.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError

from rubrics_app.models import Criterion
from tasks_app.models import Comment, ReferenceRun, Review, Task, TaskVersion
from tasks_app.services.reference_solution import reference_solution_run
from tasks_app.services.reviews import comment_resolve, review_approve, review_claim, review_release
from tasks_app.services.tasks import task_retire, task_submit_for_review


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


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written only by services: browsable, never added, changed or deleted here."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


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
