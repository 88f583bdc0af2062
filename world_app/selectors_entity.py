"""One entity of the live world as an author's page shows it: its fields, a summary and its related rows.

Every read is bounded: one query for the row plus one per kind of related row, each capped at ``RELATED_ROWS``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import models
from django.http import Http404

from world_app.clock import world_zone
from world_app.models import world_models_by_name
from world_app.selectors_lookup import day, money

RELATED_ROWS = 20


@dataclass
class EntityField:
    name: str
    label: str
    value: Any
    link: tuple[str, str] | None = None  # (entity type, id) of a referenced row
    is_json: bool = False
    note: str = ""  # the referenced row's name, beside its id


@dataclass
class RelatedGroup:
    label: str
    entity_type: str
    rows: list[tuple[str, str]]  # (id, description)
    has_more: bool


@dataclass
class EntityPage:
    entity_type: str
    label: str
    id: str
    title: str
    fields: list[EntityField]
    related: list[RelatedGroup]
    summary: list[tuple[str, str]] = field(default_factory=list)  # what a support lead asks first


def entity_name(row: models.Model) -> str:
    """The name a person calls a row by ("Kestrel Nyra NX 4060 Compact 8GB", "Jane Doe"), or "" if it has none."""
    for attrs in (("first_name", "last_name"), ("name",), ("subject",), ("title",)):
        if all(hasattr(row, a) for a in attrs):
            return " ".join(str(getattr(row, a)) for a in attrs).strip()
    return ""


def _shown(f: models.Field, value: Any) -> Any:
    """A field's value the way a support lead reads it: money with $ and thousands, days and times in words."""
    if value is None or value == "":
        return value
    if isinstance(f, models.DecimalField) and f.decimal_places == 2 and f.name != "factor":
        return money(value)
    if isinstance(f, models.DateTimeField):
        local = value.astimezone(world_zone())
        return f"{day(local)} {local:%H:%M}"
    if isinstance(f, models.DateField):
        return day(value)
    return value


def _row_label(row: models.Model, *, skip: str = "", summary: bool = True) -> str:
    """The row's own name, or (for rows named only by their id) a few of its short fields, with the names of the
    rows it points to ("product Kestrel Nyra NX 4060 Compact 8GB · quantity 1 · unit price $298.99")."""
    name = entity_name(row)
    if name or not summary:
        return name or str(row).removeprefix(f"{row.pk}").strip()
    if known := _KNOWN_ROWS.get(row._meta.model_name):
        return known(row, skip)
    parts = []
    for f in row._meta.concrete_fields:
        if f.primary_key or f.name in (skip, "updated_at") or isinstance(f, models.JSONField | models.TextField):
            continue
        value = getattr(row, f.attname)
        if value in (None, ""):
            continue
        value = (entity_name(getattr(row, f.name)) or value) if f.is_relation else _shown(f, value)
        parts.append(f"{f.verbose_name} {value}")
        if len(parts) == 4:
            break
    return " · ".join(parts)


def _line_label(row: Any, skip: str) -> str:
    priced = f"x {row.quantity} at {money(row.unit_price)}"
    if skip == "product":  # on the product's page: which order, when
        return f"order {row.order_id} · {day(row.order.created_at)} · {priced}"
    return f"{row.product.name} {priced}"


def _shipment_label(row: Any, skip: str) -> str:
    when = f"delivered {day(row.delivered_at)}" if row.delivered_at else f"expected {day(row.estimated_delivery)}"
    return f"{row.get_carrier_display()} {row.tracking_number} · {row.status} · {when}"


_KNOWN_ROWS = {
    "order": lambda r, skip: f"{day(r.created_at)} · {r.status} · {money(r.total)}",
    "orderlineitem": _line_label,
    "payment": lambda r, skip: f"{money(r.amount)} · {r.method} · {r.status} · {day(r.processed_at or r.created_at)}",
    "shipment": _shipment_label,
    "refund": lambda r, skip: f"{money(r.amount)} · {r.reason} · {r.status} · {day(r.created_at)}",
}


