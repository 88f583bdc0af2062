"""How each world row looks to the agent: the one JSON shape per entity, shared by every tool that shows it."""

from __future__ import annotations

from decimal import Decimal

from world_app.models import (
    Build,
    Customer,
    Employee,
    Escalation,
    KnowledgeBaseArticle,
    Order,
    OrderLineItem,
    Payment,
    Product,
    Refund,
    Resolution,
    Shipment,
    SupportTicket,
    TicketMessage,
    WarrantyClaim,
)
from world_app.store_rules import LOYALTY_DISCOUNT_PCT
from world_app.tools.results import canonical, day, money, when, world_today


def customer_summary(customer: Customer) -> dict:
    return {
        "id": customer.id,
        "name": customer.full_name,
        "email": customer.email,
        "loyalty_tier": customer.loyalty_tier,
    }


def customer_record(customer: Customer) -> dict:
    return {
        "id": customer.id,
        "name": customer.full_name,
        "first_name": customer.first_name,
        "last_name": customer.last_name,
        "email": customer.email,
        "phone": customer.phone,
        "date_of_birth": day(customer.date_of_birth),
        "addresses": canonical(customer.addresses or []),
        "loyalty_tier": customer.loyalty_tier,
        "loyalty_discount_pct": LOYALTY_DISCOUNT_PCT.get(customer.loyalty_tier, 0),
        "marketing_opt_in": customer.marketing_opt_in,
        "notes": customer.notes,
        "created_at": when(customer.created_at),
    }


def employee_record(employee: Employee) -> dict:
    return {
        "id": employee.id,
        "name": employee.full_name,
        "email": employee.email,
        "department": employee.department,
        "title": employee.title,
        "manager_id": employee.manager_id,
        "support_role": employee.support_role,
        "permissions": sorted(employee.permissions or []),
        "hired_on": day(employee.hired_on),
        "is_active": employee.is_active,
        "on_leave": employee.on_leave(world_today()),
        "leave_starts_on": day(employee.leave_starts_on),
        "leave_ends_on": day(employee.leave_ends_on),
    }


def product_record(product: Product) -> dict:
    return {
        "id": product.id,
        "sku": product.sku,
        "name": product.name,
        "brand": product.brand,
        "category": product.category,
        "price": money(product.price),
        "stock_quantity": product.stock_quantity,
        "in_stock": product.stock_quantity > 0,
        "backorderable": product.backorderable,
        "lifecycle": product.lifecycle,
        "warranty_months": product.warranty_months,
        "release_date": day(product.release_date),
        "specs": canonical(product.specs or {}),
    }


def product_brief(product: Product) -> dict:
    return {"id": product.id, "sku": product.sku, "name": product.name, "category": product.category}


def order_summary(order: Order) -> dict:
    """An order without its children; ``order.customer`` should be loaded with it."""
    return {
        "id": order.id,
        "customer_id": order.customer_id,
        "customer_name": order.customer.full_name,
        "status": order.status,
        "build_id": order.build_id,
        "subtotal": money(order.subtotal),
        "discount_code": order.discount_code,
        "discount_total": money(order.discount_total),
        "shipping_cost": money(order.shipping_cost),
        "tax_total": money(order.tax_total),
        "total": money(order.total),
        "carrier": order.carrier,
        "shipping_service": order.shipping_service,
        "estimated_delivery": day(order.estimated_delivery),
        "created_at": when(order.created_at),
        "updated_at": when(order.updated_at),
    }


def line_record(line: OrderLineItem) -> dict:
    return {
        "id": line.id,
        "product_id": line.product_id,
        "sku": line.product.sku,
        "name": line.product.name,
        "category": line.product.category,
        "quantity": line.quantity,
        "unit_price": money(line.unit_price),
        "line_total": money(line.unit_price * line.quantity),
    }


def payment_record(payment: Payment, refunded: Decimal) -> dict:
    return {
        "id": payment.id,
        "order_id": payment.order_id,
        "customer_id": payment.customer_id,
        "amount": money(payment.amount),
        "refunded_total": money(refunded),
        "method": payment.method,
        "status": payment.status,
        "transaction_id": payment.transaction_id,
        "card_last4": payment.card_last4,
        "processed_at": when(payment.processed_at),
        "failure_reason": payment.failure_reason,
        "created_at": when(payment.created_at),
    }


