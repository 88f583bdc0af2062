"""Admin of warranty claims."""

from __future__ import annotations

from django.contrib import admin

from world_app.admin.base import WorldEntityAdmin, admin_link
from world_app.admin.commerce import CustomerLinkMixin
from world_app.models import Order, Product, SupportTicket, WarrantyClaim


@admin.register(WarrantyClaim)
class WarrantyClaimAdmin(CustomerLinkMixin, WorldEntityAdmin):
    list_display = (
        "id",
        "customer_link",
        "order_link",
        "product_link",
        "defect_category",
        "status",
        "warranty_expires_on",
    )
    list_filter = ("status", "defect_category", "remedy", "warranty_expires_on")
    list_select_related = ("customer", "product", "line_item")
    search_fields = ("id", "customer__id", "customer__email", "product__sku", "line_item__order__id", "ticket__id")
    show_full_result_count = False
    autocomplete_fields = ("line_item", "product", "customer", "ticket")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("customer", "product", "line_item__order", "ticket")

    @admin.display(description="Order", ordering="line_item__order_id")
    def order_link(self, obj: WarrantyClaim) -> str:
        return admin_link(Order, obj.line_item.order_id)

    @admin.display(description="Product", ordering="product__sku")
    def product_link(self, obj: WarrantyClaim) -> str:
        return admin_link(Product, obj.product_id, obj.product)

    @admin.display(description="Ticket", ordering="ticket_id")
    def ticket_link(self, obj: WarrantyClaim) -> str:
        return admin_link(SupportTicket, obj.ticket_id)
