"""Fetch one record by id for a tool, or refuse with ``not_found`` naming the argument at fault."""

from __future__ import annotations

from functools import cache

from django.db.models import Model

from world_app.models import Customer, Employee, Order, OrderLineItem, Product, Shipment, SupportTicket
from world_app.tools.baked import BakedQuery
from world_app.tools.results import ErrorCode, ToolError, not_found

ENTITY_NAMES = {
    Customer: "customer",
    Employee: "employee",
    Order: "order",
    OrderLineItem: "order line item",
    Product: "product",
    SupportTicket: "support ticket",
}


# Look-ups several tools make, baked once (world_app/tools/baked.py): compiling them on every call cost more than
# running them.
PRODUCTS = BakedQuery(Product, lambda ids: Product.objects.filter(pk__in=ids))
ORDER_LINES = BakedQuery(OrderLineItem, lambda order_id: OrderLineItem.objects.filter(order_id=order_id).order_by("id"))
ORDER_SHIPMENTS = BakedQuery(Shipment, lambda order_id: Shipment.objects.filter(order_id=order_id).order_by("id"))


@cache
def _by_id(model: type[Model]) -> BakedQuery:
    # Nearly every tool starts here: baked, the look-up costs what the database takes, not a compile.
    return BakedQuery(model, lambda entity_id: model.objects.filter(pk=entity_id))


def _one(model: type[Model], entity_id: str) -> Model | None:
    return next(iter(_by_id(model)(entity_id)), None)


def _load_related(found: Model, path: str) -> None:
    """What ``select_related(path)`` would load ("order__customer"), one baked look-up by id per step."""
    holder = found
    for name in path.split("__"):
        relation = holder._meta.get_field(name)
        target_id = getattr(holder, relation.attname)
        if isinstance(target_id, str) and not relation.is_cached(holder):
            target = _one(relation.related_model, target_id)
            if target is not None:  # a dangling id is left to the ORM (and its DoesNotExist)
                setattr(holder, name, target)
        holder = getattr(holder, name)
        if holder is None:
            return


def fetch(model: type[Model], entity_id: str, *, field: str, related: tuple[str, ...] = ()) -> Model:
    if isinstance(entity_id, str):
        found = _one(model, entity_id)
        for path in related if found is not None else ():
            _load_related(found, path)
    else:
        found = model.objects.select_related(*related).filter(pk=entity_id).first()
    if found is None:
        raise not_found(ENTITY_NAMES.get(model, model._meta.verbose_name), entity_id, field=field)
    return found


def resolve_line(*, line_item_id: str | None, order_id: str | None, product_id: str | None) -> OrderLineItem:
    """An order line named by its id, or by its order and product (refused when that is ambiguous)."""
    # Its order and product come with it; the order's customer does not (its callers need only its id).
    related = ("order", "product")
    if line_item_id:
        line = fetch(OrderLineItem, line_item_id, field="line_item_id", related=related)
        if order_id and line.order_id != order_id:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"line item {line.id} belongs to order {line.order_id}, not {order_id}",
                field="order_id",
            )
        return line
    fetch(Order, order_id, field="order_id")
    lines = list(
        OrderLineItem.objects.select_related(*related).filter(order_id=order_id, product_id=product_id).order_by("id")
    )
    if not lines:
        raise ToolError(
            ErrorCode.NOT_FOUND, f"order {order_id} has no line for product {product_id}", field="product_id"
        )
    if len(lines) > 1:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            f"order {order_id} has {len(lines)} lines for product {product_id} "
            f"({', '.join(li.id for li in lines)}): pass line_item_id",
            field="line_item_id",
        )
    return lines[0]
