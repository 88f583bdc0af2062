"""reference_perturbations: one fault per copy, deterministic, by the rules its docstring states."""

from __future__ import annotations

import copy
import json

from tasks_app.perturbations import Perturbation, is_fact, neighbour_id, reference_perturbations

SOLUTION = {
    "calls": [
        {"tool": "search_orders", "arguments": {"customer_id": "cus-00012", "status": "fulfilled"}},
        {"tool": "search_orders", "arguments": {"customer_id": "cus-00012", "status": "fulfilled", "offset": 10}},
        {"tool": "search_orders", "arguments": {"customer_id": "cus-00012", "status": "fulfilled", "offset": 20}},
        {
            "tool": "create_refund",
            "arguments": {
                "order_id": "ord-230215-001",
                "reason": "defective",
                "lines": [{"line_item_id": "li-230215-001-1", "quantity": 1}],
                "opened": True,
                "notes": "Arrived broken.",
            },
        },
        {"tool": "calculate_price", "arguments": {"mode": "quote", "items": [{"product_id": "prd-00001"}]}},
        {"tool": "update_ticket_status", "arguments": {"ticket_id": "tkt-00001", "status": "resolved"}},
    ],
    "final_answer": (
        "Hi Ana. I refunded $129.99 for order ord-230215-001; the restocking fee was $19.50. "
        "Thanks for your patience!\n- It was delivered on Aug 14."
    ),
}


def by_key(solution=SOLUTION) -> dict[str, Perturbation]:
    return {p.key: p for p in reference_perturbations(solution)}


def test_each_write_is_dropped_once_and_reads_never():
    found = by_key()
    drops = sorted(k for k in found if k.startswith("drop_write"))
    assert drops == ["drop_write[3]", "drop_write[5]"]
    dropped = found["drop_write[3]"].solution["calls"]
    assert [c["tool"] for c in dropped] == ["search_orders"] * 3 + ["calculate_price", "update_ticket_status"]
    assert found["drop_write[3]"].solution["final_answer"] == SOLUTION["final_answer"]


def test_arguments_change_meaningfully_and_free_text_and_paging_never():
    found = by_key()
    refund = found["change_argument[3].order_id"].solution["calls"][3]["arguments"]
    assert refund["order_id"] == "ord-230215-002"
    assert found["change_argument[3].reason"].solution["calls"][3]["arguments"]["reason"] == "incompatible"
    assert found["change_argument[3].opened"].solution["calls"][3]["arguments"]["opened"] is False
    lines = found["change_argument[3].lines"].solution["calls"][3]["arguments"]["lines"]
    assert lines == [{"line_item_id": "li-230215-001-2", "quantity": 1}]
    assert found["change_argument[5].status"].solution["calls"][5]["arguments"]["status"] == "closed"
    assert "change_argument[3].notes" not in found
    assert not [k for k in found if k.endswith((".offset", ".limit"))]
    # Exactly one thing differs from the reference in a change_argument copy.
    for key, p in found.items():
        if p.kind == "change_argument":
            diffs = [i for i, (a, b) in enumerate(zip(p.solution["calls"], SOLUTION["calls"], strict=True)) if a != b]
            assert len(diffs) == 1, key


def test_each_fact_is_dropped_everywhere_it_appears_one_fact_per_copy():
    found = by_key()
    facts = [p for p in found.values() if p.kind == "drop_fact"]
    answers = [p.solution["final_answer"] for p in facts]
    assert all("Thanks for your patience!" in a for a in answers)  # no digit: never dropped
    assert any("$129.99" not in a and "$19.50" in a for a in answers)  # its clause only, the other kept
    assert any("$19.50" not in a and "$129.99" in a for a in answers)
    assert any("Aug 14" not in a and "$129.99" in a for a in answers)  # the bullet line
    assert [p.key for p in facts] == [f"drop_fact[{i}]" for i in range(len(facts))]


