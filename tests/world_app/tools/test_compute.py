from decimal import Decimal

import pytest

from tests.world_app.tools.shop import ok, refused

pytestmark = pytest.mark.django_db


def item(product, quantity=1):
    return {"product_id": product.id, "quantity": quantity}


def test_quote_applies_loyalty_then_coupon_and_free_ground_shipping(shop):
    quote = ok(
        "calculate_price",
        items=[item(shop.gpu), item(shop.cable, 2)],
        customer_id=shop.customer.id,
        coupon_codes=["save25"],
        shipping_service="ground",
    )
    assert [(line["name"], line["line_total"]) for line in quote["lines"]] == [
        ("RTX 4070 Windforce", "549.99"),
        ("DisplayPort cable 2m", "39.98"),
    ]
    assert quote["merchandise_subtotal"] == "589.97"
    assert quote["discounts"] == [
        {"kind": "loyalty", "description": "gold tier: 10% off merchandise", "amount": "59.00"},
        {"kind": "coupon", "code": "SAVE25", "description": "$25 off orders of $200 or more", "amount": "25.00"},
    ]
    assert quote["merchandise_after_discounts"] == "505.97"
    assert quote["shipping"]["amount"] == "0.00" and "over $150.00" in quote["shipping"]["note"]
    assert (quote["tax"], quote["total"]) == ("0.00", "505.97")


def test_quote_first_order_coupon_and_paid_shipping(shop):
    quote = ok(
        "calculate_price",
        items=[item(shop.gpu)],
        customer_id=shop.newcomer.id,
        coupon_codes=["WELCOME10"],
        shipping_service="two_day",
    )
    assert quote["discounts"] == [
        {"kind": "coupon", "code": "WELCOME10", "description": "10% off a customer's first order", "amount": "55.00"}
    ]
    assert quote["shipping"] == {"service": "two_day", "amount": "19.99", "note": "two_day rate"}
    assert quote["total"] == "514.98"
    cheap = ok("calculate_price", items=[item(shop.cable)], shipping_service="ground")
    assert (cheap["shipping"]["amount"], cheap["total"]) == ("9.99", "29.98")
    free = ok("calculate_price", items=[item(shop.cable)], shipping_service="ground", coupon_codes=["FREESHIP"])
    assert (free["shipping"]["amount"], free["total"]) == ("0.00", "19.99")


def test_quote_coupon_refusals_name_the_rule(shop):
    basket = {"items": [item(shop.gpu)], "customer_id": shop.customer.id}
    error = refused("calculate_price", "policy_violation", **basket, coupon_codes=["WELCOME10"])
    assert "first order only" in error["message"] and "already has 4 order(s)" in error["message"]
    error = refused("calculate_price", "policy_violation", items=[item(shop.gpu)], coupon_codes=["WELCOME10"])
    assert error["field"] == "customer_id"
    error = refused("calculate_price", "policy_violation", **basket, coupon_codes=["SUMMER15"])
    assert error["message"] == "coupon SUMMER15 expired on 2025-08-31; today is 2025-09-15"
    assert error["field"] == "coupon_codes[0]"
    error = refused("calculate_price", "policy_violation", **basket, coupon_codes=["SAVE25", "FREESHIP"])
    assert error == {
        "code": "policy_violation",
        "message": "only 1 coupon can be used per order; got 2",
        "field": "coupon_codes",
    }
    error = refused("calculate_price", "policy_violation", **basket, coupon_codes=["BUILD50"])
    assert "needs at least $1000.00 of merchandise; this basket has $549.99" in error["message"]
    error = refused("calculate_price", "policy_violation", **basket, coupon_codes=["NOPE"])
    assert error["message"] == "coupon 'NOPE' does not exist"
    error = refused(
        "calculate_price", "policy_violation", **basket, coupon_codes=["FREESHIP"], shipping_service="overnight"
    )
    assert "free ground shipping" in error["message"]


def test_quote_bundles_and_product_flags(shop):
    quote = ok("calculate_price", bundles=[{"bundle_id": shop.bundle.id, "quantity": 2}], items=[item(shop.old_gpu)])
    bundle_line = quote["lines"][1]
    assert bundle_line["kind"] == "bundle" and bundle_line["line_total"] == "978.00"
    assert bundle_line["saving_vs_separate"] == "59.98"
    assert quote["lines"][0]["notes"] == ["discontinued: no longer sold new", "out of stock"]
    assert quote["merchandise_subtotal"] == str(Decimal("978.00") + Decimal("299.99"))
    assert quote["shipping"]["service"] is None
    error = refused("calculate_price", "policy_violation", bundles=[{"bundle_id": shop.expired_bundle.id}])
    assert error["message"].endswith("was offered until 2025-08-31; today is 2025-09-15")
    assert error["field"] == "bundles[0].bundle_id"


def test_quote_argument_errors(shop):
    assert refused("calculate_price", "not_found", items=[item(shop.gpu), {"product_id": "prd-x"}])["field"] == (
        "items[1].product_id"
    )
    error = refused("calculate_price", "not_found", items=[item(shop.gpu)], customer_id="cus-x")
    assert error["field"] == "customer_id"
    assert refused("calculate_price", "invalid_arguments")["details"] == [
        {"reason": "a quote needs at least one of items or bundles"}
    ]
    error = refused("calculate_price", "invalid_arguments", items=[item(shop.gpu)], order_id=shop.recent.id)
    assert error["details"] == [{"reason": "order_id belong to mode 'refund'"}]
    error = refused("calculate_price", "invalid_arguments", items=[{"product_id": shop.gpu.id, "quantity": 0}])
    assert error["field"] == "items[0].quantity"


