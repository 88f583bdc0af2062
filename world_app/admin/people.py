"""Admin of the people in the world: customers and employees."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html_join

from world_app.admin.base import WorldEntityAdmin, admin_link, changelist_link
from world_app.models import Build, Customer, Employee, Order, Payment, SupportTicket
from world_app.models.people import Address

ADDRESS_KEYS = tuple(Address.model_fields)


@admin.register(Customer)
class CustomerAdmin(WorldEntityAdmin):
    list_display = ("id", "first_name", "last_name", "email", "loyalty_tier", "created_at")
    list_display_links = ("id", "first_name", "last_name")
    list_filter = ("loyalty_tier", "marketing_opt_in", "created_at")
    search_fields = ("id", "first_name", "last_name", "email", "phone")
    date_hierarchy = "created_at"
    show_full_result_count = False
    readonly_fields = ("related_records",)
    json_key_orders = {"addresses": ADDRESS_KEYS}
    fieldsets = (
        (None, {"fields": ("id", "first_name", "last_name", "email", "phone", "date_of_birth", "related_records")}),
        ("Account", {"fields": ("loyalty_tier", "marketing_opt_in", "created_at", "updated_at")}),
        (
            "Addresses",
            {
                "fields": ("addresses",),
                "description": "A list of objects: label (shipping or billing), name, line1, line2, city, "
                "state (2 letters), postal_code (12345 or 12345-6789), country (2 letters).",
            },
        ),
        (None, {"fields": ("notes",)}),
    )

    @admin.display(description="Records of this customer")
    def related_records(self, obj: Customer | None) -> str:
        if obj is None or obj.pk is None:
            return "—"
        rows = [
            (changelist_link(model, f"{label} ({model.objects.filter(customer_id=obj.pk).count()})", customer=obj.pk),)
            for model, label in (
                (Order, "Orders"),
                (Payment, "Payments"),
                (SupportTicket, "Tickets"),
                (Build, "Builds"),
            )
        ]
        return format_html_join(" · ", "{}", rows)


@admin.register(Employee)
class EmployeeAdmin(WorldEntityAdmin):
    list_display = ("id", "first_name", "last_name", "department", "title", "support_role", "manager_link", "is_active")
    list_display_links = ("id", "first_name", "last_name")
    list_filter = ("department", "support_role", "is_active", "hired_on")
    list_select_related = ("manager",)
    search_fields = ("id", "first_name", "last_name", "email", "title")
    autocomplete_fields = ("manager",)
    fieldsets = (
        (None, {"fields": ("id", "first_name", "last_name", "email", "hired_on", "is_active")}),
        ("Role", {"fields": ("department", "title", "manager", "support_role")}),
        (
            "Permissions",
            {
                "fields": ("permissions",),
                "description": 'A list of permission names, e.g. ["view_orders", "issue_refunds"].',
            },
        ),
        (None, {"fields": ("created_at", "updated_at")}),
    )

    @admin.display(description="Manager", ordering="manager__last_name")
    def manager_link(self, obj: Employee) -> str:
        return admin_link(Employee, obj.manager_id, obj.manager.full_name if obj.manager_id else None)
