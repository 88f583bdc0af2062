"""Criteria in the Django admin: read-only (a criterion is never edited after its version is saved)."""

from __future__ import annotations

from django.contrib import admin

from rubrics_app.models import Criterion
from tasks_app.admin import ReadOnlyAdmin


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


# --- Issue 5: the judge -----------------------------------------------------------------------------------

from corecraft_site.service_admin import ServiceSavedAdmin  # noqa: E402
from rubrics_app.judge import judge_config_save  # noqa: E402
from rubrics_app.models import JudgeConfig, Verdict, VerdictLabel  # noqa: E402


def _judge_config_save(*, user, fields: dict, instance: JudgeConfig | None) -> JudgeConfig:
    return judge_config_save(user=user, fields=fields, judge_config=instance)


@admin.register(JudgeConfig)
class JudgeConfigAdmin(ServiceSavedAdmin):
    """Saved by ``judge_config_save``, as on the judge page: admins only, its hash computed, verdict fields frozen."""

    save_service = staticmethod(_judge_config_save)
    list_display = ("name", "endpoint", "samples", "temperature", "prompt_version", "is_active", "created_at")
    list_filter = ("is_active", "prompt_version")
    search_fields = ("name",)
    list_select_related = ("endpoint",)
    readonly_fields = ("config_hash", "created_at")


class VerdictLabelInline(admin.TabularInline):
    model = VerdictLabel
    extra = 0
    fields = ("labeller", "agrees", "note", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Verdict)
class VerdictAdmin(ReadOnlyAdmin):
    list_display = ("criterion_key", "status", "met", "agreement", "judge_config", "short_hash", "created_at")
    list_filter = ("status", "judge_config")
    search_fields = ("trajectory_hash", "criterion_key", "rationale")
    list_select_related = ("judge_config",)
    inlines = (VerdictLabelInline,)

    @admin.display(description="trajectory")
    def short_hash(self, verdict: Verdict) -> str:
        return verdict.trajectory_hash[:12]


@admin.register(VerdictLabel)
class VerdictLabelAdmin(ReadOnlyAdmin):
    list_display = ("verdict", "labeller", "agrees", "created_at")
    list_filter = ("agrees",)
    search_fields = ("note", "labeller__username")
    list_select_related = ("verdict", "labeller")
