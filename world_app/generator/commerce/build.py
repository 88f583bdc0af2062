"""Commerce built and written: ``build_commerce`` places the orders, fulfils and refunds them, and writes each
order with its line items, payments, shipments and refunds (and the saved builds) as rows, recording the
scenarios the support desk and the tasks draw on.
"""

from __future__ import annotations

import random
from datetime import datetime

from world_app.generator.builds import BuildFacts
from world_app.generator.catalog import Catalog
from world_app.generator.commerce.facts import Commerce, OrderFacts, RefundFacts
from world_app.generator.commerce.fulfilment import _contradictions, _Counters, _fulfil
from world_app.generator.commerce.orders import _make_backorders, _place_orders, _price_order
from world_app.generator.commerce.refunds import _refund_orders, _settle_statuses
from world_app.generator.mess import MessPlan
from world_app.generator.people import People
from world_app.generator.sink import RowSink
from world_app.generator.timeline import Timeline, add_months, cents
from world_app.models import Build, BuildComponent, Order, OrderLineItem, Payment, Refund, Shipment
from world_app.store_rules import RETURN_WINDOW_DAYS


def build_commerce(
    *,
    rng: random.Random,
    scale: float,
    timeline: Timeline,
    catalog: Catalog,
    people: People,
    builds: list[BuildFacts],
    mess: MessPlan,
    sink: RowSink,
) -> Commerce:
    orders = _place_orders(rng, scale=scale, timeline=timeline, catalog=catalog, people=people, builds=builds)
    _make_backorders(orders, catalog=catalog, timeline=timeline, mess=mess)
    counter = _Counters()
    first_orders: set[str] = set()
    for order in orders:
        _price_order(rng, order, first_order=order.customer.id not in first_orders)
        first_orders.add(order.customer.id)
        _fulfil(rng, order, timeline=timeline, counter=counter)
    _contradictions(orders, timeline=timeline, mess=mess, counter=counter)
    refunds = _refund_orders(rng, orders, scale=scale, timeline=timeline)
    for order in orders:
        _settle_statuses(order)
        if order.build is not None:
            delivered = order.delivered_at
            order.build.status = "assembled" if delivered and rng.random() < 0.6 else "ordered"
            order.build.ordered_at = order.created_at
    refunds.sort(key=lambda r: (r.created_at, r.order.id))
    for number, refund in enumerate(refunds, start=1):
        refund.id = f"ref-{number:05d}"
    _write_builds(builds, sink=sink)
    for order in orders:
        _write_order(order, sink=sink)
    for refund in refunds:
        sink.add(_refund_row(refund))
    _record_discontinued(orders, catalog=catalog, mess=mess)
    return Commerce(orders=orders, refunds=refunds, scenarios=_scenarios(orders, builds, timeline=timeline))


# --- Rows -------------------------------------------------------------------------------------------------


def _write_builds(builds: list[BuildFacts], *, sink: RowSink) -> None:
    for build in builds:
        updated = build.ordered_at or build.created_at
        sink.add(
            Build(
                id=build.id,
                customer_id=build.customer.id,
                name=build.name,
                status=build.status,
                notes="",
                created_at=build.created_at,
                updated_at=updated,
            )
        )
        for component_id, (product, quantity) in zip(build.component_ids, build.parts, strict=True):
            sink.add(BuildComponent(id=component_id, build_id=build.id, product_id=product.id, quantity=quantity))


