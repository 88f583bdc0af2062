from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from world_app.models.base import Timestamped, WorldEntity
from world_app.models.catalog import Product
from world_app.models.commerce import OrderLineItem
from world_app.models.people import Customer
from world_app.models.support import SupportTicket


class DefectCategory(models.TextChoices):
    """What the customer reports as the cause; the exclusions match ``policies.WARRANTY_EXCLUSIONS``."""

    MANUFACTURING_DEFECT = "manufacturing_defect"
    PHYSICAL_DAMAGE = "physical_damage"
    LIQUID_DAMAGE = "liquid_damage"
    OVERCLOCKING = "overclocking"
    IMPROPER_INSTALLATION = "improper_installation"
    WEAR_AND_TEAR = "wear_and_tear"
    UNKNOWN = "unknown"


class WarrantyClaimStatus(models.TextChoices):
    APPROVED = "approved"
    DENIED = "denied"
    PENDING_INSPECTION = "pending_inspection"


class WarrantyRemedy(models.TextChoices):
    REPLACEMENT = "replacement"
    REPAIR = "repair"
    REFUND = "refund"


class WarrantyClaim(WorldEntity, Timestamped):
    """A warranty claim on units of one order line, with the decision and its reason.

    Denied claims are kept too: the record of a refusal (expired, excluded cause) is part of the customer's history.
    """

    ID_PREFIX = "wcl"

    line_item = models.ForeignKey(OrderLineItem, on_delete=models.PROTECT, related_name="warranty_claims")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="warranty_claims")
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="warranty_claims")
    ticket = models.ForeignKey(
        SupportTicket, null=True, blank=True, on_delete=models.SET_NULL, related_name="warranty_claims"
    )
    quantity = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    issue_description = models.TextField()
    defect_category = models.CharField(max_length=24, choices=DefectCategory.choices)
    remedy = models.CharField(max_length=12, choices=WarrantyRemedy.choices)
    status = models.CharField(max_length=20, choices=WarrantyClaimStatus.choices, db_index=True)
    decision_reason = models.TextField()
    warranty_expires_on = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"

    def clean(self) -> None:
        if self.line_item_id and self.product_id and self.line_item.product_id != self.product_id:
            raise ValidationError({"product": "is not the line item's product"})
        if self.line_item_id and self.customer_id and self.line_item.order.customer_id != self.customer_id:
            raise ValidationError({"customer": "is not the customer of the line item's order"})
        if self.line_item_id and self.quantity and self.quantity > self.line_item.quantity:
            raise ValidationError({"quantity": f"exceeds the {self.line_item.quantity} units on the line"})
