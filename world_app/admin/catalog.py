"""Admin of the catalogue: products, bundles, compatibility rules, knowledge-base articles."""

from __future__ import annotations

import types
import typing

from django.contrib import admin
from django.db.models import Count
from django.utils.html import format_html, format_html_join

from world_app.admin.base import WorldEntityAdmin, WorldInline, admin_link
from world_app.models import Bundle, BundleItem, CompatibilityRule, KnowledgeBaseArticle, Product
from world_app.specs import SPEC_BY_CATEGORY


def _describe_annotation(annotation) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, args))
    if origin is list:
        return f"list of ({_describe_annotation(args[0])})" if args else "list"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe_annotation(a) for a in args if a is not type(None)) + " (optional)"
    name = getattr(annotation, "__name__", str(annotation))
    return {"int": "whole number", "float": "number", "bool": "true or false", "str": "text"}.get(name, name)


def spec_field_lines(category: str) -> list[tuple[str, str]]:
    """(field, description) for each spec field the category's model expects."""
    model = SPEC_BY_CATEGORY.get(category)
    if model is None:
        return []
    lines = []
    for name, info in model.model_fields.items():
        bounds = [
            f"{label} {getattr(m, attr)}"
            for m in info.metadata
            for attr, label in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"), ("min_length", "min length"))
            if getattr(m, attr, None) is not None
        ]
        text = _describe_annotation(info.annotation)
        if bounds:
            text += f" ({', '.join(bounds)})"
        if not info.is_required():
            text += ", may be left out"
        lines.append((name, text))
    return lines


class BundleItemInline(WorldInline):
    model = BundleItem
    fields = ("id", "product", "quantity")
    autocomplete_fields = ("product",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("product")


@admin.register(Product)
class ProductAdmin(WorldEntityAdmin):
    list_display = ("id", "sku", "name", "brand", "category", "price", "stock_quantity", "lifecycle")
    list_display_links = ("id", "sku")
    list_filter = ("category", "lifecycle", "backorderable", "brand")
    search_fields = ("id", "sku", "name", "brand")
    show_full_result_count = False
    readonly_fields = ("spec_fields",)
    fieldsets = (
        (None, {"fields": ("id", "sku", "name", "brand", "category", "lifecycle", "release_date")}),
        ("Price and stock", {"fields": ("price", "stock_quantity", "backorderable", "warranty_months")}),
        ("Specifications", {"fields": ("specs", "spec_fields")}),
        (None, {"fields": ("description", "created_at", "updated_at")}),
    )

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        model = SPEC_BY_CATEGORY.get(obj.category) if obj is not None else None
        if model is not None and isinstance(obj.specs, dict):
            # jsonb stores keys in its own order: show them in the order the category's spec model lists them.
            order = {name: i for i, name in enumerate(model.model_fields)}
            obj.specs = dict(sorted(obj.specs.items(), key=lambda item: order.get(item[0], len(order))))
        return obj

    @admin.display(description="Fields the category's specs need")
    def spec_fields(self, obj: Product | None) -> str:
        if obj is None or not obj.category:
            return "Choose a category and save: its spec fields are listed here."
        lines = spec_field_lines(obj.category)
        return format_html(
            '<ul class="spec-fields">{}</ul>',
            format_html_join("", "<li><code>{}</code>: {}</li>", lines),
        )


@admin.register(Bundle)
class BundleAdmin(WorldEntityAdmin):
    list_display = ("id", "sku", "name", "price", "item_count", "is_active", "valid_from", "valid_until")
    list_filter = ("is_active", "valid_from", "valid_until")
    search_fields = ("id", "sku", "name")
    inlines = (BundleItemInline,)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_count=Count("items"))

    @admin.display(description="Items", ordering="item_count")
    def item_count(self, obj: Bundle) -> int:
        return obj.item_count


@admin.register(BundleItem)
class BundleItemAdmin(WorldEntityAdmin):
    list_display = ("id", "bundle_link", "product_link", "quantity")
    list_select_related = ("bundle", "product")
    search_fields = ("id", "bundle__id", "bundle__sku", "product__sku", "product__name")
    autocomplete_fields = ("bundle", "product")

    @admin.display(description="Bundle", ordering="bundle__sku")
    def bundle_link(self, obj: BundleItem) -> str:
        return admin_link(Bundle, obj.bundle_id, obj.bundle)

    @admin.display(description="Product", ordering="product__sku")
    def product_link(self, obj: BundleItem) -> str:
        return admin_link(Product, obj.product_id, obj.product)


@admin.register(CompatibilityRule)
class CompatibilityRuleAdmin(WorldEntityAdmin):
    list_display = ("id", "name", "severity", "category_a", "operator", "category_b", "is_active")
    list_display_links = ("id", "name")
    list_filter = ("severity", "operator", "category_a", "category_b", "is_active")
    search_fields = ("id", "name", "message", "field_a", "field_b")


@admin.register(KnowledgeBaseArticle)
class KnowledgeBaseArticleAdmin(WorldEntityAdmin):
    list_display = ("id", "title", "kind", "product_category", "product_link", "is_published", "created_at")
    list_display_links = ("id", "title")
    list_filter = ("kind", "product_category", "is_published")
    list_select_related = ("product",)
    search_fields = ("id", "slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    autocomplete_fields = ("product",)

    @admin.display(description="Product", ordering="product__sku")
    def product_link(self, obj: KnowledgeBaseArticle) -> str:
        return admin_link(Product, obj.product_id, obj.product)
