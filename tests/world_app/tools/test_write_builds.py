import pytest

from tests.world_app.tools.shop import ok, refused
from world_app.models import Build, BuildComponent

pytestmark = pytest.mark.django_db


def part(product, quantity=1):
    return {"product_id": product.id, "quantity": quantity}


def test_create_build_saves_the_parts_and_reports_compatibility(shop):
    result = ok(
        "create_build",
        customer_id=shop.newcomer.id,
        name="First gaming PC",
        parts=[part(shop.cpu), part(shop.board), part(shop.memory, 2), part(shop.gpu), part(shop.case), part(shop.psu)],
        notes="Quiet, under $1,500.",
    )
    build = result["build"]
    assert (build["id"], build["customer_id"], build["status"]) == ("bld-w00001", shop.newcomer.id, "draft")
    assert [(p["id"], p["quantity"]) for p in build["parts"]] == [
        (shop.cpu.id, 1),
        (shop.board.id, 1),
        (shop.memory.id, 2),
        (shop.gpu.id, 1),
        (shop.case.id, 1),
        (shop.psu.id, 1),
    ]
    assert build["parts_total"] == "1557.95"
    assert result["compatibility"]["compatible"] is True
    assert result["compatibility"]["missing_core_parts"] == ["storage"]
    assert list(BuildComponent.objects.filter(build_id="bld-w00001").values_list("id", flat=True)) == [
        f"bcp-w{n:05d}" for n in range(1, 7)
    ]


def test_create_build_reports_violations_and_unavailable_parts(shop):
    result = ok(
        "create_build",
        customer_id=shop.customer.id,
        name="Mixed parts",
        parts=[part(shop.cpu), part(shop.intel_board), part(shop.old_gpu)],
        status="saved",
    )
    report = result["compatibility"]
    assert report["compatible"] is False
    assert [v["rule_name"] for v in report["violations"]] == ["CPU socket matches motherboard"]
    assert report["unavailable_parts"] == [{"product_id": shop.old_gpu.id, "lifecycle": "discontinued"}]
    assert result["build"]["status"] == "saved"


def test_create_build_refusals_write_nothing(shop):
    before = Build.objects.count()
    error = refused(
        "create_build",
        "not_found",
        customer_id=shop.customer.id,
        name="X",
        parts=[part(shop.cpu), {"product_id": "prd-x"}],
    )
    assert error["field"] == "parts[1].product_id"
    assert refused("create_build", "not_found", customer_id="cus-x", name="X", parts=[part(shop.cpu)])["field"] == (
        "customer_id"
    )
    error = refused("create_build", "invalid_arguments", customer_id=shop.customer.id, name="X", parts=[])
    assert error["field"] == "parts"
    error = refused(
        "create_build",
        "invalid_arguments",
        customer_id=shop.customer.id,
        name="X",
        parts=[part(shop.cpu)],
        status="ordered",
    )
    assert error["field"] == "status"
    assert Build.objects.count() == before


def test_update_build_adds_removes_and_rechecks(shop):
    added = ok("update_build", build_id=shop.build.id, add_parts=[part(shop.long_gpu), part(shop.memory)])
    report = added["compatibility"]
    assert {v["rule_name"] for v in report["violations"]} == {"GPU fits the case", "PSU covers the build's draw"}
    quantities = {p["id"]: p["quantity"] for p in added["build"]["parts"]}
    assert quantities[shop.memory.id] == 2 and quantities[shop.long_gpu.id] == 1
    removed = ok("update_build", build_id=shop.build.id, remove_product_ids=[shop.long_gpu.id])
    assert removed["compatibility"]["compatible"] is True
    assert shop.long_gpu.id not in {p["id"] for p in removed["build"]["parts"]}
    replaced = ok(
        "update_build",
        build_id=shop.build.id,
        set_parts=[part(shop.cpu), part(shop.intel_board)],
        name="Dana's rig v2",
        status="draft",
        notes="Trying an Intel board.",
    )
    assert (replaced["build"]["name"], replaced["build"]["status"], replaced["build"]["notes"]) == (
        "Dana's rig v2",
        "draft",
        "Trying an Intel board.",
    )
    assert [p["id"] for p in replaced["build"]["parts"]] == [shop.cpu.id, shop.intel_board.id]
    assert replaced["compatibility"]["error_count"] == 1
    renamed = ok("update_build", build_id=shop.build.id, name="Final rig")
    assert len(renamed["build"]["parts"]) == 2  # parts untouched


def test_update_build_refusals(shop):
    error = refused("update_build", "policy_violation", build_id=shop.ordered_build.id, name="New name")
    assert error["message"] == f"build {shop.ordered_build.id} is ordered: only draft or saved builds can change"
    error = refused("update_build", "not_found", build_id=shop.build.id, remove_product_ids=[shop.mouse.id])
    assert error["field"] == "remove_product_ids[0]"
    assert refused("update_build", "not_found", build_id="bld-x", name="Y")["field"] == "build_id"
    error = refused("update_build", "not_found", build_id=shop.build.id, add_parts=[{"product_id": "prd-x"}])
    assert error["field"] == "add_parts[0].product_id"
    assert refused("update_build", "invalid_arguments", build_id=shop.build.id)["details"][0]["reason"].startswith(
        "nothing to change"
    )
    error = refused(
        "update_build",
        "invalid_arguments",
        build_id=shop.build.id,
        set_parts=[part(shop.cpu)],
        add_parts=[part(shop.gpu)],
    )
    assert "not both" in error["details"][0]["reason"]
    everything = [p.product_id for p in shop.build.components.all()]
    error = refused("update_build", "policy_violation", build_id=shop.build.id, remove_product_ids=everything)
    assert error["message"] == "a build keeps at least one part"
    assert shop.build.components.count() == 7
