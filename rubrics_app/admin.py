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
