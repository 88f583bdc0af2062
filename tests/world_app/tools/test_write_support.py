from datetime import UTC, datetime

import pytest
from django.db import transaction

from tests.factories import SupportTicketFactory
from tests.world_app.tools.shop import make_order, ok, refused
from world_app.models import Escalation, Resolution, SupportTicket, WarrantyClaim
from world_app.tools import invoke_tool

pytestmark = pytest.mark.django_db

SUMMARY = "Reseated the power cable; artifacts gone after a driver reinstall."


# --- update_ticket_status ---------------------------------------------------------------------------------------


def test_resolving_needs_a_resolution_record_first(shop):
    error = refused("update_ticket_status", "policy_violation", ticket_id=shop.ticket.id, status="resolved")
    assert "has no resolution record" in error["message"] and error["field"] == "status"
    ok(
        "create_resolution",
        ticket_id=shop.ticket.id,
        outcome="troubleshooting_steps",
        summary=SUMMARY,
        resolved_by=shop.agent.id,
    )
    result = ok("update_ticket_status", ticket_id=shop.ticket.id, status="resolved")
    assert (result["ticket"]["status"], result["previous_status"]) == ("resolved", "open")
    assert result["ticket"]["resolved_at"] == "2025-09-15T14:00:00-05:00"


def test_resolving_and_closing_need_an_assignee(shop):
    error = refused("update_ticket_status", "policy_violation", ticket_id=shop.new_ticket.id, status="closed")
    assert error == {
        "code": "policy_violation",
        "message": "a closed ticket needs an assignee: give assignee_id",
        "field": "assignee_id",
    }
    result = ok(
        "update_ticket_status",
        ticket_id=shop.new_ticket.id,
        status="closed",
        assignee_id=shop.agent.id,
        closure_reason="duplicate of an email thread",
    )
    assert result["ticket"]["assignee_id"] == shop.agent.id
    assert result["ticket"]["closure_reason"] == "duplicate of an email thread"


def test_tickets_move_only_along_the_state_machine(shop):
    error = refused("update_ticket_status", "invalid_transition", ticket_id=shop.closed_ticket.id, status="resolved")
    assert error["message"] == f"ticket {shop.closed_ticket.id} is closed; from closed it can move to: open"
    reopened = ok("update_ticket_status", ticket_id=shop.closed_ticket.id, status="open")
    assert reopened["ticket"]["status"] == "open" and reopened["ticket"]["closure_reason"] == ""
    error = refused("update_ticket_status", "invalid_transition", ticket_id=shop.ticket.id, status="open")
    assert error["message"] == f"ticket {shop.ticket.id} is already open"
    reassigned = ok("update_ticket_status", ticket_id=shop.ticket.id, status="open", assignee_id=shop.lead.id)
    assert reassigned["ticket"]["assignee_id"] == shop.lead.id
    error = refused("update_ticket_status", "policy_violation", ticket_id=shop.ticket.id, status="escalated")
    assert "create_escalation" in error["message"]
    assert ok("update_ticket_status", ticket_id=shop.ticket.id, status="pending_customer")["ticket"]["status"] == (
        "pending_customer"
    )


def test_update_ticket_status_refuses_inactive_or_unknown_people_and_tickets(shop):
    error = refused(
        "update_ticket_status", "policy_violation", ticket_id=shop.ticket.id, status="open", assignee_id=shop.former.id
    )
    assert error["field"] == "assignee_id" and "no longer works here" in error["message"]
    assert refused("update_ticket_status", "not_found", ticket_id="tkt-x", status="open")["field"] == "ticket_id"
    assert refused("update_ticket_status", "invalid_arguments", ticket_id=shop.ticket.id, status="done")
    assert SupportTicket.objects.get(pk=shop.ticket.id).assignee_id == shop.agent.id


# --- create_resolution -----------------------------------------------------------------------------------------


