"""The red team: policies that must fail a rubric, valid alternatives that must pass it, and the two flags."""

from __future__ import annotations

import json

import pytest

from tasks_app.perturbations import SnapshotReplay
from tasks_app.red_team import (
    GAMEABLE_PARTIAL_REWARD,
    MUST_FAIL,
    MUST_PASS,
    PolicyOutcome,
    answer_reformatted,
    answer_reworded,
    policy_expect,
    red_team_check,
    red_team_flags,
    red_team_policies,
)
from world_app.snapshots import snapshot_publish

INSTRUCTION = "Ana Reyes asks: why was I charged twice for ord-230215-001?"
SOLUTION = {
    "calls": [
        {"tool": "get_order_details", "arguments": {"order_id": "ord-230215-001"}},
        {"tool": "search_payments", "arguments": {"order_id": "ord-230215-001"}},
        {"tool": "get_product", "arguments": {"product_id": "prd-00017"}},
    ],
    "final_answer": "Hi Ana,\n\nI checked your order. Payment pay-000001 of $1,234.50 on 2025-09-15 went through.\n\n"
    "Sorry for the worry: the second attempt failed, so no money was taken twice.\n\nBest regards, Corecraft",
}
RESULTS = [
    {"order": {"id": "ord-230215-001", "total": "1234.50", "customer_id": "cus-00012"}},
    {
        "items": [
            {"id": "pay-000001", "amount": "1234.50", "created_at": "2025-09-15T12:00:00Z"},
            {"id": "pay-000002", "amount": "99.90", "status": "failed"},
        ]
    },
    {"product": {"id": "prd-00017", "price": "1234.50"}},
]


def fake_replay(calls):
    """Reads return the fixed results (a changed argument returns another row); writes are accepted."""
    out = []
    for call in calls:
        for reference, result in zip(SOLUTION["calls"], RESULTS, strict=True):
            if call == reference:
                out.append(result)
                break
        else:
            out.append({"ok": True, "echo": json.dumps(call["arguments"], sort_keys=True)})
    return out


def policies() -> dict:
    found = red_team_policies(instruction=INSTRUCTION, solution=SOLUTION, replay=fake_replay, vocabulary="")
    return {p.key: p for p in found}


def test_must_fail_policies_are_built_as_named():
    found = policies()
    assert json.loads(found["dump"].solution["final_answer"]) == RESULTS
    assert found["dump"].solution["calls"] == SOLUTION["calls"]
    spray = found["spray"].solution["final_answer"]
    assert spray.startswith(SOLUTION["final_answer"]) and "pay-000002" in spray and "$99.90" in spray
    assert "cus-00012" in spray
    assert found["echo"].solution == {"calls": [], "final_answer": INSTRUCTION}
    no_call = found["no_call"].solution
    assert no_call["calls"] == [] and "refund" in no_call["final_answer"] and "partially refunded" in no_call[
        "final_answer"]  # fmt: skip
    over = [k for k in found if k.startswith("over_act")]
    assert "over_act[create_refund]" in over and "over_act[update_order_status]" in over
    extra = found["over_act[update_order_status]"].solution["calls"]
    assert extra[:3] == SOLUTION["calls"] and extra[3]["arguments"] == {"order_id": "ord-230215-001",
        "status": "cancelled", "reason": "customer request"}  # fmt: skip
    assert all(p.expect == MUST_FAIL for k, p in found.items() if k in ("dump", "spray", "echo", "no_call"))


def test_a_dropped_fact_leaves_the_answer_everywhere_and_a_changed_read_drops_what_it_gave():
    found = policies()
    dropped = [p.solution["final_answer"] for p in found.values() if p.kind == "drop_fact"]
    # ord-230215-001 is in the instruction: not a fact the agent found, never dropped.
    assert dropped and all("1,234.50" not in a or "2025-09-15" not in a for a in dropped)
    changed = found["change_argument[1].order_id"]
    assert changed.solution["calls"][1]["arguments"]["order_id"] == "ord-230215-002"
    assert "pay-000001" not in changed.solution["final_answer"]
    assert "no money was taken twice" in changed.solution["final_answer"]


