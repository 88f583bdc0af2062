"""Grading primitives a dump, a spray or a negation cannot meet: each met and not met, and the gamed cases.

Amounts and dates bound to their subject in any common format, id sets (extras and misses count), claims with
their negation, the reply-format check, "no other changes" over the episode's diff, "saw the rows" over tool
results, regex safety (refused on save, time-limited in the judge) and the compound-criterion warning.
"""

from __future__ import annotations

import json
import time
import uuid
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError

from rubrics_app.criteria import criteria_validate, criteria_warnings, criterion_content_hash
from rubrics_app.patterns import PATTERN_TIMEOUT_S
from rubrics_app.programmatic import criteria_evaluate
from rubrics_app.programmatic.responses import response_verdict
from rubrics_app.programmatic.tool_calls import tool_call_verdict
from tests.factories import small_world
from world_app.episodes import episode_create
from world_app.snapshots import snapshot_publish
from world_app.tools.steps import call_tool

ANSWER = (
    "Hi Christopher, your return on order ord-250906-001 is accepted: it is within the 30-day return window "
    "(last day 2025-10-12). Your refund is $117.76; a 15% restocking fee of $20.78 applies because the item was "
    "opened, and the original shipping ($89.00) is not refundable. Refund ref-w00001 will be paid once the item "
    "is back with us and inspected."
)


def row(kind: str, spec: dict, *, required: bool = True) -> SimpleNamespace:
    (item,) = criteria_validate([{"kind": kind, "text": "t", "category": "correctness", "spec": spec}])
    fields = {"kind": item.kind, "text": item.text, "spec": item.spec, "weight": 1.0, "category": item.category,
              "required": required}  # fmt: skip
    return SimpleNamespace(key=uuid.uuid4(), content_hash=criterion_content_hash(**fields), **fields)


def says(answer: str, **spec) -> str:
    return response_verdict(row("response", spec), answer)["status"]


def dump_of(*results: dict) -> str:
    return "\n".join(json.dumps(r) for r in results)


# --- amounts and dates bound to their subject -------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    ["$117.76", "117.76 USD", "USD 117.76", "117.76 dollars", "$ 117.76", "117.76"],
)
def test_amount_is_read_in_common_money_formats(written):
    answer = ANSWER.replace("$117.76", written)
    assert says(answer, op="amount", value="117.76", subject="refund", tolerance=0.01) == "met"


def test_amount_with_thousands_in_every_format():
    for written in ("$1,234.50", "1234.50 USD", "USD 1,234.50", "1,234.50 dollars"):
        answer = f"Your refund is {written}, paid to your card."
        assert says(answer, op="amount", value="1234.50", subject="refund") == "met", written


def test_amount_must_be_the_one_stated_for_its_subject():
    # The right number next to another subject is not the refund.
    assert says(ANSWER, op="amount", value="20.78", subject="refund") == "not_met"
    assert says(ANSWER, op="amount", value="20.78", subject="restocking fee") == "met"
    assert says(ANSWER, op="amount", value="89.00", subject="shipping") == "met"
    wrong = ANSWER.replace("$117.76", "$70.79")
    assert says(wrong, op="amount", value="117.76", subject="refund") == "not_met"
    # The old op is met by the number anywhere, which is why the library moves off it.
    assert says("Order total 117.76 before the refund was cancelled.", op="number", value="117.76") == "met"


def test_amount_is_not_met_by_a_dump_or_a_spray():
    dump = dump_of({"refund": {"id": "ref-w00001", "amount": "117.76", "restocking_fee": "20.78"}})
    assert says(dump, op="amount", value="117.76", subject="refund") == "not_met"
    spray = ANSWER + " ord-250906-001 li-250906-001-2 cus-00012 $117.76 $20.78 $89.00 $401.97 ref-w00001"
    verdict = response_verdict(row("response", {"op": "amount", "value": "117.76", "subject": "refund"}), spray)
    assert verdict["status"] == "not_met" and "without saying what they are" in verdict["rationale"]


