"""The arguments bench/peers/tau2_retail.py calls tau2's retail tools with: real ids from its db.json, reads spread
over the db, writes on distinct orders (users) in the state where each write succeeds. tau2 and stdlib only."""

from __future__ import annotations

from tau2.domains.retail.data_model import GiftCard, RetailDB

# The address every address-changing write sets (the arguments here and the rollouts' scripts).
ADDRESS = {
    "address1": "1 Bench Way",
    "address2": "Suite 18",
    "city": "Austin",
    "state": "TX",
    "country": "USA",
    "zip": "78701",
}


def _other_variant(db: RetailDB, item) -> str | None:
    """Another available variant of the item's product (what an exchange or item change needs)."""
    for variant in db.products[item.product_id].variants.values():
        if variant.available and variant.item_id != item.item_id:
            return variant.item_id
    return None


def _payment_for(db: RetailDB, order, *, exclude: str | None = None, amount: float = 0.0) -> str | None:
    """A payment method of the order's user that can pay ``amount`` (gift cards need the balance)."""
    for method in db.users[order.user_id].payment_methods.values():
        if method.id == exclude:
            continue
        if isinstance(method, GiftCard) and method.balance < amount:
            continue
        return method.id
    return None


def read_arguments(db: RetailDB, samples: int) -> dict[str, list[dict]]:
    """Arguments for each read tool, rotating over real ids spread across the db."""
    users = sorted(db.users.values(), key=lambda u: u.user_id)
    orders = sorted(db.orders)
    products = sorted(db.products)
    items = sorted(v for p in db.products.values() for v in p.variants)

    def spread(values: list, i: int):
        return values[(i * 7919) % len(values)]

    return {
        "get_order_details": [{"order_id": spread(orders, i)} for i in range(samples)],
        "get_user_details": [{"user_id": spread(users, i).user_id} for i in range(samples)],
        "get_product_details": [{"product_id": spread(products, i)} for i in range(samples)],
        "get_item_details": [{"item_id": spread(items, i)} for i in range(samples)],
        "find_user_id_by_email": [{"email": spread(users, i).email} for i in range(samples)],
        "find_user_id_by_name_zip": [
            {"first_name": u.name.first_name, "last_name": u.name.last_name, "zip": u.address.zip}
            for u in (spread(users, i) for i in range(samples))
        ],
        "list_all_product_types": [{} for _ in range(samples)],
        "calculate": [{"expression": f"({i} + 12.5) * 3 / 2"} for i in range(samples)],
        "transfer_to_human_agents": [{"summary": f"customer {i} asks for a human"} for i in range(samples)],
    }


def write_arguments(db: RetailDB, samples: int) -> dict[str, list[dict]]:
    """Arguments for each write tool on distinct orders (users) in the state where the write succeeds."""
    pending = [o for _, o in sorted(db.orders.items()) if o.status == "pending"]
    delivered = [o for _, o in sorted(db.orders.items()) if o.status == "delivered"]
    address = ADDRESS
    calls: dict[str, list[dict]] = {
        name: []
        for name in (
            "cancel_pending_order",
            "modify_pending_order_address",
            "modify_pending_order_items",
            "modify_pending_order_payment",
            "modify_user_address",
            "exchange_delivered_order_items",
            "return_delivered_order_items",
        )
    }
    for order in pending:
        calls["cancel_pending_order"].append({"order_id": order.order_id, "reason": "no longer needed"})
        calls["modify_pending_order_address"].append({"order_id": order.order_id, **address})
        item = order.items[0]
        new_item = _other_variant(db, item)
        new_price = db.products[item.product_id].variants[new_item].price if new_item else 0.0
        payment = _payment_for(db, order, amount=max(new_price - item.price, 0.0))
        if new_item and payment:
            calls["modify_pending_order_items"].append(
                {
                    "order_id": order.order_id,
                    "item_ids": [item.item_id],
                    "new_item_ids": [new_item],
                    "payment_method_id": payment,
                }
            )
        paid = order.payment_history[0]
        other = _payment_for(db, order, exclude=paid.payment_method_id, amount=paid.amount)
        if len(order.payment_history) == 1 and other:
            calls["modify_pending_order_payment"].append({"order_id": order.order_id, "payment_method_id": other})
    for user_id in sorted(db.users):
        calls["modify_user_address"].append({"user_id": user_id, **address})
    for order in delivered:
        item = order.items[0]
        original = order.payment_history[0].payment_method_id
        calls["return_delivered_order_items"].append(
            {"order_id": order.order_id, "item_ids": [item.item_id], "payment_method_id": original}
        )
        new_item = _other_variant(db, item)
        if new_item:
            new_price = db.products[item.product_id].variants[new_item].price
            payment = _payment_for(db, order, amount=max(new_price - item.price, 0.0))
            if payment:
                calls["exchange_delivered_order_items"].append(
                    {
                        "order_id": order.order_id,
                        "item_ids": [item.item_id],
                        "new_item_ids": [new_item],
                        "payment_method_id": payment,
                    }
                )
    # Distinct orders (users) spread over the db: a write never meets the state an earlier one left.
    return {
        name: [args[i * len(args) // samples] for i in range(min(samples, len(args)))] for name, args in calls.items()
    }