def _write_order(order: OrderFacts, *, sink: RowSink) -> None:
    shipment = order.shipment
    keyed_in = order.address is not None
    sink.add(
        Order(
            id=order.id,
            customer_id=order.customer.id,
            status=order.status,
            build_id=order.build.id if order.build else None,
            subtotal=cents(order.subtotal),
            discount_code=order.coupon,
            discount_total=cents(order.discount),
            shipping_cost=cents(order.shipping),
            tax_total=cents(order.tax),
            total=cents(order.total),
            shipping_address=order.address,
            carrier=order.carrier if keyed_in else "",
            shipping_service=order.service if keyed_in else "",
            estimated_delivery=(shipment.eta if shipment else None) if keyed_in else None,
            notes=order.notes,
            created_at=order.created_at,
            updated_at=order.updated_at,
        )
    )
    for line in order.lines:
        sink.add(
            OrderLineItem(
                id=line.id,
                order_id=order.id,
                product_id=line.product.id,
                quantity=line.quantity,
                unit_price=cents(line.unit_cents),
            )
        )
    for payment in order.payments:
        sink.add(
            Payment(
                id=payment.id,
                order_id=order.id,
                customer_id=order.customer.id,
                amount=cents(payment.amount),
                method=payment.method,
                status=payment.status,
                transaction_id=payment.transaction_id,
                card_last4=payment.card_last4,
                processed_at=payment.processed_at,
                failure_reason=payment.failure_reason,
                created_at=payment.created_at,
                updated_at=payment.updated_at or payment.processed_at or payment.created_at,
            )
        )
    for parcel in order.parcels:
        sink.add(
            Shipment(
                id=parcel.id,
                order_id=order.id,
                carrier=parcel.carrier,
                service=parcel.service,
                tracking_number=parcel.tracking_number,
                status=parcel.status,
                shipped_at=parcel.shipped_at,
                estimated_delivery=parcel.eta,
                delivered_at=parcel.delivered_at,
                events=parcel.events,
                line_items=[{"line_item_id": line.id, "quantity": quantity} for line, quantity in parcel.lines],
                created_at=parcel.label_at,
                updated_at=datetime.fromisoformat(parcel.events[-1]["at"]),
            )
        )


def _refund_row(refund: RefundFacts) -> Refund:
    return Refund(
        id=refund.id,
        payment_id=refund.payment.id,
        amount=cents(refund.amount),
        reason=refund.reason,
        status=refund.status,
        restocking_fee=cents(refund.fee),
        line_items=[{"line_item_id": line.id, "quantity": quantity} for line, quantity in refund.lines],
        processed_at=refund.processed_at,
        notes=refund.notes,
        created_at=refund.created_at,
        updated_at=refund.processed_at or refund.decided_at or refund.created_at,
    )


# --- What the manifest says about commerce ----------------------------------------------------------------

SCENARIO_CAP = 200


def _record_discontinued(orders: list[OrderFacts], *, catalog: Catalog, mess: MessPlan) -> None:
    found = 0
    for order in orders:
        gone = [line.product.id for line in order.lines if line.product.id in catalog.sold_until]
        if gone and found < SCENARIO_CAP:
            found += 1
            mess.record("discontinued_in_old_order", order.id, related=tuple(gone), note="ordered before it left sale")


def _scenarios(orders: list[OrderFacts], builds: list[BuildFacts], *, timeline: Timeline) -> dict[str, list[str]]:
    boundary, window, exceptions = [], [], []
    for order in orders:
        delivered = order.delivered_at
        if order.shipment and order.shipment.status == "exception":
            exceptions.append(order.id)
        if not delivered:
            continue
        if 0 <= timeline.days_ago(delivered) <= RETURN_WINDOW_DAYS and not order.refunds and not order.mess:
            window.append(order.id)
        for line in order.lines:
            if line.product.warranty_months == 12:
                ends = add_months(delivered.date(), 12)
                if abs((ends - timeline.today).days) <= 31:
                    boundary.append(order.id)
                    break
    return {
        "warranty_boundary_orders": boundary[:SCENARIO_CAP],
        "return_window_open_orders": window[:SCENARIO_CAP],
        "exception_shipment_orders": exceptions[:SCENARIO_CAP],
        "incompatible_builds": [b.id for b in builds if b.violated_rule][:SCENARIO_CAP],
        "ordered_incompatible_builds": [b.id for b in builds if b.violated_rule and b.order_id][:SCENARIO_CAP],
    }