@pytest.mark.parametrize(
    "written", ["2025-09-15", "September 15, 2025", "Sep 15", "15 Sept 2025", "9/15/2025", "Sept. 15", "15 September"]
)
def test_date_is_read_in_common_formats(written):
    answer = f"The replacement ships on {written}, and you will get the tracking number by email."
    assert says(answer, op="date", value="2025-09-15") == "met"
    assert says(answer, op="date", value="2025-09-15", subject="ships") == "met"
    assert says(answer, op="date", value="2025-09-16") == "not_met"


def test_date_bound_to_its_subject():
    answer = "It was delivered on 2025-09-01; the return window closed on 2025-10-01."
    assert says(answer, op="date", value="2025-10-01", subject="window") == "met"
    assert says(answer, op="date", value="2025-09-01", subject="window") == "not_met"
    assert says("Delivered 2024-10-01.", op="date", value="2025-10-01") == "not_met"  # another year


# --- id sets ---------------------------------------------------------------------------------------------------


def test_id_set_counts_extras_and_misses():
    spec = {"op": "id_set", "value": ["ord-250901-001", "ord-250902-004"]}
    assert says("Your open orders are ord-250902-004 and ord-250901-001.", **spec) == "met"
    assert says("Your open order is ord-250901-001.", **spec) == "not_met"  # a miss
    listed = "Your open orders: ord-250901-001, ord-250902-004, ord-250903-001 and ord-250904-002."
    verdict = response_verdict(row("response", spec), listed)  # a spray of ids: extras
    assert verdict["status"] == "not_met" and verdict["evidence"]["extra"] == ["ord-250903-001", "ord-250904-002"]
    # Ids of another kind don't count; allowed ids may appear.
    assert says("Orders ord-250901-001 and ord-250902-004 (ticket tkt-00001).", **spec) == "met"
    assert says("ord-250901-001, ord-250902-004, ord-250903-001", **spec, allowed=["ord-250903-001"]) == "met"
    assert says("Nothing is open.", op="id_set", value=[], id_kind="ord") == "met"


def test_id_set_refuses_mixed_kinds_on_save():
    with pytest.raises(ValidationError, match="one kind"):
        criteria_validate([{"kind": "response", "text": "t", "category": "correctness",
                            "spec": {"op": "id_set", "value": ["ord-250901-001", "tkt-00001"]}}])  # fmt: skip


# --- claims and negation ---------------------------------------------------------------------------------------


def test_affirms_is_negation_aware():
    spec = {"op": "affirms", "value": "team lead|exception|supervisor"}
    assert says("I have asked a team lead to approve an exception for you.", **spec) == "met"
    assert says("I'm sorry, no exception is possible under our policy.", **spec) == "not_met"
    assert says("We cannot offer an exception here.", **spec) == "not_met"
    assert says("An exception is not possible for this order.", **spec) == "not_met"
    # The old regex op is met by its own negation.
    assert says("I'm sorry, no exception is possible.", op="regex", value="team lead|exception") == "met"


def test_not_affirms_refuses_a_claim_the_answer_must_not_make():
    spec = {"op": "not_affirms", "value": r"full refund|refund (?:the|your) shipping"}
    assert says("You get a full refund of $401.97.", **spec) == "not_met"
    assert says("This is not a full refund: the shipping stays with us.", **spec) == "met"
    assert says("Your refund is $117.76.", **spec) == "met"


def test_a_reply_naming_every_policy_word_claims_contradictions():
    spray = "Refund, no refund, exception, team lead, warranty, out of warranty, eligible, within the window."
    assert says(spray, op="not_affirms", value="within the (?:return )?window") == "not_met"


# --- reply format ----------------------------------------------------------------------------------------------


def test_prose_is_met_by_a_reply_and_not_by_a_dump_or_bare_values():
    assert says(ANSWER, op="prose") == "met"
    assert says(dump_of({"order": {"id": "ord-250906-001", "total": "401.97"}}), op="prose") == "not_met"
    assert says('"id": "ord-250906-001", "total": "401.97", "status": "paid"', op="prose") == "not_met"
    spray = ANSWER + "\nord-250906-001 cus-00012 $117.76 $20.78 $89.00 li-250906-001-2 prd-00031"
    assert says(spray, op="prose") == "not_met"
    assert says("ord-250906-001 $117.76", op="prose") == "not_met"
    listing = "Your orders this month:\n- ord-250901-001: $20.00, delivered\n- ord-250902-004: $35.50, shipped"
    assert says(listing, op="prose") == "met"