def test_create_resolution_links_the_refund_of_the_tickets_order(shop):
    refund = ok("create_refund", order_id=shop.recent.id, reason="shipping_issue", amount=20)["refund"]
    result = ok(
        "create_resolution",
        ticket_id=shop.ticket.id,
        outcome="refund_issued",
        summary="Refunded $20 for the crushed box.",
        resolved_by=shop.agent.id,
        refund_id=refund["id"],
    )
    resolution = result["resolution"]
    assert (resolution["id"], resolution["refund_id"], resolution["resolved_by"]) == (
        "res-w00001",
        refund["id"],
        shop.agent.id,
    )
    assert result["next_steps"] == [
        f"ticket {shop.ticket.id} is still open: set it to resolved with update_ticket_status"
    ]


def test_create_resolution_refusals(shop):
    base = {"ticket_id": shop.ticket.id, "summary": SUMMARY, "resolved_by": shop.agent.id}
    error = refused("create_resolution", "invalid_arguments", **base, outcome="refund_issued")
    assert error["field"] == "refund_id"
    other_refund = ok("create_refund", order_id=shop.bulk.id, reason="other", amount=5)["refund"]
    error = refused(
        "create_resolution", "policy_violation", **base, outcome="refund_issued", refund_id=other_refund["id"]
    )
    assert error["message"] == (
        f"refund {other_refund['id']} refunds order ord-t-bulk, but ticket {shop.ticket.id} is about order ord-t-recent"
    )
    error = refused(
        "create_resolution", "policy_violation", **{**base, "ticket_id": shop.closed_ticket.id}, outcome="no_action"
    )
    assert "is closed" in error["message"]
    error = refused(
        "create_resolution", "policy_violation", **{**base, "resolved_by": shop.former.id}, outcome="no_action"
    )
    assert error["field"] == "resolved_by"
    assert refused("create_resolution", "not_found", **base, outcome="refund_issued", refund_id="ref-x")["field"] == (
        "refund_id"
    )
    assert (
        refused("create_resolution", "invalid_arguments", **{**base, "summary": "ok"}, outcome="no_action")["field"]
        == "summary"
    )
    assert not Resolution.objects.exists()


# --- create_escalation -----------------------------------------------------------------------------------------


def test_create_escalation_routes_by_type_and_escalates_the_ticket(shop):
    result = ok(
        "create_escalation",
        ticket_id=shop.ticket.id,
        escalation_type="technical",
        notes="Artifacts persist after a clean driver install; likely faulty VRAM.",
        created_by=shop.agent.id,
        assigned_to=shop.engineer.id,
    )
    escalation = result["escalation"]
    assert (escalation["destination"], escalation["assigned_to"], escalation["status"]) == (
        "engineering",
        shop.engineer.id,
        "open",
    )
    assert (result["ticket"]["status"], result["previous_ticket_status"]) == ("escalated", "open")
    policy = ok(
        "create_escalation",
        ticket_id=shop.new_ticket.id,
        escalation_type="policy_exception",
        notes="Refund of $519.96 is over the approval limit; needs a team lead.",
    )
    assert policy["escalation"]["destination"] == "support"
    product = ok(
        "create_escalation",
        ticket_id=shop.ticket.id,
        escalation_type="product_specialist",
        notes="Customer asks which case fits a 380 mm card.",
    )
    assert product["escalation"]["destination"] == "product_management"  # another type on an escalated ticket


def test_a_policy_exception_goes_to_a_team_lead_not_a_plain_agent(shop):
    notes = "Return 12 days past the window; customer was travelling. Asking for an exception."
    error = refused(
        "create_escalation",
        "policy_violation",
        ticket_id=shop.ticket.id,
        escalation_type="policy_exception",
        notes=notes,
        assigned_to=shop.agent.id,
    )
    assert error["field"] == "assigned_to" and "decided by a team lead or manager" in error["message"]
    result = ok(
        "create_escalation",
        ticket_id=shop.ticket.id,
        escalation_type="policy_exception",
        notes=notes,
        assigned_to=shop.lead.id,
    )
    assert result["escalation"]["assigned_to"] == shop.lead.id


