"""Prices by the policies: a quote for a basket, and the refund due for returned order lines.

Quote: merchandise (products and bundles) - loyalty discount - one coupon (applied after loyalty) + shipping
(ground is free over the threshold, after discounts) + tax. Refund: what was paid for the returned units (the
order's discount shared by value), less the restocking fee on opened items returned for a fee reason; shipping
only when the order never shipped and these are its last units.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from world_app.models import Bundle, Customer, Lifecycle, Order, OrderLineItem, Product
from world_app.money import (
    ZERO,
    discount_share,
    ground_ships_free,
    merchandise_discount,
    restocking_fee,
    sales_tax,
)
from world_app.store_rules import (
    COUPONS,
    COUPONS_PER_ORDER,
    FREE_GROUND_SHIPPING_OVER,
    LOYALTY_DISCOUNT_PCT,
    REFUND_DISCOUNT_PRORATED,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RESTOCKING_FEE_REASONS,
    SHIPPING_RATES,
    Coupon,
)
from world_app.tools.lookups import ORDER_LINES, PRODUCTS
from world_app.tools.results import ErrorCode, ToolError, day, money


def product_notes(product: Product) -> list[str]:
    notes = []
    if product.lifecycle in {Lifecycle.DISCONTINUED, Lifecycle.END_OF_LIFE}:
        notes.append(f"{product.lifecycle}: no longer sold new")
    elif product.lifecycle == Lifecycle.PREORDER:
        notes.append("preorder: ships on release")
    if product.stock_quantity <= 0:
        notes.append("out of stock, can be backordered" if product.backorderable else "out of stock")
    return notes


def check_coupon(code: str, *, merchandise: Decimal, customer: Customer | None, today: date, field: str) -> Coupon:
    coupon = COUPONS.get(code.strip().upper())
    if coupon is None:
        raise ToolError(ErrorCode.POLICY_VIOLATION, f"coupon {code!r} does not exist", field=field)
    if coupon.valid_from and today < coupon.valid_from:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"coupon {coupon.code} is valid from {coupon.valid_from.isoformat()}; today is {today.isoformat()}",
            field=field,
        )
    if coupon.valid_until and today > coupon.valid_until:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"coupon {coupon.code} expired on {coupon.valid_until.isoformat()}; today is {today.isoformat()}",
            field=field,
        )
    if merchandise < coupon.min_merchandise:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"coupon {coupon.code} needs at least ${coupon.min_merchandise} of merchandise; this basket has "
            f"${money(merchandise)}",
            field=field,
        )
    if coupon.first_order_only:
        if customer is None:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"coupon {coupon.code} is for a customer's first order: give customer_id so it can be checked",
                field="customer_id",
            )
        previous = customer.orders.count()
        if previous:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"coupon {coupon.code} is for a first order only; customer {customer.id} already has "
                f"{previous} order(s)",
                field=field,
            )
    return coupon


def price_quote(
    *,
    items: list[tuple[Product, int]],
    bundles: list[tuple[Bundle, list, int]],
    customer: Customer | None,
    coupon_codes: list[str],
    shipping_service: str | None,
    today: date,
) -> dict:
    """A priced basket; ``bundles`` are (bundle, its items with products, quantity)."""
    lines = []
    merchandise = ZERO
    for product, quantity in items:
        total = product.price * quantity
        merchandise += total
        lines.append(
            {
                "kind": "product",
                "product_id": product.id,
                "sku": product.sku,
                "name": product.name,
                "unit_price": money(product.price),
                "quantity": quantity,
                "line_total": money(total),
                "notes": product_notes(product),
            }
        )
    for index, (bundle, bundle_items, quantity) in enumerate(bundles):
        _check_bundle(bundle, today=today, field=f"bundles[{index}].bundle_id")
        total = bundle.price * quantity
        merchandise += total
        separately = sum((i.product.price * i.quantity for i in bundle_items), ZERO)
        lines.append(
            {
                "kind": "bundle",
                "bundle_id": bundle.id,
                "sku": bundle.sku,
                "name": bundle.name,
                "unit_price": money(bundle.price),
                "quantity": quantity,
                "line_total": money(total),
                "contains": [{"product_id": i.product_id, "quantity": i.quantity} for i in bundle_items],
                "saving_vs_separate": money(max(separately - bundle.price, ZERO) * quantity),
                "notes": [],
            }
        )

    tier = customer.loyalty_tier if customer else "none"
    loyalty_pct = LOYALTY_DISCOUNT_PCT.get(tier, 0)
    if len(coupon_codes) > COUPONS_PER_ORDER:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"only {COUPONS_PER_ORDER} coupon can be used per order; got {len(coupon_codes)}",
            field="coupon_codes",
        )
    free_shipping = None
    merchandise_coupon = None
    for index, code in enumerate(coupon_codes):
        coupon = check_coupon(
            code, merchandise=merchandise, customer=customer, today=today, field=f"coupon_codes[{index}]"
        )
        if coupon.kind == "free_shipping":
            if shipping_service != "ground":
                raise ToolError(
                    ErrorCode.POLICY_VIOLATION,
                    f"coupon {coupon.code} gives free ground shipping; the shipping service asked is "
                    f"{shipping_service or 'none'}",
                    field=f"coupon_codes[{index}]",
                )
            free_shipping = coupon
        else:
            merchandise_coupon = coupon
    discount = merchandise_discount(merchandise=merchandise, loyalty_pct=loyalty_pct, coupon=merchandise_coupon)
    discounts = []
    if loyalty_pct:
        discounts.append(
            {
                "kind": "loyalty",
                "description": f"{tier} tier: {loyalty_pct}% off merchandise",
                "amount": money(discount.loyalty),
            }
        )
    if merchandise_coupon is not None:
        discounts.append(
            {
                "kind": "coupon",
                "code": merchandise_coupon.code,
                "description": merchandise_coupon.description,
                "amount": money(discount.coupon),
            }
        )
    remaining = discount.remaining

    shipping = _shipping(shipping_service, merchandise_after_discounts=remaining, free_coupon=free_shipping)
    shipping_amount = Decimal(shipping["amount"])
    tax = sales_tax(remaining)
    return {
        "lines": lines,
        "merchandise_subtotal": money(merchandise),
        "discounts": discounts,
        "discount_total": money(merchandise - remaining),
        "merchandise_after_discounts": money(remaining),
        "shipping": shipping,
        "tax": money(tax),
        "total": money(remaining + shipping_amount + tax),
        "customer_id": customer.id if customer else None,
        "loyalty_tier": tier,
        "priced_on": day(today),
    }


def _check_bundle(bundle: Bundle, *, today: date, field: str) -> None:
    if not bundle.is_active:
        raise ToolError(ErrorCode.POLICY_VIOLATION, f"bundle {bundle.id} is no longer offered", field=field)
    if bundle.valid_from and today < bundle.valid_from:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"bundle {bundle.id} is offered from {bundle.valid_from.isoformat()}; today is {today.isoformat()}",
            field=field,
        )
    if bundle.valid_until and today > bundle.valid_until:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"bundle {bundle.id} was offered until {bundle.valid_until.isoformat()}; today is {today.isoformat()}",
            field=field,
        )


def _shipping(service: str | None, *, merchandise_after_discounts: Decimal, free_coupon: Coupon | None) -> dict:
    if service is None:
        return {"service": None, "amount": money(ZERO), "note": "no shipping service given: shipping not included"}
    if free_coupon is not None:
        return {"service": service, "amount": money(ZERO), "note": f"free with coupon {free_coupon.code}"}
    if ground_ships_free(service, merchandise_after_discounts=merchandise_after_discounts):
        return {
            "service": service,
            "amount": money(ZERO),
            "note": f"free ground shipping on merchandise over ${FREE_GROUND_SHIPPING_OVER} "
            f"(usually ${SHIPPING_RATES[service]})",
        }
    return {"service": service, "amount": money(SHIPPING_RATES[service]), "note": f"{service} rate"}


@dataclass(frozen=True)
class RefundLine:
    line: OrderLineItem
    quantity: int
    merchandise: Decimal
    discount_share: Decimal
    restocking_fee: Decimal

    @property
    def refund(self) -> Decimal:
        return self.merchandise - self.discount_share - self.restocking_fee

    def as_dict(self) -> dict:
        return {
            "line_item_id": self.line.id,
            "product_id": self.line.product_id,
            "name": self.line.product.name,
            "quantity": self.quantity,
            "unit_price": money(self.line.unit_price),
            "merchandise": money(self.merchandise),
            "discount_share": money(self.discount_share),
            "restocking_fee": money(self.restocking_fee),
            "refund": money(self.refund),
        }


def restocking_fee_applies(product: Product, *, opened: bool, reason: str) -> bool:
    return opened and reason in RESTOCKING_FEE_REASONS and product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES


def shipping_refund_due(
    order: Order, chosen: list[tuple[OrderLineItem, int]], *, refunded_units: dict[str, int], has_shipped: bool
) -> Decimal:
    """The order's shipping, when it never shipped and ``chosen`` are all of its units still unrefunded."""
    if has_shipped or order.shipping_cost <= 0:
        return ZERO
    asked: dict[str, int] = {}
    for line, quantity in chosen:
        asked[line.id] = asked.get(line.id, 0) + quantity
    every_unit = OrderLineItem.objects.filter(order=order).values_list("id", "quantity")
    if all(refunded_units.get(line_id, 0) + asked.get(line_id, 0) >= quantity for line_id, quantity in every_unit):
        return order.shipping_cost
    return ZERO