def test_a_fact_stated_twice_leaves_the_answer_entirely():
    solution = {
        "calls": [{"tool": "get_order_details", "arguments": {"order_id": "ord-230215-001"}}],
        "final_answer": "The refund is $1,299.50. Summary: refund of 1299.50 USD; it arrives on 2025-09-20. "
        "Your refund lands September 20.",
    }
    results = [{"order": {"id": "ord-230215-001", "total": "1299.50", "placed_at": "2025-09-20T10:00:00Z"}}]
    found = {p.description: p.solution["final_answer"] for p in reference_perturbations(solution, results=results)}
    money = found["every mention of 1299.50 dropped from the answer"]
    assert "1,299.50" not in money and "1299.50" not in money and "2025-09-20" in money
    day = found["every mention of 09-20 dropped from the answer"]
    assert "2025-09-20" not in day and "September 20" not in day and "$1,299.50" in day


def test_with_results_only_facts_the_tools_gave_and_the_instruction_did_not_are_dropped():
    solution = {
        "calls": [{"tool": "get_order_details", "arguments": {"order_id": "ord-230215-001"}}],
        "final_answer": "Order ord-230215-001 totals $50.00. I also checked ord-999999-001.",
    }
    results = [{"order": {"id": "ord-230215-001", "total": "50.00"}}]
    kept = reference_perturbations(solution, results=results, instruction="Where is ord-230215-001?")
    assert [p.description for p in kept if p.kind == "drop_fact"] == ["every mention of 50.00 dropped from the answer"]


def test_a_changed_read_drops_the_facts_it_gave_and_an_unchanged_one_is_no_fault():
    solution = {
        "calls": [
            {"tool": "get_order_details", "arguments": {"order_id": "ord-230215-001"}},
            {"tool": "search_knowledge_base", "arguments": {"query": "refunds", "kind": "policy"}},
        ],
        "final_answer": "Your order totals $50.00.",
    }

    def replay(calls):
        out = []
        for call in calls:
            if call["tool"] == "get_order_details":
                out.append({"order": {"id": call["arguments"]["order_id"], "total": "50.00" if call["arguments"][
                    "order_id"] == "ord-230215-001" else "75.00"}})  # fmt: skip
            else:
                out.append({"items": []})  # every kind of article: the same (empty) result
        return out

    found = {p.key: p for p in reference_perturbations(solution, replay=replay)}
    changed = found["change_argument[0].order_id"]
    assert changed.solution["final_answer"] == "" and "1 fact(s)" in changed.description
    assert "change_argument[1].kind" not in found


def test_only_the_first_page_keeps_the_offset_zero_call():
    found = by_key()
    page = found["first_page_only[1]"].solution["calls"]
    assert [c["arguments"].get("offset", 0) for c in page if c["tool"] == "search_orders"] == [0]
    assert [k for k in found if k.startswith("first_page_only")] == ["first_page_only[1]"]


def test_deterministic_and_the_input_is_untouched():
    before = copy.deepcopy(SOLUTION)
    first = reference_perturbations(SOLUTION)
    second = reference_perturbations(copy.deepcopy(SOLUTION))
    assert [(p.key, p.solution) for p in first] == [(p.key, p.solution) for p in second]
    assert before == SOLUTION
    first[0].solution["calls"].clear()
    assert reference_perturbations(SOLUTION)[0].solution["calls"]
    assert [p.key for p in reference_perturbations(SOLUTION)] == [p.key for p in first]
    kinds = [p.kind for p in first]
    assert kinds == sorted(kinds, key=["drop_write", "change_argument", "drop_fact", "first_page_only"].index)


def test_unknown_tools_are_no_writes_and_a_lookup_can_be_given():
    class FakeTool:
        group = "write"

        def input_schema(self):
            return {"properties": {"level": {"enum": ["low", "high"]}}}

    solution = {"calls": [{"tool": "escalate", "arguments": {"level": "low"}}], "final_answer": "Done."}
    assert reference_perturbations(solution, tool_lookup=lambda name: None) == []
    keys = [p.key for p in reference_perturbations(solution, tool_lookup=lambda name: FakeTool())]
    assert keys == ["drop_write[0]", "change_argument[0].level"]


