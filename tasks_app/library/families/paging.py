"""Every order of one product, across pages: the list and the combined value need every page of the search.

Selector: products on more than one page of ``search_orders`` (more than ``DEFAULT_LIMIT`` orders), optionally
narrowed to one order status when that still spans pages. The first page gives the count (``total``); only
reading every page gives every order id and the sum of the order totals.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from world_app.models import OrderLineItem, Product
from world_app.tools.params import DEFAULT_LIMIT

from .base import (
    Family,
    FamilyInstance,
    called,
    dollars,
    judged,
    pick,
    says,
    says_number,
    says_pattern,
    stable_hash,
    tidy,
)

REASONS = (
    "the supplier flagged a possible firmware fault",
    "several customers reported units arriving damaged",
    "the manufacturer issued a safety notice",
    "we suspect a mislabelled batch",
    "returns of it doubled last month",
    "a distributor asked for our sales history on it",
)
STATUS_WORDS = {"fulfilled": "fulfilled", "partially_refunded": "partially refunded", "refunded": "refunded"}
MESSAGES = (
    "Quality team here. We have had reports about the {product} (SKU {sku}). Please pull every{status} order that "
    "includes it: I need the order ids and the combined value of those orders.",
    "Supervisor request: list all{status} orders containing the {product} ({sku}), with their ids, and add up the "
    "order totals for me. Finance wants the exposure figure today.",
    "Can you audit the{status} orders that contain product {product_id} ({product})? Give me every order id and "
    "the total value of all of them together.",
    "For a supplier claim on the {product} (SKU {sku}), I need each{status} order that has it (ids only) plus the "
    "sum of those orders' totals. Please make sure none are missed.",
)


class ProductOrderAuditFamily(Family):
    name = "product_order_audit"
    title = "Every order of a product, across search pages"
    description = "List all orders containing a product and sum their totals: needs every page of search_orders."
    task_type = "information_retrieval"

    def candidates(self):
        orders_of: dict[str, dict[str, str]] = defaultdict(dict)
        rows = OrderLineItem.objects.values_list("product_id", "order_id", "order__status").order_by("order_id")
        for product_id, order_id, status in rows:
            orders_of[product_id][order_id] = status
        products = {p.id: p for p in Product.objects.filter(id__in=list(orders_of))}
        # Products of one brand and category have names a word apart ("Keywright Glide Mouse", "... Dart Mouse"):
        # each takes the next phrasing and reason, so two of them never read alike.
        siblings: dict[tuple, list[str]] = defaultdict(list)
        for product_id in sorted(products):
            siblings[(products[product_id].brand, products[product_id].category)].append(product_id)
        self._sibling_rank = {pid: ids.index(pid) for ids in siblings.values() for pid in ids}
        for product_id in sorted(orders_of):
            orders = orders_of[product_id]
            if len(orders) <= DEFAULT_LIMIT:
                continue
            statuses = sorted({s for s in orders.values() if s in STATUS_WORDS})
            narrowed = [s for s in statuses if sum(1 for v in orders.values() if v == s) > DEFAULT_LIMIT]
            status = pick([None, *narrowed], product_id, "status") if narrowed else None
            yield (products[product_id], status)

    def entity_ids(self, candidate) -> tuple[str, ...]:
        product, status = candidate
        return (product.id, *([status] if status else []))

    def build(self, candidate, sim) -> FamilyInstance | None:
        product, status = candidate
        rank = getattr(self, "_sibling_rank", {}).get(product.id, 0)
        family_hash = stable_hash(product.brand, product.category)
        query = {"product_id": product.id, **({"status": status} if status else {})}
        first = sim.run([{"tool": "search_orders", "arguments": query}])[0]
        if "error" in first or not first.get("has_more"):
            return None
        calls = [{"tool": "search_orders", "arguments": query}]
        offset = first["limit"]
        while offset < first["total"]:
            calls.append({"tool": "search_orders", "arguments": {**query, "offset": offset}})
            offset += first["limit"]
        pages = sim.run(calls)
        orders = [o for page in pages for o in page.get("items", [])]
        if len(orders) != first["total"] or len({o["id"] for o in orders}) != len(orders):
            return None
        total_value = sum((Decimal(o["total"]) for o in orders), Decimal("0"))
        ids = [o["id"] for o in orders]
        status_words = f" {STATUS_WORDS[status]}" if status else ""
        instruction = tidy(
            MESSAGES[(family_hash + rank) % len(MESSAGES)].format(
                product=product.name, sku=product.sku, product_id=product.id, status=status_words
            )
            + f" Background: {REASONS[(family_hash + rank // len(MESSAGES)) % len(REASONS)]}."
        )
        last_page_id = ids[-1]
        every_id = "".join(f"(?=[\\s\\S]*{i})" for i in ids)
        narrowed_to = f" with status {STATUS_WORDS[status]}" if status else ""
        answer = (
            f"I searched every page of orders containing the {product.name} ({product.id}){narrowed_to}.\n"
            f"There are {len(ids)} such orders.\n"
            f"Their ids: {', '.join(ids)}.\n"
            f"Together their order totals come to {dollars(total_value)}."
        )
        criteria = [
            called(
                f"Orders were searched by the product ({product.id}).",
                "search_orders",
                {"product_id": product.id},
                weight=1,
                required=True,
            ),
            says_number(
                f"The reply gives the combined value {dollars(total_value)}.", total_value, weight=3, required=True
            ),
            says_pattern(f"The reply lists every one of the {len(ids)} order ids.", every_id, weight=2, required=True),
            says(
                f"The reply includes {last_page_id}, an order only the last page shows.",
                last_page_id,
                weight=1,
                category="completeness",
            ),
            says_number(f"The reply gives the number of orders ({len(ids)}).", len(ids), weight=1),
            judged(
                "The list is easy to scan and the reply says which filter (product, status) was used.",
                category="format",
            ),
        ]
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=self.entity_ids(candidate),
            title=f"All{status_words} orders of {product.name} ({len(ids)} orders, {len(calls)} pages)",
            branch="one status" if status else "every status",
            difficulty="hard" if len(calls) > 2 else "medium",
            instruction=instruction,
            criteria=criteria,
            tags=["paging", "search", "aggregation", "family"],
            reviewer_notes=(
                f"search_orders {query} returns {len(ids)} orders over {len(calls)} pages of {first['limit']}; "
                f"sum of totals {total_value}."
            ),
        )
