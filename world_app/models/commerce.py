from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from world_app.models.base import Timestamped, WorldEntity, money_field
from world_app.models.catalog import Product
from world_app.models.people import Customer, validate_address


class Build(WorldEntity, Timestamped):
    """A customer's PC build: a set of parts that should work together."""

    ID_PREFIX = "bld"

    class Status(models.TextChoices):
        DRAFT = "draft"
        SAVED = "saved"
        ORDERED = "ordered"
        ASSEMBLED = "assembled"

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="builds")
    name = models.CharField(max_length=120)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    parts = models.ManyToManyField(Product, through="BuildComponent", related_name="builds")
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.id} {self.name}"


class BuildComponent(WorldEntity):
    ID_PREFIX = "bcp"

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="components")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="build_components")
    quantity = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["id"]


class OrderStatus(models.TextChoices):
    PENDING = "pending"
    PAID = "paid"
    FULFILLED = "fulfilled"
    CANCELLED = "cancelled"
    BACKORDER = "backorder"
    REFUNDED = "refunded"
    PARTIALLY_REFUNDED = "partially_refunded"


class Carrier(models.TextChoices):
    UPS = "ups", "UPS"
    FEDEX = "fedex", "FedEx"
    USPS = "usps", "USPS"
    DHL = "dhl", "DHL"


class ShippingService(models.TextChoices):
    GROUND = "ground"
    TWO_DAY = "two_day"
    OVERNIGHT = "overnight"
    FREIGHT = "freight"


class Order(WorldEntity, Timestamped):
    ID_PREFIX = "ord"

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="orders")
    status = models.CharField(max_length=20, choices=OrderStatus.choices, default=OrderStatus.PENDING, db_index=True)
    build = models.ForeignKey(Build, null=True, blank=True, on_delete=models.SET_NULL, related_name="orders")
    subtotal = money_field(default=Decimal("0.00"))
    discount_code = models.CharField(max_length=32, blank=True)
    discount_total = money_field(default=Decimal("0.00"))
    shipping_cost = money_field(default=Decimal("0.00"))
    tax_total = money_field(default=Decimal("0.00"))
    total = money_field(default=Decimal("0.00"))
    # Shipping data may be missing on old or phone orders: part of the world's realistic mess.
    shipping_address = models.JSONField(null=True, blank=True)
    carrier = models.CharField(max_length=8, choices=Carrier.choices, blank=True)
    shipping_service = models.CharField(max_length=12, choices=ShippingService.choices, blank=True)
    estimated_delivery = models.DateField(null=True, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["customer", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(total__gte=0), name="order_total_not_negative"),
        ]

    def clean(self) -> None:
        if self.shipping_address:
            validate_address(self.shipping_address, field="shipping_address")
        if self.build_id and self.customer_id and self.build.customer_id != self.customer_id:
            raise ValidationError({"build": "belongs to another customer"})
        expected = self.subtotal - self.discount_total + self.shipping_cost + self.tax_total
        if self.total != expected:
            raise ValidationError({"total": f"must equal subtotal - discount + shipping + tax = {expected}"})
        if self.discount_total > self.subtotal:
            raise ValidationError({"discount_total": "exceeds the subtotal"})


class OrderLineItem(WorldEntity):
    ID_PREFIX = "li"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="line_items")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="line_items")
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    unit_price = money_field()

    class Meta:
        ordering = ["id"]

    @property
    def line_total(self) -> Decimal:
        return self.unit_price * self.quantity


class PaymentMethod(models.TextChoices):
    CARD = "card"
    PAYPAL = "paypal"
    APPLE_PAY = "apple_pay"
    GOOGLE_PAY = "google_pay"
    BANK_TRANSFER = "bank_transfer"


class PaymentStatus(models.TextChoices):
    PENDING = "pending"
    AUTHORIZED = "authorized"
    CAPTURED = "captured"
    COMPLETED = "completed"
    FAILED = "failed"
    REFUNDED = "refunded"
    PARTIALLY_REFUNDED = "partially_refunded"
    DISPUTED = "disputed"
    VOIDED = "voided"


class Payment(WorldEntity, Timestamped):
    ID_PREFIX = "pay"

    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="payments")
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="payments")
    amount = money_field()
    method = models.CharField(max_length=16, choices=PaymentMethod.choices)
    status = models.CharField(max_length=20, choices=PaymentStatus.choices, db_index=True)
    transaction_id = models.CharField(max_length=64, unique=True)
    card_last4 = models.CharField(max_length=4, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["id"]

    def clean(self) -> None:
        if self.order_id and self.customer_id and self.order.customer_id != self.customer_id:
            raise ValidationError({"customer": "is not the order's customer"})


class ShipmentStatus(models.TextChoices):
    LABEL_CREATED = "label_created"
    IN_TRANSIT = "in_transit"
    OUT_FOR_DELIVERY = "out_for_delivery"
    DELIVERED = "delivered"
    EXCEPTION = "exception"
    RETURNED = "returned"


class Shipment(WorldEntity, Timestamped):
    ID_PREFIX = "shp"

    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="shipments")
    carrier = models.CharField(max_length=8, choices=Carrier.choices)
    service = models.CharField(max_length=12, choices=ShippingService.choices)
    tracking_number = models.CharField(max_length=40, unique=True)
    status = models.CharField(max_length=20, choices=ShipmentStatus.choices, db_index=True)
    shipped_at = models.DateTimeField(null=True, blank=True)
    estimated_delivery = models.DateField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    events = models.JSONField(default=list, blank=True, help_text="Carrier scan events, oldest first.")

    class Meta:
        ordering = ["id"]

    def clean(self) -> None:
        if self.shipped_at and self.order_id and self.shipped_at < self.order.created_at:
            raise ValidationError({"shipped_at": "is before the order was placed"})
        if self.delivered_at and self.shipped_at and self.delivered_at < self.shipped_at:
            raise ValidationError({"delivered_at": "is before the shipment left"})
        if self.status == ShipmentStatus.DELIVERED and not self.delivered_at:
            raise ValidationError({"delivered_at": "a delivered shipment needs its delivery time"})


class RefundReason(models.TextChoices):
    CUSTOMER_REMORSE = "customer_remorse"
    DEFECTIVE = "defective"
    INCOMPATIBLE = "incompatible"
    SHIPPING_ISSUE = "shipping_issue"
    PRICE_MATCH = "price_match"
    OTHER = "other"


class RefundStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    PROCESSED = "processed"
    REJECTED = "rejected"


class Refund(WorldEntity, Timestamped):
    ID_PREFIX = "ref"

    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="refunds")
    amount = money_field()
    reason = models.CharField(max_length=20, choices=RefundReason.choices)
    status = models.CharField(max_length=12, choices=RefundStatus.choices, default=RefundStatus.PENDING)
    restocking_fee = money_field(default=Decimal("0.00"))
    line_items = models.JSONField(default=list, blank=True, help_text="[{line_item_id, quantity}] refunded")
    processed_at = models.DateTimeField(null=True, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]

    def clean(self) -> None:
        if not self.payment_id or self.amount is None:
            return
        if self.amount <= 0:
            raise ValidationError({"amount": "must be positive"})
        others = Refund.objects.using(self._state.db or "default").filter(payment_id=self.payment_id).exclude(
            pk=self.pk
        ).exclude(status=RefundStatus.REJECTED).aggregate(s=models.Sum("amount"))["s"] or Decimal("0")
        if others + self.amount > self.payment.amount:
            raise ValidationError(
                {"amount": f"refunds would total {others + self.amount}, more than the {self.payment.amount} paid"}
            )
