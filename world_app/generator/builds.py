"""Customers' PC builds: most compatible, some breaking exactly one compatibility rule.

Parts are chosen so the shared evaluator (``world_app.compatibility``) finds what the build is meant to
have: no violation, or exactly the one planned.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from world_app.compatibility import build_draw_watts, check_compatibility
from world_app.generator.catalog import Catalog
from world_app.generator.people import CustomerFacts, People
from world_app.generator.timeline import Timeline
from world_app.generator.vocabulary import BUILD_NAME_PATTERNS
from world_app.models import Product

BUILDS_AT_SCALE_1 = 150
# Share of builds made to break exactly one rule.
INCOMPATIBLE_SHARE = 0.16
# Rules a build may be made to break, tried in the drawn order until one can be.
BREAKABLE_RULES = (
    "GPU fits case",
    "CPU socket matches motherboard",
    "Memory type matches motherboard",
    "Cooler supports CPU socket",
    "Motherboard fits case",
    "Air cooler fits case",
    "Radiator fits case",
    "PSU form factor fits case",
    "PSU covers total power draw",
    "PSU headroom",
    "GPU recommended PSU",
    "Cooler handles CPU heat",
)


@dataclass(slots=True)
class BuildFacts:
    id: str
    customer: CustomerFacts
    name: str
    created_at: datetime
    parts: list[tuple[Product, int]]
    violated_rule: str | None  # the rule id it breaks, if any
    wants_order: bool
    status: str = "saved"
    order_id: str | None = None
    ordered_at: datetime | None = None
    component_ids: list[str] = field(default_factory=list)


class _Shelf:
    """Parts of each category on sale on a given day, cached per 30-day period."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[tuple[int, str], list[Product]] = {}

    def on(self, day: date, category: str) -> list[Product]:
        key = (day.toordinal() // 30, category)
        if key not in self._cache:
            # On sale for the whole period and the week after, when the build may be ordered.
            first, last = date.fromordinal(key[0] * 30), date.fromordinal(key[0] * 30 + 37)
            sellable = self.catalog.sellable_on
            self._cache[key] = [
                p for p in self.catalog.by_category(category) if sellable(p, first) and sellable(p, last)
            ]
        return self._cache[key]


def plan_builds(
    *, rng: random.Random, scale: float, timeline: Timeline, catalog: Catalog, people: People
) -> list[BuildFacts]:
    shelf = _Shelf(catalog)
    rules_by_name = {rule.name: rule for rule in catalog.rules}
    active_rules = [rule for rule in catalog.rules if rule.is_active]
    count = max(3, round(BUILDS_AT_SCALE_1 * scale))
    builds: list[BuildFacts] = []
    attempts = 0
    while len(builds) < count and attempts < count * 10:
        attempts += 1
        created = timeline.between(rng, timeline.at(date(2023, 1, 15), 9), timeline.now - timedelta(days=2))
        customer = people.pick_customer(rng, created)
        if customer is None:
            continue
        parts = _compatible_parts(rng, shelf, created.date())
        if parts is None or check_compatibility(parts, active_rules):
            continue
        violated = None
        if rng.random() < INCOMPATIBLE_SHARE:
            targets = list(BREAKABLE_RULES)
            rng.shuffle(targets)
            for name in targets:
                broken = _break_rule(rng, shelf, created.date(), parts, rules_by_name[name], active_rules)
                if broken is not None:
                    parts, violated = broken, rules_by_name[name].id
                    break
            if violated is None:
                continue
        cost = sum(product.price * quantity for product, quantity in parts)
        band = "budget" if cost < 1000 else "mid" if cost < 2200 else "high"
        pattern = rng.choice(BUILD_NAME_PATTERNS[band])
        builds.append(
            BuildFacts(
                id="",
                customer=customer,
                name=pattern.format(first=customer.first_name),
                created_at=created,
                parts=parts,
                violated_rule=violated,
                # Incompatible builds get ordered too: the customer finds out when the parts arrive.
                wants_order=rng.random() < (0.7 if violated else 0.4),
            )
        )
    builds.sort(key=lambda b: b.created_at)
    for number, build in enumerate(builds, start=1):
        build.id = f"bld-{number:05d}"
        build.component_ids = [f"bcp-{number:05d}-{i}" for i in range(1, len(build.parts) + 1)]
        build.status = "saved" if rng.random() < 0.6 else "draft"
    return builds


def _compatible_parts(rng: random.Random, shelf: _Shelf, day: date) -> list[tuple[Product, int]] | None:
    cpus = shelf.on(day, "cpu")
    if not cpus:
        return None
    cpu = rng.choice(cpus)
    boards = [
        b
        for b in shelf.on(day, "motherboard")
        if b.specs["socket"] == cpu.specs["socket"] and b.specs["memory_type"] in cpu.specs["memory_types"]
    ]
    if not boards:
        return None
    board = rng.choice(boards)
    kits = [
        m
        for m in shelf.on(day, "memory")
        if m.specs["type"] == board.specs["memory_type"] and m.specs["modules"] <= board.specs["memory_slots"]
    ]
    cases = [c for c in shelf.on(day, "case") if board.specs["form_factor"] in c.specs["supported_motherboards"]]
    drives = shelf.on(day, "storage")
    if not (kits and cases and drives):
        return None
    case = rng.choice(cases)
    parts: list[tuple[Product, int]] = [(cpu, 1), (board, 1)]
    kit = rng.choice(kits)
    double = kit.specs["modules"] * 2 <= board.specs["memory_slots"] and rng.random() < 0.15
    parts.append((kit, 2 if double else 1))
    gpus = [g for g in shelf.on(day, "gpu") if g.specs["length_mm"] <= case.specs["max_gpu_length_mm"]]
    gpu = rng.choice(gpus) if gpus and (rng.random() < 0.9 or not cpu.specs["integrated_graphics"]) else None
    if gpu is None and not cpu.specs["integrated_graphics"]:
        return None
    if gpu is not None:
        parts.append((gpu, 1))
    parts.append((rng.choice(drives), 1))
    if rng.random() < 0.3:
        parts.append((rng.choice(drives), 1))
    if not cpu.specs["cooler_included"] or rng.random() < 0.5:
        coolers = [c for c in shelf.on(day, "cooling") if _cooler_fits(c, cpu, case)]
        if not coolers:
            return None
        parts.append((rng.choice(coolers), 1))
    parts.append((case, 1))
    need = build_draw_watts(parts) * 1.3
    psus = [
        p
        for p in shelf.on(day, "psu")
        if p.specs["form_factor"] == case.specs["psu_form_factor"]
        and p.specs["wattage"] >= need
        and (gpu is None or p.specs["wattage"] >= gpu.specs["recommended_psu_watts"])
    ]
    if not psus:
        return None
    # Builders rarely buy far more power than they need: prefer the smaller units that fit.
    psus.sort(key=lambda p: (p.specs["wattage"], p.id))
    parts.append((rng.choice(psus[: max(2, len(psus) // 2)]), 1))
    # The same product twice would be one line with a quantity; merge to keep builds tidy.
    merged: dict[str, list] = {}
    for product, quantity in parts:
        if product.id in merged:
            merged[product.id][1] += quantity
        else:
            merged[product.id] = [product, quantity]
    return [(product, quantity) for product, quantity in merged.values()]


def _cooler_fits(cooler: Product, cpu: Product, case: Product) -> bool:
    specs = cooler.specs
    if cpu.specs["socket"] not in specs["sockets"] or specs["tdp_rating_watts"] < cpu.specs["tdp_watts"]:
        return False
    if specs["type"] == "air":
        return specs["height_mm"] <= case.specs["max_cooler_height_mm"]
    return specs["radiator_size_mm"] in case.specs["radiator_support_mm"]


def _break_rule(rng, shelf, day, parts, rule, active_rules) -> list[tuple[Product, int]] | None:
    """The build with one part swapped so that ``rule``, and only it, is violated (None if no swap does)."""
    for category in (rule.category_a, rule.category_b):
        positions = [i for i, (p, _) in enumerate(parts) if p.category == category]
        if not positions:
            continue
        position = positions[0]
        candidates = list(shelf.on(day, category))
        rng.shuffle(candidates)
        for candidate in candidates[:60]:
            if candidate.id == parts[position][0].id:
                continue
            trial = list(parts)
            trial[position] = (candidate, parts[position][1])
            # The target rule alone first: most candidates fail it, and it is a twelfth of the work.
            if not check_compatibility(trial, [rule]):
                continue
            violations = check_compatibility(trial, active_rules)
            if len(violations) == 1 and violations[0].rule_id == rule.id:
                return trial
    return None