# --- tool use: what the agent saw ------------------------------------------------------------------------------


def test_saw_is_about_results_by_any_paging():
    spec = {"tool": "search_orders", "expect": "saw", "ids": ["ord-250905-002", "ord-250907-001"]}
    page_two = {"orders": [{"id": "ord-250905-002"}, {"id": "ord-250907-001"}], "offset": 10, "limit": 10}
    big_page = {"orders": [{"id": f"ord-2508{n:02d}-001"} for n in range(1, 10)] + [{"id": "ord-250905-002"}]}
    calls_paged = [
        {"name": "search_orders", "arguments": {"limit": 10}, "result": {"orders": [{"id": "ord-250901-001"}]}},
        {"name": "search_orders", "arguments": {"offset": 10, "limit": 10}, "result": page_two},
    ]
    calls_big = [{"name": "search_orders", "arguments": {"limit": 50}, "result": big_page}]
    first_only = calls_paged[:1]
    errored = [{"name": "search_orders", "arguments": {}, "result": page_two, "is_error": True}]
    from rubrics_app.programmatic import calls_as_steps

    criterion = row("tool_call", spec)
    assert tool_call_verdict(criterion, calls_as_steps(calls_paged))["status"] == "met"
    assert tool_call_verdict(criterion, calls_as_steps(first_only))["status"] == "not_met"
    assert tool_call_verdict(criterion, calls_as_steps(errored))["status"] == "not_met"
    one_missing = tool_call_verdict(criterion, calls_as_steps(calls_big))
    assert one_missing["status"] == "not_met" and one_missing["evidence"]["missing"] == ["ord-250907-001"]
    # No tool named: any tool's result counts; an id inside a longer text counts, a longer id does not.
    anywhere = row("tool_call", {"expect": "saw", "ids": ["ord-250907-001"]})
    text = {"ticket": {"body": "Customer asks about ord-250907-001 and its delivery date, which slipped twice."}}
    assert tool_call_verdict(anywhere, calls_as_steps([{"name": "get_ticket", "result": text}]))["status"] == "met"
    longer = {"ticket": {"body": "Customer asks about ord-250907-0012 and its delivery date, which slipped."}}
    assert tool_call_verdict(anywhere, calls_as_steps([{"name": "get_ticket", "result": longer}]))["status"] == (
        "not_met"
    )


# --- the episode: no other changes, and saw from logged steps ------------------------------------------------