def _summary(entity_type: str, row: models.Model, related: dict[str, list[models.Model]]) -> list[tuple[str, str]]:
    """Facts read off the row and the related rows already fetched (no query of its own)."""
    facts: list[tuple[str, str]] = []
    if entity_type == "order":
        facts.append(("Placed", day(row.created_at)))
        shipments = related.get("shipment", [])
        delivered = [s.delivered_at for s in shipments if s.delivered_at]
        if delivered:
            facts.append(("Delivered", day(max(delivered))))
        elif row.estimated_delivery or any(s.estimated_delivery for s in shipments):
            expected = [s.estimated_delivery for s in shipments if s.estimated_delivery] or [row.estimated_delivery]
            facts.append(("Expected delivery", day(max(expected))))
        lines = related.get("orderlineitem", [])
        if lines:
            facts.append(("Items", ", ".join(f"{line.product.name} x {line.quantity}" for line in lines)))
        facts.append(("Total", money(row.total)))
    elif entity_type == "customer":
        orders = related.get("order", [])
        if orders:
            facts.append(("Last order", day(max(o.created_at for o in orders))))
        facts.append(("Customer since", day(row.created_at)))
    elif entity_type == "product":
        facts.append(("Price", money(row.price)))
        lines = related.get("orderlineitem", [])
        if lines:
            facts.append(
                ("On orders", ", ".join(f"{line.order_id} ({day(line.order.created_at)})" for line in lines[:5]))
            )
    return facts


def world_entity(*, entity_type: str, pk: str) -> EntityPage:
    """Any world row (by its table's model name) with its fields, the rows it references (linked, with their names),
    and the rows that reference it (up to ``RELATED_ROWS`` of each kind, named). Raises Http404 for an unknown type
    or id. One query for the row and what it points to, one per kind of related row."""
    model = world_models_by_name().get(entity_type)
    if model is None:
        raise Http404(f"No entity type {entity_type!r}.")
    pointers = [f.name for f in model._meta.concrete_fields if f.is_relation]
    try:
        row = model.objects.select_related(*pointers).get(pk=pk)
    except model.DoesNotExist:
        raise Http404(f"No {model._meta.verbose_name} {pk}.") from None
    fields = []
    for f in model._meta.concrete_fields:
        value = getattr(row, f.attname)
        if f.is_relation:
            link = (f.related_model._meta.model_name, value) if value else None
            note = entity_name(getattr(row, f.name)) if value else ""
            fields.append(EntityField(f.name, f.verbose_name, value, link=link, note=note))
        elif isinstance(f, models.JSONField):
            fields.append(EntityField(f.name, f.verbose_name, json.dumps(value, indent=2, default=str), is_json=True))
        else:
            shown = getattr(row, f"get_{f.name}_display")() if f.choices else _shown(f, value)
            fields.append(EntityField(f.name, f.verbose_name, shown))
    related = []
    fetched: dict[str, list[models.Model]] = {}
    for rel in model._meta.related_objects:
        if not rel.one_to_many and not rel.one_to_one:
            continue
        target = rel.related_model
        if target._meta.model_name not in world_models_by_name():
            continue
        their_pointers = [
            f.name for f in target._meta.concrete_fields if f.is_relation and f.name != rel.field.name and not f.null
        ]
        names = {f.name for f in target._meta.concrete_fields}
        # newest first, as a support lead reads a history; line items by their order's date
        newest = ("-created_at",) if "created_at" in names else ("-order__created_at",) if "order" in names else ()
        found = list(
            target.objects.filter(**{rel.field.name: row.pk})
            .select_related(*their_pointers)
            .order_by(*newest, "pk")[: RELATED_ROWS + 1]
        )
        if not found:
            continue
        fetched[target._meta.model_name] = found[:RELATED_ROWS]
        related.append(
            RelatedGroup(
                label=f"{target._meta.verbose_name_plural.capitalize()} ({rel.field.verbose_name})",
                entity_type=target._meta.model_name,
                rows=[(r.pk, _row_label(r, skip=rel.field.name)) for r in found[:RELATED_ROWS]],
                has_more=len(found) > RELATED_ROWS,
            )
        )
    return EntityPage(
        entity_type=entity_type,
        label=model._meta.verbose_name.capitalize(),
        id=row.pk,
        title=_row_label(row, summary=False),
        fields=fields,
        related=related,
        summary=_summary(entity_type, row, fetched),
    )
