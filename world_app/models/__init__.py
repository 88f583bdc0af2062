"""The Corecraft Computers world: 14 entity types (plus their line items, parts and messages)."""

from django.db import models

from world_app.models.catalog import (
    ArticleKind,
    Bundle,
    BundleItem,
    CompatibilityRule,
    KnowledgeBaseArticle,
    Lifecycle,
    Product,
    ProductCategory,
    RuleOperator,
    Severity,
)
from world_app.models.commerce import (
    Build,
    BuildComponent,
    Carrier,
    Order,
    OrderLineItem,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    Refund,
    RefundReason,
    RefundStatus,
    Shipment,
    ShipmentStatus,
    ShippingService,
)
from world_app.models.episodes import Episode, EpisodeStep, WorldSnapshot
from world_app.models.people import Customer, Department, Employee, LoyaltyTier, SupportRole
from world_app.models.support import (
    Channel,
    Escalation,
    EscalationType,
    Priority,
    Resolution,
    ResolutionOutcome,
    SupportTicket,
    TicketMessage,
    TicketStatus,
    TicketType,
)
from world_app.models.warranty import DefectCategory, WarrantyClaim, WarrantyClaimStatus, WarrantyRemedy

# The 14 entity types of the paper's world, in an order where every reference points backwards.
ENTITY_MODELS = (
    Customer,
    Employee,
    Product,
    Bundle,
    CompatibilityRule,
    KnowledgeBaseArticle,
    Build,
    Order,
    Payment,
    Shipment,
    Refund,
    SupportTicket,
    Resolution,
    Escalation,
)
# Every table of the world (entities and their child rows), in dependency order: what a snapshot holds.
WORLD_MODELS = (
    Customer,
    Employee,
    Product,
    Bundle,
    BundleItem,
    CompatibilityRule,
    KnowledgeBaseArticle,
    Build,
    BuildComponent,
    Order,
    OrderLineItem,
    Payment,
    Shipment,
    Refund,
    SupportTicket,
    TicketMessage,
    Resolution,
    Escalation,
    WarrantyClaim,
)


def world_models_by_name() -> dict[str, type[models.Model]]:
    """Every world table's model by its model name ("order", "orderlineitem", "supportticket")."""
    return {model._meta.model_name: model for model in WORLD_MODELS}


__all__ = [
    "ENTITY_MODELS",
    "WORLD_MODELS",
    "ArticleKind",
    "Build",
    "BuildComponent",
    "Bundle",
    "BundleItem",
    "Carrier",
    "Channel",
    "CompatibilityRule",
    "Customer",
    "DefectCategory",
    "Department",
    "Employee",
    "Episode",
    "EpisodeStep",
    "Escalation",
    "EscalationType",
    "KnowledgeBaseArticle",
    "Lifecycle",
    "LoyaltyTier",
    "Order",
    "OrderLineItem",
    "OrderStatus",
    "Payment",
    "PaymentMethod",
    "PaymentStatus",
    "Priority",
    "Product",
    "ProductCategory",
    "Refund",
    "RefundReason",
    "RefundStatus",
    "Resolution",
    "ResolutionOutcome",
    "RuleOperator",
    "Severity",
    "Shipment",
    "ShipmentStatus",
    "ShippingService",
    "SupportRole",
    "SupportTicket",
    "TicketMessage",
    "TicketStatus",
    "TicketType",
    "WarrantyClaim",
    "WarrantyClaimStatus",
    "WarrantyRemedy",
    "WorldSnapshot",
    "world_models_by_name",
]
