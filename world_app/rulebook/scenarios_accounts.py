"""The scenarios of the approval, warranty, loyalty, account and order rules: the refund approval limit and who
may decide an exception, warranty coverage, the claim day and the remedy, the loyalty tier, one customer's
accounts, cancellation and one coupon per order.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from world_app.models import Customer, Order, OrderLineItem, Product, Refund, SupportTicket, WarrantyClaim
from world_app.money import to_cent
from world_app.rulebook.probes import (
    Probe,
    _active_product,
    _escalatable_ticket,
    _orders_with_money,
    _support_employee,
    _warranty_line,
)
from world_app.store_rules import (
    COUPONS,
    LOYALTY_DISCOUNT_PCT,
    REFUND_APPROVAL_LIMIT,
    SHIPPED_SHIPMENT_STATUSES,
    WARRANTY_REFUND_LIFECYCLES,
)
from world_app.tools.coverage import CLOSED_TICKET_STATUSES, delivered_at, warranty_coverage
from world_app.tools.ledger import refunded_quantities
from world_app.tools.results import local_date, world_today


def _scenario_approval_limit(p: Probe) -> None:
    order = next(
        (o for o in _orders_with_money(status="fulfilled") if o.total - o.shipping_cost > REFUND_APPROVAL_LIMIT + 100),
        None,
    )
    if order is None:
        p.missing("split refunds add up", f"paid order over {REFUND_APPROVAL_LIMIT}")
        return
    part = to_cent(REFUND_APPROVAL_LIMIT * Decimal("0.6"))
    with p.scratch():
        first = p.allowed(
            "one refund under the limit", "create_refund", order_id=order.id, reason="other", amount=f"{part:.2f}"
        )
        p.expect(first.get("requires_approval") is False, "one refund under the limit", "a small refund needs approval")
        second = p.allowed(
            "split refunds add up", "create_refund", order_id=order.id, reason="shipping_issue", amount=f"{part:.2f}"
        )
        p.expect(
            (second.get("requires_approval"), second.get("refund", {}).get("status")) == (True, "pending"),
            "split refunds add up",
            "splitting a refund under the limit avoided the team lead's approval",
        )
    ticket, lead = _escalatable_ticket(), _support_employee(decides_exceptions=True)
    if ticket is None or lead is None:
        p.missing("the approval goes to a team lead", "open ticket and team lead")
        return
    with p.scratch():
        p.allowed(
            "the approval goes to a team lead",
            "create_escalation",
            ticket_id=ticket.id,
            escalation_type="policy_exception",
            assigned_to=lead.id,
            notes="Refunds of the order add up to more than the approval limit; asking for approval.",
        )


def _scenario_policy_exception_decider(p: Probe) -> None:
    ticket = _escalatable_ticket()
    agent, lead = _support_employee(decides_exceptions=False), _support_employee(decides_exceptions=True)
    if ticket is None or agent is None or lead is None:
        p.missing("a team lead decides", "open ticket, support agent and team lead")
        return
    notes = "The customer asks for a return 10 days past the window; asking for an exception."
    args = {"ticket_id": ticket.id, "escalation_type": "policy_exception", "notes": notes}
    with p.scratch():
        p.allowed("a team lead decides", "create_escalation", assigned_to=lead.id, **args)
    with p.scratch():
        p.refused("never a plain agent", "create_escalation", assigned_to=agent.id, **args)


def _claim_args(line: OrderLineItem, **extra: Any) -> dict:
    return {"line_item_id": line.id, "issue_description": "Stopped working after a week of normal use.", **extra}


def _scenario_warranty_coverage(p: Probe) -> None:
    active, expired = _warranty_line(active=True), _warranty_line(active=False)
    if active is None:
        p.missing("a defect within the warranty is approved", "delivered line under warranty")
    else:
        case = "a defect within the warranty is approved"
        details = p.allowed(case, "get_order_details", order_id=active.order_id)
        status = next((li["warranty_status"] for li in details.get("line_items", []) if li["id"] == active.id), None)
        p.expect(status == "active", case, f"get_order_details says the warranty is {status}")
        for category, expected in (("manufacturing_defect", "approved"), ("unknown", "pending_inspection")):
            with p.scratch():
                args = _claim_args(active, defect_category=category, remedy="replacement")
                result = p.allowed(f"{category}: {expected}", "create_warranty_claim", **args)
                got = result.get("claim", {}).get("status")
                p.expect(got == expected, f"{category}: {expected}", f"the claim is {got}")
        with p.scratch():
            p.refused(
                "an excluded cause is denied",
                "create_warranty_claim",
                **_claim_args(active, defect_category="physical_damage", remedy="replacement"),
            )
    if expired is None:
        p.missing("an expired warranty is denied", "delivered line out of warranty")
        return
    with p.scratch():
        p.refused(
            "an expired warranty is denied",
            "create_warranty_claim",
            **_claim_args(expired, defect_category="manufacturing_defect", remedy="replacement"),
        )


def _reported_before_expiry() -> tuple[OrderLineItem, SupportTicket] | None:
    """A line whose warranty was running when the customer opened a ticket about its order, and has ended since."""
    today = world_today()
    tickets = (
        SupportTicket.objects.filter(order__isnull=False)
        .exclude(status__in=CLOSED_TICKET_STATUSES)
        .select_related("order")
        .order_by("id")
    )
    for ticket in tickets:
        reported = local_date(ticket.created_at)
        delivered = delivered_at(ticket.order.shipments.all())
        for line in ticket.order.line_items.select_related("product").order_by("id"):
            if line.product.warranty_months <= 0 or WarrantyClaim.objects.filter(line_item=line).exists():
                continue
            if refunded_quantities(Refund.objects.filter(payment__order_id=line.order_id)).get(line.id):
                continue
            then = warranty_coverage(delivered, line.product.warranty_months, today=reported)
            now = warranty_coverage(delivered, line.product.warranty_months, today=today)
            if then.is_active and now.status == "expired":
                return line, ticket
    return None


def _scenario_warranty_claim_day(p: Probe) -> None:
    found = _reported_before_expiry()
    if found is None:
        p.missing("a defect reported before the end date is covered", "ticket opened before a warranty ended")
        return
    line, ticket = found
    case = "a defect reported before the end date is covered, though filed after it"
    with p.scratch():
        args = _claim_args(line, defect_category="manufacturing_defect", remedy="replacement")
        result = p.allowed(case, "create_warranty_claim", ticket_id=ticket.id, **args)
        got = result.get("claim", {}).get("status")
        p.expect(got == "approved", case, f"the claim is {got}")
        made = result.get("warranty", {}).get("claim_made_on")
        p.expect(made == local_date(ticket.created_at).isoformat(), case, f"the claim is made on {made}")
    with p.scratch():
        p.refused(
            "the same defect filed with no report before the end date is denied",
            "create_warranty_claim",
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement"),
        )
    with p.scratch():
        from world_app.routers import EPISODE_ALIAS

        SupportTicket.objects.using(EPISODE_ALIAS).filter(pk=ticket.pk).update(status="closed")
        p.refused(
            "a closed ticket is a past conversation: it does not date the claim",
            "create_warranty_claim",
            ticket_id=ticket.id,
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement"),
        )


def _scenario_warranty_remedy(p: Probe) -> None:
    sold = _warranty_line(active=True, lifecycles=frozenset({"active"}))
    gone = _warranty_line(active=True, lifecycles=WARRANTY_REFUND_LIFECYCLES)
    if sold is None:
        p.missing("a product on sale is replaced", "line of an active product under warranty")
    else:
        with p.scratch():
            p.allowed(
                "a product on sale is replaced",
                "create_warranty_claim",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="replacement"),
            )
        with p.scratch():
            p.refused(
                "a product on sale is not refunded",
                "create_warranty_claim",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="refund"),
            )
        with p.scratch():
            p.refused(
                "parts are not repaired",
                "create_warranty_claim",
                code="invalid_arguments",
                **_claim_args(sold, defect_category="manufacturing_defect", remedy="repair"),
            )
    if gone is None:
        p.missing("a product no longer sold may be refunded", "line of a discontinued product under warranty")
        return
    with p.scratch():
        p.allowed(
            "a product no longer sold may be refunded",
            "create_warranty_claim",
            **_claim_args(gone, defect_category="manufacturing_defect", remedy="refund"),
        )


def _scenario_loyalty_tier(p: Probe) -> None:
    product = _active_product()
    if product is None:
        p.missing("the record's tier is priced", "product on sale")
        return
    for tier, pct in LOYALTY_DISCOUNT_PCT.items():
        customer = Customer.objects.filter(loyalty_tier=tier).order_by("id").first()
        case = f"{tier}: {pct}% off merchandise"
        if customer is None:
            p.missing(case, f"{tier} customer")
            continue
        quote = p.allowed(
            case,
            "calculate_price",
            mode="quote",
            customer_id=customer.id,
            items=[{"product_id": product.id, "quantity": 1}],
            shipping_service="two_day",
        )
        expected = to_cent(product.price * pct / 100)
        got = sum((Decimal(d["amount"]) for d in quote.get("discounts", []) if d["kind"] == "loyalty"), Decimal(0))
        p.expect(got == expected, case, f"{tier} discount {got}, not {expected}")
        shipping = quote.get("shipping", {}).get("amount")
        p.expect(
            quote.get("total") == f"{product.price - expected + Decimal(shipping or 0):.2f}",
            case,
            "the loyalty discount touched shipping",
        )


def _scenario_same_customer(p: Probe) -> None:
    ticket = (
        SupportTicket.objects.filter(order__isnull=False, status__in=("new", "open", "pending_customer"))
        .select_related("order")
        .order_by("id")
        .first()
    )
    other_refund = (
        Refund.objects.exclude(payment__order__customer_id=ticket.customer_id).order_by("id").first()
        if ticket
        else None
    )
    resolver = _support_employee(decides_exceptions=False)
    if ticket is None or other_refund is None or resolver is None:
        p.missing("another customer's refund does not resolve the ticket", "ticket with an order and a refund")
        return
    args = {
        "ticket_id": ticket.id,
        "outcome": "refund_issued",
        "resolved_by": resolver.id,
        "summary": "Refund issued for the returned item.",
    }
    with p.scratch():
        p.refused(
            "another customer's refund does not resolve the ticket",
            "create_resolution",
            refund_id=other_refund.id,
            **args,
        )
    own = Refund.objects.filter(payment__order_id=ticket.order_id).order_by("id").first()
    if own is not None:
        with p.scratch():
            p.allowed("the order's own refund resolves it", "create_resolution", refund_id=own.id, **args)
    line = _warranty_line(active=True)
    stranger = (
        SupportTicket.objects.exclude(customer_id=line.order.customer_id).order_by("id").first() if line else None
    )
    if line is None or stranger is None:
        p.missing("a claim names the buyer's own ticket", "line under warranty")
        return
    with p.scratch():
        p.refused(
            "a claim names the buyer's own ticket",
            "create_warranty_claim",
            code="invalid_arguments",
            **_claim_args(line, defect_category="manufacturing_defect", remedy="replacement", ticket_id=stranger.id),
        )


def _scenario_cancellation(p: Probe) -> None:
    open_order = (
        Order.objects.filter(status__in=("pending", "paid", "backorder"))
        .exclude(shipments__status__in=SHIPPED_SHIPMENT_STATUSES)
        .order_by("id")
        .first()
    )
    shipped = Order.objects.filter(shipments__status__in=("in_transit", "delivered")).order_by("id").first()
    if open_order is None or shipped is None:
        p.missing("an unshipped order is cancelled", "unshipped and shipped orders")
        return
    with p.scratch():
        p.allowed("an unshipped order is cancelled", "update_order_status", order_id=open_order.id, status="cancelled")
    with p.scratch():
        p.refused(
            "a shipped order is not",
            "update_order_status",
            order_id=shipped.id,
            status="cancelled",
            code="policy_violation" if shipped.status in ("pending", "paid", "backorder") else "invalid_transition",
        )


def _scenario_one_coupon(p: Probe) -> None:
    product = (
        Product.objects.filter(lifecycle="active", stock_quantity__gt=0, price__gte=COUPONS["SAVE25"].min_merchandise)
        .order_by("id")
        .first()
    )
    if product is None:
        p.missing("one coupon", "product over the coupon minimum")
        return
    items = [{"product_id": product.id, "quantity": 1}]
    quote = p.allowed("one coupon", "calculate_price", mode="quote", items=items, coupon_codes=["SAVE25"])
    p.expect(quote.get("discount_total") == "25.00", "one coupon", f"SAVE25 took {quote.get('discount_total')}")
    p.refused("two coupons", "calculate_price", mode="quote", items=items, coupon_codes=["SAVE25", "WELCOME10"])