def test_create_escalation_refusals(shop):
    notes = "Needs an engineer to look at the logs we collected."
    ok("create_escalation", ticket_id=shop.ticket.id, escalation_type="technical", notes=notes)
    error = refused("create_escalation", "conflict", ticket_id=shop.ticket.id, escalation_type="technical", notes=notes)
    assert error["message"].startswith(f"ticket {shop.ticket.id} already has an open technical escalation (esc-w00001")
    error = refused(
        "create_escalation",
        "invalid_transition",
        ticket_id=shop.closed_ticket.id,
        escalation_type="technical",
        notes=notes,
    )
    assert "reopen it" in error["message"]
    error = refused(
        "create_escalation",
        "policy_violation",
        ticket_id=shop.new_ticket.id,
        escalation_type="technical",
        notes=notes,
        assigned_to=shop.specialist.id,
    )
    assert error["message"] == (
        f"a technical escalation goes to engineering; {shop.specialist.id} (Pat Product) works in product_management"
    )
    error = refused("create_escalation", "invalid_arguments", ticket_id=shop.new_ticket.id, escalation_type="technical")
    assert error["details"] == [{"field": "notes", "reason": "required"}]
    error = refused(
        "create_escalation",
        "invalid_arguments",
        ticket_id=shop.new_ticket.id,
        escalation_type="technical",
        notes="help",
    )
    assert error["field"] == "notes"
    assert Escalation.objects.count() == 1


# --- create_warranty_claim -------------------------------------------------------------------------------------


def claim(**arguments):
    return {"issue_description": "Stopped working after a week of normal use.", "remedy": "replacement", **arguments}


def test_manufacturing_defect_within_warranty_is_approved(shop):
    psu_line = shop.old.line_items.get(product=shop.psu)
    result = ok(
        "create_warranty_claim",
        **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect", ticket_id=shop.ticket.id),
    )
    record = result["claim"]
    assert (record["id"], record["status"], record["warranty_expires_on"]) == ("wcl-w00001", "approved", "2030-07-02")
    # shop.ticket is about another order: the claim is made today.
    assert record["decision_reason"].startswith(
        "manufacturing defect within warranty: claim made today, 2025-09-15; delivered 2025-07-02"
    )
    assert result["warranty"]["status"] == "active" and result["next_steps"] == []
    refund_args = claim(
        order_id=shop.recent.id, product_id=shop.gpu.id, defect_category="manufacturing_defect", remedy="refund"
    )
    still_sold = refused("create_warranty_claim", "policy_violation", **refund_args)
    assert "is still sold (active)" in still_sold["message"] and still_sold["field"] == "remedy"
    refused("create_warranty_claim", "invalid_arguments", **{**refund_args, "remedy": "repair"})  # we do not repair
    type(shop.gpu).objects.filter(pk=shop.gpu.pk).update(lifecycle="discontinued")
    refund_remedy = ok("create_warranty_claim", **refund_args)
    assert "create_refund" in refund_remedy["next_steps"][0]


def test_expired_warranty_is_denied_and_the_denial_is_recorded(shop):
    mouse_line = shop.old.line_items.get(product=shop.mouse)
    result = refused(
        "create_warranty_claim",
        "policy_violation",
        **claim(line_item_id=mouse_line.id, defect_category="manufacturing_defect"),
    )
    assert result["message"] == (
        "claim denied: warranty expired: claim made today, 2025-09-15; delivered 2025-07-02 with a 1-month warranty "
        "running through 2025-08-02; it expired 44 days ago"
    )
    assert "field" not in result
    stored = WarrantyClaim.objects.get()
    assert (stored.status, stored.line_item_id, stored.customer_id) == ("denied", mouse_line.id, shop.customer.id)


