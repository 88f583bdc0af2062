"""What every world admin shares: JSON edited as pretty text, read-only ids once saved, links between rows."""

from __future__ import annotations

import copy
import datetime
import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path, quote
from django.contrib.admin.widgets import AutocompleteSelect, RelatedFieldWidgetWrapper
from django.db import models
from django.forms.fields import InvalidJSONInput
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from world_app.clock import world_now, world_zone

JSON_ROWS_MIN = 4
JSON_ROWS_MAX = 30


class JSONTextarea(forms.Textarea):
    """A monospace textarea that grows with the document it holds."""

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs={"class": "vLargeTextField json-editor", "spellcheck": "false", **(attrs or {})})

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        lines = str(value or "").count("\n") + 2
        context["widget"]["attrs"]["rows"] = max(JSON_ROWS_MIN, min(lines, JSON_ROWS_MAX))
        return context

    class Media:
        css = {"all": ("css/admin.css",)}


class PrettyJSONField(forms.JSONField):
    """JSON shown indented, errors that say where the JSON broke, and an empty box meaning the field's default."""

    def __init__(self, *, empty_json: Any = None, key_order: tuple[str, ...] = (), **kwargs) -> None:
        self.empty_json = empty_json
        self.key_order = {key: i for i, key in enumerate(key_order)}
        super().__init__(**kwargs)

    def _ordered(self, value):
        # jsonb keeps keys in its own order; show objects (alone or in a list) in the documented order.
        if isinstance(value, dict) and self.key_order:
            last = len(self.key_order)
            return dict(sorted(value.items(), key=lambda item: self.key_order.get(item[0], last)))
        if isinstance(value, list):
            return [self._ordered(item) if isinstance(item, dict) else item for item in value]
        return value

    def to_python(self, value):
        if not self.disabled and value in self.empty_values:
            # A non-null JSON column would reject NULL at save time: an empty box means the default instead.
            return copy.deepcopy(self.empty_json)
        if isinstance(value, str):
            try:
                json.loads(value, cls=self.decoder)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(
                    "Enter valid JSON: %(reason)s at line %(line)s, column %(column)s.",
                    code="invalid",
                    params={"reason": exc.msg, "line": exc.lineno, "column": exc.colno},
                ) from None
        return super().to_python(value)

    def prepare_value(self, value):
        if isinstance(value, InvalidJSONInput):
            return value
        if value is None:
            return ""
        return json.dumps(self._ordered(value), indent=2, ensure_ascii=False, cls=self.encoder)


def pretty_json(value) -> str:
    """JSON for reading: indented, in a scrollable monospace block."""
    if value is None:
        return "—"
    return format_html('<pre class="json-view">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False, default=str))


def json_view(name: str, label: str):
    """A read-only admin field that shows the JSON field ``name`` indented."""

    @admin.display(description=label)
    def show(obj) -> str:
        return pretty_json(getattr(obj, name))

    return show


def json_formfield_kwargs(db_field: models.JSONField) -> dict:
    if db_field.null:
        empty = None
    elif db_field.has_default():
        empty = db_field.get_default()
    else:
        empty = None
    return {"form_class": PrettyJSONField, "widget": JSONTextarea, "empty_json": empty}


def admin_url(model: type[models.Model], pk: Any) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(pk)])


def admin_link(model: type[models.Model], pk: Any, label: Any = None) -> str:
    """An HTML link to a row's admin page; an em dash for no row."""
    if pk is None or pk == "":
        return "—"
    return format_html('<a href="{}">{}</a>', admin_url(model, pk), pk if label is None else label)


def changelist_link(model: type[models.Model], label: str, **filters: Any) -> str:
    opts = model._meta
    query = "&".join(f"{key}={quote(value)}" for key, value in filters.items())
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


class PrimedAutocompleteSelect(AutocompleteSelect):
    """An autocomplete whose selected label can come from the row already loaded, instead of a query per form.

    Django's widget looks the selected row up again to print its label: one query per inline row.
    """

    primed: dict[str, str] | None = None

    def optgroups(self, name, value, attr=None):
        selected = [str(v) for v in value if str(v) not in self.choices.field.empty_values]
        if not self.primed or not selected or any(v not in self.primed for v in selected):
            return super().optgroups(name, value, attr)
        options = [] if self.is_required else [self.create_option(name, "", "", False, 0)]
        for v in selected:
            options.append(self.create_option(name, v, self.primed[v], True, len(options)))
        return [(None, options, 0)]


