from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from world_app.models.base import Timestamped, WorldEntity
from world_app.models.commerce import Build, Order, Refund
from world_app.models.people import Customer, Department, Employee


class TicketType(models.TextChoices):
    RETURN = "return"
    TROUBLESHOOTING = "troubleshooting"
    RECOMMENDATION = "recommendation"
    ORDER_ISSUE = "order_issue"
    SHIPPING = "shipping"
    BILLING = "billing"
    WARRANTY = "warranty"
    OTHER = "other"


class Channel(models.TextChoices):
    WEB = "web"
    EMAIL = "email"
    PHONE = "phone"
    CHAT = "chat"


class Priority(models.TextChoices):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class TicketStatus(models.TextChoices):
    NEW = "new"
    OPEN = "open"
    PENDING_CUSTOMER = "pending_customer"
    ESCALATED = "escalated"
    RESOLVED = "resolved"
    CLOSED = "closed"


class SupportTicket(WorldEntity, Timestamped):
    ID_PREFIX = "tkt"

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="tickets")
    order = models.ForeignKey(Order, null=True, blank=True, on_delete=models.SET_NULL, related_name="tickets")
    build = models.ForeignKey(Build, null=True, blank=True, on_delete=models.SET_NULL, related_name="tickets")
    ticket_type = models.CharField(max_length=20, choices=TicketType.choices)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    status = models.CharField(max_length=20, choices=TicketStatus.choices, default=TicketStatus.NEW, db_index=True)
    subject = models.CharField(max_length=200)
    body = models.TextField()
    assignee = models.ForeignKey(
        Employee, null=True, blank=True, on_delete=models.SET_NULL, related_name="assigned_tickets"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    closure_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["customer", "created_at"])]

    def __str__(self) -> str:
        return f"{self.id} {self.subject}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.order_id and self.customer_id and self.order.customer_id != self.customer_id:
            errors["order"] = "belongs to another customer"
        if self.build_id and self.customer_id and self.build.customer_id != self.customer_id:
            errors["build"] = "belongs to another customer"
        if self.status in {TicketStatus.RESOLVED, TicketStatus.CLOSED} and not self.assignee_id:
            errors["assignee"] = "a resolved or closed ticket needs an assignee"
        if self.resolved_at and self.created_at and self.resolved_at < self.created_at:
            errors["resolved_at"] = "is before the ticket was opened"
        if errors:
            raise ValidationError(errors)


class TicketMessage(WorldEntity):
    ID_PREFIX = "msg"

    class Author(models.TextChoices):
        CUSTOMER = "customer"
        EMPLOYEE = "employee"
        SYSTEM = "system"

    ticket = models.ForeignKey(SupportTicket, on_delete=models.CASCADE, related_name="messages")
    author_kind = models.CharField(max_length=10, choices=Author.choices)
    employee = models.ForeignKey(Employee, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    body = models.TextField()
    sent_at = models.DateTimeField()
    is_internal = models.BooleanField(default=False, help_text="An internal note the customer never sees.")

    class Meta:
        ordering = ["ticket_id", "sent_at", "id"]

    def clean(self) -> None:
        if self.author_kind == self.Author.EMPLOYEE and not self.employee_id:
            raise ValidationError({"employee": "an employee message names its employee"})
        if self.author_kind != self.Author.EMPLOYEE and self.employee_id:
            raise ValidationError({"employee": f"a {self.author_kind} message has no employee author"})
        if self.sent_at and self.ticket_id and self.sent_at < self.ticket.created_at:
            raise ValidationError({"sent_at": "is before the ticket was opened"})


class ResolutionOutcome(models.TextChoices):
    REFUND_ISSUED = "refund_issued"
    REPLACEMENT_SENT = "replacement_sent"
    RECOMMENDATION_PROVIDED = "recommendation_provided"
    TROUBLESHOOTING_STEPS = "troubleshooting_steps"
    ORDER_UPDATED = "order_updated"
    WARRANTY_CLAIM_FILED = "warranty_claim_filed"
    NO_ACTION = "no_action"


class Resolution(WorldEntity, Timestamped):
    ID_PREFIX = "res"

    ticket = models.ForeignKey(SupportTicket, on_delete=models.CASCADE, related_name="resolutions")
    outcome = models.CharField(max_length=24, choices=ResolutionOutcome.choices)
    summary = models.TextField()
    resolved_by = models.ForeignKey(Employee, on_delete=models.PROTECT, related_name="resolutions")
    refund = models.ForeignKey(Refund, null=True, blank=True, on_delete=models.SET_NULL, related_name="resolutions")

    class Meta:
        ordering = ["id"]

    def clean(self) -> None:
        if self.outcome == ResolutionOutcome.REFUND_ISSUED and not self.refund_id:
            raise ValidationError({"refund": "a refund_issued resolution links its refund"})
        if (
            self.refund_id
            and self.ticket_id
            and self.ticket.order_id
            and self.refund.payment.order_id != self.ticket.order_id
        ):
            raise ValidationError({"refund": "refunds a different order than the ticket's"})


class EscalationType(models.TextChoices):
    PRODUCT_SPECIALIST = "product_specialist"
    TECHNICAL = "technical"
    POLICY_EXCEPTION = "policy_exception"


class Escalation(WorldEntity, Timestamped):
    ID_PREFIX = "esc"

    class Status(models.TextChoices):
        OPEN = "open"
        ACKNOWLEDGED = "acknowledged"
        RESOLVED = "resolved"

    ticket = models.ForeignKey(SupportTicket, on_delete=models.CASCADE, related_name="escalations")
    escalation_type = models.CharField(max_length=20, choices=EscalationType.choices)
    destination = models.CharField(max_length=32, choices=Department.choices)
    assigned_to = models.ForeignKey(
        Employee, null=True, blank=True, on_delete=models.SET_NULL, related_name="escalations_assigned"
    )
    created_by = models.ForeignKey(
        Employee, null=True, blank=True, on_delete=models.SET_NULL, related_name="escalations_created"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    notes = models.TextField()

    class Meta:
        ordering = ["id"]
