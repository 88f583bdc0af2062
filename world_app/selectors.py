"""Reads of the world (live or, inside an episode, the episode's)."""

from __future__ import annotations

from django.urls import reverse

from world_app.clock import world_now
from world_app.models import ENTITY_MODELS, WORLD_MODELS, WorldSnapshot


def entity_type_name(model) -> str:
    """The paper's name of an entity type: SupportTicket -> support_ticket."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(model.__name__))


def world_counts() -> dict[str, int]:
    """Rows per entity type, keyed by the paper's names (customer, order, support_ticket, ...)."""
    return {entity_type_name(model): model.objects.count() for model in ENTITY_MODELS}


def world_child_counts() -> dict[str, int]:
    """Rows of the world's other tables (line items, build parts, messages...), keyed the same way."""
    return {entity_type_name(model): model.objects.count() for model in WORLD_MODELS if model not in ENTITY_MODELS}


def world_overview() -> dict:
    counts = []
    for model in ENTITY_MODELS:
        admin_url = reverse(f"admin:world_app_{model._meta.model_name}_changelist")
        counts.append(
            {
                "label": model._meta.verbose_name_plural.capitalize(),
                "count": model.objects.count(),
                "admin_url": admin_url,
            }
        )
    snapshots = [
        {
            "version": s.version,
            "created_at": s.created_at,
            "note": s.note,
            "content_checksum": s.content_checksum,
            "total_entities": sum(s.entity_counts.values()),
        }
        for s in WorldSnapshot.objects.only("version", "created_at", "note", "content_checksum", "entity_counts")[:10]
    ]
    return {
        "counts": counts,
        "total_entities": sum(c["count"] for c in counts),
        "snapshots": snapshots,
        "world_now": world_now(),
    }
