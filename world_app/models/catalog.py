from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from world_app.models.base import Timestamped, WorldEntity, money_field
from world_app.specs import SpecError, validate_specs


class ProductCategory(models.TextChoices):
    CPU = "cpu", "CPU"
    MOTHERBOARD = "motherboard", "Motherboard"
    GPU = "gpu", "GPU"
    MEMORY = "memory", "Memory"
    STORAGE = "storage", "Storage"
    PSU = "psu", "Power supply"
    CASE = "case", "Case"
    COOLING = "cooling", "Cooling"
    PREBUILT = "prebuilt", "Prebuilt PC"
    WORKSTATION = "workstation", "Workstation"
    MONITOR = "monitor", "Monitor"
    KEYBOARD = "keyboard", "Keyboard"
    MOUSE = "mouse", "Mouse"
    HEADSET = "headset", "Headset"
    NETWORKING = "networking", "Networking"
    CABLE = "cable", "Cable"
    ACCESSORY = "accessory", "Accessory"


class Lifecycle(models.TextChoices):
    PREORDER = "preorder"
    ACTIVE = "active"
    DISCONTINUED = "discontinued"
    END_OF_LIFE = "end_of_life"


class Product(WorldEntity, Timestamped):
    ID_PREFIX = "prd"

    sku = models.CharField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    brand = models.CharField(max_length=80, db_index=True)
    category = models.CharField(max_length=20, choices=ProductCategory.choices, db_index=True)
    price = money_field()
    specs = models.JSONField(default=dict)
    warranty_months = models.PositiveSmallIntegerField(default=12)
    stock_quantity = models.PositiveIntegerField(default=0)
    backorderable = models.BooleanField(default=False)
    lifecycle = models.CharField(max_length=16, choices=Lifecycle.choices, default=Lifecycle.ACTIVE)
    release_date = models.DateField(null=True, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.CheckConstraint(condition=models.Q(price__gte=0), name="product_price_not_negative")]

    def __str__(self) -> str:
        return f"{self.sku} {self.name}"

    @property
    def in_stock(self) -> bool:
        return self.stock_quantity > 0

    def clean(self) -> None:
        try:
            self.specs = validate_specs(self.category, self.specs or {})
        except SpecError as exc:
            raise ValidationError({"specs": [f"{k}: {v}" for k, v in exc.errors.items()]}) from None


class Bundle(WorldEntity, Timestamped):
    """Products sold together at one price."""

    ID_PREFIX = "bnd"

    sku = models.CharField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    price = money_field()
    products = models.ManyToManyField(Product, through="BundleItem", related_name="bundles")
    is_active = models.BooleanField(default=True)
    valid_from = models.DateField(null=True, blank=True)
    valid_until = models.DateField(null=True, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.sku} {self.name}"

    def clean(self) -> None:
        if self.valid_from and self.valid_until and self.valid_until < self.valid_from:
            raise ValidationError({"valid_until": "ends before it starts"})


class BundleItem(WorldEntity):
    ID_PREFIX = "bni"

    bundle = models.ForeignKey(Bundle, on_delete=models.CASCADE, related_name="items")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="bundle_items")
    quantity = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["bundle", "product"], name="bundle_item_unique_product")]


class Severity(models.TextChoices):
    ERROR = "error"
    WARNING = "warning"


class RuleOperator(models.TextChoices):
    EQUAL = "eq", "A.field equals B.field"
    IN = "in", "A.field is one of B.field (a list)"
    CONTAINS = "contains", "A.field (a list) contains B.field"
    LTE = "lte", "A.field <= B.field"
    TOTAL_DRAW_LTE = "total_draw_lte", "total power draw x factor <= B.field"


class CompatibilityRule(WorldEntity, Timestamped):
    """A structured condition between the specs of two categories of part in one build.

    Read: for every part of ``category_a`` and every part of ``category_b`` in a build,
    ``a.specs[field_a] <operator> b.specs[field_b]`` must hold; else the rule reports ``message``.
    """

    ID_PREFIX = "cr"

    name = models.CharField(max_length=120, unique=True)
    severity = models.CharField(max_length=8, choices=Severity.choices, default=Severity.ERROR)
    category_a = models.CharField(max_length=20, choices=ProductCategory.choices)
    field_a = models.CharField(max_length=60, blank=True)
    operator = models.CharField(max_length=16, choices=RuleOperator.choices)
    category_b = models.CharField(max_length=20, choices=ProductCategory.choices)
    field_b = models.CharField(max_length=60)
    factor = models.DecimalField(max_digits=4, decimal_places=2, default=Decimal("1.00"))
    message = models.CharField(max_length=300, help_text="May use {a}, {b}, {a_value}, {b_value}.")
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from world_app.specs import SPEC_BY_CATEGORY

        errors: dict[str, str] = {}
        if self.operator != RuleOperator.TOTAL_DRAW_LTE:
            model_a = SPEC_BY_CATEGORY.get(self.category_a)
            if not self.field_a:
                errors["field_a"] = "required for this operator"
            elif model_a and self.field_a not in model_a.model_fields:
                errors["field_a"] = f"{self.category_a} specs have no field {self.field_a!r}"
        model_b = SPEC_BY_CATEGORY.get(self.category_b)
        if model_b and self.field_b not in model_b.model_fields:
            errors["field_b"] = f"{self.category_b} specs have no field {self.field_b!r}"
        if self.factor is not None and self.factor <= 0:
            errors["factor"] = "must be positive"
        if errors:
            raise ValidationError(errors)


class ArticleKind(models.TextChoices):
    POLICY = "policy"
    TROUBLESHOOTING = "troubleshooting"
    MANUAL = "manual"
    FAQ = "faq"
    PROCEDURE = "procedure"


class KnowledgeBaseArticle(WorldEntity, Timestamped):
    ID_PREFIX = "kb"

    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=ArticleKind.choices, db_index=True)
    product_category = models.CharField(max_length=20, choices=ProductCategory.choices, blank=True)
    product = models.ForeignKey(Product, null=True, blank=True, on_delete=models.SET_NULL, related_name="articles")
    body = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    is_published = models.BooleanField(default=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        if self.product_id and self.product_category and self.product.category != self.product_category:
            raise ValidationError({"product_category": "does not match the product's category"})
        if not isinstance(self.tags, list) or not all(isinstance(t, str) for t in self.tags):
            raise ValidationError({"tags": "must be a list of strings"})
