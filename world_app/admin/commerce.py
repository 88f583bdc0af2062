"""Admin of commerce: builds, orders (with their lines, payments and shipments), payments, shipments, refunds."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from world_app.admin.base import WorldEntityAdmin, WorldInline, WorldModelForm, admin_link, admin_url, changelist_link
from world_app.admin.people import ADDRESS_KEYS
from world_app.models import (
    Build,
    BuildComponent,
    Customer,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Shipment,
    SupportTicket,
)
from world_app.services import order_recalculate_totals
from world_app.store_rules import COUPONS


class CustomerLinkMixin:
    @admin.display(description="Customer", ordering="customer__last_name")
    def customer_link(self, obj) -> str:
        customer = obj.customer
        return format_html(
            '<a href="{}" title="{} · {}">{} {}</a>',
            admin_url(Customer, customer.pk),
            customer.pk,
            customer.email,
            customer.first_name,
            customer.last_name,
        )


# --- Builds -----------------------------------------------------------------------------------------


class BuildComponentInline(WorldInline):
    model = BuildComponent
    fields = ("id", "product", "quantity")
    autocomplete_fields = ("product",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("product")


@admin.register(Build)
class BuildAdmin(CustomerLinkMixin, WorldEntityAdmin):
    list_display = ("id", "name", "customer_link", "status", "created_at")
    list_display_links = ("id", "name")
    list_filter = ("status", "created_at")
    list_select_related = ("customer",)
    search_fields = ("id", "name", "customer__id", "customer__email", "customer__last_name")
    autocomplete_fields = ("customer",)
    inlines = (BuildComponentInline,)


@admin.register(BuildComponent)
class BuildComponentAdmin(WorldEntityAdmin):
    list_display = ("id", "build_link", "product_link", "quantity")
    list_select_related = ("build", "product")
    search_fields = ("id", "build__id", "build__name", "product__sku", "product__name")
    autocomplete_fields = ("build", "product")

    @admin.display(description="Build", ordering="build__name")
    def build_link(self, obj: BuildComponent) -> str:
        return admin_link(Build, obj.build_id, obj.build)

    @admin.display(description="Product", ordering="product__sku")
    def product_link(self, obj: BuildComponent) -> str:
        return admin_link(Product, obj.product_id, obj.product)


# --- Orders -----------------------------------------------------------------------------------------


class OrderLineItemForm(WorldModelForm):
    class Meta:
        model = OrderLineItem
        fields = ("product", "quantity", "unit_price")
        help_texts = {"unit_price": "Leave empty to use the product's current price."}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["unit_price"].required = False

    def clean(self):
        cleaned = super().clean()
        product = cleaned.get("product")
        if cleaned.get("unit_price") is None and product is not None and "unit_price" not in self.errors:
            cleaned["unit_price"] = product.price
        return cleaned


class OrderLineItemInline(WorldInline):
    model = OrderLineItem
    form = OrderLineItemForm
    fields = ("id", "product", "quantity", "unit_price", "line_total")
    readonly_fields = ("line_total",)
    autocomplete_fields = ("product",)

    @admin.display(description="Line total")
    def line_total(self, obj: OrderLineItem) -> str:
        return f"{obj.line_total:.2f}" if obj.pk and obj.unit_price is not None else "—"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("product")


class PaymentInlineForm(WorldModelForm):
    class Meta:
        model = Payment
        fields = ("amount", "method", "status", "transaction_id")

    def clean(self):
        cleaned = super().clean()
        order = getattr(self.instance, "order", None)  # the page's order, set by the formset (saved or not)
        if order is not None and order.customer_id:
            # Paid from the order's page: the payer is the order's customer, by construction.
            self.instance.customer_id = order.customer_id
        return cleaned


class PaymentInline(WorldInline):
    model = Payment
    form = PaymentInlineForm
    fields = ("id", "amount", "method", "status", "transaction_id", "processed_at")
    readonly_fields = ("processed_at",)


class ShipmentInline(WorldInline):
    """The shipment's times are shown here and edited on its own page (follow its link)."""

    model = Shipment
    fields = ("id", "carrier", "service", "tracking_number", "status", "shipped_at", "delivered_at")
    readonly_fields = ("shipped_at", "delivered_at")