@pytest.fixture
def world():
    rows = small_world()
    rows["snapshot"] = snapshot_publish(note="primitives")
    return SimpleNamespace(**rows)


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_only_changes_allows_the_tasks_changes_and_nothing_else(world):
    order = world.order.pk
    episode = episode_create(snapshot=world.snapshot, label="only changes")
    untouched = episode_create(snapshot=world.snapshot, label="read only")
    assert "error" not in call_tool(untouched, "get_order_details", {"order_id": order})
    result = call_tool(episode, "update_order_status", {"order_id": order, "status": "backorder", "reason": "GPU"})
    assert "error" not in result, result
    allowed = row("state", {"op": "only_changes", "value": [{"entity_type": "order", "id": order}]})
    fields_only = row("state", {"op": "only_changes", "value": [{"entity_type": "order", "fields": ["notes"]}]})
    other_row = row("state", {"op": "only_changes", "value": [{"entity_type": "order", "id": "ord-nope"}]})
    read_only = row("state", {"op": "only_changes", "value": []})
    verdicts = criteria_evaluate(criteria=[allowed, fields_only, other_row, read_only], episode=episode,
                                 final_answer="")  # fmt: skip
    assert [v["status"] for v in verdicts] == ["met", "not_met", "not_met", "not_met"]
    assert "order" in verdicts[3]["rationale"] and verdicts[3]["evidence"]["outside"]
    # A read-only episode meets "no change at all".
    assert criteria_evaluate(criteria=[read_only], episode=untouched, final_answer="")[0]["status"] == "met"
    # The diff may be passed in (a trajectory that carries it): a create beyond the allowed count is refused.
    diff = {"created": [{"model": "refund", "pk": "ref-w00001"}, {"model": "refund", "pk": "ref-w00002"}],
            "updated": [], "deleted": []}  # fmt: skip
    one_refund = row("state", {"op": "only_changes", "value": [{"entity_type": "refund", "created": 1}]})
    verdict = criteria_evaluate(criteria=[one_refund], episode=untouched, final_answer="", diff=diff)[0]
    assert verdict["status"] == "not_met" and "2 refund row(s) created (allowed 1)" in verdict["rationale"]


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_saw_reads_results_from_the_logged_steps_or_the_given_calls(world):
    order = world.order.pk
    episode = episode_create(snapshot=world.snapshot, label="saw")
    assert "error" not in call_tool(episode, "get_order_details", {"order_id": order})
    saw = row("tool_call", {"expect": "saw", "ids": [world.line_item.pk]})
    assert criteria_evaluate(criteria=[saw], episode=episode, final_answer="")[0]["status"] == "met"
    given = [{"name": "get_order_details", "arguments": {"order_id": order}, "result": {"order": {"id": order}}}]
    verdict = criteria_evaluate(criteria=[saw], episode=episode, final_answer="", tool_calls=given)[0]
    assert verdict["status"] == "not_met"


# --- regex safety ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [r"^(a+)+$", r"(\w+\s?)+$", r"(a|a)*$", r"(\d|\d\d)+$", r"(x+x+)+y"])
def test_catastrophic_patterns_are_refused_on_save(pattern):
    for spec in ({"op": "regex", "value": pattern}, {"op": "affirms", "value": pattern},
                 {"op": "amount", "value": "1", "subject": pattern}):  # fmt: skip
        with pytest.raises(ValidationError, match="backtrack catastrophically"):
            criteria_validate([{"kind": "response", "text": "t", "category": "correctness", "spec": spec}])
    arguments = {"query": {"op": "regex", "value": pattern}}
    with pytest.raises(ValidationError, match="backtrack catastrophically"):
        criteria_validate([{"kind": "tool_call", "text": "t", "category": "correctness",
                            "spec": {"tool": "search_orders", "arguments": arguments}}])  # fmt: skip


def test_library_style_patterns_are_accepted():
    for pattern in (r"team lead|exception|supervisor", r"ord-250808-003[\s\S]{0,200}(closed|2025-09-11)",
                    r"no restocking fee|restocking fee (does not|doesn't) apply", r"\b5 ?%"):  # fmt: skip
        criteria_validate([{"kind": "response", "text": "t", "category": "correctness",
                            "spec": {"op": "regex", "value": pattern}}])  # fmt: skip


def test_a_stored_catastrophic_pattern_is_an_error_verdict_within_the_time_limit():
    # As an old row or a frozen release row holds it: never validated.
    stored = SimpleNamespace(key=uuid.uuid4(), content_hash="x", kind="response", text="t", weight=1.0,
                             required=True, spec={"op": "regex", "value": r"^(a|a)*$"})  # fmt: skip
    started = time.perf_counter()
    verdict = response_verdict(stored, "a" * 60 + "!")
    elapsed = time.perf_counter() - started
    assert verdict["status"] == "error" and "ran past" in verdict["rationale"]
    # Unlimited, this match takes about 2**60 steps; the limit is wall-clock time, so a loaded machine (CI on
    # two shared cores) may overshoot it by a few seconds, never by years.
    assert elapsed < PATTERN_TIMEOUT_S * 30
    nested = SimpleNamespace(**{**vars(stored), "spec": {"op": "regex", "value": r"^(a+)+$"}})
    started = time.perf_counter()
    assert response_verdict(nested, "a" * 60 + "!")["status"] in ("not_met", "error")
    assert time.perf_counter() - started < PATTERN_TIMEOUT_S * 30


