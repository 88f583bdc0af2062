import pytest

from tests.world_app.tools.shop import make_order, ok, refused
from world_app.models import Order, Payment, Refund

pytestmark = pytest.mark.django_db


def line(order, product, quantity=1):
    return {"line_item_id": order.line_items.get(product=product).id, "quantity": quantity}


def refund_lines(order, reason, *lines, opened=True, **extra):
    return {"order_id": order.id, "reason": reason, "opened": opened, "lines": list(lines), **extra}


# --- create_refund ----------------------------------------------------------------------------------------------


def test_refund_within_the_window_charges_the_restocking_fee_on_opened_items(shop):
    result = ok("create_refund", **refund_lines(shop.recent, "customer_remorse", line(shop.recent, shop.gpu)))
    refund = result["refund"]
    assert (refund["id"], refund["amount"], refund["restocking_fee"], refund["status"]) == (
        "ref-w00001",
        "467.49",
        "82.50",
        "pending",  # not defective: waits for the returned item's inspection
    )
    assert refund["created_at"] == "2025-09-15T14:00:00-05:00"
    assert result["breakdown"]["lines"][0]["restocking_fee"] == "82.50"
    assert (result["order_status"], result["previous_order_status"]) == ("partially_refunded", "fulfilled")
    assert result["payment"]["status"] == "partially_refunded" and result["payment"]["refunded_total"] == "467.49"
    assert result["requires_approval"] is False
    assert result["next_steps"] == [
        "customer_remorse refunds stay pending until the returned items are received and inspected"
    ]
    assert Order.objects.get(pk=shop.recent.id).status == "partially_refunded"
    stored = Refund.objects.get(pk="ref-w00001")
    assert stored.line_items == [{"line_item_id": line(shop.recent, shop.gpu)["line_item_id"], "quantity": 1}]


def test_unopened_exempt_and_defective_returns_pay_no_restocking_fee(shop):
    cable = ok("create_refund", **refund_lines(shop.recent, "incompatible", line(shop.recent, shop.cable, 2)))
    assert (cable["refund"]["amount"], cable["refund"]["restocking_fee"]) == ("39.98", "0.00")
    psu = ok("create_refund", **refund_lines(shop.bulk, "customer_remorse", line(shop.bulk, shop.psu), opened=False))
    assert (psu["refund"]["amount"], psu["refund"]["restocking_fee"]) == ("129.99", "0.00")
    defective = ok("create_refund", **refund_lines(shop.bulk, "defective", line(shop.bulk, shop.psu, 2)))
    assert (defective["refund"]["amount"], defective["refund"]["status"]) == ("259.98", "approved")


def test_refund_after_the_window_is_the_agents_judgement_and_the_result_shows_the_window(shop):
    # The window is a judgement the agent is paid to make: the tool refunds, and the closed window is in the
    # result (and the refund in the world state, where a rubric sees the mistake).
    result = ok("create_refund", **refund_lines(shop.old, "customer_remorse", line(shop.old, shop.psu)))
    assert result["return_window"] == {
        "delivered_on": "2025-07-02",
        "days_since_delivery": 75,
        "window_days": 30,
        "last_day": "2025-08-01",
        "is_open": False,
    }
    assert Refund.objects.filter(payment__order=shop.old, reason="customer_remorse").count() == 1


def test_defective_item_after_the_window_is_refunded_at_once(shop):
    result = ok("create_refund", **refund_lines(shop.old, "defective", line(shop.old, shop.psu)))
    assert (result["refund"]["amount"], result["refund"]["status"]) == ("129.99", "approved")
    assert result["return_window"]["is_open"] is False


def test_refunds_never_exceed_what_was_paid_less_shipping_and_earlier_refunds(shop):
    error = refused("create_refund", "policy_violation", order_id=shop.recent.id, reason="other", amount=590)
    assert error["field"] == "amount"
    assert error["message"] == (
        "a $590.00 refund is more than order ord-t-recent allows: $599.96 was paid, less $9.99 of shipping (kept: "
        "the order has shipped), less $0.00 refunded already leaves $589.97 that can still be refunded"
    )
    first = ok("create_refund", order_id=shop.recent.id, reason="shipping_issue", amount="400.00")
    assert first["refundable_remaining"] == "189.97"
    error = refused("create_refund", "policy_violation", order_id=shop.recent.id, reason="other", amount="189.98")
    assert "less $400.00 refunded already leaves $189.97" in error["message"]
    # The last cent of merchandise: the order and its payment are fully refunded.
    last = ok("create_refund", order_id=shop.recent.id, reason="other", amount="189.97")
    assert (last["order_status"], last["payment"]["status"], last["refundable_remaining"]) == (
        "refunded",
        "refunded",
        "0.00",
    )
    assert refused("create_refund", "policy_violation", order_id=shop.recent.id, reason="other", amount=1)


