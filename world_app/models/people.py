from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.db import models
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from world_app.models.base import Timestamped, WorldEntity
from world_app.store_rules import LOYALTY_DISCOUNT_PCT


class LoyaltyTier(models.TextChoices):
    NONE = "none", "None"
    SILVER = "silver", "Silver"
    GOLD = "gold", "Gold"
    PLATINUM = "platinum", "Platinum"


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(pattern=r"^(shipping|billing)$")
    name: str = Field(min_length=1)
    line1: str = Field(min_length=1)
    line2: str = ""
    city: str = Field(min_length=1)
    state: str = Field(min_length=2, max_length=2)
    postal_code: str = Field(pattern=r"^\d{5}(-\d{4})?$")
    country: str = Field(default="US", min_length=2, max_length=2)


def address_errors(value) -> list[str]:
    """What is wrong with one address, one message per bad field; empty when it is valid."""
    try:
        Address.model_validate(value)
    except PydanticValidationError as exc:
        return [f"{'.'.join(map(str, e['loc'])) or 'address'}: {e['msg']}" for e in exc.errors()]
    return []


def validate_address(value: dict, *, field: str = "address") -> None:
    errors = address_errors(value)
    if errors:
        raise ValidationError({field: errors})


def validate_addresses(value: list) -> None:
    # A field validator must raise a list of messages (a dict error would crash the model's clean_fields).
    if not isinstance(value, list):
        raise ValidationError("addresses must be a list of address objects")
    errors = [f"address {i + 1}: {msg}" for i, item in enumerate(value) for msg in address_errors(item)]
    if errors:
        raise ValidationError(errors)


class Customer(WorldEntity, Timestamped):
    ID_PREFIX = "cus"

    first_name = models.CharField(max_length=80)
    last_name = models.CharField(max_length=80)
    email = models.EmailField(db_index=True)  # not unique: near-duplicate accounts exist, as in real CRMs
    phone = models.CharField(max_length=32, blank=True)
    date_of_birth = models.DateField(null=True, blank=True)
    addresses = models.JSONField(default=list, blank=True, validators=[validate_addresses])
    loyalty_tier = models.CharField(max_length=16, choices=LoyaltyTier.choices, default=LoyaltyTier.NONE)
    marketing_opt_in = models.BooleanField(default=False)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["last_name", "first_name"])]

    def __str__(self) -> str:
        return f"{self.id} {self.first_name} {self.last_name}"

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    @property
    def loyalty_discount_pct(self) -> int:
        return LOYALTY_DISCOUNT_PCT[self.loyalty_tier]


class Department(models.TextChoices):
    OPERATIONS = "operations"
    ORDER_PROCESSING = "order_processing"
    ENGINEERING = "engineering"
    HELP_DESK = "help_desk"
    IT_SYSTEMS = "it_systems"
    PRODUCT_MANAGEMENT = "product_management"
    FINANCE = "finance"
    HR = "hr"
    RECRUITMENT = "recruitment"
    SUPPORT = "support"


class SupportRole(models.TextChoices):
    NONE = "none"
    AGENT = "agent"
    SENIOR_AGENT = "senior_agent"
    PRODUCT_SPECIALIST = "product_specialist"
    TECHNICAL_SPECIALIST = "technical_specialist"
    TEAM_LEAD = "team_lead"
    MANAGER = "manager"


EMPLOYEE_PERMISSIONS = (
    "view_orders",
    "edit_orders",
    "issue_refunds",
    "approve_refunds_over_limit",
    "approve_policy_exceptions",
    "manage_tickets",
    "manage_inventory",
    "manage_builds",
)


def validate_permissions(value: list) -> None:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValidationError("permissions must be a list of permission names")
    unknown = sorted(set(value) - set(EMPLOYEE_PERMISSIONS))
    if unknown:
        raise ValidationError(f"unknown permissions: {', '.join(unknown)} (known: {', '.join(EMPLOYEE_PERMISSIONS)})")


class Employee(WorldEntity, Timestamped):
    ID_PREFIX = "emp"

    first_name = models.CharField(max_length=80)
    last_name = models.CharField(max_length=80)
    email = models.EmailField(unique=True)
    department = models.CharField(max_length=32, choices=Department.choices)
    title = models.CharField(max_length=120)
    manager = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reports")
    permissions = models.JSONField(default=list, blank=True, validators=[validate_permissions])
    support_role = models.CharField(max_length=32, choices=SupportRole.choices, default=SupportRole.NONE)
    hired_on = models.DateField()
    is_active = models.BooleanField(default=True)
    # A leave (parental, medical, sabbatical): still employed, not at work from the first day through the last.
    leave_starts_on = models.DateField(null=True, blank=True)
    leave_ends_on = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.id} {self.first_name} {self.last_name} ({self.title})"

    def on_leave(self, day: date) -> bool:
        """Away on ``day``: inside a recorded leave."""
        if not self.leave_starts_on or day < self.leave_starts_on:
            return False
        return self.leave_ends_on is None or day <= self.leave_ends_on

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    def clean(self) -> None:
        if self.manager_id and self.manager_id == self.id:
            raise ValidationError({"manager": "an employee cannot manage themselves"})
        if self.leave_ends_on and not self.leave_starts_on:
            raise ValidationError({"leave_starts_on": "a leave that ends needs its first day"})
        if self.leave_starts_on and self.leave_ends_on and self.leave_ends_on < self.leave_starts_on:
            raise ValidationError({"leave_ends_on": "is before the leave starts"})
