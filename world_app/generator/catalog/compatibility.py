"""The compatibility rules between parts that the build checker applies (sockets, memory types, form factors,
clearances, power; ``world_app.compatibility`` gives their semantics), as rows.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from world_app.generator.timeline import Timeline
from world_app.models import CompatibilityRule, ProductCategory, RuleOperator, Severity

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