class WorldModelForm(forms.ModelForm):
    """Primes each autocomplete with the label of the related row the instance already holds."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            widget = getattr(field.widget, "widget", field.widget)
            if not isinstance(widget, PrimedAutocompleteSelect):
                continue
            model_field = self.instance._meta.get_field(name)
            if model_field.is_cached(self.instance):
                related = model_field.get_cached_value(self.instance)
                if related is not None:
                    widget.primed = {str(related.pk): field.label_from_instance(related)}


class WorldFormfieldsMixin:
    """JSON fields as pretty JSON in a monospace box; autocompletes that reuse loaded rows; for admins and inlines."""

    form = WorldModelForm
    # Field name -> the order to show the keys of its JSON objects in.
    json_key_orders: dict[str, tuple[str, ...]] = {}

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if isinstance(db_field, models.JSONField):
            key_order = self.json_key_orders.get(db_field.name, ())
            kwargs = {**json_formfield_kwargs(db_field), "key_order": key_order, **kwargs}
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        if isinstance(db_field, models.DateTimeField) and formfield is not None and not formfield.help_text:
            formfield.help_text = f"World time ({settings.WORLD_TIME_ZONE})."
        return formfield

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(request):
            kwargs["widget"] = PrimedAutocompleteSelect(db_field, self.admin_site, using=kwargs.get("using"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class WorldDateFieldListFilter(admin.DateFieldListFilter):
    """Today, the past 7 and 30 days, this month and year by the world clock, not the server's.

    The world's "now" is fixed (2025-09-15 14:00 EST in the public port): "past 7 days" by the server's
    clock would show nothing.
    """

    def __init__(self, field, request, params, model, model_admin, field_path) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        now = timezone.localtime(world_now())
        if isinstance(field, models.DateTimeField):
            today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        else:
            today = now.date()
        tomorrow = today + datetime.timedelta(days=1)
        next_month = (today.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
        since, until = self.lookup_kwarg_since, self.lookup_kwarg_until
        self.links = (
            ("Any date", {}),
            ("World today", {since: today, until: tomorrow}),
            ("Past 7 days", {since: today - datetime.timedelta(days=7), until: tomorrow}),
            ("Past 30 days", {since: today - datetime.timedelta(days=30), until: tomorrow}),
            ("This month", {since: today.replace(day=1), until: next_month}),
            (
                "This year",
                {since: today.replace(month=1, day=1), until: today.replace(year=today.year + 1, month=1, day=1)},
            ),
            *self.links[5:],  # "No date" / "Has date" on nullable fields
        )


class WorldTimeZoneMixin:
    """World times are shown and typed in the world's time zone (the world clock's), not the server's."""

    def _in_world_zone(self, view, *args):
        with timezone.override(world_zone()):
            response = view(*args)
            # A TemplateResponse renders lazily: render it while the world's zone is active.
            if hasattr(response, "render") and not response.is_rendered:
                response.render()
        return response

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        return self._in_world_zone(super().changeform_view, request, object_id, form_url, extra_context)

    def changelist_view(self, request, extra_context=None):
        return self._in_world_zone(super().changelist_view, request, extra_context)


class WorldEntityAdmin(WorldTimeZoneMixin, WorldFormfieldsMixin, admin.ModelAdmin):
    """Base admin of a world entity: string ids are chosen once (blank = generated), then fixed.

    Someone who may only view (a reviewer) reads JSON fields indented, through ``<field>_json_view``.
    """

    list_per_page = 50
    save_on_top = True

    class Media:
        css = {"all": ("css/admin.css",)}

    def __init__(self, model, admin_site) -> None:
        super().__init__(model, admin_site)
        self._json_fields = [f for f in model._meta.concrete_fields if isinstance(f, models.JSONField)]
        for field in self._json_fields:
            show = admin.display(description=field.verbose_name)(
                lambda obj, _name=field.name: pretty_json(getattr(obj, _name))
            )
            setattr(self, f"{field.name}_json_view", show)

    def _view_only(self, request, obj) -> bool:
        return obj is not None and not self.has_change_permission(request, obj)

    def get_list_filter(self, request):
        filters = []
        for item in super().get_list_filter(request):
            if isinstance(item, str) and isinstance(get_fields_from_path(self.model, item)[-1], models.DateField):
                item = (item, WorldDateFieldListFilter)
            filters.append(item)
        return filters

    def get_readonly_fields(self, request, obj=None):
        readonly = tuple(super().get_readonly_fields(request, obj))
        # Changing a primary key in the admin would copy the row, not rename it.
        if obj is not None and "id" not in readonly:
            readonly = ("id", *readonly)
        if self._view_only(request, obj):
            readonly += tuple(f"{f.name}_json_view" for f in self._json_fields)
        return readonly

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if not self._view_only(request, obj) or not self._json_fields:
            return fieldsets
        swap = {f.name: f"{f.name}_json_view" for f in self._json_fields}
        return [
            (title, {**options, "fields": [swap.get(name, name) for name in options["fields"]]})
            for title, options in fieldsets
        ]


class WorldInline(WorldFormfieldsMixin, admin.TabularInline):
    """A child row inline: its id is shown, generated for new rows, and rendered as the hidden pk the formset needs."""

    extra = 0
    show_change_link = True
    # Long text in a table row: a small box, not the page-wide one.
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 28})}}

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        widget = getattr(formfield, "widget", None)
        if isinstance(widget, RelatedFieldWidgetWrapper):
            # In a table row only "view" fits; adding or editing the related row happens on its own page.
            widget.can_add_related = widget.can_change_related = widget.can_delete_related = False
        return formfield

    def get_readonly_fields(self, request, obj=None):
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if "id" in readonly else ("id", *readonly)
