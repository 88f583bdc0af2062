"""Admin of snapshots and episodes: history, shown read-only; publishing and closing go through services."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from corecraft_site.service_admin import ReadOnlyAdminMixin, ReadOnlyInline
from world_app.admin.base import admin_link, pretty_json
from world_app.models import Episode, EpisodeStep, WorldSnapshot


class JSONViewMedia:
    class Media:
        css = {"all": ("css/admin.css",)}


class SnapshotPublishForm(forms.Form):
    note = forms.CharField(
        max_length=300,
        required=False,
        help_text="What changed in the live world since the last version, for the people who pin tasks to it.",
        widget=forms.TextInput(attrs={"size": 80}),
    )


@admin.register(WorldSnapshot)
class WorldSnapshotAdmin(JSONViewMedia, ReadOnlyAdminMixin, admin.ModelAdmin):
    change_list_template = "admin/world_app/worldsnapshot/change_list.html"
    list_display = (
        "version",
        "note",
        "total_entities",
        "image_size",
        "content_checksum_short",
        "created_by",
        "created_at",
    )
    list_display_links = ("version",)
    list_select_related = ("created_by",)
    list_filter = ("created_at",)
    search_fields = ("=version", "note", "content_checksum")
    fields = (
        "version",
        "note",
        "world_now",
        "content_checksum",
        "schema_fingerprint",
        "image_sha256",
        "image_bytes",
        "entity_counts_table",
        "created_by",
        "created_at",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        # The image is megabytes of SQLite: never load it to list or show a snapshot.
        return super().get_queryset(request).defer("image")

    @admin.display(description="Entities")
    def total_entities(self, obj: WorldSnapshot) -> int:
        return sum((obj.entity_counts or {}).values())

    @admin.display(description="Image", ordering="image_bytes")
    def image_size(self, obj: WorldSnapshot) -> str:
        return f"{obj.image_bytes / 1e6:.2f} MB"

    @admin.display(description="Checksum", ordering="content_checksum")
    def content_checksum_short(self, obj: WorldSnapshot) -> str:
        return format_html('<span class="mono" title="{}">{}</span>', obj.content_checksum, obj.content_checksum[:12])

    @admin.display(description="Entity counts")
    def entity_counts_table(self, obj: WorldSnapshot) -> str:
        return pretty_json(obj.entity_counts)

    def get_urls(self):
        opts = self.model._meta
        return [
            path(
                "publish/",
                self.admin_site.admin_view(self.publish_view),
                name=f"{opts.app_label}_{opts.model_name}_publish",
            ),
            *super().get_urls(),
        ]

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("world_app.add_worldsnapshot")

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_publish": self.has_publish_permission(request)}
        return super().changelist_view(request, extra_context)

    def publish_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_publish_permission(request):
            raise PermissionDenied
        form = SnapshotPublishForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            # Imported here: the snapshot engine pulls in the episode machinery the admin does not otherwise need.
            from world_app.snapshots import SnapshotIntegrityError, snapshot_publish

            try:
                snapshot = snapshot_publish(note=form.cleaned_data["note"], user=request.user)
            except SnapshotIntegrityError as exc:
                form.add_error(None, f"The world changed while it was being frozen; publish again. ({exc})")
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                self.message_user(request, f"Published {snapshot}.", messages.SUCCESS)
                return redirect(reverse("admin:world_app_worldsnapshot_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Publish a new world snapshot",
            "form": form,
            "latest": WorldSnapshot.objects.defer("image").first(),
        }
        return TemplateResponse(request, "admin/world_app/worldsnapshot/publish.html", context)


class StepJSON:
    """A step's arguments and result as readable JSON, for the step inline and the step admin."""

    @admin.display(description="Arguments")
    def arguments_json(self, obj: EpisodeStep) -> str:
        return pretty_json(obj.arguments)

    @admin.display(description="Result")
    def result_json(self, obj: EpisodeStep) -> str:
        return pretty_json(obj.result)


class EpisodeStepInline(StepJSON, ReadOnlyInline):
    model = EpisodeStep
    fields = ("seq", "name", "arguments_json", "result_json", "is_error", "duration_ms", "created_at")
    readonly_fields = fields


@admin.register(Episode)
class EpisodeAdmin(JSONViewMedia, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "snapshot_link",
        "status",
        "label",
        "step_count",
        "created_at",
        "last_activity_at",
        "closed_at",
    )
    list_filter = ("status", "created_at", "closed_at")
    search_fields = ("=id", "label")
    date_hierarchy = "created_at"
    show_full_result_count = False
    fields = (*list_display, "final_checksum", "final_diff_json")
    readonly_fields = fields
    inlines = (EpisodeStepInline,)
    actions = ("close_episodes",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("snapshot").defer("snapshot__image")

    def get_object(self, request, object_id, from_field=None):
        # The page lists the episode's steps: deferred ones are written first (world_app/episodes/step_log.py).
        found = super().get_object(request, object_id, from_field)
        if found is not None:
            from world_app.episodes import episode_log_settle

            episode_log_settle(found.pk)
        return found

    def has_close_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("world_app.change_episode")

    @admin.action(description="Close selected episodes", permissions=("close",))
    def close_episodes(self, request: HttpRequest, queryset: QuerySet[Episode]) -> None:
        # Imported here: the episode engine is heavy and only this action needs it.
        from world_app.episodes import episode_close

        closed = 0
        for episode in queryset.filter(status=Episode.Status.OPEN):
            episode_close(episode)
            closed += 1
        skipped = queryset.count() - closed
        note = f" ({skipped} already closed)" if skipped else ""
        self.message_user(request, f"Closed {closed} episode(s){note}.", messages.SUCCESS)

    @admin.display(description="Snapshot", ordering="snapshot__version")
    def snapshot_link(self, obj: Episode) -> str:
        return admin_link(WorldSnapshot, obj.snapshot_id, obj.snapshot)

    @admin.display(description="Final diff")
    def final_diff_json(self, obj: Episode) -> str:
        return pretty_json(obj.final_diff)


@admin.register(EpisodeStep)
class EpisodeStepAdmin(StepJSON, JSONViewMedia, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("episode_link", "seq", "name", "is_error", "duration_ms", "created_at")
    list_display_links = ("seq", "name")
    list_filter = ("is_error", "created_at")
    search_fields = ("=episode__id", "name")
    show_full_result_count = False
    fields = ("episode_link", "seq", "name", "arguments_json", "result_json", "changes_json", "is_error", "duration_ms")
    readonly_fields = fields

    @admin.display(description="Episode", ordering="episode_id")
    def episode_link(self, obj: EpisodeStep) -> str:
        return admin_link(Episode, obj.episode_id)

    @admin.display(description="Writes")
    def changes_json(self, obj: EpisodeStep) -> str:
        return pretty_json(obj.changes)