def test_valid_alternatives_keep_the_facts():
    found = policies()
    reordered = [c["tool"] for c in found["reorder_reads"].solution["calls"]]
    assert reordered == ["get_product", "search_payments", "get_order_details"]
    assert found["extra_read"].solution["calls"][0]["tool"] == "get_customer_ticket_history"
    assert found["extra_read"].solution["calls"][1:] == SOLUTION["calls"]
    assert "1234.50 USD" in found["formats"].solution["final_answer"]
    assert "September 15, 2025" in found["formats"].solution["final_answer"]
    reworded = found["reword"].solution["final_answer"]
    assert reworded != SOLUTION["final_answer"] and reworded.startswith("Hello Ana,")
    for fact in ("pay-000001", "$1,234.50", "2025-09-15", "no money was taken"):
        assert fact in reworded
    assert "bigger_page" not in found  # no paging in the reference
    assert all(p.expect == MUST_PASS for k, p in found.items() if k in ("reorder_reads", "extra_read", "reword"))


def test_a_read_that_uses_an_id_an_earlier_result_gave_stays_after_it():
    solution = {
        "calls": [
            {"tool": "search_orders", "arguments": {"customer_id": "cus-00012"}},
            {"tool": "get_order_details", "arguments": {"order_id": "ord-250101-009"}},
        ],
        "final_answer": "Your order ord-250101-009 is on its way.",
    }

    def replay(calls):
        return [{"items": [{"id": "ord-250101-009"}]} if c["tool"] == "search_orders" else {"ok": 1} for c in calls]

    found = {p.key for p in red_team_policies(instruction="Where is my order?", solution=solution, replay=replay)}
    assert "reorder_reads" not in found


def test_formats_and_rewording_are_deterministic():
    assert answer_reformatted("Refunded $1,234.50 on 2025-09-15.") == "Refunded 1234.50 USD on September 15, 2025."
    assert answer_reworded(SOLUTION["final_answer"]) == answer_reworded(SOLUTION["final_answer"])


def outcome(key: str, passed: bool, partial: float) -> PolicyOutcome:
    from tasks_app.red_team import policy_kind

    return PolicyOutcome(key=key, kind=policy_kind(key), expect=policy_expect(key), passed=passed,
                         partial_reward=partial, unmet=["the id set"], met_required=["names $1,234.50"])  # fmt: skip


def test_flags_name_the_policy_and_the_criteria():
    flags = red_team_flags(
        [
            outcome("reference", True, 1.0),
            outcome("dump", False, GAMEABLE_PARTIAL_REWARD + 0.05),
            outcome("spray", True, 1.0),
            outcome("drop_fact[0]", False, 0.9),  # a perturbation failed: caught, whatever its partial reward
            outcome("bigger_page", False, 0.8),
            outcome("reword", True, 1.0),
        ]
    )
    assert [c["policy"] for c in flags["gameable"]] == ["dump", "spray"]
    assert flags["gameable"][1]["criteria"] == ["names $1,234.50"]
    assert flags["over_specified"] == [{"policy": "bigger_page", "why": "fails a valid alternative",
                                        "criteria": ["the id set"]}]  # fmt: skip
    assert red_team_flags([outcome("dump", False, 0.2), outcome("reword", True, 1.0)]) == {
        "gameable": [],
        "over_specified": [],
    }


@pytest.mark.django_db(databases=["default", "episode"])
def test_red_team_check_in_the_scratch_world_flags_a_number_anywhere_and_a_regex_order(seeded_world):
    from world_app.models import Payment

    snapshot = snapshot_publish(note="red team")
    payment = Payment.objects.filter(status="failed").order_by("id").first()
    amount = f"{payment.amount:,.2f}"
    solution = {
        "calls": [
            {"tool": "search_payments", "arguments": {"customer_id": payment.order.customer_id, "status": "failed"}}
        ],
        "final_answer": f"Hi,\n\nYour payment {payment.id} of ${amount} failed.\n\nNo money was taken.\n\nBest regards",
    }
    criteria = [
        {
            "kind": "response",
            "text": "States the amount",
            "spec": {"op": "number", "value": float(payment.amount), "tolerance": 0.01},
            "weight": 1,
            "required": True,
        },
        {
            "kind": "response",
            "text": "Payment id, then 'no money'",
            "spec": {"op": "regex", "value": f"{payment.id}[\\s\\S]*no money"},
            "weight": 1,
            "required": True,
        },
    ]
    with SnapshotReplay(snapshot) as replay:
        report = red_team_check(criteria=criteria, instruction="Why did it fail?", solution=solution, replay=replay)
    assert report.reference.passed
    outcomes = {o.key: o for o in report.outcomes}
    assert outcomes["echo"].passed is False and outcomes["no_call"].passed is False
    assert outcomes["spray"].passed  # the number is anywhere in a spray: the rubric is gameable
    assert "spray" in [c["policy"] for c in report.gameable]
    # Rewording moves "No money was taken" before the payment: the order-bound regex punishes it.
    assert "reword" in [c["policy"] for c in report.over_specified]
    assert not report.gate_passes


