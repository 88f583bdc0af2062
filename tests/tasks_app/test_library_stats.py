"""The library's figures (tasks_app.library.services.library_stats): what a reference needs, measured by replaying
it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from tasks_app.library.families.base import BRANCH_SHARE_MAX, FamilyInstance, branch_cap, branches_balanced
from tasks_app.library.services.library_shape import TOOL_ENTITY, TaskShape, task_shape
from tasks_app.library.services.library_stats import shapes_figures
from tasks_app.perturbations import SnapshotReplay
from world_app.models import Order
from world_app.snapshots import snapshot_publish
from world_app.tools.registry import all_tools

DB = pytest.mark.django_db(databases=["default", "episode"])
FORMAT = {"kind": "response", "text": "Prose", "spec": {"op": "prose"}, "category": "format", "required": True}
READ_ONLY = {
    "kind": "state", "text": "No other changes", "spec": {"op": "only_changes", "value": []},
    "category": "constraint", "required": True,
}  # fmt: skip


def saw(*ids: str, required: bool = True) -> dict:
    return {
        "kind": "tool_call", "text": f"Saw {', '.join(ids)}", "spec": {"expect": "saw", "ids": list(ids)},
        "category": "completeness", "required": required,
    }  # fmt: skip


@pytest.fixture
def snapshot(seeded_world):
    return snapshot_publish(note="library stats")


@DB
def test_task_shapes_and_the_task_stats_command_on_the_seeded_world(snapshot, tmp_path):
    """One snapshot for the three checks (publishing one costs seconds)."""
    calls_and_paging(snapshot)
    writes_judgements_dates_ids_and_difficulty(snapshot)
    task_stats_command(snapshot, tmp_path)


def calls_and_paging(snapshot):
    first = {"tool": "search_orders", "arguments": {"status": "fulfilled", "limit": 50}}
    second = {"tool": "search_orders", "arguments": {"status": "fulfilled", "limit": 50, "offset": 50}}
    with SnapshotReplay(snapshot) as replay:
        pages = replay.results([first, second])
    assert pages[0]["has_more"]  # more than one page of 50
    order, late = pages[0]["items"][0]["id"], pages[1]["items"][5]["id"]
    details = {"tool": "get_order_details", "arguments": {"order_id": order}}
    padding = {"tool": "search_knowledge_base", "arguments": {"query": "returns"}}
    answer = f"Hello. The first fulfilled order listed is {order}; the 56th is {late}. Regards, Support."
    with SnapshotReplay(snapshot) as replay:

        def shape(criteria, calls, **kw):
            solution = {"calls": calls, "final_answer": answer}
            return task_shape(key="t", criteria=criteria, instruction="Which orders?", solution=solution,
                              replay=replay, **kw)  # fmt: skip

        paged = shape([FORMAT, READ_ONLY, saw(order, late)], [first, second, details, padding])
        assert paged.reference_passes and paged.calls == 4
        assert paged.needed_tools == ("search_orders",)  # the details and the padding read are not needed
        assert paged.needs_paging and not paged.writes and paged.entity_types == ("order",)
        # Rows of the first page at limit 50 do not need paging, however the reference read them.
        shallow = shape([FORMAT, READ_ONLY, saw(order)], [{**first, "arguments": {**first["arguments"], "limit": 10}},
                        {**first, "arguments": {**first["arguments"], "limit": 10, "offset": 10}}])  # fmt: skip
        assert shallow.needed_calls == 1 and not shallow.needs_paging
        # A failing reference says so; then no call is "needed" beyond what it already misses.
        failing = shape([FORMAT, saw("ord-000000-000")], [details])
        assert not failing.reference_passes


def writes_judgements_dates_ids_and_difficulty(snapshot):
    order = Order.objects.filter(status="paid", shipments__isnull=True).order_by("id").first()
    assert order is not None
    cancel = {"tool": "update_order_status", "arguments": {"order_id": order.id, "status": "cancelled",
                                                           "reason": "customer asked"}}  # fmt: skip
    cancelled = {
        "kind": "state", "text": f"{order.id} is cancelled before its ship date",
        "spec": {"entity_type": "order", "filters": [{"field": "id", "op": "eq", "value": order.id}], "op": "eq",
                 "field": "status", "value": "cancelled"},
        "category": "correctness", "required": True,
    }  # fmt: skip
    solution = {"calls": [cancel], "final_answer": f"Order {order.id} is cancelled."}
    instruction = f"Customer {order.customer_id} (employee emp-00001 asking) wants {order.id} cancelled."
    with SnapshotReplay(snapshot) as replay:

        def shape(criteria, tags):
            return task_shape(key="t", criteria=criteria, instruction=instruction, solution=solution, replay=replay,
                              tags=tags, difficulty="hard")  # fmt: skip

        judged = shape([FORMAT, cancelled], ["judgement:return-window", "time-window", "judgement:made-up"])
        assert judged.needed_tools == ("update_order_status",) and judged.writes
        assert judged.entity_types == ("order",)
        assert judged.judgements == ("return-window",)  # a known key, graded by a required state criterion
        assert judged.judgements_declared == ("made-up", "return-window")
        assert judged.date_relation  # a date tag, and a required criterion about a date ("before its ship date")
        assert judged.instruction_ids == tuple(sorted((order.customer_id, "emp-00001", order.id)))
        assert judged.internal_ids == tuple(sorted((order.customer_id, "emp-00001")))
        assert judged.structural_difficulty == "medium"  # write + judgement + date = 3 points
        # Tags the rubric does not grade do not count: only the format is required here.
        ungraded = shape([FORMAT, {**cancelled, "required": False}], ["judgement:return-window", "time-window"])
        assert ungraded.judgements == () and not ungraded.date_relation and ungraded.date_declared
        assert ungraded.needed_calls == 0 and ungraded.structural_difficulty == "easy"


def _shape(key, needed, *, types=1, family="", branch="", task_type="reasoning", **kw) -> TaskShape:
    defaults = dict(
        source="family" if family else "starter", family=family, branch=branch, task_type=task_type,
        expected_difficulty="easy", reference_passes=True, calls=needed + 1, needed_tools=("get_product",) * needed,
        entity_types=tuple(f"t{i}" for i in range(types)), needs_paging=False, writes=False, judgements=(),
        judgements_declared=(), judgement_suggested=False, date_relation=False, date_declared=False,
        instruction_ids=(),
    )  # fmt: skip
    return TaskShape(key=key, **{**defaults, **kw})


def test_shapes_figures_on_a_small_fixture():
    tone = {"kind": "llm", "text": "Polite.", "spec": {}, "category": "tone", "required": False}
    shapes = [
        _shape("a", 8, types=3, needs_paging=True, writes=True, judgements=("return-window",), date_relation=True,
               family="f", branch="yes", expected_difficulty="hard"),
        _shape("b", 2, family="f", branch="yes", instruction_ids=("cus-00001", "ord-250101-001")),
        _shape("c", 0, family="f", branch="no", instruction_ids=("ord-250101-001",)),
        _shape("d", 6, types=4, writes=True, task_type="communication", criteria=(FORMAT, tone, READ_ONLY)),
    ]  # fmt: skip
    figures = shapes_figures(shapes)
    assert figures["tasks"] == 4 and figures["needed_calls_mean"] == 4.0
    assert figures["needed_calls_share_ge_8"] == 0.25 and figures["needed_calls_share_le_2"] == 0.5
    assert figures["needed_calls_histogram"] == {"0": 1, "2": 1, "6": 1, "8": 1}
    assert figures["joins_3plus_share"] == 0.5 and figures["paging_share"] == 0.25
    assert figures["write_share"] == 0.5 and figures["judgement_share"] == 0.25
    assert figures["judgements"] == {"return-window": 1} and figures["date_relation_share"] == 0.25
    assert figures["ids_in_instruction"]["any_share"] == 0.5
    assert figures["ids_in_instruction"]["internal_share"] == 0.25  # an order number is the customer's own
    assert figures["ids_in_instruction"]["tasks_by_prefix"] == {"cus": 1, "ord": 2}
    assert figures["difficulty"]["expected_vs_structural"] == {"easy": {"easy": 2, "medium": 1}, "hard": {"hard": 1}}
    assert figures["difficulty"]["agreement_share"] == 0.75
    communication = figures["communication"]
    assert communication["tasks"] == 1 and communication["required_criteria"] == 2
    assert communication["tone_format_llm_criteria"] == 1 and communication["tone_format_llm_required"] == 0
    assert figures["targets"]["needed_calls_mean"] == {"target": ">= 6", "value": 4.0, "met": False}
    assert figures["targets"]["write_share"]["met"] is False
    f = figures["families"]["f"]
    assert f["branches"] == {"no": 1, "yes": 2} and f["largest_branch_share"] == 0.667 and not f["within_bound"]
    assert figures["families_within_bound"] == 0


def _instances(branches: str) -> list[FamilyInstance]:
    return [
        FamilyInstance(family="f", entity_ids=(str(i),), title="t", task_type="reasoning", difficulty="easy",
                       instruction="i", criteria=[], reference_solution={}, branch=b)
        for i, b in enumerate(branches)
    ]  # fmt: skip


def test_branches_balanced_caps_the_largest_branch_and_keeps_every_prefix_near_the_shares():
    built = _instances("a" * 90 + "b" * 10)
    kept = branches_balanced(iter(built))
    counts = {b: sum(i.branch == b for i in kept) for b in "ab"}
    assert counts == {"a": 15, "b": 10}  # 15 / 25 = 60%
    assert [i.entity_ids for i in kept if i.branch == "a"] == [i.entity_ids for i in built[:15]]  # first in order
    for n in range(5, len(kept) + 1):
        assert sum(i.branch == "a" for i in kept[:n]) <= BRANCH_SHARE_MAX * n + 1
    limited = branches_balanced(iter(built), limit=10)
    assert len(limited) == 10 and sum(i.branch == "a" for i in limited) == branch_cap(10) == 6
    # A limit the minority cannot fill still ends within the bound.
    few = branches_balanced(iter(_instances("a" * 50 + "b" * 4)), limit=30)
    assert sum(i.branch == "b" for i in few) == 4 and sum(i.branch == "a" for i in few) == 6
    # Instances without a branch are not balanced; a single branch cannot be, and keeps one.
    assert len(branches_balanced(iter(_instances("" * 0) + _instances("a" * 3)))) == 1
    unbranched = [FamilyInstance(**{**i.__dict__, "branch": ""}) for i in _instances("aaa")]
    assert len(branches_balanced(iter(unbranched))) == 3


def task_stats_command(snapshot, tmp_path):
    order = Order.objects.filter(status="fulfilled").order_by("id").first()
    task = {
        "key": "one-order", "title": "One order", "task_type": "information_retrieval", "difficulty": "easy",
        "tags": ["orders"], "instruction": f"What is the status of my order {order.id}?",
        "criteria": [FORMAT, READ_ONLY, saw(order.id)],
        "reference_solution": {"calls": [{"tool": "get_order_details", "arguments": {"order_id": order.id}}],
                               "final_answer": f"Hi, your order {order.id} has been fulfilled and is on its way to "
                                               "you. Let me know if anything else comes up."},
    }  # fmt: skip
    (tmp_path / "information_retrieval").mkdir()
    (tmp_path / "information_retrieval" / "one-order.yaml").write_text(yaml.safe_dump(task))
    out = StringIO()
    call_command("task_stats", "--json", "--no-families", "--path", str(tmp_path), stdout=out)
    library = json.loads(out.getvalue())["library"]
    assert library["snapshot"] == snapshot.version and "families" not in library
    starter = library["starter"]
    assert starter["tasks"] == 1 and starter["by_type"] == {"information_retrieval": 1}
    assert starter["needed_calls_mean"] == 1.0 and starter["reference_fails"] == []
    assert starter["ids_in_instruction"]["internal_share"] == 0.0
    assert set(starter["targets"]) >= {"needed_calls_mean", "paging_share", "judgement_share", "date_relation_share"}
    out = StringIO()
    call_command("task_stats", "--no-families", "--path", str(tmp_path), stdout=out)
    assert "library, starter: 1 tasks" in out.getvalue() and "MISS needed_calls_mean" in out.getvalue()


def test_provenance_counts_the_lookup_that_gave_a_needed_call_its_id():
    """The ablation keeps ``get_order_details``' order id as written; the search that found it is what a real
    agent could not drop. A read whose result feeds nothing needed still counts for nothing."""
    from tasks_app.library.services.library_shape import graded_facts, provenance_closure

    calls = [
        {"tool": "search_customers", "arguments": {"query": "nadia@example.com"}},
        {"tool": "search_knowledge_base", "arguments": {"query": "returns"}},
        {"tool": "search_orders", "arguments": {"customer_id": "cus-00402"}},
        {"tool": "update_order_status", "arguments": {"order_id": "ord-250801-002", "status": "cancelled"}},
    ]
    results = [
        {"items": [{"id": "cus-00402"}]},
        {"items": [{"id": "kb-0008", "title": "Returns"}]},
        {"items": [{"id": "ord-250801-002", "total": "50.96"}]},
        {"order": {"id": "ord-250801-002"}},
    ]
    # The write alone is what the ablation finds; its order id came from the order search, whose customer id came
    # from the customer search. The knowledge-base read gave nothing the write uses.
    assert provenance_closure(calls, results, {3}, given=set()) == {0, 2, 3}
    # An id the instruction gave is not traced: the order number from the customer's email needs no search.
    assert provenance_closure(calls, results, {3}, given={"ord-250801-002"}) == {3}
    # An error result names nothing.
    errored = [*results[:2], {"error": {"message": "ord-250801-002 not found"}}, results[3]]
    assert provenance_closure(calls, errored, {3}, given=set()) == {3}
    # An id the graded answer must state comes from the first result naming it.
    assert provenance_closure(calls[:3], results[:3], set(), given=set(), demanded={"ord-250801-002"}) == {0, 2}
    # A stated fact (an amount) likewise.
    facts = graded_facts(
        [{"op": "amount", "value": "50.96"}, {"op": "regex", "value": "15"}, {"op": "number", "value": "2"}],
        answer="The total is $50.96 for 2 items.",
        instruction="What will Nadia pay?",
    )
    assert facts == ["50.96"]  # patterns are not literal; "2" is too short to trace
    assert provenance_closure(calls[:3], results[:3], set(), given=set(), facts=facts) == {0, 2}
    # A fact the instruction already states needs no lookup.
    assert graded_facts([{"op": "amount", "value": "50.96"}], answer="$50.96", instruction="Is $50.96 right?") == []
    # A graded date is traced in the tools' ISO form whatever form the answer states it in, unless the sender gave it.
    delivered = [{"op": "date", "value": "2025-11-26"}]
    assert graded_facts(delivered, answer="It arrived on November 26.", instruction="Where is it?") == ["2025-11-26"]
    assert graded_facts(delivered, answer="It arrived on 11/26/2025.", instruction="Where is it?") == ["2025-11-26"]
    assert graded_facts(delivered, answer="It arrived on November 27.", instruction="Where is it?") == []
    assert graded_facts(delivered, answer="It arrived on Nov 26.", instruction="It came Nov 26, right?") == []


def test_every_tool_names_the_entity_type_it_is_about():
    """A tool missing from TOOL_ENTITY would drop its type from every join it makes (a build written by
    update_build would not count as a build)."""
    assert {tool.name for tool in all_tools()} - set(TOOL_ENTITY) == set()
