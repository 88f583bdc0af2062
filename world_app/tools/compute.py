"""Compute tools: prices and refunds by the policies, and build compatibility by the rules. They write nothing."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import Field, model_validator

from world_app.compatibility import build_draw_watts, check_compatibility
from world_app.models import (
    Build,
    BuildComponent,
    Bundle,
    BundleItem,
    CompatibilityRule,
    Customer,
    Lifecycle,
    Order,
    Product,
    Severity,
    ShippingService,
)
from world_app.tools.baked import BakedQuery
from world_app.tools.coverage import delivered_at, return_window
from world_app.tools.ledger import order_ledger
from world_app.tools.lookups import PRODUCTS, fetch
from world_app.tools.params import EntityId, LineQuantity, ProductQuantity, ToolParams
from world_app.tools.pricing import lines_to_refund, price_quote, refund_breakdown, refund_lines, shipping_refund_due
from world_app.tools.records import product_brief
from world_app.tools.registry import tool
from world_app.tools.results import money, not_found, world_today

RETURN_REASONS = ("customer_remorse", "defective", "incompatible", "shipping_issue", "other")
QUOTE_FIELDS = ("items", "bundles", "customer_id", "coupon_codes", "shipping_service")
REFUND_FIELDS = ("order_id", "lines", "opened", "reason")
# The parts a complete desktop build has; a build without one is reported, not refused.
CORE_CATEGORIES = ("cpu", "motherboard", "memory", "storage", "psu", "case")

# Baked (see baked.py): compiling these look-ups cost more than running them.
BUNDLES = BakedQuery(Bundle, lambda ids: Bundle.objects.filter(pk__in=ids))
BUNDLE_ITEMS = BakedQuery(BundleItem, lambda ids: BundleItem.objects.filter(bundle_id__in=ids).order_by("id"))
BUILD_COMPONENTS = BakedQuery(
    BuildComponent, lambda build_id: BuildComponent.objects.filter(build_id=build_id).order_by("id")
)
ACTIVE_RULES = BakedQuery(CompatibilityRule, lambda: CompatibilityRule.objects.filter(is_active=True).order_by("id"))


def products_by_id(ids) -> dict[str, Product]:
    """``Product.objects.in_bulk(ids)``, baked."""
    return {product.id: product for product in PRODUCTS(sorted(set(ids)))}


class BundleQuantity(ToolParams):
    bundle_id: EntityId = Field(description="Bundle id, e.g. bnd-0003.")
    quantity: int = Field(1, ge=1, le=20, description="How many of the bundle (default 1).")


class CalculatePriceParams(ToolParams):
    mode: Literal["quote", "refund"] = Field(
        "quote",
        description="quote: price a basket (items, bundles, customer, coupon_codes, shipping_service). "
        "refund: the refund due for returned lines of an order (order_id, lines, opened, reason).",
    )
    items: list[ProductQuantity] = Field(
        default_factory=list, max_length=50, description="quote: products and quantities to price."
    )
    bundles: list[BundleQuantity] = Field(
        default_factory=list, max_length=20, description="quote: bundles and quantities to price."
    )
    customer_id: EntityId | None = Field(None, description="quote: the customer, for the loyalty-tier discount.")
    coupon_codes: list[str] = Field(
        default_factory=list, max_length=5, description="quote: coupon codes to apply (one per order)."
    )
    shipping_service: Literal[tuple(ShippingService.values)] | None = Field(
        None, description="quote: shipping service to price (ground, two_day, overnight, freight)."
    )
    order_id: EntityId | None = Field(None, description="refund: the order being returned.")
    lines: list[LineQuantity] = Field(
        default_factory=list,
        max_length=50,
        description="refund: order lines and units returned; empty means every unit not yet refunded.",
    )
    opened: bool | None = Field(
        None, description="refund: whether the items were opened (opened, non-defective items pay a restocking fee)."
    )
    reason: Literal[RETURN_REASONS] = Field(
        "customer_remorse", description="refund: why the items come back; defective items pay no restocking fee."
    )

    @model_validator(mode="after")
    def _fields_of_mode(self) -> CalculatePriceParams:
        given = self.model_fields_set - {"mode"}
        if self.mode == "quote":
            stray = sorted(given & set(REFUND_FIELDS))
            if stray:
                raise ValueError(f"{', '.join(stray)} belong to mode 'refund'")
            if not self.items and not self.bundles:
                raise ValueError("a quote needs at least one of items or bundles")
        else:
            stray = sorted(given & set(QUOTE_FIELDS))
            if stray:
                raise ValueError(f"{', '.join(stray)} belong to mode 'quote'")
            if not self.order_id:
                raise ValueError("mode 'refund' needs order_id")
            if self.opened is None:
                raise ValueError("mode 'refund' needs opened (true or false): it decides the restocking fee")
        return self


@tool(group="compute", params=CalculatePriceParams)
def calculate_price(p: CalculatePriceParams) -> dict:
    """Price by the store's policies, line by line. Writes nothing.

    mode "quote": products and bundles at today's prices, the customer's loyalty discount (silver
    {LOYALTY_DISCOUNT_PCT[silver]}%, gold {LOYALTY_DISCOUNT_PCT[gold]}%, platinum {LOYALTY_DISCOUNT_PCT[platinum]}%,
    merchandise only), at most one coupon (after the loyalty discount), shipping (ground is free over
    ${FREE_GROUND_SHIPPING_OVER} after discounts) and tax. Flags discontinued and out-of-stock products.
    mode "refund": the refund due for returned order lines: what was paid for those units (the order's discount
    shared by value), less a restocking fee on opened, non-defective items; shipping is never refunded. Also
    reports the return window and how much of the order can still be refunded.
    """
    if p.mode == "refund":
        return _refund_quote(p)
    today = world_today()
    customer = fetch(Customer, p.customer_id, field="customer_id") if p.customer_id else None
    products = products_by_id(i.product_id for i in p.items)
    items = []
    for index, entry in enumerate(p.items):
        product = products.get(entry.product_id)
        if product is None:
            raise not_found("product", entry.product_id, field=f"items[{index}].product_id")
        items.append((product, entry.quantity))
    bundles_by_id = {bundle.id: bundle for bundle in BUNDLES(sorted({b.bundle_id for b in p.bundles}))}
    bundle_items = BUNDLE_ITEMS(sorted(bundles_by_id))
    in_bundles = products_by_id(item.product_id for item in bundle_items)
    contents: dict[str, list] = {}
    for item in bundle_items:
        item.product = in_bundles[item.product_id]
        contents.setdefault(item.bundle_id, []).append(item)
    bundles = []
    for index, entry in enumerate(p.bundles):
        bundle = bundles_by_id.get(entry.bundle_id)
        if bundle is None:
            raise not_found("bundle", entry.bundle_id, field=f"bundles[{index}].bundle_id")
        bundles.append((bundle, contents.get(bundle.id, []), entry.quantity))
    quote = price_quote(
        items=items,
        bundles=bundles,
        customer=customer,
        coupon_codes=p.coupon_codes,
        shipping_service=p.shipping_service,
        today=today,
    )
    return {"mode": "quote", **quote}


def _refund_quote(p: CalculatePriceParams) -> dict:
    order = fetch(Order, p.order_id, field="order_id")
    ledger = order_ledger(order)
    refunded_units = ledger.refunded_quantities()
    chosen = lines_to_refund(order, p.lines, refunded_units)
    priced = refund_lines(order, chosen, opened=p.opened, reason=p.reason)
    shipping = shipping_refund_due(order, chosen, refunded_units=refunded_units, has_shipped=ledger.has_shipped)
    breakdown = refund_breakdown(
        priced, opened=p.opened, reason=p.reason, shipping=shipping, has_shipped=ledger.has_shipped
    )
    window = return_window(delivered_at(ledger.shipments))
    notes = list(breakdown.pop("notes"))
    if window.delivered_on and not window.is_open:
        notes.append(f"{window.explain()}: after the window only defective items under warranty are refunded")
    if Decimal(breakdown["refund_total"]) > ledger.refundable_remaining:
        notes.append(f"this is more than can still be refunded on the order: {ledger.ceiling_explained()}")
    return {
        "mode": "refund",
        "order_id": order.id,
        "reason": p.reason,
        "opened": p.opened,
        **breakdown,
        "refundable_remaining": money(ledger.refundable_remaining),
        "return_window": window.as_dict(),
        "notes": notes,
    }


class ValidateBuildCompatibilityParams(ToolParams):
    build_id: EntityId | None = Field(None, description="A saved build to check. Give this or parts.")
    parts: list[ProductQuantity] = Field(
        default_factory=list, max_length=40, description="Products and quantities to check, when there is no build."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ValidateBuildCompatibilityParams:
        if bool(self.build_id) == bool(self.parts):
            raise ValueError("give exactly one of build_id or parts")
        return self


@tool(group="compute", params=ValidateBuildCompatibilityParams)
def validate_build_compatibility(p: ValidateBuildCompatibilityParams) -> dict:
    """Check that a set of PC parts works together, by the store's compatibility rules (CPU and motherboard
    socket, memory type, case form factor, GPU length, cooler height and radiator size, PSU wattage...).

    Give a saved build's id or a list of parts. Returns every violation (rule, severity error or warning, the
    two parts, and a message), `compatible` (no error-severity violation), the estimated power draw, core
    parts the build lacks, and parts no longer sold.
    """
    parts = build_parts(p)
    rules = ACTIVE_RULES()
    return compatibility_report(parts, rules, build_id=p.build_id)


def build_parts(p: ValidateBuildCompatibilityParams) -> list[tuple[Product, int]]:
    if p.build_id:
        build = fetch(Build, p.build_id, field="build_id")
        components = BUILD_COMPONENTS(build.id)
        products = products_by_id(c.product_id for c in components)
        return merge_parts((products[c.product_id], c.quantity) for c in components)
    return resolve_parts(p.parts, field="parts")


def resolve_parts(entries: list[ProductQuantity], *, field: str) -> list[tuple[Product, int]]:
    """Products of ``entries`` (refused when one does not exist), duplicates merged, in the order given."""
    products = products_by_id(e.product_id for e in entries)
    pairs = []
    for index, entry in enumerate(entries):
        product = products.get(entry.product_id)
        if product is None:
            raise not_found("product", entry.product_id, field=f"{field}[{index}].product_id")
        pairs.append((product, entry.quantity))
    return merge_parts(pairs)


def merge_parts(pairs) -> list[tuple[Product, int]]:
    merged: dict[str, list] = {}
    for product, quantity in pairs:
        if product.id in merged:
            merged[product.id][1] += quantity
        else:
            merged[product.id] = [product, quantity]
    return [(product, quantity) for product, quantity in merged.values()]


def compatibility_report(parts: list[tuple[Product, int]], rules: list, *, build_id: str | None) -> dict:
    violations = check_compatibility(parts, rules)
    errors = sum(1 for v in violations if v.severity == Severity.ERROR)
    categories = {product.category for product, _ in parts}
    return {
        "build_id": build_id,
        "parts": [{**product_brief(product), "quantity": q, "lifecycle": product.lifecycle} for product, q in parts],
        "compatible": errors == 0,
        "error_count": errors,
        "warning_count": len(violations) - errors,
        "violations": [v.as_dict() for v in violations],
        "rules_checked": len(rules),
        "estimated_draw_watts": build_draw_watts(parts),
        "missing_core_parts": [c for c in CORE_CATEGORIES if c not in categories],
        "unavailable_parts": [
            {"product_id": product.id, "lifecycle": product.lifecycle}
            for product, _ in parts
            if product.lifecycle in {Lifecycle.DISCONTINUED, Lifecycle.END_OF_LIFE}
        ],
    }