def test_units_already_refunded_cannot_be_refunded_again(shop):
    ok("create_refund", **refund_lines(shop.bulk, "defective", line(shop.bulk, shop.psu, 3)))
    two_more = refund_lines(shop.bulk, "defective", line(shop.bulk, shop.psu, 2))
    error = refused("create_refund", "policy_violation", **two_more)
    assert error["message"] == (
        f"line {line(shop.bulk, shop.psu)['line_item_id']} (Corecraft 750W Gold) has 4 unit(s), 3 already refunded: "
        "at most 1 can be refunded, not 2"
    )
    assert error["field"] == "lines[0].quantity"


def test_refunds_over_the_approval_limit_stay_pending_and_ask_for_an_escalation(shop):
    result = ok("create_refund", **refund_lines(shop.bulk, "defective", line(shop.bulk, shop.psu, 4)))
    assert (result["refund"]["amount"], result["refund"]["status"], result["requires_approval"]) == (
        "519.96",
        "pending",
        True,
    )
    assert "over the $500.00 approval limit" in result["next_steps"][0]
    assert "policy_exception" in result["next_steps"][0]
    assert result["order_status"] == "refunded"


def test_refunds_of_one_order_on_one_day_add_up_towards_the_approval_limit(shop):
    first = ok("create_refund", order_id=shop.recent.id, reason="other", amount="300.00")
    assert (first["refund"]["status"], first["requires_approval"]) == ("approved", False)
    second = ok("create_refund", order_id=shop.recent.id, reason="shipping_issue", amount="250.00")
    assert (second["refund"]["status"], second["requires_approval"]) == ("pending", True)
    assert "come to $550.00, over the $500.00 approval limit" in second["next_steps"][0]


def test_a_full_return_refunds_the_order_and_payment_even_with_a_fee_withheld(shop):
    result = ok(
        "create_refund",
        **refund_lines(shop.recent, "customer_remorse", line(shop.recent, shop.gpu), line(shop.recent, shop.cable, 2)),
    )
    assert result["refund"]["restocking_fee"] == "82.50"
    assert (result["order_status"], result["payment"]["status"]) == ("refunded", "refunded")


def test_a_withheld_restocking_fee_cannot_come_back_as_a_goodwill_amount(shop):
    ok("create_refund", **refund_lines(shop.recent, "customer_remorse", line(shop.recent, shop.gpu)))
    error = refused("create_refund", "policy_violation", order_id=shop.recent.id, reason="other", amount="122.48")
    assert error["message"].endswith(
        "$599.96 was paid, less $9.99 of shipping (kept: the order has shipped), less $82.50 of restocking fees "
        "withheld, less $467.49 refunded already leaves $39.98 that can still be refunded"
    )


def test_transit_damage_pays_no_restocking_fee_on_opened_items(shop):
    result = ok("create_refund", **refund_lines(shop.recent, "shipping_issue", line(shop.recent, shop.gpu)))
    assert (result["refund"]["amount"], result["refund"]["restocking_fee"]) == ("549.99", "0.00")


def test_a_duplicate_charge_is_refunded_in_full_and_the_order_stays(shop):
    order = shop.recent
    first = order.payments.get()
    duplicate = Payment.objects.create(
        id="pay-t-dup",
        order=order,
        customer_id=first.customer_id,
        amount=first.amount,
        method=first.method,
        status="captured",
        transaction_id="txn_dup",
        card_last4=first.card_last4,
        processed_at=first.processed_at,
        created_at=first.created_at,
        updated_at=first.updated_at,
    )
    result = ok("create_refund", payment_id=duplicate.id, reason="other", amount=str(duplicate.amount))
    assert result["refund"]["amount"] == "599.96"  # shipping included: nothing was bought with it
    assert (result["payment"]["status"], result["order_status"]) == ("refunded", "fulfilled")


