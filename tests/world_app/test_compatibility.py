"""The one evaluator of compatibility rules, operator by operator (unsaved rows: no database needed)."""

from decimal import Decimal

from world_app.compatibility import Violation, build_draw_watts, check_compatibility, part_draw_watts
from world_app.generator.catalog import compatibility_rules
from world_app.generator.timeline import Timeline
from world_app.models import CompatibilityRule, Product


def part(pk: str, category: str, **specs) -> Product:
    return Product(id=pk, name=pk.upper(), category=category, specs=specs)


def rule(pk: str, category_a: str, field_a: str, operator: str, category_b: str, field_b: str, **extra):
    fields = {"severity": "error", "factor": Decimal("1.00"), "message": "{a}={a_value} vs {b}={b_value}"}
    fields.update(extra)
    return CompatibilityRule(
        id=pk,
        name=f"rule {pk}",
        category_a=category_a,
        field_a=field_a,
        operator=operator,
        category_b=category_b,
        field_b=field_b,
        is_active=fields.pop("is_active", True),
        **fields,
    )


SOCKET = rule("cr-1", "cpu", "socket", "eq", "motherboard", "socket")


def test_eq_holds_for_equal_values_and_reports_both_parts_otherwise():
    cpu, board = part("p-cpu", "cpu", socket="AM5"), part("p-mb", "motherboard", socket="AM5")
    assert check_compatibility([(cpu, 1), (board, 1)], [SOCKET]) == []
    other = part("p-mb2", "motherboard", socket="LGA1700")
    assert check_compatibility([(cpu, 1), (other, 1)], [SOCKET]) == [
        Violation("cr-1", "rule cr-1", "error", "P-CPU=AM5 vs P-MB2=LGA1700", "p-cpu", "p-mb2")
    ]


def test_in_looks_for_a_value_in_the_other_parts_list():
    cooler_rule = rule("cr-2", "cpu", "socket", "in", "cooling", "sockets")
    cpu = part("p-cpu", "cpu", socket="LGA1851")
    fits = part("p-c1", "cooling", sockets=["AM5", "LGA1851"])
    old = part("p-c2", "cooling", sockets=["AM4", "LGA1700"])
    assert check_compatibility([(cpu, 1), (fits, 1)], [cooler_rule]) == []
    (violation,) = check_compatibility([(cpu, 1), (old, 1)], [cooler_rule])
    assert (violation.part_a, violation.part_b) == ("p-cpu", "p-c2")
    assert violation.message == "P-CPU=LGA1851 vs P-C2=AM4, LGA1700"
    scalar = part("p-c3", "cooling", sockets="LGA1851")
    assert check_compatibility([(cpu, 1), (scalar, 1)], [cooler_rule]) == []


def test_contains_looks_for_the_other_value_in_this_parts_list():
    memory_rule = rule("cr-3", "cpu", "memory_types", "contains", "memory", "type")
    cpu = part("p-cpu", "cpu", memory_types=["DDR5"])
    assert check_compatibility([(cpu, 1), (part("p-m1", "memory", type="DDR5"), 1)], [memory_rule]) == []
    assert len(check_compatibility([(cpu, 1), (part("p-m2", "memory", type="DDR4"), 2)], [memory_rule])) == 1


def test_lte_compares_numbers_with_the_factor_on_the_first_side():
    length = rule("cr-4", "gpu", "length_mm", "lte", "case", "max_gpu_length_mm")
    case = part("p-case", "case", max_gpu_length_mm=330)
    assert check_compatibility([(part("p-g1", "gpu", length_mm=330), 1), (case, 1)], [length]) == []
    assert len(check_compatibility([(part("p-g2", "gpu", length_mm=331), 1), (case, 1)], [length])) == 1
    padded = rule("cr-5", "gpu", "length_mm", "lte", "case", "max_gpu_length_mm", factor=Decimal("1.10"))
    assert len(check_compatibility([(part("p-g3", "gpu", length_mm=310), 1), (case, 1)], [padded])) == 1
    text = part("p-g4", "gpu", length_mm="long")
    assert check_compatibility([(text, 1), (case, 1)], [length]) == []


def test_total_draw_counts_every_part_times_its_quantity():
    cpu = part("p-cpu", "cpu", tdp_watts=120)
    gpu = part("p-gpu", "gpu", tdp_watts=300)
    board = part("p-mb", "motherboard")  # nominal 50 W
    memory = part("p-mem", "memory")  # nominal 5 W
    fan = part("p-fan", "accessory")  # no draw
    parts = [(cpu, 1), (gpu, 1), (board, 1), (memory, 2), (fan, 3)]
    assert [part_draw_watts(p) for p, _ in parts] == [120, 300, 50, 5, 0]
    assert build_draw_watts(parts) == 480
    draw = rule("cr-6", "gpu", "", "total_draw_lte", "psu", "wattage", message="{a_value} W > {b_value} W ({b})")
    assert check_compatibility([*parts, (part("p-psu1", "psu", wattage=480), 1)], [draw]) == []
    (violation,) = check_compatibility([*parts, (part("p-psu2", "psu", wattage=450), 1)], [draw])
    assert violation.part_a == "p-gpu" and violation.part_b == "p-psu2"
    assert violation.message == "480 W > 450 W (P-PSU2)"
    headroom = rule("cr-7", "gpu", "", "total_draw_lte", "psu", "wattage", factor=Decimal("1.30"), severity="warning")
    (warning,) = check_compatibility([*parts, (part("p-psu3", "psu", wattage=600), 1)], [headroom])
    assert warning.severity == "warning" and warning.message == "P-GPU=624 vs P-PSU3=600"


