"""The judgement in the Django admin: model endpoints and judge configurations (saved through their services),
verdicts and their labels (read-only: written by the judgement and the label pages)."""

from __future__ import annotations

from django.contrib import admin, messages

from corecraft_site.service_admin import ReadOnlyAdmin, ServiceSavedAdmin
from rubrics_app.endpoints import model_endpoint_save, model_endpoint_test
from rubrics_app.judge import judge_config_save
from rubrics_app.models import JudgeConfig, ModelEndpoint, Verdict, VerdictLabel


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


def _model_endpoint_save(*, user, fields: dict, instance: ModelEndpoint | None) -> ModelEndpoint:
    return model_endpoint_save(user=user, fields=fields, endpoint=instance)


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(ServiceSavedAdmin):
    """Admins register endpoints here (through ``model_endpoint_save``, as on the endpoints page); the key stays in
    the environment variable the endpoint names."""

    save_service = staticmethod(_model_endpoint_save)

    list_display = ("name", "model", "base_url", "api_key_env", "is_active", "check_ok", "last_checked_at")
    list_filter = ("is_active",)
    search_fields = ("name", "model", "base_url")
    readonly_fields = ("created_by", "created_at", "last_checked_at", "last_check")
    actions = ("test_connection",)

    @admin.display(description="last check", boolean=True)
    def check_ok(self, endpoint: ModelEndpoint) -> bool | None:
        return endpoint.last_check.get("ok") if endpoint.last_check else None

    @admin.action(description="Test connection", permissions=("change",))
    def test_connection(self, request, queryset) -> None:
        for endpoint in queryset:
            outcome = model_endpoint_test(endpoint=endpoint)
            if outcome["ok"]:
                self.message_user(
                    request, f"{endpoint.name}: answered in {outcome['latency_ms']} ms.", messages.SUCCESS
                )
            else:
                self.message_user(request, f"{endpoint.name}: {outcome['error']}", messages.ERROR)