def test_refund_mode_computes_fee_exemptions_and_excludes_shipping(shop):
    refund = ok("calculate_price", mode="refund", order_id=shop.recent.id, opened=True)
    assert [(r["name"], r["merchandise"], r["restocking_fee"], r["refund"]) for r in refund["lines"]] == [
        ("RTX 4070 Windforce", "549.99", "82.50", "467.49"),
        ("DisplayPort cable 2m", "39.98", "0.00", "39.98"),  # cables pay no restocking fee
    ]
    assert (refund["refund_total"], refund["shipping_refunded"], refund["refundable_remaining"]) == (
        "507.47",
        "0.00",
        "589.97",
    )
    assert refund["notes"][0] == "refunds exclude shipping: the order has shipped, so its shipping cost is not refunded"
    unopened = ok("calculate_price", mode="refund", order_id=shop.recent.id, opened=False)
    assert unopened["refund_total"] == "589.97" and unopened["restocking_fee"] == "0.00"
    defective = ok("calculate_price", mode="refund", order_id=shop.recent.id, opened=True, reason="defective")
    assert defective["refund_total"] == "589.97"


def test_refund_mode_shares_the_order_discount_and_reports_the_window(shop):
    gpu_line = shop.discounted.line_items.get(product=shop.gpu)
    refund = ok(
        "calculate_price",
        mode="refund",
        order_id=shop.discounted.id,
        opened=False,
        lines=[{"line_item_id": gpu_line.id, "quantity": 1}],
    )
    assert refund["lines"][0]["discount_share"] == "54.99"
    assert refund["refund_total"] == "495.00"
    late = ok("calculate_price", mode="refund", order_id=shop.old.id, opened=False)
    assert late["return_window"]["is_open"] is False
    assert any("after the window only defective items under warranty" in note for note in late["notes"])


def test_refund_mode_refusals(shop):
    error = refused("calculate_price", "invalid_arguments", mode="refund", order_id=shop.recent.id)
    assert "needs opened" in error["details"][0]["reason"]
    error = refused(
        "calculate_price",
        "not_found",
        mode="refund",
        order_id=shop.recent.id,
        opened=True,
        lines=[{"line_item_id": "li-x", "quantity": 1}],
    )
    assert error["field"] == "lines[0].line_item_id"
    gpu_line = shop.recent.line_items.get(product=shop.gpu)
    error = refused(
        "calculate_price",
        "policy_violation",
        mode="refund",
        order_id=shop.recent.id,
        opened=True,
        lines=[{"line_item_id": gpu_line.id, "quantity": 2}],
    )
    assert error["field"] == "lines[0].quantity" and "at most 1 can be refunded" in error["message"]
    error = refused(
        "calculate_price", "invalid_arguments", mode="refund", order_id=shop.recent.id, opened=True, items=[]
    )
    assert error["details"] == [{"reason": "items belong to mode 'quote'"}]


def test_validate_build_compatibility_on_a_saved_build(shop):
    report = ok("validate_build_compatibility", build_id=shop.build.id)
    assert report["compatible"] is True
    assert (report["error_count"], report["warning_count"], report["violations"]) == (0, 0, [])
    assert report["rules_checked"] == 3 and report["missing_core_parts"] == ["storage"]
    assert report["estimated_draw_watts"] == 380
    assert [p["id"] for p in report["parts"]][:2] == [shop.cpu.id, shop.board.id]


def test_validate_build_compatibility_reports_each_violation(shop):
    report = ok(
        "validate_build_compatibility",
        parts=[item(shop.cpu), item(shop.intel_board), item(shop.long_gpu), item(shop.case), item(shop.small_psu)],
    )
    assert report["compatible"] is False and report["error_count"] == 3
    by_rule = {v["rule_name"]: v for v in report["violations"]}
    socket = by_rule["CPU socket matches motherboard"]
    assert socket["message"] == "Ryzen 7 7700X (AM5) does not fit Z790 Edge (LGA1700)"
    assert by_rule["GPU fits the case"]["message"] == "RTX 4090 Titan is 380 mm long; Meshify Mid Tower takes 360 mm"
    assert (by_rule["GPU fits the case"]["part_a"], by_rule["GPU fits the case"]["part_b"]) == (
        shop.long_gpu.id,
        shop.case.id,
    )
    assert by_rule["PSU covers the build's draw"]["part_b"] == shop.small_psu.id
    assert report["missing_core_parts"] == ["memory", "storage"]
    flagged = ok("validate_build_compatibility", parts=[item(shop.old_gpu), item(shop.old_gpu)])
    assert flagged["unavailable_parts"] == [{"product_id": shop.old_gpu.id, "lifecycle": "discontinued"}]
    assert flagged["parts"][0]["quantity"] == 2  # the same product twice is one part, quantities added


def test_validate_build_compatibility_refusals(shop):
    assert refused("validate_build_compatibility", "not_found", build_id="bld-x")["field"] == "build_id"
    error = refused("validate_build_compatibility", "not_found", parts=[item(shop.cpu), {"product_id": "prd-x"}])
    assert error["field"] == "parts[1].product_id"
    for arguments in ({}, {"build_id": shop.build.id, "parts": [item(shop.cpu)]}):
        error = refused("validate_build_compatibility", "invalid_arguments", **arguments)
        assert error["details"] == [{"reason": "give exactly one of build_id or parts"}]