def refund_lines(
    order: Order, requested: list[tuple[OrderLineItem, int]], *, opened: bool, reason: str
) -> list[RefundLine]:
    result = []
    for line, quantity in requested:
        merchandise = line.unit_price * quantity
        share = ZERO
        if REFUND_DISCOUNT_PRORATED:
            share = discount_share(
                merchandise=merchandise, discount_total=order.discount_total, subtotal=order.subtotal
            )
        fee = ZERO
        if restocking_fee_applies(line.product, opened=opened, reason=reason):
            fee = restocking_fee(merchandise - share)
        result.append(RefundLine(line, quantity, merchandise, share, fee))
    return result


def refund_breakdown(
    lines: list[RefundLine], *, opened: bool, reason: str, shipping: Decimal = ZERO, has_shipped: bool = True
) -> dict:
    total = sum((r.refund for r in lines), ZERO) + shipping
    fees = sum((r.restocking_fee for r in lines), ZERO)
    if shipping:
        notes = ["the order never shipped and these are its last units: its shipping is refunded too"]
    elif has_shipped:
        notes = ["refunds exclude shipping: the order has shipped, so its shipping cost is not refunded"]
    else:
        notes = ["the order never shipped: its shipping is refunded with its last units"]
    if fees:
        notes.append(
            f"opened items returned as {' or '.join(sorted(RESTOCKING_FEE_REASONS))} pay a {RESTOCKING_FEE_PCT}% "
            f"restocking fee (not {', '.join(sorted(RESTOCKING_FEE_EXEMPT_CATEGORIES))})"
        )
    elif opened and reason not in RESTOCKING_FEE_REASONS:
        notes.append(f"no restocking fee: the items are returned as {reason}")
    if any(r.discount_share for r in lines):
        notes.append("the order's discount is shared across its lines by value: the refund is what was paid")
    return {
        "lines": [r.as_dict() for r in lines],
        "merchandise": money(sum((r.merchandise for r in lines), ZERO)),
        "discount_share": money(sum((r.discount_share for r in lines), ZERO)),
        "restocking_fee": money(fees),
        "shipping_refunded": money(shipping),
        "refund_total": money(total),
        "notes": notes,
    }


