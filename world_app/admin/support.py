"""Admin of support: tickets (with their messages, resolutions and escalations)."""

from __future__ import annotations

from django.contrib import admin
from django.template.defaultfilters import truncatechars

from world_app.admin.base import WorldEntityAdmin, WorldInline, admin_link
from world_app.admin.commerce import CustomerLinkMixin
from world_app.models import Employee, Escalation, Order, Refund, Resolution, SupportTicket, TicketMessage


def employee_link(employee_id: str | None, employee: Employee | None) -> str:
    return admin_link(Employee, employee_id, employee.full_name if employee is not None else None)


class TicketMessageInline(WorldInline):
    model = TicketMessage
    fields = ("id", "author_kind", "employee", "sent_at", "is_internal", "body")
    autocomplete_fields = ("employee",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("employee")


class ResolutionInline(WorldInline):
    model = Resolution
    fields = ("id", "outcome", "resolved_by", "refund", "summary")
    autocomplete_fields = ("resolved_by", "refund")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("resolved_by", "refund", "ticket")


class EscalationInline(WorldInline):
    model = Escalation
    fields = ("id", "escalation_type", "destination", "status", "assigned_to", "notes")
    autocomplete_fields = ("assigned_to",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("assigned_to")


@admin.register(SupportTicket)
class SupportTicketAdmin(CustomerLinkMixin, WorldEntityAdmin):
    ordering = ("-created_at", "-id")  # support work starts from the newest
    list_display = ("id", "subject", "customer_link", "status", "priority", "assignee_link", "created_at")
    list_display_links = ("id", "subject")
    list_filter = ("status", "priority", "channel", "ticket_type", "created_at")
    list_select_related = ("customer", "assignee")
    search_fields = ("id", "subject", "customer__id", "customer__email", "customer__last_name", "order__id")
    date_hierarchy = "created_at"
    show_full_result_count = False
    autocomplete_fields = ("customer", "order", "build", "assignee")
    inlines = (TicketMessageInline, ResolutionInline, EscalationInline)
    fieldsets = (
        (None, {"fields": ("id", "customer", "order", "build", "subject", "body")}),
        ("Handling", {"fields": ("ticket_type", "channel", "priority", "status", "assignee")}),
        (None, {"fields": ("resolved_at", "closure_reason", "created_at", "updated_at")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("customer", "order", "build", "assignee")

    @admin.display(description="Order", ordering="order_id")
    def order_link(self, obj: SupportTicket) -> str:
        return admin_link(Order, obj.order_id)

    @admin.display(description="Assignee", ordering="assignee__last_name")
    def assignee_link(self, obj: SupportTicket) -> str:
        return employee_link(obj.assignee_id, obj.assignee)


class TicketLinkMixin:
    @admin.display(description="Ticket", ordering="ticket_id")
    def ticket_link(self, obj) -> str:
        return admin_link(SupportTicket, obj.ticket_id)


@admin.register(TicketMessage)
class TicketMessageAdmin(TicketLinkMixin, WorldEntityAdmin):
    list_display = ("id", "ticket_link", "author_kind", "employee_link", "sent_at", "is_internal", "excerpt")
    list_filter = ("author_kind", "is_internal", "sent_at")
    list_select_related = ("employee",)
    search_fields = ("id", "ticket__id", "ticket__subject")
    date_hierarchy = "sent_at"
    show_full_result_count = False
    autocomplete_fields = ("ticket", "employee")

    @admin.display(description="Employee", ordering="employee__last_name")
    def employee_link(self, obj: TicketMessage) -> str:
        return employee_link(obj.employee_id, obj.employee)

    @admin.display(description="Message")
    def excerpt(self, obj: TicketMessage) -> str:
        return truncatechars(obj.body, 80)


@admin.register(Resolution)
class ResolutionAdmin(TicketLinkMixin, WorldEntityAdmin):
    list_display = ("id", "ticket_link", "outcome", "resolved_by_link", "refund_link", "created_at")
    list_filter = ("outcome", "created_at")
    list_select_related = ("resolved_by",)
    search_fields = ("id", "ticket__id", "ticket__subject", "refund__id", "summary")
    autocomplete_fields = ("ticket", "resolved_by", "refund")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("ticket", "resolved_by", "refund__payment")

    @admin.display(description="Resolved by", ordering="resolved_by__last_name")
    def resolved_by_link(self, obj: Resolution) -> str:
        return employee_link(obj.resolved_by_id, obj.resolved_by)

    @admin.display(description="Refund", ordering="refund_id")
    def refund_link(self, obj: Resolution) -> str:
        return admin_link(Refund, obj.refund_id)


@admin.register(Escalation)
class EscalationAdmin(TicketLinkMixin, WorldEntityAdmin):
    list_display = ("id", "ticket_link", "escalation_type", "destination", "status", "assigned_to_link", "created_at")
    list_filter = ("escalation_type", "destination", "status", "created_at")
    list_select_related = ("assigned_to", "created_by")
    search_fields = ("id", "ticket__id", "ticket__subject", "notes")
    autocomplete_fields = ("ticket", "assigned_to", "created_by")

    @admin.display(description="Assigned to", ordering="assigned_to__last_name")
    def assigned_to_link(self, obj: Escalation) -> str:
        return employee_link(obj.assigned_to_id, obj.assigned_to)

    @admin.display(description="Created by", ordering="created_by__last_name")
    def created_by_link(self, obj: Escalation) -> str:
        return employee_link(obj.created_by_id, obj.created_by)
