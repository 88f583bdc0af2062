"""The catalogue: products of every category (fictional brands, specs valid per ``world_app.specs``),
bundles of products sold together, and the compatibility rules between parts.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from world_app.generator.mess import MessPlan
from world_app.generator.sink import RowSink
from world_app.generator.timeline import Timeline, add_months, cents
from world_app.models import (
    Bundle,
    BundleItem,
    CompatibilityRule,
    Lifecycle,
    Product,
    ProductCategory,
    RuleOperator,
    Severity,
)
from world_app.specs import validate_specs

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


# --- CPUs -------------------------------------------------------------------------------------------

# (brand, line, socket, memory types, model base, launch, integrated graphics)
_CPU_FAMILIES = (
    ("Ardent", "Vireo", "AM4", ["DDR4"], 5000, _when(2021, 3), False),
    ("Ardent", "Vireo", "AM5", ["DDR5"], 7000, _when(2022, 10), True),
    ("Ardent", "Vireo", "AM5", ["DDR5"], 9000, _when(2024, 8), True),
    ("Corvex", "Strata", "LGA1700", ["DDR4", "DDR5"], 13000, _when(2022, 11), True),
    ("Corvex", "Strata", "LGA1700", ["DDR4", "DDR5"], 14000, _when(2023, 10), True),
    ("Corvex", "Strata Ultra", "LGA1851", ["DDR5"], 200, _when(2024, 11), True),
)
# (tier, cores, threads, base GHz, boost GHz, TDP W, price low, price high, cooler included)
_CPU_TIERS = (
    (3, 4, 8, 3.6, 4.6, 65, 89, 119, True),
    (5, 6, 12, 3.7, 5.0, 65, 149, 229, True),
    (7, 8, 16, 3.8, 5.3, 120, 289, 399, False),
    (9, 16, 32, 4.0, 5.7, 170, 479, 649, False),
)


def _cpus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        brand, line, socket, memory, base, launch, igpu = _CPU_FAMILIES[i % len(_CPU_FAMILIES)]
        tier, cores, threads, base_clock, boost, tdp, low, high, cooler = _CPU_TIERS[(i // len(_CPU_FAMILIES)) % 4]
        variant = i // (len(_CPU_FAMILIES) * 4)
        if brand == "Ardent":
            suffix = rng.choice(("", "X", "X3D")) if tier >= 7 else rng.choice(("", "X"))
            model = base + tier * 100 + variant * 50
            name = f"{brand} {line} {tier} {model}{suffix}"
        else:
            suffix = rng.choice(("K", "KF", "F", "")) if tier >= 5 else ""
            model = base + tier * 100 + variant * 50 + (0 if base > 1000 else 45)
            name = f"{brand} {line} {tier} {model}{suffix}"
        graphics = igpu and "F" not in suffix
        extra = 0.1 * rng.randint(0, 3)
        specs = {
            "socket": socket,
            "cores": cores + (2 if variant % 2 and tier > 3 else 0),
            "threads": threads + (4 if variant % 2 and tier > 3 else 0),
            "base_clock_ghz": round(base_clock + extra, 1),
            "boost_clock_ghz": round(boost + extra, 1),
            "tdp_watts": tdp + (0 if "X" not in suffix and "K" not in suffix else 5 * rng.randint(0, 4)),
            "memory_types": list(memory),
            "integrated_graphics": graphics,
            "cooler_included": cooler and "X" not in suffix and "K" not in suffix,
        }
        description = (
            f"{specs['cores']}-core, {specs['threads']}-thread {socket} desktop processor, up to "
            f"{specs['boost_clock_ghz']} GHz, {specs['tdp_watts']} W. Supports {' and '.join(memory)}."
        )
        if specs["cooler_included"]:
            description += " Stock cooler in the box."
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, 36, description, launch))
    return drafts


# --- Motherboards -----------------------------------------------------------------------------------

# (socket, chipset, memory type, PCIe, launch, high end)
_BOARD_PLATFORMS = (
    ("AM4", "V550", "DDR4", "4.0", _when(2021, 2), False),
    ("AM4", "V570", "DDR4", "4.0", _when(2021, 2), True),
    ("AM5", "V650", "DDR5", "4.0", _when(2022, 10), False),
    ("AM5", "V670E", "DDR5", "5.0", _when(2022, 10), True),
    ("LGA1700", "S760", "DDR4", "4.0", _when(2022, 11), False),
    ("LGA1700", "S760", "DDR5", "4.0", _when(2023, 1), False),
    ("LGA1700", "S790", "DDR5", "5.0", _when(2022, 11), True),
    ("LGA1851", "S860", "DDR5", "4.0", _when(2025, 1), False),
    ("LGA1851", "S890", "DDR5", "5.0", _when(2024, 11), True),
)
_BOARD_BRANDS = ("Northgate", "Tessaron", "Valkor", "Brightforge")
_BOARD_SERIES = ("Pro", "Gaming", "Elite", "Edge", "Creator", "Plus")


def _motherboards(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        socket, chipset, memory, pcie, launch, high = _BOARD_PLATFORMS[i % len(_BOARD_PLATFORMS)]
        brand = _BOARD_BRANDS[(i // len(_BOARD_PLATFORMS)) % len(_BOARD_BRANDS)]
        form = rng.choice(("E-ATX", "ATX", "ATX")) if high else rng.choice(("ATX", "ATX", "Micro-ATX", "Mini-ITX"))
        wifi = rng.random() < 0.6
        series = _BOARD_SERIES[(i * 7 + len(brand)) % len(_BOARD_SERIES)]
        size_tag = {"E-ATX": " Extreme", "ATX": "", "Micro-ATX": "M", "Mini-ITX": "-I"}[form]
        name = f"{brand} {chipset}{size_tag} {series}{' WiFi' if wifi else ''}{' D4' if memory == 'DDR4' else ''}"
        slots = 2 if form == "Mini-ITX" else 4
        max_memory = (64 if memory == "DDR4" else 96) if slots == 2 else (128 if memory == "DDR4" else 192)
        specs = {
            "socket": socket,
            "chipset": chipset,
            "form_factor": form,
            "memory_type": memory,
            "memory_slots": slots,
            "max_memory_gb": max_memory,
            "m2_slots": rng.randint(1, 2) if form == "Mini-ITX" else rng.randint(2, 5 if high else 3),
            "pcie_version": pcie,
            "wifi": wifi,
        }
        low, high_price = (259, 499) if high else (99, 219)
        description = (
            f"{form} {socket} motherboard on the {chipset} chipset: {slots} {memory} slots (up to {max_memory} GB), "
            f"{specs['m2_slots']} M.2 slots, PCIe {pcie}{', Wi-Fi' if wifi else ''}."
        )
        drafts.append(Draft(name, brand, _price(rng, low, high_price), specs, 36, description, launch))
    return drafts


# --- GPUs -------------------------------------------------------------------------------------------

# (chip, VRAM GB, TDP W, recommended PSU W, price, power connectors, launch)
_GPU_CHIPS = (
    ("Nyra NX 4060", 8, 115, 550, 299, "1x 8-pin", _when(2023, 6)),
    ("Nyra NX 4070", 12, 200, 650, 549, "1x 16-pin 12V-2x6", _when(2023, 4)),
    ("Nyra NX 4080", 16, 320, 750, 999, "1x 16-pin 12V-2x6", _when(2022, 11)),
    ("Nyra NX 4090", 24, 450, 850, 1599, "1x 16-pin 12V-2x6", _when(2022, 10)),
    ("Nyra NX 5060", 8, 145, 550, 329, "1x 8-pin", _when(2025, 5)),
    ("Nyra NX 5070", 12, 250, 650, 599, "1x 16-pin 12V-2x6", _when(2025, 3)),
    ("Nyra NX 5080", 16, 360, 850, 1049, "1x 16-pin 12V-2x6", _when(2025, 1)),
    ("Nyra NX 5090", 32, 575, 1000, 2099, "1x 16-pin 12V-2x6", _when(2025, 1)),
    ("Aurex AX 7600", 8, 165, 550, 279, "1x 8-pin", _when(2023, 5)),
    ("Aurex AX 7800 XT", 16, 263, 700, 499, "2x 8-pin", _when(2023, 9)),
    ("Aurex AX 7900 XTX", 24, 355, 800, 949, "3x 8-pin", _when(2022, 12)),
    ("Aurex AX 9070 XT", 16, 304, 750, 649, "2x 8-pin", _when(2025, 3)),
)
_GPU_PARTNERS = ("Kestrel", "Tessaron", "Zephyr Labs", "Valkor")
# (edition name, length range mm, slots, price premium $)
_GPU_EDITIONS = (
    ("Compact", (196, 252), 2.0, 0),
    ("Storm OC", (268, 305), 2.5, 30),
    ("Titan Frost", (322, 358), 3.5, 90),
)


def _gpus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        chip, vram, tdp, psu, price, connectors, launch = _GPU_CHIPS[i % len(_GPU_CHIPS)]
        partner = _GPU_PARTNERS[(i // len(_GPU_CHIPS) + i) % len(_GPU_PARTNERS)]
        # Big chips never come as compact cards.
        edition_index = (i // len(_GPU_CHIPS) + i) % 3
        if tdp >= 300 and edition_index == 0:
            edition_index = 2
        edition, (short, long), slots, premium = _GPU_EDITIONS[edition_index]
        length = rng.randint(short, long)
        specs = {
            "chipset": chip,
            "vram_gb": vram,
            "length_mm": length,
            "slots": slots if tdp < 400 else max(slots, 3.0),
            "tdp_watts": tdp,
            "recommended_psu_watts": psu,
            "power_connectors": connectors,
        }
        warranty = 24 if partner == "Kestrel" else 36
        description = (
            f"{chip} graphics card with {vram} GB of memory. {length} mm long, {specs['slots']:g} slots; "
            f"{tdp} W board power, {psu} W PSU recommended; power: {connectors}."
        )
        name = f"{partner} {chip} {edition} {vram}GB"
        drafts.append(Draft(name, partner, (price + premium) * 100 - 1, specs, warranty, description, launch))
    return drafts


# --- Memory -----------------------------------------------------------------------------------------

# (type, total GB, modules, speed MT/s, CAS latency, price $, launch)
_MEMORY_KITS = (
    ("DDR4", 16, 2, 3200, 16, 39, _when(2021, 1)),
    ("DDR4", 32, 2, 3200, 16, 64, _when(2021, 1)),
    ("DDR4", 32, 2, 3600, 18, 69, _when(2021, 6)),
    ("DDR4", 64, 2, 3200, 16, 119, _when(2021, 6)),
    ("DDR4", 64, 4, 3600, 18, 139, _when(2022, 1)),
    ("DDR5", 32, 2, 5600, 36, 89, _when(2022, 10)),
    ("DDR5", 32, 2, 6000, 30, 109, _when(2023, 3)),
    ("DDR5", 48, 2, 6400, 32, 149, _when(2024, 2)),
    ("DDR5", 64, 2, 6000, 30, 189, _when(2023, 6)),
    ("DDR5", 96, 2, 5600, 40, 259, _when(2024, 4)),
    ("DDR5", 128, 4, 5600, 40, 379, _when(2024, 6)),
    ("DDR5", 16, 1, 5600, 46, 49, _when(2022, 12)),
)
_MEMORY_BRANDS = (("Helix", "Vector"), ("Onyx", "Pulse"), ("Kestrel", "Fury Line"))


def _memory(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, total, modules, speed, cas, price, launch = _MEMORY_KITS[i % len(_MEMORY_KITS)]
        brand, line = _MEMORY_BRANDS[(i // len(_MEMORY_KITS) + i) % len(_MEMORY_BRANDS)]
        per_module = total // modules
        layout = f"{modules}x{per_module}GB" if modules > 1 else f"1x{per_module}GB"
        name = f"{brand} {line} {kind}-{speed} {total}GB ({layout}) CL{cas}"
        specs = {"type": kind, "capacity_gb": total, "modules": modules, "speed_mts": speed, "cas_latency": cas}
        description = f"{total} GB {kind} desktop memory kit ({layout}), {speed} MT/s at CL{cas}."
        drafts.append(Draft(name, brand, (price + rng.randint(0, 10)) * 100 - 1, specs, 120, description, launch))
    return drafts


# --- Storage ----------------------------------------------------------------------------------------

# (type, interface, form factor, capacities GB, read MB/s, $ per TB, launch, warranty months)
_STORAGE_LINES = (
    ("nvme", "PCIe 3.0 x4", "M.2 2280", (500, 1000, 2000), 3500, 55, _when(2021, 1), 60),
    ("nvme", "PCIe 4.0 x4", "M.2 2280", (1000, 2000, 4000), 7100, 75, _when(2022, 3), 60),
    ("nvme", "PCIe 5.0 x4", "M.2 2280", (2000, 4000), 12400, 120, _when(2024, 3), 60),
    ("sata_ssd", "SATA III", "2.5in", (500, 1000, 2000, 4000), 550, 60, _when(2021, 1), 36),
    ("hdd", "SATA III", "3.5in", (2000, 4000, 8000, 12000, 16000), 220, 18, _when(2021, 1), 24),
)
_STORAGE_BRANDS = (("Quillon", "Q"), ("Stratus", "S"), ("Meridian", "M"))


def _storage(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, interface, form, capacities, read, per_tb, launch, warranty = _STORAGE_LINES[i % len(_STORAGE_LINES)]
        brand, letter = _STORAGE_BRANDS[(i // len(_STORAGE_LINES) + i) % len(_STORAGE_BRANDS)]
        capacity = capacities[(i // len(_STORAGE_LINES)) % len(capacities)]
        size = f"{capacity // 1000}TB" if capacity >= 1000 else f"{capacity}GB"
        model = {"nvme": f"{letter}{interface[5]}00 NVMe", "sata_ssd": f"{letter}870 SSD", "hdd": f"{letter}Vault HDD"}
        name = f"{brand} {model[kind]} {size}"
        price = max(35, round(per_tb * capacity / 1000 + 15)) * 100 - 1
        specs = {
            "type": kind,
            "capacity_gb": capacity,
            "interface": interface,
            "form_factor": form,
            "read_mbps": read + rng.randint(0, 4) * 50 if kind != "hdd" else read + rng.randint(-4, 6) * 10,
        }
        description = f"{size} {form} {'drive' if kind == 'hdd' else 'solid-state drive'}, {interface}, "
        description += f"up to {specs['read_mbps']} MB/s reads."
        drafts.append(Draft(name, brand, price, specs, warranty, description, launch))
    return drafts


# --- Power supplies ---------------------------------------------------------------------------------

# (watts, efficiency, modular, form factor, price $, warranty months)
_PSU_MODELS = (
    (450, "80+ Bronze", "none", "ATX", 49, 36),
    (550, "80+ Bronze", "semi", "ATX", 64, 36),
    (650, "80+ Gold", "semi", "ATX", 89, 84),
    (750, "80+ Gold", "full", "ATX", 109, 120),
    (850, "80+ Gold", "full", "ATX", 129, 120),
    (1000, "80+ Gold", "full", "ATX", 179, 120),
    (850, "80+ Platinum", "full", "ATX", 169, 120),
    (1200, "80+ Platinum", "full", "ATX", 279, 120),
    (1600, "80+ Titanium", "full", "ATX", 449, 144),
    (600, "80+ Gold", "full", "SFX", 119, 84),
    (750, "80+ Gold", "full", "SFX", 139, 84),
    (850, "80+ Platinum", "full", "SFX", 189, 120),
)
_PSU_BRANDS = (("Voltaris", "Current"), ("Ironpeak", "Anvil"), ("Gridline", "Flux"))


def _psus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        watts, efficiency, modular, form, price, warranty = _PSU_MODELS[i % len(_PSU_MODELS)]
        brand, line = _PSU_BRANDS[(i // len(_PSU_MODELS) + i) % len(_PSU_BRANDS)]
        grade = efficiency.split()[-1]
        name = f"{brand} {line} {watts} {grade} {form}"
        specs = {"wattage": watts, "efficiency": efficiency, "modular": modular, "form_factor": form}
        description = f"{watts} W {form} power supply, {efficiency}, {modular}{'-modular' if modular != 'none' else ''}"
        description = description.replace("none", "non-modular") + " cabling."
        launch = _when(2021, 1) if watts < 1000 else _when(2022, 6)
        drafts.append(Draft(name, brand, (price + rng.randint(0, 8)) * 100 - 1, specs, warranty, description, launch))
    return drafts


# --- Cases ------------------------------------------------------------------------------------------

# (form factor, boards, GPU length range, cooler height range, radiators, PSU form factor, price range)
_CASE_SHAPES = (
    (
        "mid_tower",
        ["ATX", "Micro-ATX", "Mini-ITX"],
        (330, 420),
        (160, 180),
        [120, 140, 240, 280, 360],
        "ATX",
        (79, 169),
    ),
    ("mid_tower", ["ATX", "Micro-ATX", "Mini-ITX"], (305, 330), (155, 165), [120, 240, 280], "ATX", (59, 99)),
    (
        "full_tower",
        ["E-ATX", "ATX", "Micro-ATX", "Mini-ITX"],
        (420, 460),
        (180, 190),
        [120, 140, 240, 280, 360, 420],
        "ATX",
        (179, 249),
    ),
    ("mini_tower", ["Micro-ATX", "Mini-ITX"], (300, 340), (150, 165), [120, 240], "ATX", (59, 89)),
    ("small_form_factor", ["Mini-ITX"], (250, 335), (50, 70), [120, 240], "SFX", (99, 179)),
    ("small_form_factor", ["Mini-ITX"], (200, 260), (45, 60), [], "SFX", (79, 129)),
)
_CASE_BRANDS = (
    ("Arcwood", ("Grove", "Timber", "Canopy")),
    ("Monolith", ("Slab", "Obelisk", "Plinth")),
    ("Lumen Works", ("Prism", "Halo", "Beam")),
)


def _cases(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        form, boards, (gpu_low, gpu_high), (cool_low, cool_high), radiators, psu, (low, high) = _CASE_SHAPES[
            i % len(_CASE_SHAPES)
        ]
        brand, lines = _CASE_BRANDS[(i // len(_CASE_SHAPES) + i) % len(_CASE_BRANDS)]
        line = lines[(i // len(_CASE_SHAPES)) % len(lines)]
        size_word = {"mid_tower": "Mid", "full_tower": "XL", "mini_tower": "Mini", "small_form_factor": "ITX"}[form]
        color = rng.choice(("Black", "White", "Black", "Sand"))
        name = f"{brand} {line} {size_word} {i // len(_CASE_SHAPES) + 1}00 {color}"
        specs = {
            "form_factor": form,
            "supported_motherboards": list(boards),
            "max_gpu_length_mm": rng.randint(gpu_low, gpu_high),
            "max_cooler_height_mm": rng.randint(cool_low, cool_high),
            "radiator_support_mm": list(radiators),
            "psu_form_factor": psu,
            "included_fans": rng.randint(0, 2) if form == "small_form_factor" else rng.randint(1, 4),
        }
        description = (
            f"{form.replace('_', ' ').title()} case for {', '.join(boards)} boards. Fits GPUs up to "
            f"{specs['max_gpu_length_mm']} mm and CPU coolers up to {specs['max_cooler_height_mm']} mm; "
            f"{psu} power supply."
        )
        warranty = 24 if form != "mini_tower" else 12
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, _when(2021, 4)))
    return drafts


# --- Cooling ----------------------------------------------------------------------------------------

_ALL_SOCKETS = ["AM4", "AM5", "LGA1700", "LGA1851"]
# (type, name, height range, radiator, TDP rating, sockets, price range, launch, warranty)
_COOLERS = (
    ("air", "Whisper LP", (47, 58), None, 95, _ALL_SOCKETS, (39, 59), _when(2022, 1), 24),
    ("air", "Summit 120", (152, 158), None, 180, ["AM4", "LGA1700"], (29, 39), _when(2021, 1), 24),
    ("air", "Summit 120 R2", (154, 158), None, 200, _ALL_SOCKETS, (34, 44), _when(2024, 2), 24),
    ("air", "Ridge Dual", (163, 168), None, 250, _ALL_SOCKETS, (79, 109), _when(2022, 9), 72),
    ("aio", "Cascade 240", (None, None), 240, 250, _ALL_SOCKETS, (89, 129), _when(2022, 3), 60),
    ("aio", "Cascade 280", (None, None), 280, 280, ["AM4", "AM5", "LGA1700"], (119, 149), _when(2021, 5), 60),
    ("aio", "Cascade 360", (None, None), 360, 320, _ALL_SOCKETS, (139, 189), _when(2022, 3), 60),
    ("aio", "Cascade 420", (None, None), 420, 350, _ALL_SOCKETS, (199, 249), _when(2023, 5), 60),
)
_COOLER_BRANDS = ("Frostline", "Borealis", "Glacier Peak")


def _coolers(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, line, (h_low, h_high), radiator, rating, sockets, (low, high), launch, warranty = _COOLERS[
            i % len(_COOLERS)
        ]
        brand = _COOLER_BRANDS[(i // len(_COOLERS) + i) % len(_COOLER_BRANDS)]
        generation = i // len(_COOLERS)
        name = f"{brand} {line}" + (f" Mk{generation + 1}" if generation else "")
        specs = {
            "type": kind,
            "sockets": list(sockets),
            "height_mm": rng.randint(h_low, h_high) if h_low else None,
            "radiator_size_mm": radiator,
            "tdp_rating_watts": min(400, rating + 10 * (generation % 6)),
        }
        if kind == "air":
            description = f"Air CPU cooler, {specs['height_mm']} mm tall, rated for {specs['tdp_rating_watts']} W."
        else:
            description = f"{radiator} mm all-in-one liquid cooler, rated for {specs['tdp_rating_watts']} W."
        description += f" Sockets: {', '.join(sockets)}."
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, launch))
    return drafts


# --- Systems ----------------------------------------------------------------------------------------


def _system_drafts(rng, count, made, *, workstation: bool) -> list[Draft]:
    cpus = [d for d in made["cpu"] if d.specs["cores"] >= (12 if workstation else 6)] or made["cpu"]
    gpus = [d for d in made["gpu"] if d.specs["vram_gb"] >= (16 if workstation else 8)] or made["gpu"]
    drafts = []
    for i in range(count):
        cpu, gpu = cpus[(i * 5 + 1) % len(cpus)], gpus[(i * 7 + 2) % len(gpus)]
        memory = rng.choice((64, 128, 256)) if workstation else rng.choice((16, 32, 32, 64))
        storage = rng.choice((2000, 4000, 8000)) if workstation else rng.choice((1000, 1000, 2000))
        psu = max(650, math.ceil((gpu.specs["tdp_watts"] + cpu.specs["tdp_watts"] + 150) * 1.3 / 50) * 50)
        specs = {
            "cpu": cpu.name,
            "gpu": gpu.name,
            "memory_gb": memory,
            "storage_gb": storage,
            "operating_system": "Windows 11 Pro" if workstation else rng.choice(("Windows 11 Home", "Windows 11 Pro")),
            "psu_watts": min(psu, 1600),
        }
        brand = "Corecraft" if i % 3 else "Hyperion Systems"
        line = (
            ("Atelier W" if workstation else "Forge G")
            if brand == "Corecraft"
            else ("Studio" if workstation else "Nova")
        )
        name = f"{brand} {line}{i + 1:02d} ({cpu.name.split(' ', 1)[1]}, {gpu.specs['chipset'].split(' ', 1)[1]})"
        price = cpu.price_cents + gpu.price_cents + memory * 300 + storage * 6 + (900 if workstation else 350) * 100
        price = price // 10000 * 10000 - 1
        description = (
            f"{'Workstation' if workstation else 'Gaming PC'} assembled and tested by {brand}: {cpu.name}, "
            f"{gpu.name}, {memory} GB memory, {storage // 1000} TB storage, {specs['operating_system']}."
        )
        launch = max(cpu.first_sold, gpu.first_sold) + timedelta(days=30)
        drafts.append(Draft(name, brand, price, specs, 36 if workstation else 24, description, launch))
    return drafts


def _prebuilts(rng, count, made) -> list[Draft]:
    return _system_drafts(rng, count, made, workstation=False)


def _workstations(rng, count, made) -> list[Draft]:
    return _system_drafts(rng, count, made, workstation=True)


# --- Monitors and peripherals -----------------------------------------------------------------------

# (size in, resolution, refresh Hz, panel, price $)
_MONITORS = (
    (24.0, "1920x1080", 165, "IPS", 149),
    (27.0, "2560x1440", 170, "IPS", 249),
    (27.0, "2560x1440", 240, "OLED", 599),
    (32.0, "3840x2160", 144, "IPS", 549),
    (34.0, "3440x1440", 165, "VA", 399),
    (27.0, "3840x2160", 60, "IPS", 299),
    (24.5, "1920x1080", 360, "TN", 329),
    (32.0, "3840x2160", 240, "OLED", 999),
)
_MONITOR_BRANDS = (("Viewmark", "VM"), ("Lumora", "L"), ("Pixelline", "PX"))


def _monitors(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        size, resolution, refresh, panel, price = _MONITORS[i % len(_MONITORS)]
        brand, code = _MONITOR_BRANDS[(i // len(_MONITORS) + i) % len(_MONITOR_BRANDS)]
        inputs = ["HDMI 2.1", "DisplayPort 1.4"] + (["USB-C"] if rng.random() < 0.4 else [])
        generation = i // len(_MONITORS)
        tag = {"1920x1080": "F", "2560x1440": "Q", "3440x1440": "W", "3840x2160": "U"}[resolution]
        model = f"{code}{int(size)}{tag}{panel[0]}{generation + 1 if generation else ''}"
        name = f'{brand} {model} {size:g}" {resolution} {panel} {refresh}Hz'
        specs = {"size_in": size, "resolution": resolution, "refresh_hz": refresh, "panel": panel, "inputs": inputs}
        description = f"{size:g}-inch {resolution} {panel} monitor at {refresh} Hz; inputs: {', '.join(inputs)}."
        warranty = 36 if panel != "TN" else 12
        drafts.append(
            Draft(
                name,
                brand,
                (price + rng.randint(0, 20)) * 100 - 1,
                specs,
                warranty,
                description,
                _when(2021 + i % 4, 3),
            )
        )
    return drafts


def _peripherals(rng, count, *, kind: str) -> list[Draft]:
    table = {
        "keyboard": (("Talon Gear", "Strikeline", "Keywright"), ("Vanta", "Ember", "Quill", "Forge"), (39, 199)),
        "mouse": (("Talon Gear", "Strikeline", "Keywright"), ("Glide", "Dart", "Viper Lite", "Arc"), (24, 149)),
        "headset": (("Echo Audio", "Strikeline", "Sonora"), ("Drift", "Halo", "Canyon", "Pulse"), (39, 249)),
    }
    brands, lines, (low, high) = table[kind]
    layouts = ("full-size ANSI", "TKL ANSI", "75% ANSI", "65% ANSI", "full-size ISO")
    drafts = []
    for i in range(count):
        brand, line = brands[i % len(brands)], lines[(i // len(brands)) % len(lines)]
        connection = rng.choice(("wired", "wired", "wireless", "wireless+bluetooth", "bluetooth"))
        color = rng.choice(("black", "white", "gray", "black"))
        specs = {
            "connection": connection,
            "color": color,
            "layout": layouts[i % len(layouts)] if kind == "keyboard" else None,
        }
        label = {"keyboard": "Keyboard", "mouse": "Mouse", "headset": "Headset"}[kind]
        generation = i // (len(brands) * len(lines))
        name = f"{brand} {line}{f' {generation + 1}' if generation else ''} "
        name += f"{'Wireless ' if 'wireless' in connection else ''}{label}"
        description = f"{connection.replace('+', ' and ').capitalize()} {kind} in {color}"
        description += f", {specs['layout']} layout." if specs["layout"] else "."
        warranty = 24 if rng.random() < 0.4 else 12
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, _when(2021 + i % 4, 6)))
    return drafts


def _keyboards(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="keyboard")


def _mice(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="mouse")


def _headsets(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="headset")


# (kind, standard, max speed Mbps, label, price $)
_NETWORKING = (
    ("router", "Wi-Fi 6", 3000, "AX3000 Router", 99),
    ("router", "Wi-Fi 6E", 5400, "AXE5400 Router", 199),
    ("router", "Wi-Fi 7", 19000, "BE19000 Router", 449),
    ("wifi_adapter", "Wi-Fi 6E PCIe", 2400, "AXE2400 PCIe Adapter", 49),
    ("wifi_adapter", "Wi-Fi 6 USB", 1200, "AX1200 USB Adapter", 29),
    ("switch", "2.5GbE", 2500, "5-Port 2.5G Switch", 89),
    ("switch", "Gigabit Ethernet", 1000, "8-Port Gigabit Switch", 29),
    ("ethernet_card", "10GbE PCIe", 10000, "10G PCIe Network Card", 119),
)


def _networking(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, standard, speed, label, price = _NETWORKING[i % len(_NETWORKING)]
        brand = ("Skyrelay", "Meshpoint")[(i // len(_NETWORKING) + i) % 2]
        specs = {"kind": kind, "standard": standard, "max_speed_mbps": speed}
        description = f"{standard} {kind.replace('_', ' ')}, up to {speed} Mbps."
        drafts.append(
            Draft(
                f"{brand} {label}",
                brand,
                (price + rng.randint(0, 10)) * 100 - 1,
                specs,
                12 if kind != "router" else 24,
                description,
                _when(2021 + i % 4, 2),
            )
        )
    return drafts


# (kind, length m, label, price $)
_CABLES = (
    ("hdmi", 2.0, "HDMI 2.1 Ultra High Speed Cable 2 m", 19),
    ("displayport", 1.5, "DisplayPort 1.4 Cable 1.5 m", 17),
    ("usb_c", 1.0, "USB-C 240 W Cable 1 m", 15),
    ("ethernet", 5.0, "Cat 6 Ethernet Cable 5 m", 12),
    ("power", 0.6, "12V-2x6 GPU Power Cable 0.6 m", 24),
    ("sata", 0.5, "SATA III Data Cable 0.5 m (2-pack)", 8),
    ("extension", 0.3, "PCIe 4.0 Riser Cable 0.3 m", 49),
    ("displayport", 2.0, "DisplayPort 2.1 Cable 2 m", 29),
)


def _cables(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, length, label, price = _CABLES[i % len(_CABLES)]
        brand = ("Corecraft Essentials", "Linkwell")[(i // len(_CABLES) + i) % 2]
        specs = {"kind": kind, "length_m": length}
        drafts.append(
            Draft(
                f"{brand} {label}", brand, (price + rng.randint(0, 3)) * 100 - 1, specs, 12, f"{label}.", _when(2021, 1)
            )
        )
    return drafts


# (kind, compatible with, label, price $)
_ACCESSORIES = (
    ("thermal paste", [], "Thermal Compound 4 g", 9),
    ("case fan", ["case"], "120 mm PWM Case Fan 3-Pack", 29),
    ("gpu support bracket", ["gpu"], "Adjustable GPU Support Bracket", 14),
    ("psu adapter bracket", ["SFX"], "SFX-to-ATX PSU Bracket", 12),
    ("cooler mounting kit", ["LGA1851"], "LGA1851 Cooler Mounting Kit", 9),
    ("cooler mounting kit", ["AM5"], "AM5 Offset Mounting Kit", 9),
    ("anti-static strap", [], "Anti-Static Wrist Strap", 7),
    ("m.2 heatsink", ["M.2 2280"], "M.2 2280 SSD Heatsink", 15),
    ("cable combs", [], "Cable Comb Set (24 pcs)", 11),
    ("rgb controller", ["case"], "ARGB Fan and Light Hub", 24),
    ("vertical gpu mount", ["PCIe 4.0"], "Vertical GPU Mount with PCIe 4.0 Riser", 69),
    ("toolkit", [], "PC Builder Precision Screwdriver Kit", 29),
)


def _accessories(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, compatible, label, price = _ACCESSORIES[i % len(_ACCESSORIES)]
        brand = ("Corecraft Essentials", "Borealis", "Linkwell")[(i // len(_ACCESSORIES) + i) % 3]
        specs = {"kind": kind, "compatible_with": list(compatible)}
        description = f"{label}." + (f" For {', '.join(compatible)}." if compatible else "")
        drafts.append(
            Draft(
                f"{brand} {label}", brand, (price + rng.randint(0, 3)) * 100 - 1, specs, 12, description, _when(2021, 1)
            )
        )
    return drafts


# --- Compatibility rules ----------------------------------------------------------------------------


def compatibility_rules(timeline: Timeline) -> list[CompatibilityRule]:
    """The rules the build checker applies (see ``world_app.compatibility`` for their semantics)."""
    specs = (
        (
            "CPU socket matches motherboard",
            "error",
            "cpu",
            "socket",
            "eq",
            "motherboard",
            "socket",
            "1.00",
            "{a} uses socket {a_value} but {b} has socket {b_value}.",
        ),
        (
            "Memory type matches motherboard",
            "error",
            "memory",
            "type",
            "eq",
            "motherboard",
            "memory_type",
            "1.00",
            "{a} is {a_value} memory but {b} takes {b_value}.",
        ),
        (
            "CPU supports memory type",
            "error",
            "memory",
            "type",
            "in",
            "cpu",
            "memory_types",
            "1.00",
            "{b} supports {b_value} memory, not {a_value} ({a}).",
        ),
        (
            "Cooler supports CPU socket",
            "error",
            "cpu",
            "socket",
            "in",
            "cooling",
            "sockets",
            "1.00",
            "{b} does not mount on socket {a_value} ({a}); it supports {b_value}.",
        ),
        (
            "Motherboard fits case",
            "error",
            "motherboard",
            "form_factor",
            "in",
            "case",
            "supported_motherboards",
            "1.00",
            "{b} does not take {a_value} motherboards like {a}; it supports {b_value}.",
        ),
        (
            "GPU fits case",
            "error",
            "gpu",
            "length_mm",
            "lte",
            "case",
            "max_gpu_length_mm",
            "1.00",
            "{a} is {a_value} mm long but {b} fits graphics cards up to {b_value} mm.",
        ),
        (
            "Air cooler fits case",
            "error",
            "cooling",
            "height_mm",
            "lte",
            "case",
            "max_cooler_height_mm",
            "1.00",
            "{a} is {a_value} mm tall but {b} fits CPU coolers up to {b_value} mm.",
        ),
        (
            "Radiator fits case",
            "error",
            "cooling",
            "radiator_size_mm",
            "in",
            "case",
            "radiator_support_mm",
            "1.00",
            "{b} has no mount for the {a_value} mm radiator of {a} (supports {b_value} mm).",
        ),
        (
            "PSU form factor fits case",
            "error",
            "psu",
            "form_factor",
            "eq",
            "case",
            "psu_form_factor",
            "1.00",
            "{a} is an {a_value} power supply but {b} takes {b_value} units.",
        ),
        (
            "PSU covers total power draw",
            "error",
            "gpu",
            "",
            "total_draw_lte",
            "psu",
            "wattage",
            "1.00",
            "The build draws about {a_value} W under load but {b} delivers only {b_value} W.",
        ),
        (
            "PSU headroom",
            "warning",
            "gpu",
            "",
            "total_draw_lte",
            "psu",
            "wattage",
            "1.30",
            "{b} ({b_value} W) leaves less than 30% headroom over the build's load (needs about {a_value} W).",
        ),
        (
            "GPU recommended PSU",
            "warning",
            "gpu",
            "recommended_psu_watts",
            "lte",
            "psu",
            "wattage",
            "1.00",
            "{a} recommends a {a_value} W power supply; {b} is {b_value} W.",
        ),
        (
            "Cooler handles CPU heat",
            "warning",
            "cpu",
            "tdp_watts",
            "lte",
            "cooling",
            "tdp_rating_watts",
            "1.00",
            "{a} puts out {a_value} W but {b} is rated for {b_value} W; expect throttling.",
        ),
        (
            "Memory modules fit motherboard slots",
            "error",
            "memory",
            "modules",
            "lte",
            "motherboard",
            "memory_slots",
            "1.00",
            "{a} has {a_value} modules but {b} has only {b_value} memory slots.",
        ),
    )
    created = timeline.at(date(2022, 6, 1), 10)
    rules = [
        CompatibilityRule(
            id=f"cr-{number:03d}",
            name=name,
            severity=Severity(severity),
            category_a=ProductCategory(category_a),
            field_a=field_a,
            operator=RuleOperator(operator),
            category_b=ProductCategory(category_b),
            field_b=field_b,
            factor=Decimal(factor),
            message=message,
            is_active=True,
            created_at=created,
            updated_at=created,
        )
        for number, (name, severity, category_a, field_a, operator, category_b, field_b, factor, message) in enumerate(
            specs, start=1
        )
    ]
    # A retired rule stays on file, inactive: the checker must skip it (PCIe 5.0 cards run fine in 4.0 slots).
    retired = timeline.at(date(2024, 2, 1), 10)
    rules.append(
        CompatibilityRule(
            id=f"cr-{len(rules) + 1:03d}",
            name="Storage interface generation (retired)",
            severity=Severity.WARNING,
            category_a=ProductCategory.STORAGE,
            field_a="interface",
            operator=RuleOperator.EQUAL,
            category_b=ProductCategory.MOTHERBOARD,
            field_b="pcie_version",
            factor=Decimal("1.00"),
            message="{a} ({a_value}) runs below its rated speed on {b} (PCIe {b_value}).",
            is_active=False,
            created_at=created,
            updated_at=retired,
        )
    )
    return rules


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
