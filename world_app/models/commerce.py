from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from world_app.models.base import Timestamped, WorldEntity, money_field
from world_app.models.catalog import Product
from world_app.models.people import Customer, address_errors


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
        errors: dict[str, str | list[str]] = {}
        if self.shipping_address is not None:
            if isinstance(self.shipping_address, dict):
                shipping_errors = address_errors(self.shipping_address)
                if shipping_errors:
                    errors["shipping_address"] = shipping_errors
            else:
                errors["shipping_address"] = "must be one address object, or empty"
        if self.build_id and self.customer_id and self.build.customer_id != self.customer_id:
            errors["build"] = "belongs to another customer"
        amounts = (self.subtotal, self.discount_total, self.shipping_cost, self.tax_total, self.total)
        # A missing amount is reported by its own field; the sums are only checked on complete figures.
        if all(a is not None for a in amounts):
            expected = self.subtotal - self.discount_total + self.shipping_cost + self.tax_total
            if self.total != expected:
                errors["total"] = f"must equal subtotal - discount + shipping + tax = {expected}"
            if self.discount_total > self.subtotal:
                errors["discount_total"] = "exceeds the subtotal"
        if errors:
            raise ValidationError(errors)


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
    # An order shipped in several parcels names what each holds; empty when the parcel holds the whole order.
    line_items = models.JSONField(
        default=list, blank=True, help_text="[{line_item_id, quantity}] in this parcel; empty: the whole order."
    )

    class Meta:
        ordering = ["id"]

    def clean(self) -> None:
        if self.shipped_at and self.order_id and self.shipped_at < self.order.created_at:
            raise ValidationError({"shipped_at": "is before the order was placed"})
        if self.delivered_at and self.shipped_at and self.delivered_at < self.shipped_at:
            raise ValidationError({"delivered_at": "is before the shipment left"})
        if self.status == ShipmentStatus.DELIVERED and not self.delivered_at:
            raise ValidationError({"delivered_at": "a delivered shipment needs its delivery time"})
        if not isinstance(self.events, list) or not all(isinstance(e, dict) for e in self.events):
            raise ValidationError({"events": "must be a list of scan event objects"})
        if self.line_items:
            self._clean_line_items()

    def _clean_line_items(self) -> None:
        if not isinstance(self.line_items, list) or not all(
            isinstance(item, dict)
            and isinstance(item.get("line_item_id"), str)
            and isinstance(item.get("quantity"), int)
            and item["quantity"] >= 1
            for item in self.line_items
        ):
            raise ValidationError({"line_items": "must be a list of {line_item_id, quantity >= 1} objects"})
        if self.order_id:
            lines = dict(OrderLineItem.objects.filter(order_id=self.order_id).values_list("id", "quantity"))
            for item in self.line_items:
                if item["line_item_id"] not in lines:
                    raise ValidationError({"line_items": f"{item['line_item_id']} is not a line of this order"})
                if item["quantity"] > lines[item["line_item_id"]]:
                    raise ValidationError({"line_items": f"more units of {item['line_item_id']} than were ordered"})


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
        if self.line_items is not None:
            self._clean_line_items()
        if not self.payment_id or self.amount is None:
            return
        if self.amount <= 0:
            raise ValidationError({"amount": "must be positive"})
        if self.restocking_fee is not None and self.restocking_fee > self.amount:
            raise ValidationError({"restocking_fee": "exceeds the refund amount"})
        others = Refund.objects.using(self._state.db or "default").filter(payment_id=self.payment_id).exclude(
            pk=self.pk
        ).exclude(status=RefundStatus.REJECTED).aggregate(s=models.Sum("amount"))["s"] or Decimal("0")
        if others + self.amount > self.payment.amount:
            raise ValidationError(
                {"amount": f"refunds would total {others + self.amount}, more than the {self.payment.amount} paid"}
            )

    def _clean_line_items(self) -> None:
        """``line_items`` is a list of {line_item_id, quantity} naming lines of the paid order, each at most once."""
        shape_error = 'must be a list like [{"line_item_id": "li-...", "quantity": 1}]'
        if not isinstance(self.line_items, list):
            raise ValidationError({"line_items": shape_error})
        wanted: dict[str, int] = {}
        for entry in self.line_items:
            if (
                not isinstance(entry, dict)
                or not {"line_item_id", "quantity"} <= set(entry)
                or not isinstance(entry["line_item_id"], str)
                or not isinstance(entry["quantity"], int)
                or isinstance(entry["quantity"], bool)
                or entry["quantity"] < 1
            ):
                raise ValidationError({"line_items": shape_error + " with quantities of at least 1"})
            if entry["line_item_id"] in wanted:
                raise ValidationError({"line_items": f"{entry['line_item_id']} is listed twice"})
            wanted[entry["line_item_id"]] = entry["quantity"]
        if not wanted or not self.payment_id:
            return
        lines = dict(
            OrderLineItem.objects.using(self._state.db or "default")
            .filter(order_id=self.payment.order_id, pk__in=wanted)
            .values_list("pk", "quantity")
        )
        missing = sorted(set(wanted) - set(lines))
        if missing:
            raise ValidationError({"line_items": f"not lines of order {self.payment.order_id}: {', '.join(missing)}"})
        over = sorted(pk for pk, qty in wanted.items() if qty > lines[pk])
        if over:
            raise ValidationError({"line_items": f"more units than were ordered on {', '.join(over)}"})