def test_helpers():
    assert neighbour_id("cus-00009") == "cus-00010"
    assert neighbour_id("li-230215-001-1") == "li-230215-001-2"
    assert neighbour_id("ref-w00001") == "ref-w00002"
    assert is_fact("It costs $12.") and is_fact("Order ord-230215-001 shipped.")
    assert not is_fact("Thank you for waiting.")
    assert reference_perturbations({"calls": [], "final_answer": ""}) == []


def test_with_results_first_page_only_also_forgets_what_only_later_pages_showed():
    solution = {
        "calls": [
            {"tool": "search_orders", "arguments": {"product_id": "prd-00092"}},
            {"tool": "search_orders", "arguments": {"product_id": "prd-00092", "offset": 10}},
        ],
        "final_answer": "Their ids: ord-250101-001, ord-240101-002, ord-230101-003. Customer cus-00001 bought two.",
    }
    results = [
        {"items": [{"id": "ord-250101-001", "customer_id": "cus-00001"}], "has_more": True},
        {"items": [{"id": "ord-240101-002", "customer_id": "cus-00001"}, {"id": "ord-230101-003"}], "has_more": False},
    ]
    plain = by_key(solution)["first_page_only[1]"].solution
    assert plain["final_answer"] == solution["final_answer"] and len(plain["calls"]) == 1
    aware = {p.key: p for p in reference_perturbations(solution, results=results)}["first_page_only[1]"]
    assert aware.solution["final_answer"] == "Their ids: ord-250101-001. Customer cus-00001 bought two."
    assert "2 id(s)" in aware.description


def test_a_copy_that_leaves_the_reference_world_and_answer_is_no_fault():
    """With world_diff, a copy whose calls leave the world the reference leaves and whose answer is the reference's
    is not made, of any kind: the flag the fee rules ignore, a write that changed nothing."""
    solution = {
        "calls": [
            {"tool": "create_refund", "arguments": {"order_id": "ord-230215-001", "reason": "defective",
                                                    "lines": [{"line_item_id": "li-230215-001-1", "quantity": 1}],
                                                    "opened": True}},
            {"tool": "update_ticket_status", "arguments": {"ticket_id": "tkt-00001", "status": "resolved"}},
        ],
        "final_answer": "Refunded $129.99 for ord-230215-001.",
    }  # fmt: skip
    asked: list[str] = []

    def world_diff(calls):
        """A world where ``opened`` is not stored and no status update changes tkt-00001 (it is archived)."""
        asked.append(json.dumps(calls, sort_keys=True))
        rows, updated = [], []
        for call in calls:
            if call["tool"] == "create_refund":
                arguments = {k: v for k, v in call["arguments"].items() if k != "opened"}
                rows.append({"model": "refund", "row": arguments})
            elif call["arguments"]["ticket_id"] != "tkt-00001":
                updated.append({"model": "supportticket", "pk": call["arguments"]["ticket_id"]})
        return {"created": rows, "updated": updated, "deleted": []}

    plain = {p.key for p in reference_perturbations(solution)}
    real = {p.key for p in reference_perturbations(solution, world_diff=world_diff)}
    assert {"change_argument[0].opened", "drop_write[1]", "change_argument[1].status"} <= plain
    assert plain - real == {"change_argument[0].opened", "drop_write[1]", "change_argument[1].status"}
    assert "change_argument[1].ticket_id" in real  # another ticket resolved: a real fault
    assert {"drop_write[0]", "change_argument[0].reason", "change_argument[0].order_id"} <= real
    # The copies that change the answer need no replay of the world; the reference's diff is computed once.
    assert asked.count(json.dumps(solution["calls"], sort_keys=True)) == 1