class OrderAdminForm(WorldModelForm):
    class Meta:
        model = Order
        fields = (
            "id",
            "customer",
            "status",
            "build",
            "created_at",
            "updated_at",
            "discount_code",
            "shipping_cost",
            "tax_total",
            "shipping_address",
            "carrier",
            "shipping_service",
            "estimated_delivery",
            "notes",
        )

    def clean_discount_code(self) -> str:
        code = self.cleaned_data["discount_code"].strip().upper()
        if code and code not in COUPONS:
            raise forms.ValidationError(f"unknown coupon {code!r}; the store's coupons are {', '.join(COUPONS)}")
        return code

    def clean(self):
        cleaned = super().clean()
        shipping, tax = cleaned.get("shipping_cost"), cleaned.get("tax_total")
        if shipping is not None and tax is not None:
            # Subtotal, discount and total are derived and recomputed from the line items after saving; keep
            # the total consistent with the edited shipping and tax so the model's own check judges the rest.
            instance = self.instance
            instance.total = instance.subtotal - instance.discount_total + shipping + tax
        return cleaned


@admin.register(Order)
class OrderAdmin(CustomerLinkMixin, WorldEntityAdmin):
    ordering = ("-created_at", "-id")  # support work starts from the newest
    form = OrderAdminForm
    list_display = ("id", "customer_link", "status", "total", "carrier", "created_at")
    list_filter = ("status", "carrier", "shipping_service", "created_at")
    list_select_related = ("customer",)
    search_fields = (
        "id",
        "customer__id",
        "customer__email",
        "customer__last_name",
        "shipments__tracking_number",
    )
    date_hierarchy = "created_at"
    show_full_result_count = False
    autocomplete_fields = ("customer", "build")
    readonly_fields = ("subtotal", "discount_total", "total", "related_records")
    inlines = (OrderLineItemInline, PaymentInline, ShipmentInline)
    actions = ("recalculate_totals",)
    json_key_orders = {"shipping_address": ADDRESS_KEYS}
    fieldsets = (
        (None, {"fields": ("id", "customer", "status", "build", "related_records", "created_at", "updated_at")}),
        (
            "Totals",
            {
                "fields": ("subtotal", "discount_code", "discount_total", "shipping_cost", "tax_total", "total"),
                "description": "Subtotal, discount (loyalty tier, then the coupon) and total are computed from "
                "the line items when you save; discounts never apply to shipping.",
            },
        ),
        (
            "Shipping",
            {"fields": ("shipping_address", "carrier", "shipping_service", "estimated_delivery")},
        ),
        (None, {"fields": ("notes",)}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("customer", "build")

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        order_recalculate_totals(order=form.instance)

    @admin.action(description="Recalculate totals", permissions=("change",))
    def recalculate_totals(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        count = 0
        for order in queryset.select_related("customer"):
            order_recalculate_totals(order=order)
            count += 1
        self.message_user(request, f"Recalculated the totals of {count} order(s).", messages.SUCCESS)

    @admin.display(description="Related records")
    def related_records(self, obj: Order | None) -> str:
        if obj is None or obj.pk is None:
            return "—"
        tickets = SupportTicket.objects.filter(order_id=obj.pk).count()
        refunds = Refund.objects.filter(payment__order_id=obj.pk).count()
        return format_html(
            "{} · {}",
            changelist_link(SupportTicket, f"Tickets ({tickets})", order=obj.pk),
            changelist_link(Refund, f"Refunds ({refunds})", payment__order=obj.pk),
        )


@admin.register(OrderLineItem)
class OrderLineItemAdmin(WorldEntityAdmin):
    list_display = ("id", "order_link", "product_link", "quantity", "unit_price", "line_total")
    list_select_related = ("product",)
    search_fields = ("id", "order__id", "product__sku", "product__name")
    autocomplete_fields = ("order", "product")
    show_full_result_count = False

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        order_recalculate_totals(order=obj.order)
        previous_order_id = form.initial.get("order")
        if change and previous_order_id and previous_order_id != obj.order_id:
            order_recalculate_totals(order=Order.objects.select_related("customer").get(pk=previous_order_id))

    def delete_model(self, request, obj) -> None:
        order = obj.order
        super().delete_model(request, obj)
        order_recalculate_totals(order=order)

    def delete_queryset(self, request, queryset) -> None:
        order_ids = set(queryset.values_list("order_id", flat=True))
        super().delete_queryset(request, queryset)
        for order in Order.objects.filter(pk__in=order_ids).select_related("customer"):
            order_recalculate_totals(order=order)

    @admin.display(description="Order", ordering="order_id")
    def order_link(self, obj: OrderLineItem) -> str:
        return admin_link(Order, obj.order_id)

    @admin.display(description="Product", ordering="product__sku")
    def product_link(self, obj: OrderLineItem) -> str:
        return admin_link(Product, obj.product_id, obj.product)


# --- Payments, shipments, refunds -------------------------------------------------------------------


@admin.register(Payment)
class PaymentAdmin(CustomerLinkMixin, WorldEntityAdmin):
    ordering = ("-created_at", "-id")  # support work starts from the newest
    list_display = ("id", "order_link", "customer_link", "amount", "method", "status", "processed_at")
    list_filter = ("status", "method", "processed_at")
    list_select_related = ("customer",)
    search_fields = ("id", "transaction_id", "order__id", "customer__id", "customer__email")
    date_hierarchy = "created_at"
    show_full_result_count = False
    autocomplete_fields = ("order", "customer")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("customer", "order")

    @admin.display(description="Order", ordering="order_id")
    def order_link(self, obj: Payment) -> str:
        return admin_link(Order, obj.order_id)


@admin.register(Shipment)
class ShipmentAdmin(WorldEntityAdmin):
    ordering = ("-created_at", "-id")  # support work starts from the newest
    list_display = ("id", "order_link", "carrier", "tracking_number", "status", "shipped_at", "delivered_at")
    list_filter = ("status", "carrier", "service", "shipped_at")
    search_fields = ("id", "tracking_number", "order__id", "order__customer__email")
    date_hierarchy = "created_at"
    show_full_result_count = False
    autocomplete_fields = ("order",)
    fieldsets = (
        (None, {"fields": ("id", "order", "carrier", "service", "tracking_number", "status")}),
        ("Times", {"fields": ("shipped_at", "estimated_delivery", "delivered_at", "created_at", "updated_at")}),
        ("Carrier events", {"fields": ("events",), "description": "A list of scan event objects, oldest first."}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("order")

    @admin.display(description="Order", ordering="order_id")
    def order_link(self, obj: Shipment) -> str:
        return admin_link(Order, obj.order_id)


@admin.register(Refund)
class RefundAdmin(WorldEntityAdmin):
    ordering = ("-created_at", "-id")  # support work starts from the newest
    list_display = ("id", "payment_link", "order_link", "amount", "reason", "status", "processed_at")
    list_filter = ("status", "reason", "processed_at")
    list_select_related = ("payment",)
    search_fields = ("id", "payment__id", "payment__transaction_id", "payment__order__id")
    date_hierarchy = "created_at"
    autocomplete_fields = ("payment",)
    fieldsets = (
        (None, {"fields": ("id", "payment", "amount", "reason", "status", "restocking_fee", "processed_at")}),
        (
            "Refunded lines",
            {
                "fields": ("line_items",),
                "description": 'A list like [{"line_item_id": "li-...", "quantity": 1}] naming lines of the '
                "paid order.",
            },
        ),
        (None, {"fields": ("notes", "created_at", "updated_at")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("payment")

    @admin.display(description="Payment", ordering="payment_id")
    def payment_link(self, obj: Refund) -> str:
        return admin_link(Payment, obj.payment_id)

    @admin.display(description="Order", ordering="payment__order_id")
    def order_link(self, obj: Refund) -> str:
        return admin_link(Order, obj.payment.order_id)
