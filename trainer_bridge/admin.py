"""The trainer bridge in the Django admin: tokens (made and revoked through the services; the secret shown once),
their uses (read-only), and releases, rows and export jobs (read-only records: releases are made on their pages)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from corecraft_site.service_admin import ReadOnlyAdmin
from trainer_bridge.models import ApiToken, ApiTokenUse, ExportJob, Release, ReleaseRow, Scope
from trainer_bridge.services import api_token_create, api_token_revoke


class ApiTokenAddForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=Scope.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ApiToken
        fields = ["name", "scopes"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "scope_list", "created_by", "created_at", "last_used_at", "state"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix"]
    readonly_fields = ["name", "prefix", "scopes", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ["name", "scopes"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoke instead: the uses log keeps pointing at the token

    def save_model(self, request, obj, form, change) -> None:
        if change:
            return
        try:
            issued = api_token_create(name=obj.name, scopes=form.cleaned_data["scopes"], created_by=request.user)
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from None
        obj.pk = issued.token.pk
        obj.__dict__.update({k: v for k, v in issued.token.__dict__.items() if not k.startswith("_")})
        self.message_user(
            request,
            format_html(
                "Copy this token's secret now, it is not shown again: <code>{}</code> "
                "(send it as <code>Authorization: Bearer &lt;secret&gt;</code>).",
                issued.secret,
            ),
            messages.WARNING,
        )

    @admin.display(description="Scopes")
    def scope_list(self, token: ApiToken) -> str:
        return ", ".join(token.scopes)

    @admin.display(description="State")
    def state(self, token: ApiToken) -> str:
        return "revoked" if token.revoked_at else "active"

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        count = 0
        for token in queryset:
            api_token_revoke(token=token)
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(ApiTokenUse)
class ApiTokenUseAdmin(ReadOnlyAdmin):
    list_display = ["at", "token", "method", "path", "status", "scope"]
    list_filter = ["status", "scope", "method"]
    list_select_related = ["token"]
    search_fields = ["path", "token__name", "token__prefix"]
    date_hierarchy = "at"


@admin.register(Release)
class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ["slug", "name", "status", "seed", "created_by", "created_at", "frozen_at"]
    list_filter = ["status"]
    list_select_related = ["created_by"]
    search_fields = ["slug", "name"]
    readonly_fields = ["slug", "name", "seed", "filters", "sizes", "status", "manifest", "checksum", "created_by",
                       "created_at", "frozen_at"]  # fmt: skip
    exclude = ["tools"]


@admin.register(ReleaseRow)
class ReleaseRowAdmin(ReadOnlyAdmin):
    list_display = ["release", "split", "position", "task_key", "task_type", "difficulty", "family"]
    list_filter = ["split", "task_type", "difficulty"]
    list_select_related = ["release"]
    search_fields = ["task_key", "release__slug"]
    raw_id_fields = ["task", "version"]


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = ["release", "split", "format", "status", "rows_written", "rows_total", "size_bytes", "finished_at"]
    list_filter = ["status", "format", "split"]
    list_select_related = ["release"]