def test_order_discount_is_shared_so_the_refund_is_what_was_paid(shop):
    gpu = line(shop.discounted, shop.gpu)
    result = ok("create_refund", **refund_lines(shop.discounted, "customer_remorse", gpu, opened=False))
    assert result["refund"]["amount"] == "495.00"
    assert result["breakdown"]["discount_share"] == "54.99"


def test_refund_of_a_shipped_but_undelivered_order(shop):
    cpu = line(shop.transit, shop.cpu)
    error = refused("create_refund", "policy_violation", **refund_lines(shop.transit, "customer_remorse", cpu))
    assert "has shipped" in error["message"] and "not delivered" in error["message"]
    lost = ok("create_refund", **refund_lines(shop.transit, "shipping_issue", cpu, opened=False))
    assert (lost["refund"]["amount"], lost["order_status"]) == ("299.00", "refunded")


def test_a_partial_refund_keeps_a_paid_order_paid(shop):
    unsent = make_order(shop.other, [(shop.cable, 1), (shop.mouse, 1)], status="paid", placed_days_ago=2)
    result = ok("create_refund", **refund_lines(unsent, "customer_remorse", line(unsent, shop.cable), opened=False))
    assert result["order_status"] == "paid"  # paid -> partially_refunded is not a move the order machine has
    assert result["next_steps"][0].startswith(f"order {unsent.id} stays paid")


def test_refund_of_a_never_shipped_paid_order_gives_the_shipping_back(shop):
    unsent = make_order(shop.other, [(shop.cable, 1)], status="paid", placed_days_ago=2)
    result = ok("create_refund", **refund_lines(unsent, "customer_remorse", line(unsent, shop.cable), opened=False))
    assert (result["refund"]["amount"], result["order_status"]) == (str(unsent.total), "refunded")
    assert result["breakdown"]["shipping_refunded"] == str(unsent.shipping_cost)
    assert result["refundable_remaining"] == "0.00"


def test_only_captured_payments_are_refunded(shop):
    error = refused("create_refund", "policy_violation", order_id=shop.pending.id, reason="other", amount=10)
    assert "has no captured payment to refund" in error["message"]
    payment = shop.pending.payments.get()
    error = refused("create_refund", "policy_violation", payment_id=payment.id, reason="other", amount=10)
    assert error["message"] == (
        f"payment {payment.id} is authorized and cannot be refunded: it was only authorised, never captured; "
        "cancelling the order voids it"
    )
    error = refused(
        "create_refund",
        "invalid_arguments",
        payment_id=payment.id,
        order_id=shop.recent.id,
        reason="other",
        amount=10,
    )
    assert error["field"] == "payment_id"
    good = ok("create_refund", payment_id=shop.recent.payments.get().id, reason="other", amount=10)
    assert good["order_id"] == shop.recent.id


def test_price_match_is_one_claim_per_item_for_less_than_was_paid(shop):
    gpu = line(shop.discounted, shop.gpu)
    result = ok("create_refund", order_id=shop.discounted.id, reason="price_match", lines=[gpu], amount="30.00")
    assert (result["refund"]["amount"], result["refund"]["status"]) == ("30.00", "approved")  # nothing comes back
    assert result["next_steps"] == []
    again = refused(
        "create_refund", "policy_violation", order_id=shop.discounted.id, reason="price_match", lines=[gpu], amount=5
    )
    assert "already has a price-match refund: one claim per item" in again["message"]
    whole = refused(
        "create_refund",
        "policy_violation",
        order_id=shop.recent.id,
        reason="price_match",
        lines=[line(shop.recent, shop.gpu)],
        amount="549.99",
    )
    assert "is not less than the $549.99 paid" in whole["message"]
    # The 14 days are the agent's to check: the result shows them.
    late = ok("create_refund", order_id=shop.old.id, reason="price_match", lines=[line(shop.old, shop.psu)], amount=5)
    assert late["price_match_window"] == {
        "sold_on": "2025-06-27",
        "days_since_sale": 80,
        "window_days": 14,
        "last_day": "2025-07-11",
        "is_open": False,
    }