def order_lines_with_products(order_id: str) -> list[OrderLineItem]:
    """The order's lines by id, each with its product loaded (what ``select_related("product")`` gives)."""
    lines = ORDER_LINES(order_id)
    if lines:
        products = {product.id: product for product in PRODUCTS(sorted({li.product_id for li in lines}))}
        # An inner join, as select_related makes for a required foreign key: a line without its product is not one.
        lines = [line for line in lines if line.product_id in products]
        for line in lines:
            line.product = products[line.product_id]
    return lines


def lines_to_refund(
    order: Order, requested: list, refunded_units: dict[str, int], *, field: str = "lines"
) -> list[tuple[OrderLineItem, int]]:
    """(line, quantity) pairs asked for, checked against the order and what was refunded already.

    ``requested`` holds ``LineQuantity`` params; empty means every unit not yet refunded.
    """
    lines = {li.id: li for li in order_lines_with_products(order.id)}
    if not requested:
        chosen = [(li, li.quantity - refunded_units.get(li.id, 0)) for li in lines.values()]
        chosen = [(li, q) for li, q in chosen if q > 0]
        if not chosen:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION, f"every unit of order {order.id} has already been refunded", field=field
            )
        return chosen
    chosen = []
    asked: dict[str, int] = {}
    for index, entry in enumerate(requested):
        line = lines.get(entry.line_item_id)
        if line is None:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"order {order.id} has no line item {entry.line_item_id!r}; its lines are: {', '.join(lines)}",
                field=f"{field}[{index}].line_item_id",
            )
        asked[line.id] = asked.get(line.id, 0) + entry.quantity
        left = line.quantity - refunded_units.get(line.id, 0)
        if asked[line.id] > left:
            raise ToolError(
                ErrorCode.POLICY_VIOLATION,
                f"line {line.id} ({line.product.name}) has {line.quantity} unit(s), {refunded_units.get(line.id, 0)} "
                f"already refunded: at most {left} can be refunded, not {asked[line.id]}",
                field=f"{field}[{index}].quantity",
            )
        chosen.append((line, entry.quantity))
    return chosen
