"""Orders with their line items, payments, shipments and refunds, following the store's policies.

Money is kept in integer cents until a row is written. The numbers come from ``world_app.store_rules`` and the
arithmetic is ``world_app.money``, the one the agent tools and the admin use, so a task's expected figures agree:

- discount = loyalty tier % of the merchandise subtotal, then one coupon on what remains (never shipping);
- shipping = the service's rate, ground free when merchandise after discounts is over the threshold;
- tax = SALES_TAX_PCT of merchandise after discounts; total = subtotal - discount + shipping + tax;
- a refund returns what was paid for the returned units: their price less their share of the order's
  discount (shared by value), less the restocking fee on opened, non-defective items; never shipping.
"""

from __future__ import annotations

from world_app.generator.commerce.build import _refund_row, _write_order, build_commerce
from world_app.generator.commerce.facts import (
    TRANSIT_DAYS,
    Commerce,
    LineFacts,
    OrderFacts,
    PaymentFacts,
    RefundFacts,
    ShipmentFacts,
    warranty_end,
)
from world_app.generator.commerce.fulfilment import _Counters, _event, declined_card_payment
from world_app.generator.commerce.orders import _price_order
from world_app.generator.commerce.refunds import _add_refund, _settle_statuses

__all__ = [
    "TRANSIT_DAYS",
    "Commerce",
    "LineFacts",
    "OrderFacts",
    "PaymentFacts",
    "RefundFacts",
    "ShipmentFacts",
    "_Counters",
    "_add_refund",
    "_event",
    "_price_order",
    "_refund_row",
    "_settle_statuses",
    "_write_order",
    "build_commerce",
    "declined_card_payment",
    "warranty_end",
]