def test_a_claim_is_made_the_day_the_customer_reported_it_on_an_open_ticket_about_the_order(shop):
    """kb-0003: a defect reported before the end date is covered, however late the claim is filed; a past (closed)
    conversation or no ticket dates nothing."""
    mouse_line = shop.old.line_items.get(product=shop.mouse)
    reported = SupportTicketFactory(
        customer=shop.customer,
        order=shop.old,
        status="open",
        subject="Mouse stopped clicking",
        created_at=datetime(2025, 7, 30, 15, 0, tzinfo=UTC),
    )
    args = claim(line_item_id=mouse_line.id, defect_category="manufacturing_defect")
    with transaction.atomic():
        result = ok("create_warranty_claim", **args, ticket_id=reported.id)
        assert result["claim"]["status"] == "approved"
        assert result["warranty"]["claim_made_on"] == "2025-07-30"
        assert (
            "claim made on 2025-07-30, when the customer reported it on " + reported.id
            in (result["claim"]["decision_reason"])
        )
        transaction.set_rollback(True)
    SupportTicket.objects.filter(pk=reported.pk).update(status="closed")
    closed = refused("create_warranty_claim", "policy_violation", **args, ticket_id=reported.id)
    assert "claim made today, 2025-09-15" in closed["message"]


def test_excluded_causes_are_denied_with_the_exclusions(shop):
    gpu_line = shop.recent.line_items.get(product=shop.gpu)
    result = invoke_tool("create_warranty_claim", claim(line_item_id=gpu_line.id, defect_category="liquid_damage"))
    assert result["error"]["field"] == "defect_category"
    assert "liquid damage is not covered" in result["error"]["message"]
    assert result["claim"]["status"] == "denied"
    unknown = ok("create_warranty_claim", **claim(line_item_id=gpu_line.id, defect_category="unknown"))
    assert unknown["claim"]["status"] == "pending_inspection"


def test_warranty_claim_refusals_write_nothing(shop):
    error = refused(
        "create_warranty_claim",
        "policy_violation",
        **claim(order_id=shop.transit.id, product_id=shop.cpu.id, defect_category="manufacturing_defect"),
    )
    assert error["message"] == "the item has not been delivered yet; its warranty starts on delivery"
    psu_line = shop.bulk.line_items.get(product=shop.psu)
    error = refused(
        "create_warranty_claim",
        "policy_violation",
        **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect", quantity=5),
    )
    assert error["field"] == "quantity"
    error = refused(
        "create_warranty_claim",
        "invalid_arguments",
        **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect", ticket_id=shop.ticket.id),
    )
    assert error["field"] == "ticket_id"
    twice = make_order(shop.other, [(shop.cable, 1), (shop.cable, 1)], delivered_days_ago=2)
    error = refused(
        "create_warranty_claim",
        "invalid_arguments",
        **claim(order_id=twice.id, product_id=shop.cable.id, defect_category="manufacturing_defect"),
    )
    assert error["field"] == "line_item_id"
    assert refused(
        "create_warranty_claim", "invalid_arguments", **claim(line_item_id=psu_line.id, defect_category="dropped")
    )
    assert not WarrantyClaim.objects.exists()


def test_units_already_claimed_count_against_the_line(shop):
    psu_line = shop.bulk.line_items.get(product=shop.psu)
    ok("create_warranty_claim", **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect", quantity=3))
    error = refused(
        "create_warranty_claim",
        "policy_violation",
        **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect", quantity=2),
    )
    assert error["message"] == (
        f"line {psu_line.id} has 4 unit(s): 0 refunded and 3 already under an open or approved claim, so at most 1 "
        "more can be claimed"
    )
    one_unit = [{"line_item_id": psu_line.id, "quantity": 1}]
    ok("create_refund", order_id=shop.bulk.id, reason="defective", opened=True, lines=one_unit)
    error = refused(
        "create_warranty_claim",
        "policy_violation",
        **claim(line_item_id=psu_line.id, defect_category="manufacturing_defect"),
    )
    assert "1 refunded and 3 already under an open or approved claim, so at most 0" in error["message"]
