"""Search tool for the product catalogue (``search_products``), with its filters on spec values."""

from __future__ import annotations

from types import UnionType
from typing import Literal, Union, get_args, get_origin

from django.db.models import F, Q, QuerySet
from pydantic import Field

from world_app.models import Lifecycle, Product, ProductCategory
from world_app.specs import SPEC_BY_CATEGORY
from world_app.tools.params import Money, PageParams, SearchText
from world_app.tools.records import product_record
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, text_filter


def _spec_kind(annotation) -> str:
    """list, number or scalar: how a spec field can be filtered."""
    if get_origin(annotation) is list:
        return "list"
    options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    kinds = []
    for option in options:
        if option is type(None):
            continue
        if get_origin(option) is Literal:
            kinds.extend(type(v) for v in get_args(option))
        else:
            kinds.append(option)
    return "number" if kinds and all(k in (int, float) for k in kinds) else "scalar"


def _spec_kinds(category: str | None) -> dict[str, str]:
    models = [SPEC_BY_CATEGORY[category]] if category else list(dict.fromkeys(SPEC_BY_CATEGORY.values()))
    kinds: dict[str, str] = {}
    for model in models:
        for name, info in model.model_fields.items():
            kinds.setdefault(name, _spec_kind(info.annotation))
    return kinds


SpecValue = str | int | float | bool


class SearchProductsParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the product's id, name, SKU, brand or description."
    )
    category: Literal[choice_values(ProductCategory)] | None = Field(None, description="Only this category.")
    brand: str | None = Field(None, max_length=80, description="Only this brand (exact, case-insensitive).")
    lifecycle: Literal[choice_values(Lifecycle)] | None = Field(
        None, description="Only products at this lifecycle stage (active, preorder, discontinued, end_of_life)."
    )
    min_price: Money | None = Field(None, description="Only products costing at least this many dollars.")
    max_price: Money | None = Field(None, description="Only products costing at most this many dollars.")
    in_stock: bool | None = Field(None, description="true: only products in stock; false: only out-of-stock ones.")
    specs: dict[str, SpecValue] | None = Field(
        None,
        description='Spec values that must match, e.g. {"socket": "AM5"} or {"memory_type": "DDR5"}. For list '
        "specs (sockets, memory_types, supported_motherboards, radiator_support_mm, inputs) the list must contain "
        "the value.",
    )
    spec_min: dict[str, float] | None = Field(
        None, description='Numeric specs that must be at least a value, e.g. {"wattage": 850, "vram_gb": 16}.'
    )
    spec_max: dict[str, float] | None = Field(
        None, description='Numeric specs that must be at most a value, e.g. {"length_mm": 320}.'
    )
    sort: Literal["id", "price_asc", "price_desc", "name", "newest"] = Field(
        "id", description="Order of results: id, price (low or high first), name, or newest release first."
    )


PRODUCT_SORTS = {
    "id": ("id",),
    "price_asc": ("price", "id"),
    "price_desc": ("-price", "id"),
    "name": ("name", "id"),
    "newest": (F("release_date").desc(nulls_last=True), "id"),
}


def spec_filter(p: SearchProductsParams) -> Q:
    if not (p.specs or p.spec_min or p.spec_max):
        return Q()  # no spec asked for (and a baked search's category is a stand-in, not a category)
    kinds = _spec_kinds(p.category)
    where = f"{p.category} products" if p.category else "any product category"
    condition = Q()
    for key, value in sorted((p.specs or {}).items()):
        kind = kinds.get(key)
        if kind is None:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"{where} have no spec {key!r}; known specs: {', '.join(sorted(kinds))}",
                field=f"specs.{key}",
            )
        if kind == "list":
            # A list spec is stored as JSON text; the quoted value matches one element on both databases.
            needle = f'"{value}"' if isinstance(value, str) else str(value)
            condition &= Q(**{f"specs__{key}__icontains": needle})
        else:
            if kind == "number" and isinstance(value, str):
                value = _spec_number(value, field=f"specs.{key}")
            condition &= Q(**{f"specs__{key}": value})
    for bound, lookup in (("spec_min", "gte"), ("spec_max", "lte")):
        for key, value in sorted((getattr(p, bound) or {}).items()):
            if kinds.get(key) != "number":
                numeric = sorted(k for k, v in kinds.items() if v == "number")
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"{key!r} is not a numeric spec of {where}; numeric specs: {', '.join(numeric)}",
                    field=f"{bound}.{key}",
                )
            condition &= Q(**{f"specs__{key}__{lookup}": value})
    return condition


def _spec_number(text: str, *, field: str) -> int | float:
    try:
        number = float(text)
    except ValueError:
        raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"{text!r} is not a number", field=field) from None
    return int(number) if number.is_integer() else number


@tool(group="search", params=SearchProductsParams)
def search_products(p: SearchProductsParams) -> dict:
    """Find products in the catalogue by words, category, brand, price, stock, lifecycle or spec values.

    Returns a page of products with price, stock, lifecycle, warranty months and full specs. Use `specs`,
    `spec_min` and `spec_max` for compatibility questions (socket, memory type, wattage, GPU length...).
    """
    return PRODUCT_SEARCH.page(p, product_record)


def _products(p: SearchProductsParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "name", "sku", "brand", "description"))
        & exact_filters(category=p.category, brand__iexact=p.brand, lifecycle=p.lifecycle)
        & exact_filters(price__gte=p.min_price, price__lte=p.max_price)
        & spec_filter(p)
    )
    if p.in_stock is not None:
        condition &= Q(stock_quantity__gt=0) if p.in_stock else Q(stock_quantity=0)
    return Product.objects.filter(condition).order_by(*PRODUCT_SORTS[p.sort])


PRODUCT_SEARCH = BakedSearch(
    Product,
    SearchProductsParams,
    _products,
    # Category and lifecycle are compared with exact: query values, not a compiled form per choice.
    values=("category", "lifecycle"),
    unbaked=("brand", "min_price", "max_price", "specs", "spec_min", "spec_max"),
)
