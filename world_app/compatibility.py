"""The one evaluator of compatibility rules.

The world generator uses it to make builds with known violations, and the agent tool
``validate_build_compatibility`` uses it to answer the agent, so both always agree on what "compatible" means.

Semantics per ``RuleOperator`` (the rule reads ``a.specs[field_a] <op> b.specs[field_b]`` for every part ``a``
of ``category_a`` and every part ``b`` of ``category_b`` in the build):

- ``eq``: the two values are equal.
- ``in``: A's value is one of B's list (a scalar B is read as a one-item list).
- ``contains``: A's list contains B's value (a scalar A is read as a one-item list).
- ``lte``: A's value x ``factor`` <= B's value.
- ``total_draw_lte``: the power draw of the whole build (every part's draw x quantity) x ``factor`` <= each
  ``category_b`` part's ``field_b`` (the PSU's wattage). A part draws its specs' ``tdp_watts``, else
  ``NOMINAL_DRAW_WATTS`` of its category, else 0. The violation names the heaviest ``category_a`` part
  (the heaviest part of the build when there is none of that category).

A rule whose field is missing or null on a part does not apply to that part (an air cooler has no radiator,
so the radiator rule says nothing about it). Inactive rules are skipped. Violations come back sorted by
(rule id, part_a, part_b), whatever order the parts and rules were given in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from world_app.models import CompatibilityRule, Product, RuleOperator
from world_app.specs import NOMINAL_DRAW_WATTS


@dataclass(frozen=True)
class Violation:
    rule_id: str
    rule_name: str
    severity: str
    message: str
    part_a: str
    part_b: str

    def as_dict(self) -> dict[str, str]:
        return {
            "rule_id": self.rule_id,
            "rule_name": self.rule_name,
            "severity": self.severity,
            "message": self.message,
            "part_a": self.part_a,
            "part_b": self.part_b,
        }


def part_draw_watts(product: Product) -> int:
    """Watts a part draws under load, as the PSU rule counts it."""
    tdp = (product.specs or {}).get("tdp_watts")
    if _is_number(tdp):
        return int(tdp)
    return NOMINAL_DRAW_WATTS.get(product.category, 0)


def build_draw_watts(parts: Sequence[tuple[Product, int]]) -> int:
    return sum(part_draw_watts(product) * quantity for product, quantity in parts)


def check_compatibility(parts: Sequence[tuple[Product, int]], rules: Sequence[CompatibilityRule]) -> list[Violation]:
    """Every violation of ``rules`` by the build made of ``parts`` ((product, quantity) pairs)."""
    violations: list[Violation] = []
    for rule in rules:
        if not rule.is_active:
            continue
        parts_a = [(p, q) for p, q in parts if p.category == rule.category_a]
        parts_b = [(p, q) for p, q in parts if p.category == rule.category_b]
        if rule.operator == RuleOperator.TOTAL_DRAW_LTE:
            violations.extend(_check_total_draw(rule, parts, parts_a, parts_b))
            continue
        for a, _ in parts_a:
            for b, _ in parts_b:
                if a is b:
                    continue
                value_a = (a.specs or {}).get(rule.field_a)
                value_b = (b.specs or {}).get(rule.field_b)
                if value_a is None or value_b is None:
                    continue
                holds = _holds(rule.operator, value_a, value_b, Decimal(rule.factor))
                if holds is False:
                    violations.append(_violation(rule, a, b, value_a, value_b))
    return sorted(violations, key=lambda v: (v.rule_id, v.part_a, v.part_b))


def _holds(operator: str, value_a, value_b, factor: Decimal) -> bool | None:
    """Whether the condition holds; None when the values cannot be compared (the rule does not apply)."""
    if operator == RuleOperator.EQUAL:
        return value_a == value_b
    if operator == RuleOperator.IN:
        return value_a in (value_b if isinstance(value_b, list) else [value_b])
    if operator == RuleOperator.CONTAINS:
        return value_b in (value_a if isinstance(value_a, list) else [value_a])
    if operator == RuleOperator.LTE:
        if not (_is_number(value_a) and _is_number(value_b)):
            return None
        return Decimal(str(value_a)) * factor <= Decimal(str(value_b))
    return None


def _check_total_draw(rule, parts, parts_a, parts_b) -> list[Violation]:
    if not parts_b:
        return []
    needed = Decimal(build_draw_watts(parts)) * Decimal(rule.factor)
    candidates = parts_a or list(parts)
    # Heaviest consumer first; the id breaks ties so the answer never depends on input order.
    heaviest = min(candidates, key=lambda pq: (-part_draw_watts(pq[0]) * pq[1], pq[0].id))[0]
    found = []
    for psu, _ in parts_b:
        capacity = (psu.specs or {}).get(rule.field_b)
        if not _is_number(capacity):
            continue
        if needed > Decimal(str(capacity)):
            found.append(_violation(rule, heaviest, psu, int(needed.to_integral_value()), capacity))
    return found


def _violation(rule: CompatibilityRule, a: Product, b: Product, value_a, value_b) -> Violation:
    return Violation(
        rule_id=rule.id,
        rule_name=rule.name,
        severity=rule.severity,
        message=_render(rule.message, a=a, b=b, a_value=value_a, b_value=value_b),
        part_a=a.id,
        part_b=b.id,
    )


class _Placeholders(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _render(template: str, *, a: Product, b: Product, a_value, b_value) -> str:
    values = _Placeholders(a=a.name, b=b.name, a_value=_show(a_value), b_value=_show(b_value))
    try:
        return template.format_map(values)
    except (ValueError, IndexError, AttributeError, KeyError):
        # An expert's malformed template must not hide the violation itself.
        return template


def _show(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _is_number(value) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)
