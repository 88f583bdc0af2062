"""What every category's product lines share: how many products per category and how often each sells, a product
before it is a row (``Draft``), the catalogue built (``Catalog``: by category, sellable on a day, drawn by
popularity), SKU codes, stock levels, prices and launch dates.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field
from datetime import date

from world_app.models import Bundle, CompatibilityRule, Lifecycle, Product

# Products per category at scale 1; the catalogue grows with the square root of the scale.
CATEGORY_COUNTS: dict[str, int] = {
    "cpu": 22,
    "motherboard": 24,
    "gpu": 24,
    "memory": 18,
    "storage": 20,
    "psu": 16,
    "case": 16,
    "cooling": 16,
    "prebuilt": 10,
    "workstation": 6,
    "monitor": 16,
    "keyboard": 12,
    "mouse": 12,
    "headset": 10,
    "networking": 10,
    "cable": 10,
    "accessory": 12,
}
# How often a category shows up on an order line (relative).
CATEGORY_ORDER_WEIGHT: dict[str, int] = {
    "cpu": 6,
    "motherboard": 5,
    "gpu": 8,
    "memory": 8,
    "storage": 10,
    "psu": 5,
    "case": 4,
    "cooling": 5,
    "prebuilt": 3,
    "workstation": 1,
    "monitor": 6,
    "keyboard": 6,
    "mouse": 7,
    "headset": 5,
    "networking": 3,
    "cable": 8,
    "accessory": 6,
}


@dataclass
class Draft:
    name: str
    brand: str
    price_cents: int
    specs: dict
    warranty_months: int
    description: str
    first_sold: date  # the product line's launch; the release date falls shortly after


@dataclass
class Catalog:
    products: list[Product]
    rules: list[CompatibilityRule]
    bundles: list[Bundle] = field(default_factory=list)
    # Last day a product was sold (discontinued and end-of-life products only).
    sold_until: dict[str, date] = field(default_factory=dict)
    _by_category: dict[str, list[Product]] = field(default_factory=dict)
    _order_cumulative: list[float] = field(default_factory=list)
    _order_products: list[Product] = field(default_factory=list)

    def by_category(self, category: str) -> list[Product]:
        return self._by_category.get(category, [])

    def sellable_on(self, product: Product, day: date) -> bool:
        if product.lifecycle == Lifecycle.PREORDER or product.release_date is None or product.release_date > day:
            return False
        until = self.sold_until.get(product.id)
        return until is None or day <= until

    def pick_for_order(self, rng: random.Random, day: date, *, exclude: list[str]) -> Product | None:
        """A product sold on ``day``, drawn by popularity (None if none found after a few tries)."""
        for _ in range(40):
            index = bisect.bisect_left(self._order_cumulative, rng.random() * self._order_cumulative[-1])
            product = self._order_products[min(index, len(self._order_products) - 1)]
            if product.id not in exclude and self.sellable_on(product, day):
                return product
        return None

    def index(self, rng: random.Random) -> None:
        for product in self.products:
            self._by_category.setdefault(product.category, []).append(product)
        total = 0.0
        for category in CATEGORY_COUNTS:
            members = self._by_category.get(category, [])
            popularity = [rng.paretovariate(1.6) for _ in members]
            norm = sum(popularity) or 1.0
            for product, weight in zip(members, popularity, strict=True):
                total += CATEGORY_ORDER_WEIGHT[category] * weight / norm
                self._order_cumulative.append(total)
                self._order_products.append(product)


_SKU_CODES = {
    "cpu": "CPU",
    "motherboard": "MB",
    "gpu": "GPU",
    "memory": "MEM",
    "storage": "STO",
    "psu": "PSU",
    "case": "CASE",
    "cooling": "COOL",
    "prebuilt": "PC",
    "workstation": "WS",
    "monitor": "MON",
    "keyboard": "KB",
    "mouse": "MSE",
    "headset": "HS",
    "networking": "NET",
    "cable": "CBL",
    "accessory": "ACC",
}


def _stock_level(rng: random.Random) -> int:
    return int(min(400, rng.lognormvariate(3.2, 0.9)))


def _price(rng: random.Random, low: int, high: int) -> int:
    """A shelf price between ``low`` and ``high`` dollars, ending in .99."""
    return rng.randint(low, high) * 100 - 1


def _when(year: int, month: int = 1) -> date:
    return date(year, month, 1)