def test_no_must_fail_policy_ends_where_the_reference_ends():
    """A must-fail policy whose calls leave the reference's world and whose answer is the reference's is not made
    (the shared ``OutcomeCheck``): over-acting with a write that changes nothing is no over-acting."""

    def world_diff(calls):  # only a refund changes this world
        return {"created": [c for c in calls if c["tool"] == "create_refund"], "updated": [], "deleted": []}

    found = red_team_policies(
        instruction=INSTRUCTION, solution=SOLUTION, replay=fake_replay, vocabulary="", world_diff=world_diff
    )
    keys = {p.key for p in found}
    assert "over_act[create_refund]" in keys
    assert not [k for k in keys if k.startswith("over_act[") and k != "over_act[create_refund]"]
    plain = set(policies())
    assert "over_act[update_order_status]" in plain


@pytest.mark.django_db(databases=["default", "episode"])
def test_flipping_a_flag_the_refund_rules_ignore_is_no_perturbation(seeded_world):
    """Cables pay no restocking fee and ``opened`` is not stored: flipping it on the refund is no fault (the library
    check and calibration share this), while changing the reason is one."""
    from tasks_app.library.services.library_files import starter_tasks_read

    snapshot = snapshot_publish(note="red team: same outcome")
    (task,), _ = starter_tasks_read(
        __import__("pathlib").Path("tasks_app/fixtures/starter_tasks/multi_step_workflow/return-three-gpu-cables.yaml")
    )
    solution = task.fields["reference_solution"]
    with SnapshotReplay(snapshot) as replay:
        found = red_team_policies(instruction=task.fields["instruction"], solution=solution, replay=replay.results,
                                  vocabulary="", world_diff=replay.diff)  # fmt: skip
        keys = {p.key for p in found}
        assert replay.diff(solution["calls"])["created"]  # the reference makes a refund
    refund = next(i for i, call in enumerate(solution["calls"]) if call["tool"] == "create_refund")
    assert f"change_argument[{refund}].opened" not in keys
    assert f"change_argument[{refund}].reason" in keys and f"drop_write[{refund}]" in keys


def test_no_over_acting_on_an_entity_the_reference_created():
    """Notes on the build the task asked to save are what the creating call could have written: no over-acting.
    A build the task only named is still over-acted on."""
    from tasks_app.red_team.must_fail import created_ids, extra_writes

    instruction = "Save Rebecca's August build with the cheaper CPU; her old draft is bld-00040."
    calls = [
        {"tool": "get_order_details", "arguments": {"order_id": "ord-250810-001"}},
        {"tool": "create_build", "arguments": {"customer_id": "cus-00064", "name": "August build (fixed)"}},
    ]
    results = [
        {"order": {"id": "ord-250810-001", "customer_id": "cus-00064"}},
        {"build": {"id": "bld-00151", "customer_id": "cus-00064", "status": "saved"}},
    ]
    assert created_ids(instruction, calls, results) == {"bld-00151"}

    def replay(extended):  # every write accepted
        return [*results, *({"ok": True} for _ in extended[len(results) :])]

    def builds_over_acted(text: str) -> list[str]:
        writes = extra_writes(text, calls, results, replay)
        return [arguments["build_id"] for tool, arguments in writes if tool == "update_build"]

    assert builds_over_acted("Save Rebecca's August build with the cheaper CPU.") == []  # only the new build
    assert builds_over_acted(instruction) == ["bld-00040"]  # the named old draft, never the new build
