"""The catalogue built: ``build_catalog`` drafts every category's products, turns each draft into a product row
(lifecycle, stock, release date; a few warranties misstated as mess), adds the bundles and the compatibility rules.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from datetime import date, timedelta

from world_app.generator.catalog.compatibility import compatibility_rules
from world_app.generator.catalog.components import (
    _cases,
    _coolers,
    _cpus,
    _gpus,
    _memory,
    _motherboards,
    _psus,
    _storage,
)
from world_app.generator.catalog.drafts import _SKU_CODES, CATEGORY_COUNTS, Catalog, Draft, _stock_level
from world_app.generator.catalog.systems import (
    _accessories,
    _cables,
    _headsets,
    _keyboards,
    _mice,
    _monitors,
    _networking,
    _prebuilts,
    _workstations,
)
from world_app.generator.mess import MessPlan
from world_app.generator.sink import RowSink
from world_app.generator.timeline import Timeline, add_months, cents
from world_app.models import Bundle, BundleItem, Lifecycle, Product
from world_app.specs import validate_specs


def build_catalog(*, rng: random.Random, scale: float, timeline: Timeline, sink: RowSink, mess: MessPlan) -> Catalog:
    growth = math.sqrt(scale)
    products: list[Product] = []
    sold_until: dict[str, date] = {}
    makers: dict[str, Callable[[random.Random, int, dict[str, list[Draft]]], list[Draft]]] = {
        "cpu": _cpus,
        "motherboard": _motherboards,
        "gpu": _gpus,
        "memory": _memory,
        "storage": _storage,
        "psu": _psus,
        "case": _cases,
        "cooling": _coolers,
        "prebuilt": _prebuilts,
        "workstation": _workstations,
        "monitor": _monitors,
        "keyboard": _keyboards,
        "mouse": _mice,
        "headset": _headsets,
        "networking": _networking,
        "cable": _cables,
        "accessory": _accessories,
    }
    made: dict[str, list[Draft]] = {}
    for category, base in CATEGORY_COUNTS.items():
        count = max(2, round(base * growth))
        made[category] = makers[category](rng, count, made)
    skus: set[str] = set()
    names: Counter[str] = Counter()
    for category in CATEGORY_COUNTS:
        for serial, draft in enumerate(made[category], start=1):
            product = _product_from_draft(
                rng, draft, category=category, number=len(products) + 1, serial=serial, timeline=timeline
            )
            if product.sku in skus:
                product.sku = f"{product.sku}-{serial}"
            skus.add(product.sku)
            # Big catalogues repeat a model: later runs of it are revisions, as manufacturers name them.
            revision = names[product.name]
            names[product.name] += 1
            if revision:
                product.name = f"{product.name} Rev. {revision + 1}"
            if product.lifecycle in (Lifecycle.DISCONTINUED, Lifecycle.END_OF_LIFE):
                sold_until[product.id] = product.updated_at.date()
            products.append(product)
    _misstate_warranties(products, mess)
    catalog = Catalog(products=products, rules=compatibility_rules(timeline), sold_until=sold_until)
    catalog.index(rng)
    for product in products:
        sink.add(product)
    for rule in catalog.rules:
        sink.add(rule)
    catalog.bundles = _bundles(rng, catalog, scale=scale, timeline=timeline, sink=sink)
    return catalog


def _misstate_warranties(products: list[Product], mess: MessPlan) -> None:
    """Copy errors on product pages: a description promising a warranty term the record does not have."""
    candidates = [p for p in products if p.warranty_months >= 24 and p.warranty_months % 12 == 0]
    for product in mess.pick(candidates, mess.handful()):
        years = product.warranty_months // 12 + mess.rng.choice((1, 2))
        product.description = f"{product.description} Backed by a {years}-year warranty."
        mess.record(
            "warranty_term_mismatch",
            product.id,
            note=f"description says {years} years; warranty_months is {product.warranty_months}",
        )


def _product_from_draft(
    rng: random.Random, draft: Draft, *, category: str, number: int, serial: int, timeline: Timeline
) -> Product:
    specs = validate_specs(category, draft.specs)
    release = draft.first_sold + timedelta(days=rng.randint(0, 120))
    lifecycle = Lifecycle.ACTIVE
    stock = _stock_level(rng)
    backorderable = False
    ended: date | None = None
    if release > timeline.today - timedelta(days=20):
        release = timeline.today - timedelta(days=rng.randint(20, 60))
    age_days = (timeline.today - release).days
    roll = rng.random()
    if age_days > 900 and roll < 0.10:
        lifecycle = Lifecycle.END_OF_LIFE
        ended = release + timedelta(days=rng.randint(540, max(541, age_days - 200)))
        stock = 0
    elif age_days > 600 and roll < 0.25:
        lifecycle = Lifecycle.DISCONTINUED
        ended = release + timedelta(days=rng.randint(420, max(421, age_days - 45)))
        stock = rng.choice((0, 0, 0, 1, 2, 3))
    elif age_days < 200 and roll < 0.06:
        # Announced, not yet shipping: orders are taken as preorders.
        lifecycle = Lifecycle.PREORDER
        release = timeline.today + timedelta(days=rng.randint(10, 75))
        stock, backorderable = 0, True
    elif roll > 0.91:
        stock = 0
        backorderable = rng.random() < 0.6
    created = timeline.at(min(release, timeline.today) - timedelta(days=rng.randint(14, 60)), 10)
    updated = timeline.at(ended, 17) if ended else timeline.at(min(release, timeline.today), 11)
    brand_code = "".join(ch for ch in draft.brand.upper() if ch.isalpha())[:3]
    return Product(
        id=f"prd-{number:05d}",
        sku=f"{_SKU_CODES[category]}-{brand_code}-{serial:04d}",
        name=draft.name,
        brand=draft.brand,
        category=category,
        price=cents(draft.price_cents),
        specs=specs,
        warranty_months=draft.warranty_months,
        stock_quantity=stock,
        backorderable=backorderable,
        lifecycle=lifecycle,
        release_date=release,
        description=draft.description,
        created_at=created,
        updated_at=updated,
    )


# --- Bundles ----------------------------------------------------------------------------------------


def _bundles(rng: random.Random, catalog: Catalog, *, scale: float, timeline: Timeline, sink: RowSink) -> list[Bundle]:
    active = [p for p in catalog.products if p.lifecycle == Lifecycle.ACTIVE]

    def of(category: str) -> list[Product]:
        return [p for p in active if p.category == category]

    cpus, boards, memory = of("cpu"), of("motherboard"), of("memory")
    recipes: list[tuple[str, list[tuple[Product, int]]]] = []
    count = max(4, round(20 * math.sqrt(scale)))
    attempts = 0
    while len(recipes) < count and attempts < count * 20:
        attempts += 1
        kind = attempts % 6
        if kind in (0, 1) and cpus and boards:
            cpu = rng.choice(cpus)
            fitting = [b for b in boards if b.specs["socket"] == cpu.specs["socket"]]
            if not fitting:
                continue
            board = rng.choice(fitting)
            sticks = [m for m in memory if m.specs["type"] == board.specs["memory_type"]]
            parts = [(cpu, 1), (board, 1)] + ([(rng.choice(sticks), 1)] if kind == 1 and sticks else [])
            label = "CPU + motherboard combo" if len(parts) == 2 else "Upgrade kit (CPU, board, memory)"
        elif kind == 2:
            parts = [(rng.choice(of(c)), 1) for c in ("keyboard", "mouse", "headset") if of(c)]
            label = "Desk setup (keyboard, mouse, headset)"
        elif kind == 3 and of("storage"):
            parts = [(rng.choice(of("storage")), 2)]
            label = "Storage two-pack"
        elif kind == 4 and of("monitor") and of("cable"):
            parts = [(rng.choice(of("monitor")), 1), (rng.choice(of("cable")), 1)]
            label = "Monitor and cable set"
        elif of("cooling") and of("accessory"):
            parts = [(rng.choice(of("cooling")), 1), (rng.choice(of("accessory")), 1)]
            label = "Cooling kit"
        else:
            continue
        ids = [p.id for p, _ in parts]
        if len(set(ids)) != len(ids) or any(sorted(ids) == sorted(p.id for p, _ in r[1]) for r in recipes):
            continue
        recipes.append((label, parts))
    bundles = []
    for number, (label, parts) in enumerate(recipes, start=1):
        full = sum(int(p.price * 100) * q for p, q in parts)
        price = max(99, full * rng.randint(86, 95) // 100 // 100 * 100 - 1)
        start = timeline.today - timedelta(days=rng.randint(20, 700))
        end = add_months(start, rng.choice((1, 2, 3, 6))) if rng.random() < 0.5 else None
        expired = end is not None and end < timeline.today
        bundle = Bundle(
            id=f"bnd-{number:04d}",
            sku=f"BND-{number:04d}",
            name=f"{label}: " + " + ".join(p.name.split(" (")[0] for p, _ in parts)[:150],
            price=cents(price),
            is_active=not expired,
            valid_from=start,
            valid_until=end,
            description=f"Save ${cents(full - price)} versus buying the {len(parts)} items separately.",
            created_at=timeline.at(start - timedelta(days=3), 9),
            updated_at=timeline.at(end if expired else start, 9),
        )
        bundles.append(bundle)
        sink.add(bundle)
        for position, (product, quantity) in enumerate(parts, start=1):
            sink.add(BundleItem(id=f"bni-{number:04d}-{position}", bundle=bundle, product=product, quantity=quantity))
    return bundles