def test_create_refund_argument_rules(shop):
    cases = [
        ({"order_id": shop.recent.id, "reason": "defective", "amount": 10}, "returns goods: list the returned units"),
        ({"order_id": shop.recent.id, "reason": "price_match"}, "give lines and amount"),
        ({"reason": "other", "amount": 10}, "give order_id or payment_id"),
        (
            {**refund_lines(shop.recent, "other", line(shop.recent, shop.gpu)), "amount": 5},
            "give lines (returned units) or amount, not both",
        ),
        ({**refund_lines(shop.recent, "defective", line(shop.recent, shop.gpu)), "opened": None}, "opened"),
    ]
    for arguments, reason in cases:
        error = refused("create_refund", "invalid_arguments", **arguments)
        assert reason in error["details"][0]["reason"], (arguments, error)
    assert refused("create_refund", "invalid_arguments", order_id=shop.recent.id, reason="other", amount=-5)
    assert refused("create_refund", "invalid_arguments", order_id=shop.recent.id, reason="other", amount="1.234")
    assert refused("create_refund", "not_found", order_id="ord-x", reason="other", amount=5)["field"] == "order_id"
    assert not Refund.objects.exists()


# --- update_order_status ----------------------------------------------------------------------------------------


def test_cancelling_a_pending_order_voids_its_authorised_payment(shop):
    result = ok("update_order_status", order_id=shop.pending.id, status="cancelled", reason="customer changed mind")
    assert result["order"]["status"] == "cancelled" and result["previous_status"] == "pending"
    payment = shop.pending.payments.get()
    assert result["payments_voided"] == [payment.id]
    assert Payment.objects.get(pk=payment.id).status == "voided"
    assert result["notes"].endswith("[2025-09-15] pending -> cancelled: customer changed mind")


def test_a_shipped_order_cannot_be_cancelled(shop):
    error = refused("update_order_status", "policy_violation", order_id=shop.transit.id, status="cancelled")
    shipment = shop.transit.shipments.get()
    assert error["message"] == (
        f"order ord-t-transit has shipped: shipment {shipment.id} (ups {shipment.tracking_number}) is in_transit. "
        "A shipped order cannot be cancelled; the customer can return it after delivery"
    )
    assert Order.objects.get(pk=shop.transit.id).status == "paid"


def test_a_paid_order_with_only_a_label_can_be_cancelled_and_asks_for_the_refund(shop):
    labelled = make_order(
        shop.other, [(shop.memory, 1)], status="paid", placed_days_ago=1, shipment_status="label_created"
    )
    result = ok("update_order_status", order_id=labelled.id, status="cancelled")
    payment = labelled.payments.get()
    assert result["payments_voided"] == []
    assert result["next_steps"] == [f"payment {payment.id} ($129.98) was captured: refund it with create_refund"]


def test_orders_move_only_along_the_state_machine(shop):
    error = refused("update_order_status", "invalid_transition", order_id=shop.recent.id, status="paid")
    assert error["message"] == (
        "order ord-t-recent is fulfilled; from fulfilled it can move to: partially_refunded, refunded"
    )
    ok("update_order_status", order_id=shop.pending.id, status="cancelled")
    error = refused("update_order_status", "invalid_transition", order_id=shop.pending.id, status="pending")
    assert error["message"] == (
        "order ord-t-pending is cancelled; from cancelled it can move to: nothing (cancelled is final)"
    )
    error = refused("update_order_status", "invalid_transition", order_id=shop.transit.id, status="paid")
    assert error["message"] == "order ord-t-transit is already paid"
    assert ok("update_order_status", order_id=shop.transit.id, status="backorder")["order"]["status"] == "backorder"
    assert ok("update_order_status", order_id=shop.transit.id, status="fulfilled")["order"]["status"] == "fulfilled"


def test_refund_statuses_come_from_create_refund(shop):
    error = refused("update_order_status", "policy_violation", order_id=shop.recent.id, status="refunded")
    assert error["message"] == "refunded follows from refunds: use create_refund, which sets the order's status"


def test_paid_needs_a_captured_payment_and_fulfilled_a_shipment(shop):
    error = refused("update_order_status", "policy_violation", order_id=shop.pending.id, status="paid")
    assert "has no captured payment" in error["message"]
    Payment.objects.filter(order=shop.pending).update(status="captured")
    assert ok("update_order_status", order_id=shop.pending.id, status="paid")["order"]["status"] == "paid"
    error = refused("update_order_status", "policy_violation", order_id=shop.pending.id, status="fulfilled")
    assert error["message"] == "order ord-t-pending has no shipment: it is fulfilled when it ships"


def test_update_order_status_argument_errors(shop):
    assert refused("update_order_status", "not_found", order_id="ord-x", status="paid")["field"] == "order_id"
    error = refused("update_order_status", "invalid_arguments", order_id=shop.recent.id, status="shipped")
    assert error["field"] == "status"
