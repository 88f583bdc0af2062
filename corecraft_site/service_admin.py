"""Admin pages that save through a service: the same checks as the pages, refusals shown as form errors.

A ``ServiceSavedAdmin`` names ``save_service(*, user, fields, instance)``; the admin form calls it while it
validates (inside the admin's own transaction), so a ``ValidationError`` or ``PermissionDenied`` from the
service is an error on the form, never a 500, and nothing is saved around the service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction


class ServiceSavedForm(forms.ModelForm):
    service_user: Any = None
    service: Callable[..., Any] | None = None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        fields = {name: cleaned[name] for name in self._meta.fields or cleaned if name in cleaned}
        instance = self.instance if self.instance.pk is not None else None
        try:
            with transaction.atomic():
                self.saved = type(self).service(user=self.service_user, fields=fields, instance=instance)
        except PermissionDenied as exc:
            raise ValidationError(str(exc) or "You are not allowed to do this.") from None
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                for field, errors in exc.error_dict.items():
                    self.add_error(field if field in self.fields else None, errors)
            else:
                raise
        return cleaned

    def _post_clean(self) -> None:
        # The service validated and saved the row; the model's own full_clean would only repeat it.
        pass


class ServiceSavedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose add and change go through ``save_service``; delete is off (records stay)."""

    save_service: Callable[..., Any]

    def get_form(self, request, obj=None, change=False, **kwargs):
        base = super().get_form(request, obj, change=change, **kwargs)
        service = type(self).save_service
        return type(
            base.__name__,
            (ServiceSavedForm, base),
            {"service_user": request.user, "service": staticmethod(service)},
        )

    def save_model(self, request, obj, form, change) -> None:
        saved = form.saved
        obj.pk = saved.pk
        obj.__dict__.update({k: v for k, v in saved.__dict__.items() if not k.startswith("_")})

    def save_related(self, request, form, formsets, change) -> None:
        pass

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdminMixin:
    """Rows that are history or written only by services: browsable, never added, changed or deleted by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Records written only by services: browsable, never added, changed or deleted here."""


class ReadOnlyInline(ReadOnlyAdminMixin, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True