def test_total_draw_names_the_heaviest_part_when_the_category_is_absent():
    draw = rule("cr-6", "gpu", "", "total_draw_lte", "psu", "wattage")
    cpu = part("p-cpu", "cpu", tdp_watts=250)
    (violation,) = check_compatibility([(cpu, 1), (part("p-psu", "psu", wattage=200), 1)], [draw])
    assert violation.part_a == "p-cpu"
    assert check_compatibility([(cpu, 1)], [draw]) == []


def test_a_missing_field_means_the_rule_does_not_apply():
    radiator = rule("cr-8", "cooling", "radiator_size_mm", "in", "case", "radiator_support_mm")
    height = rule("cr-9", "cooling", "height_mm", "lte", "case", "max_cooler_height_mm")
    air = part("p-air", "cooling", type="air", height_mm=150, radiator_size_mm=None)
    aio = part("p-aio", "cooling", type="aio", height_mm=None, radiator_size_mm=360)
    case = part("p-case", "case", max_cooler_height_mm=160, radiator_support_mm=[240, 280])
    assert check_compatibility([(air, 1), (case, 1)], [radiator, height]) == []
    (violation,) = check_compatibility([(aio, 1), (case, 1)], [radiator, height])
    assert violation.rule_id == "cr-8"


def test_inactive_rules_are_skipped():
    retired = rule("cr-1", "cpu", "socket", "eq", "motherboard", "socket", is_active=False)
    parts = [(part("p-cpu", "cpu", socket="AM4"), 1), (part("p-mb", "motherboard", socket="AM5"), 1)]
    assert check_compatibility(parts, [retired]) == []


def test_violations_come_in_one_order_whatever_the_input_order():
    rules = [
        rule("cr-2", "gpu", "length_mm", "lte", "case", "max_gpu_length_mm"),
        SOCKET,
    ]
    parts = [
        (part("p-b", "gpu", length_mm=360), 1),
        (part("p-a", "gpu", length_mm=350), 1),
        (part("p-case", "case", max_gpu_length_mm=300), 1),
        (part("p-cpu", "cpu", socket="AM5"), 1),
        (part("p-mb", "motherboard", socket="AM4"), 1),
    ]
    expected = [("cr-1", "p-cpu"), ("cr-2", "p-a"), ("cr-2", "p-b")]
    assert [(v.rule_id, v.part_a) for v in check_compatibility(parts, rules)] == expected
    assert [(v.rule_id, v.part_a) for v in check_compatibility(parts[::-1], rules[::-1])] == expected


def test_a_malformed_message_template_still_reports_the_violation():
    broken = rule("cr-1", "cpu", "socket", "eq", "motherboard", "socket", message="socket {a_value} vs {b_value")
    parts = [(part("p-cpu", "cpu", socket="AM4"), 1), (part("p-mb", "motherboard", socket="AM5"), 1)]
    (violation,) = check_compatibility(parts, [broken])
    assert violation.message == "socket {a_value} vs {b_value"
    unknown = rule("cr-1", "cpu", "socket", "eq", "motherboard", "socket", message="{a} needs {socket}")
    assert check_compatibility(parts, [unknown])[0].message == "P-CPU needs {socket}"


def test_the_worlds_rules_are_valid_and_catch_the_classic_mistakes():
    rules = compatibility_rules(Timeline.current())
    for each in rules:
        each.full_clean(validate_unique=False)
    names = {r.name for r in rules}
    assert {"CPU socket matches motherboard", "GPU fits case", "PSU covers total power draw"} <= names
    cpu = part("p-cpu", "cpu", socket="AM5", memory_types=["DDR5"], tdp_watts=120)
    board = part("p-mb", "motherboard", socket="LGA1700", memory_type="DDR4", form_factor="ATX", memory_slots=4)
    memory = part("p-mem", "memory", type="DDR4", modules=2)
    gpu = part("p-gpu", "gpu", length_mm=340, tdp_watts=320, recommended_psu_watts=750)
    case = part("p-case", "case", supported_motherboards=["ATX"], max_gpu_length_mm=330, psu_form_factor="ATX")
    psu = part("p-psu", "psu", wattage=450, form_factor="ATX")
    found = {
        v.rule_name
        for v in check_compatibility([(cpu, 1), (board, 1), (memory, 1), (gpu, 1), (case, 1), (psu, 1)], rules)
    }
    assert found == {
        "CPU socket matches motherboard",
        "CPU supports memory type",
        "GPU fits case",
        "PSU covers total power draw",
        "PSU headroom",
        "GPU recommended PSU",
    }
