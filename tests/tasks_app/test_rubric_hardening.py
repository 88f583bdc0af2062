"""Moving a rubric onto the primitives that measure what they say (tasks_app.library.rubric_hardening): each conversion,
the added criteria and the weights, on a reference, its results and its diff."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

from rubrics_app.criteria import criteria_validate, criterion_content_hash
from rubrics_app.programmatic import calls_as_steps
from rubrics_app.programmatic.responses import response_verdict
from rubrics_app.programmatic.state import state_verdict
from rubrics_app.programmatic.tool_calls import tool_call_verdict
from tasks_app.library.rubric_hardening import FACT_SHARE, criteria_harden
from tasks_app.perturbations import drop_facts
from tasks_app.red_team import answer_reformatted, answer_reworded

ANSWER = (
    "Hi Christopher, your return on order ord-250906-001 is accepted. Your refund is $117.76; a 15% restocking "
    "fee of $20.78 applies because the item was opened. The refund ref-w00001 is paid within 5 to 10 business "
    "days of the item's inspection, and the return window closes on 2025-10-12."
)
CALLS = [
    {"tool": "get_order_details", "arguments": {"order_id": "ord-250906-001"}},
    {"tool": "create_refund", "arguments": {"order_id": "ord-250906-001", "reason": "customer_remorse"}},
]
RESULTS = [
    {"order": {"id": "ord-250906-001", "total": "401.97"}, "return_window": {"last_day": "2025-10-12"}},
    {"refund": {"id": "ref-w00001", "amount": "117.76", "restocking_fee": "20.78"}},
]
DIFF = {
    "created": [{"table": "world_refund", "model": "refund", "pk": "ref-w00001", "row": {}}],
    "updated": [{"table": "world_order", "model": "order", "pk": "ord-250906-001",
                 "fields": {"status": {"before": "fulfilled", "after": "partially_refunded"}, "updated_at": {}}}],
    "deleted": [],
}  # fmt: skip


def criterion(kind: str, text: str, spec: dict, *, weight: float = 1, required: bool = True) -> dict:
    return {"kind": kind, "text": text, "spec": spec, "weight": weight, "category": "correctness",
            "required": required}  # fmt: skip


def harden(criteria: list[dict], *, answer: str = ANSWER, diff: dict = DIFF, calls=CALLS, results=RESULTS):
    out = criteria_harden(criteria=criteria, instruction="Refund Christopher's headset.",
                          solution={"calls": calls, "final_answer": answer}, results=results, diff=diff)  # fmt: skip
    criteria_validate(out)  # every criterion it makes is valid
    return out


def row(c: dict) -> SimpleNamespace:
    fields = {k: c[k] for k in ("kind", "text", "spec", "weight", "category", "required")}
    return SimpleNamespace(key=uuid.uuid4(), content_hash=criterion_content_hash(**fields), **fields)


def passes(criteria: list[dict], answer: str) -> bool:
    required = [c for c in criteria if c["kind"] == "response" and c["required"]]
    return all(response_verdict(row(c), answer)["status"] == "met" for c in required)


def by_op(criteria: list[dict], op: str) -> list[dict]:
    return [c for c in criteria if (c["spec"].get("op") or c["spec"].get("expect")) == op]


def test_number_becomes_an_amount_bound_to_its_subject():
    out = harden([criterion("response", "The reply states the refund amount $117.76",
                            {"op": "number", "value": "117.76", "tolerance": 0.01})])  # fmt: skip
    (amount,) = [c for c in by_op(out, "amount") if c["spec"]["value"] == "117.76"]
    assert amount["spec"]["subject"] == r"\brefund"
    for answer in (ANSWER, answer_reformatted(ANSWER), answer_reworded(ANSWER)):
        assert response_verdict(row(amount), answer)["status"] == "met"
    assert response_verdict(row(amount), ANSWER.replace("$117.76", "$20.78 (fee included)"))["status"] == "not_met"
    assert response_verdict(row(amount), json.dumps(RESULTS))["status"] == "not_met"


def test_id_contains_become_one_id_set_per_kind_and_keywords_become_claims():
    out = harden([
        criterion("response", "Names the order", {"op": "contains", "value": "ord-250906-001"}),
        criterion("response", "Says it was opened", {"op": "regex", "value": "opened"}),
        criterion("response", "Gives the last day", {"op": "regex", "value": "2025-10-12|October 12"}),
    ])  # fmt: skip
    (orders,) = [c for c in by_op(out, "id_set") if c["spec"]["value"] == ["ord-250906-001"]]
    assert orders["required"]
    assert by_op(out, "affirms")[0]["spec"]["value"] == "opened"
    assert by_op(out, "date")[0]["spec"]["value"] == "2025-10-12"
    spray = ANSWER + "\nRelated records: ord-250906-002, li-250906-001-2."
    assert response_verdict(row(orders), spray)["status"] == "not_met"


def test_every_task_gets_no_other_changes_its_changes_the_reply_format_and_what_it_saw():
    out = harden([criterion("state", "A refund exists", {"entity_type": "refund", "op": "count_gte", "value": 1})])
    (only,) = by_op(out, "only_changes")
    assert only["required"] and only["spec"]["value"] == [
        {"entity_type": "refund", "created": 1},
        {"entity_type": "order", "id": "ord-250906-001", "fields": ["status", "updated_at"]},
    ]
    (makes,) = by_op(out, "makes_changes")
    assert makes["spec"]["value"][1]["fields"] == ["status"]  # a timestamp is no evidence of the change
    assert state_verdict(row(only), diff=lambda: DIFF)["status"] == "met"
    assert state_verdict(row(makes), diff=lambda: DIFF)["status"] == "met"
    two = {**DIFF, "created": DIFF["created"] * 2}
    assert state_verdict(row(only), diff=lambda: two)["status"] == "not_met"  # over-acting
    assert state_verdict(row(makes), diff=lambda: {"created": [], "updated": [], "deleted": []})["status"] == (
        "not_met"
    )
    assert by_op(out, "prose")[0]["required"]
    (saw,) = [c for c in by_op(out, "saw") if not c["spec"].get("tool")]
    assert saw["spec"]["ids"] == ["ord-250906-001", "ref-w00001"]
    assert tool_call_verdict(row(saw), calls_as_steps([{"name": c["tool"], "result": r}
                                                       for c, r in zip(CALLS, RESULTS, strict=True)]))["status"] == (
        "met"
    )  # fmt: skip
    assert tool_call_verdict(row(saw), [])["status"] == "not_met"  # a reply without a call saw nothing


def test_a_read_only_task_changes_nothing_and_its_write_ban_is_that_criterion():
    ban = criterion("tool_call", "Nothing is written", {"tool": "create_refund", "expect": "not_called"})
    out = harden([ban], diff={"created": [], "updated": [], "deleted": []}, calls=CALLS[:1], results=RESULTS[:1])
    assert not [c for c in out if c["spec"].get("tool") == "create_refund"]
    assert by_op(out, "only_changes")[0]["spec"]["value"] == [] and not by_op(out, "makes_changes")


def test_paging_by_offset_becomes_saw_the_later_rows():
    calls = [{"tool": "search_orders", "arguments": {"status": "backorder", "limit": 2}},
             {"tool": "search_orders", "arguments": {"status": "backorder", "offset": 2, "limit": 2}}]  # fmt: skip
    results = [{"orders": [{"id": "ord-250901-001"}, {"id": "ord-250901-002"}]},
               {"orders": [{"id": "ord-250902-001"}, {"id": "ord-250902-002"}]}]  # fmt: skip
    paging = criterion("tool_call", "Read page 2", {"tool": "search_orders",
                                                    "arguments": {"offset": {"op": "gte", "value": 2}}})  # fmt: skip
    answer = "Four orders wait on stock: ord-250901-001, ord-250901-002, ord-250902-001 and ord-250902-002."
    out = harden([paging], answer=answer, calls=calls, results=results, diff={"created": [], "updated": []})
    (saw,) = [c for c in by_op(out, "saw") if c["spec"].get("tool")]
    assert saw["spec"] == {"tool": "search_orders", "expect": "saw", "ids": ["ord-250902-001", "ord-250902-002"]}
    big_page = [{"name": "search_orders", "arguments": {"limit": 50}, "result": {"orders": results[0]["orders"]
                                                                                  + results[1]["orders"]}}]  # fmt: skip
    assert tool_call_verdict(row(saw), calls_as_steps(big_page))["status"] == "met"


def test_every_fact_the_results_back_is_owed_to_a_required_criterion():
    out = harden([criterion("response", "Says it was opened", {"op": "regex", "value": "opened"})])
    assert passes(out, ANSWER) and passes(out, answer_reformatted(ANSWER)) and passes(out, answer_reworded(ANSWER))
    for fact in ("money:117.76", "money:20.78", "id:ref-w00001", "date:10-12"):
        assert not passes(out, drop_facts(ANSWER, {fact})), fact


def test_the_answers_facts_carry_their_share_of_the_weight():
    out = harden([criterion("state", "A refund exists", {"entity_type": "refund", "op": "count_gte", "value": 1},
                            weight=10)])  # fmt: skip
    facts = sum(c["weight"] for c in out if c["kind"] == "response")
    total = sum(c["weight"] for c in out if c["kind"] != "llm")
    assert facts / total >= FACT_SHARE - 0.01


def test_a_number_on_a_count_or_a_money_text_is_bound_to_what_it_counts():
    answer = (
        "It won't work: the kit has 4 modules but the Mini-ITX board has only 2 memory slots. Your refund is $227.79."
    )
    count = criterion("response", "States the board has 2 slots", {"op": "number", "value": 2, "tolerance": 0})
    money = criterion("response", "Names the refund amount", {"op": "contains", "value": "227.79"})
    out = harden([count, money], answer=answer, diff={"created": [], "updated": []}, calls=[], results=[])
    (slots,) = [c for c in out if c["text"] == "States the board has 2 slots"]
    assert slots["spec"]["op"] == "affirms"
    assert passes([slots], answer) and passes([slots], "The board has two slots, the kit 4 modules.")
    assert not passes([slots], "Order 2 arrives on 2025-09-16; the kit has 4 modules and the board 6 slots.")
    (refund,) = [c for c in out if c["text"] == "Names the refund amount"]
    assert refund["spec"]["op"] == "amount" and refund["spec"]["subject"] == r"\brefund"
    assert not passes([refund], "Order total $227.79. Your refund is $100.00.")


def test_guards_stay_required_but_carry_at_most_their_share_of_the_weight():
    from tasks_app.library.rubric_hardening import GUARD_SHARE, is_guard

    out = harden([criterion("response", "Says it was opened", {"op": "regex", "value": "opened"}),
                  criterion("tool_call", "No cancellation", {"tool": "update_order_status", "expect": "not_called"},
                            weight=5)])  # fmt: skip
    guards = [c for c in out if is_guard(c)]
    assert {c["spec"].get("op") or c["spec"].get("expect") for c in guards} == {"only_changes", "not_called"}
    assert all(c["required"] for c in guards)
    total = sum(c["weight"] for c in out if c["kind"] != "llm")
    assert sum(c["weight"] for c in guards) / total <= GUARD_SHARE + 1e-9