def shipment_record(shipment: Shipment) -> dict:
    return {
        "id": shipment.id,
        "order_id": shipment.order_id,
        "carrier": shipment.carrier,
        "service": shipment.service,
        "tracking_number": shipment.tracking_number,
        "status": shipment.status,
        "shipped_at": when(shipment.shipped_at),
        "estimated_delivery": day(shipment.estimated_delivery),
        "delivered_at": when(shipment.delivered_at),
        "events": canonical(shipment.events or []),
        "line_items": canonical(shipment.line_items or []),
    }


def refund_record(refund: Refund) -> dict:
    return {
        "id": refund.id,
        "payment_id": refund.payment_id,
        "amount": money(refund.amount),
        "reason": refund.reason,
        "status": refund.status,
        "restocking_fee": money(refund.restocking_fee),
        "line_items": canonical(refund.line_items or []),
        "processed_at": when(refund.processed_at),
        "notes": refund.notes,
        "created_at": when(refund.created_at),
    }


def ticket_record(ticket: SupportTicket) -> dict:
    return {
        "id": ticket.id,
        "customer_id": ticket.customer_id,
        "order_id": ticket.order_id,
        "build_id": ticket.build_id,
        "ticket_type": ticket.ticket_type,
        "channel": ticket.channel,
        "priority": ticket.priority,
        "status": ticket.status,
        "subject": ticket.subject,
        "body": ticket.body,
        "assignee_id": ticket.assignee_id,
        "resolved_at": when(ticket.resolved_at),
        "closure_reason": ticket.closure_reason,
        "created_at": when(ticket.created_at),
        "updated_at": when(ticket.updated_at),
    }


def message_record(message: TicketMessage) -> dict:
    return {
        "id": message.id,
        "author_kind": message.author_kind,
        "employee_id": message.employee_id,
        "body": message.body,
        "sent_at": when(message.sent_at),
        "is_internal": message.is_internal,
    }


def resolution_record(resolution: Resolution) -> dict:
    return {
        "id": resolution.id,
        "ticket_id": resolution.ticket_id,
        "outcome": resolution.outcome,
        "summary": resolution.summary,
        "resolved_by": resolution.resolved_by_id,
        "refund_id": resolution.refund_id,
        "created_at": when(resolution.created_at),
    }


def escalation_record(escalation: Escalation) -> dict:
    return {
        "id": escalation.id,
        "ticket_id": escalation.ticket_id,
        "escalation_type": escalation.escalation_type,
        "destination": escalation.destination,
        "assigned_to": escalation.assigned_to_id,
        "created_by": escalation.created_by_id,
        "status": escalation.status,
        "notes": escalation.notes,
        "created_at": when(escalation.created_at),
    }


def article_record(article: KnowledgeBaseArticle) -> dict:
    return {
        "id": article.id,
        "slug": article.slug,
        "title": article.title,
        "kind": article.kind,
        "product_category": article.product_category,
        "product_id": article.product_id,
        "tags": sorted(article.tags or []),
        "body": article.body,
        "is_published": article.is_published,
        "updated_at": when(article.updated_at),
    }


def article_brief(article: KnowledgeBaseArticle) -> dict:
    return {"id": article.id, "slug": article.slug, "title": article.title, "kind": article.kind}


def build_record(build: Build, components: list) -> dict:
    """A build and its parts; ``components`` are its BuildComponents with their products loaded."""
    parts = [
        {**product_brief(c.product), "quantity": c.quantity, "unit_price": money(c.product.price)}
        for c in sorted(components, key=lambda c: c.id)
    ]
    return {
        "id": build.id,
        "customer_id": build.customer_id,
        "name": build.name,
        "status": build.status,
        "notes": build.notes,
        "parts": parts,
        "parts_total": money(sum((c.product.price * c.quantity for c in components), Decimal("0"))),
        "created_at": when(build.created_at),
        "updated_at": when(build.updated_at),
    }


def warranty_claim_record(claim: WarrantyClaim) -> dict:
    return {
        "id": claim.id,
        "line_item_id": claim.line_item_id,
        "product_id": claim.product_id,
        "customer_id": claim.customer_id,
        "ticket_id": claim.ticket_id,
        "quantity": claim.quantity,
        "issue_description": claim.issue_description,
        "defect_category": claim.defect_category,
        "remedy": claim.remedy,
        "status": claim.status,
        "decision_reason": claim.decision_reason,
        "warranty_expires_on": day(claim.warranty_expires_on),
        "created_at": when(claim.created_at),
    }