# --- compound criteria -----------------------------------------------------------------------------------------


def test_compound_criterion_text_is_warned_not_refused():
    items = [
        {"kind": "llm", "text": "States the amount, the date and the reason", "category": "correctness"},
        {"kind": "response", "text": "States the refund amount", "category": "correctness",
         "spec": {"op": "amount", "value": "1", "subject": "refund"}},
    ]  # fmt: skip
    assert len(criteria_validate(items)) == 2
    warnings = criteria_warnings(items)
    assert len(warnings) == 1 and warnings[0].startswith("criteria[0].text: this text joins 3 checks")


def test_amount_without_a_subject_is_read_from_the_prose_only():
    assert says(ANSWER, op="amount", value="89.00") == "met"
    assert says(dump_of({"refund": {"amount": "89.00"}}), op="amount", value="89.00") == "not_met"
    # A line that only names the values' type says nothing of what they are for: a spray's tail.
    assert says(ANSWER + "\n\nAmounts: $5.00.", op="amount", value="89.00") == "not_met"
    assert says(ANSWER + "\n\nAmounts: $5.00.", op="prose") == "not_met"
    assert says(ANSWER + "\nTotal: $401.97", op="prose") == "met"
    assert says(ANSWER + "\nRelated records: kb-0005, ord-250906-002.", op="prose") == "not_met"
    assert says(ANSWER + "\n\nRelated records: prd-00016, prd-00040, prd-00083.", op="prose") == "not_met"
    assert says("I searched every page.\nTheir ids: ord-250913-005, ord-250907-001, ord-250821-001.", op="prose") == (
        "met"
    )  # one kind of id after a label is a list the reader asked for


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_makes_changes_needs_each_change_with_its_decided_values(world):
    order = world.order.pk
    episode = episode_create(snapshot=world.snapshot, label="makes changes")
    result = call_tool(episode, "update_order_status", {"order_id": order, "status": "backorder", "reason": "GPU"})
    assert "error" not in result, result
    backordered = row("state", {"op": "makes_changes", "value": [{"entity_type": "order", "id": order,
                                                                   "values": {"status": "backorder"}}]})  # fmt: skip
    cancelled = row("state", {"op": "makes_changes", "value": [{"entity_type": "order", "id": order,
                                                                 "values": {"status": "cancelled"}}]})  # fmt: skip
    refund = row("state", {"op": "makes_changes", "value": [{"entity_type": "refund", "created": 1}]})
    verdicts = criteria_evaluate(criteria=[backordered, cancelled, refund], episode=episode, final_answer="")
    assert [v["status"] for v in verdicts] == ["met", "not_met", "not_met"]
    assert "1 new refund (made 0)" in verdicts[2]["rationale"]


def test_a_claim_only_named_among_many_alternatives_is_not_made():
    """A no-call reply lists every status and remedy word: naming them all commits to none ("incompatible" among
    "compatible, approved, denied, ..."), while a forbidden claim named there still counts as said."""
    listing = ("Depending on it we can offer: refund, replacement, repair, store credit, exchange, team lead, "
               "compatible, incompatible, approved, denied.")  # fmt: skip
    assert says(listing, op="affirms", value="incompatible|not compatible") == "not_met"
    assert says(listing, op="affirms", value="team lead") == "not_met"
    assert says(listing, op="not_affirms", value="team lead") == "not_met"
    assert says("It is incompatible: the board has 2 slots.", op="affirms", value="incompatible") == "met"
    options = "You can choose a refund, a replacement or store credit."
    assert says(options, op="affirms", value="replacement") == "met"


def test_a_spray_makes_claims_unreadable_too():
    claim = {"op": "affirms", "value": "restocking fee"}
    assert says(ANSWER, **claim) == "met"
    spray = ANSWER + "\n\nRelated records: ord-250906-001, cus-00012, li-250906-001-2, prd-00031.\nAmounts: $1.00."
    assert says(spray, **claim) == "not_met"
    assert says(spray, op="not_affirms", value="full refund") == "not_met"
