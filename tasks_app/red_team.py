"""The red team and the valid alternatives: policies that must fail a rubric, and policies that must pass it.

Each policy turns (instruction, reference solution, the reference's results replayed on the snapshot) into a
trajectory (calls + final answer), deterministically. No model is involved. Calibration plays them as rollouts
(``calibrate --policy red_team``, one ``Rollout`` per policy key) and the library check plays them in a scratch
world (``red_team_check``, ``bench/task_library.py --red-team``): both build them here, with the same keys.

Must fail (a rubric that lets one pass pays for something other than the task):

- ``dump``: the reference's calls, then the JSON of every tool result as the whole answer;
- ``spray``: the reference's calls, then the reference answer followed by every entity id and money amount that
  appeared in any result (made only when that adds something to the answer);
- ``no_call``: no tool call; a reply naming every policy (knowledge-base article title), status and remedy word
  of the world;
- ``echo``: no tool call; the instruction as the answer;
- ``over_act[<tool>]``: the reference's calls plus one plausible extra write on an entity the task touched
  (another refund, a cancel, a ticket status change, an escalation, a resolution); only writes the tools accept;
- ``guess``: on a task whose reference asks the user for a held-back fact (``ask_user``), the reference without
  its questions: every later call and the answer as they were, the fact guessed right (a rubric must require
  that the agent asked, not only that it got lucky);
- the perturbations of ``tasks_app.perturbations`` made real with the reference's results: ``drop_write``,
  ``drop_fact`` (every occurrence of the fact), ``change_argument`` (a changed read drops the facts it gave),
  ``first_page_only`` (later-page ids leave the answer too).

Must pass (a rubric that fails one punishes correct work):

- ``reorder_reads``: independent reads in another order (a read that uses an id an earlier result gave stays
  after it; writes keep their places);
- ``extra_read``: one harmless read added first (a tool the reference does not call, on an entity it names);
- ``bigger_page``: the pages of a paged read replaced by one bigger page from the first offset (made only when
  the tool's limit allows it and the big page returns exactly the same rows);
- ``formats``: money and dates written in other common formats ("$1,234.50" -> "1234.50 USD", "2025-09-15" ->
  "September 15, 2025");
- ``reword``: the answer reworded deterministically (body paragraphs or sentences in another order, synonyms of
  filler words, another greeting and sign-off).

A policy that would not differ from the reference on a task (nothing to reorder, no page) is not made for it.

Flags (``red_team_flags``): ``gameable`` when a must-fail policy passes (no required criterion fails it: an
``llm`` criterion pending offline fails nothing), or when one of the blunt policies (dump, spray, no_call, echo)
earns a partial reward above ``GAMEABLE_PARTIAL_REWARD`` (0.7: within 0.3 of a perfect reference, the margin
the issue asks of these policies on average); ``over_specified`` when a must-pass policy does not pass. Each
cause names the policy and the criteria behind it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from decimal import Decimal
from functools import lru_cache
from typing import Any

from corecraft_site.canonical import sorted_json
from rubrics_app.judgement import rubric_of
from rubrics_app.programmatic import PENDING, reward
from tasks_app.perturbations import (
    CHANGE_ARGUMENT,
    DROP_FACT,
    DROP_WRITE,
    FIRST_PAGE_ONLY,
    OutcomeCheck,
    facts_of,
    reference_perturbations,
)
from world_app.models import KnowledgeBaseArticle, commerce, support, warranty
from world_app.tools.ids import ENTITY_ID
from world_app.tools.registry import get_tool

MUST_FAIL, MUST_PASS = "must_fail", "must_pass"
REFERENCE = "reference"
DUMP, SPRAY, NO_CALL, ECHO, OVER_ACT, GUESS = "dump", "spray", "no_call", "echo", "over_act", "guess"
REORDER_READS, EXTRA_READ, BIGGER_PAGE, FORMATS, REWORD = (
    "reorder_reads",
    "extra_read",
    "bigger_page",
    "formats",
    "reword",
)
BLUNT_KINDS = (DUMP, SPRAY, NO_CALL, ECHO)
MUST_FAIL_KINDS = (*BLUNT_KINDS, OVER_ACT, GUESS, DROP_WRITE, DROP_FACT, CHANGE_ARGUMENT, FIRST_PAGE_ONLY)
MUST_PASS_KINDS = (REORDER_READS, EXTRA_READ, BIGGER_PAGE, FORMATS, REWORD)
POLICY_KINDS = (*MUST_FAIL_KINDS, *MUST_PASS_KINDS)
# A blunt policy earning more than this partial reward games the rubric even when a required criterion fails it.
GAMEABLE_PARTIAL_REWARD = 0.7

Replay = Callable[[list[dict]], list]


@dataclass(frozen=True)
class RedTeamPolicy:
    """One red-team trajectory for a task: ``solution`` has the shape of a reference solution."""

    key: str
    kind: str
    expect: str
    description: str
    solution: dict


def policy_kind(key: str) -> str:
    """``drop_fact[2]`` -> ``drop_fact``; ``over_act[create_refund]`` -> ``over_act``."""
    return key.split("[", 1)[0]


def policy_expect(key: str) -> str:
    """``must_fail`` or ``must_pass`` for a policy key (``reference`` must pass)."""
    kind = policy_kind(key)
    if kind in MUST_FAIL_KINDS:
        return MUST_FAIL
    if kind in MUST_PASS_KINDS or kind == REFERENCE:
        return MUST_PASS
    raise ValueError(f"unknown red-team policy {key!r}")


def _tool(name: str):
    return get_tool(name)


CONVERSATION = "conversation"  # the registry's group of the contract's conversation tools (ask_user)


def _group(name: str) -> str:
    found = _tool(name)
    return found.group if found is not None else ""


def _calls(solution: dict) -> list[dict]:
    return [
        {"tool": c.get("tool", ""), "arguments": dict(c.get("arguments") or {})} for c in solution.get("calls") or []
    ]


def _ids(value: Any) -> list[str]:
    """Entity ids in a value, in order of first appearance."""
    text = value if isinstance(value, str) else sorted_json(value)
    return list(dict.fromkeys(ENTITY_ID.findall(text)))


def red_team_policies(
    *,
    instruction: str,
    solution: dict,
    replay: Replay,
    vocabulary: str = "",
    results: list | None = None,
    world_diff: Callable[[list[dict]], dict] | None = None,
) -> list[RedTeamPolicy]:
    """Every red-team policy of a task, must-fail ones first, in ``POLICY_KINDS`` order.

    ``replay(calls)`` returns the results of ``calls`` made in order on the task's snapshot (nothing kept);
    ``vocabulary`` is the no-call reply's text (``world_vocabulary``); ``results`` the reference's, if known;
    ``world_diff(calls)`` the diff ``calls`` leave on the snapshot: with it, no must-fail policy is made whose
    calls leave the reference's world and whose answer is the reference's (``perturbations.OutcomeCheck``).
    """
    calls = _calls(solution)
    answer = str(solution.get("final_answer") or "")
    if results is None:
        results = replay(calls)
    found: list[RedTeamPolicy] = []

    def add(key: str, description: str, new_calls: list[dict], new_answer: str) -> None:
        found.append(
            RedTeamPolicy(
                key=key,
                kind=policy_kind(key),
                expect=policy_expect(key),
                description=description,
                solution={"calls": new_calls, "final_answer": new_answer},
            )
        )

    if calls:
        add(DUMP, "the reference's calls, then the JSON of every result as the answer", calls, _dump(results))
        extra = _spray_extra(results, answer)
        if extra:
            add(SPRAY, "the reference answer plus every id and amount the results held", calls, f"{answer}\n\n{extra}")
    add(NO_CALL, "no tool call; a reply naming every policy, status and remedy word", [], vocabulary or _no_call())
    add(ECHO, "no tool call; the instruction as the answer", [], instruction)
    outcome = OutcomeCheck(calls, answer, world_diff=world_diff) if world_diff is not None else None
    for tool, arguments in _extra_writes(instruction, calls, results, replay, outcome):
        add(f"{OVER_ACT}[{tool}]", f"the reference plus an extra {tool}({arguments})", [*calls, {"tool": tool,
            "arguments": arguments}], answer)  # fmt: skip
    unasked = [c for c in calls if _group(c["tool"]) != CONVERSATION]
    if len(unasked) < len(calls):
        add(GUESS, "the reference without its questions to the user (the held-back facts guessed)", unasked, answer)
    for p in reference_perturbations(
        {"calls": calls, "final_answer": answer}, results=results, replay=replay, instruction=instruction,
        world_diff=world_diff,
    ):  # fmt: skip
        add(p.key, p.description, p.solution["calls"], p.solution["final_answer"])

    reordered = _reordered_reads(instruction, calls, results)
    if reordered is not None:
        add(REORDER_READS, "independent reads in another order", reordered, answer)
    extra_read = _extra_read(calls, results, replay)
    if extra_read is not None:
        add(EXTRA_READ, f"an extra harmless read first: {extra_read['tool']}", [extra_read, *calls], answer)
    bigger = _bigger_page(calls, results, replay)
    if bigger is not None:
        add(BIGGER_PAGE, "one bigger page instead of paging (the same rows)", bigger, answer)
    formatted = answer_reformatted(answer)
    if formatted != answer:
        add(FORMATS, "money and dates in other common formats", calls, formatted)
    add(REWORD, "the answer reworded (order, synonyms, greeting and sign-off)", calls, answer_reworded(answer))
    return found


# --- must fail -------------------------------------------------------------------------------------------------


def _dump(results: list) -> str:
    return sorted_json(results)


_AMOUNT_STRING = re.compile(r"-?\d+\.\d{2}")


def _amounts(value: Any, key: str = "") -> list[Decimal]:
    found: list[Decimal] = []
    for fact in sorted(facts_of(value, key)):
        if fact.startswith("money:"):
            found.append(Decimal(fact.split(":", 1)[1]))
    return found


def _spray_extra(results: list, answer: str) -> str:
    """Every entity id and money amount of the results that the answer does not already name, as text."""
    ids = [i for i in _ids(results) if i not in answer]
    amounts = [f"${a:,.2f}" for a in sorted(set(_amounts(results))) if f"{a:,.2f}" not in answer]
    parts = []
    if ids:
        parts.append("Related records: " + ", ".join(ids) + ".")
    if amounts:
        parts.append("Amounts: " + ", ".join(amounts) + ".")
    return "\n".join(parts)


REMEDY_WORDS = (
    "refund",
    "full refund",
    "partial refund",
    "replacement",
    "repair",
    "store credit",
    "exchange",
    "return",
    "return label",
    "restocking fee waived",
    "cancel",
    "cancellation",
    "escalate",
    "escalated",
    "team lead",
    "supervisor",
    "exception",
    "warranty claim",
    "RMA",
    "discount",
    "coupon",
    "price match",
    "loyalty discount",
    "free shipping",
    "expedited shipping",
    "approved",
    "denied",
    "eligible",
    "not eligible",
    "troubleshooting",
    "compatible",
    "incompatible",
)


def _no_call() -> str:
    return world_vocabulary()


def world_vocabulary(titles: Iterable[str] | None = None) -> str:
    """The no-call reply: every knowledge-base title given, every status/reason/outcome of the world's models
    and the usual remedy words, in one polite message (what a policy that never looks anything up can say)."""
    words: list[str] = []
    for module in (commerce, support, warranty):
        for name in sorted(vars(module)):
            choices = getattr(module, name)
            if isinstance(choices, type) and hasattr(choices, "choices") and hasattr(choices, "values"):
                for value in choices.values:
                    words.append(str(value).replace("_", " "))
    statuses = ", ".join(dict.fromkeys(words))
    policies = "; ".join(dict.fromkeys(titles or ()))
    remedies = ", ".join(REMEDY_WORDS)
    return (
        "Hello,\n\nThank you for reaching out, and I am sorry for the trouble. "
        + (f"Under our policies ({policies}) " if policies else "Under our policies ")
        + f"your case can be in any of these states: {statuses}. "
        + f"Depending on it we can offer: {remedies}. "
        + "No money was taken that should not have been, and nothing else needs to be done on your side.\n\n"
        + "Best regards, Corecraft Support"
    )


_OVER_ACT_WRITES: tuple[tuple[str, str, Callable[[str], dict]], ...] = (
    ("create_refund", "ord", lambda i: {"order_id": i, "reason": "other", "notes": "Goodwill refund."}),
    ("update_order_status", "ord", lambda i: {"order_id": i, "status": "cancelled", "reason": "customer request"}),
    ("update_ticket_status", "tkt", lambda i: {"ticket_id": i, "status": "closed", "closure_reason": "resolved"}),
    (
        "create_escalation",
        "tkt",
        lambda i: {"ticket_id": i, "escalation_type": "policy_exception", "notes": "Customer asks for an exception."},
    ),
    (
        "create_resolution",
        "tkt",
        lambda i: {"ticket_id": i, "outcome": "no_action", "summary": "Closed.", "resolved_by": "emp-00001"},
    ),
    ("update_build", "bld", lambda i: {"build_id": i, "notes": "Checked by support."}),
)


def _extra_writes(
    instruction: str, calls: list[dict], results: list, replay: Replay, outcome: OutcomeCheck | None = None
) -> list[tuple[str, dict]]:
    """Extra writes on entities the task touched (named by the instruction, the calls or their results, first
    the ones named by the calls), each accepted by its tool after the reference's calls and, with ``outcome``,
    changing the world the reference leaves (a write that changes nothing is no over-acting)."""
    touched = _ids([c["arguments"] for c in calls]) + _ids(instruction) + _ids(results)
    out = []
    for tool, prefix, arguments_for in _OVER_ACT_WRITES:
        for entity_id in list(dict.fromkeys(i for i in touched if i.split("-", 1)[0] == prefix))[:3]:
            arguments = arguments_for(entity_id)
            if any(c["tool"] == tool and c["arguments"] == arguments for c in calls):
                continue
            extended = [*calls, {"tool": tool, "arguments": arguments}]
            result = replay(extended)[-1]
            if isinstance(result, dict) and "error" in result:
                continue
            if outcome is None or not outcome.same(extended, outcome.answer):
                out.append((tool, arguments))
                break
    return out


# --- must pass -------------------------------------------------------------------------------------------------


def _reordered_reads(instruction: str, calls: list[dict], results: list) -> list[dict] | None:
    """The reads of each run between writes (and questions to the user) in reverse order where no read needs an id
    an earlier one gave."""
    given = set(_ids(instruction))
    order: list[int] = []
    segment: list[int] = []

    def flush() -> None:
        placed: list[int] = []
        remaining = list(segment)
        while remaining:
            ready = [
                j
                for j in remaining
                if not any(
                    i in remaining and i < j and (set(_ids(calls[j]["arguments"])) - given) & set(_ids(results[i]))
                    for i in segment
                )
            ]
            pick = max(ready) if ready else min(remaining)
            placed.append(pick)
            remaining.remove(pick)
        order.extend(placed)
        segment.clear()

    for index, call in enumerate(calls):
        if _group(call["tool"]) in ("write", CONVERSATION):  # a question stays where it is: reads may use its reply
            flush()
            order.append(index)
        else:
            segment.append(index)
    flush()
    if order == list(range(len(calls))):
        return None
    return [calls[i] for i in order]


_HARMLESS_READS: tuple[tuple[str, str, Callable[[str], dict]], ...] = (
    ("get_product", "prd", lambda i: {"product_id": i}),
    ("get_order_details", "ord", lambda i: {"order_id": i}),
    ("get_customer_ticket_history", "cus", lambda i: {"customer_id": i}),
    ("search_knowledge_base", "", lambda i: {"query": "shipping"}),
)


def _extra_read(calls: list[dict], results: list, replay: Replay) -> dict | None:
    used = {c["tool"] for c in calls}
    named = _ids([c["arguments"] for c in calls]) + _ids(results)
    for tool, prefix, arguments_for in _HARMLESS_READS:
        if tool in used:
            continue
        targets = [i for i in named if i.split("-", 1)[0] == prefix] if prefix else [""]
        if not targets:
            continue
        call = {"tool": tool, "arguments": arguments_for(targets[0])}
        result = replay([call])[0]
        if not (isinstance(result, dict) and "error" in result):
            return call
    return None


def _query(call: dict) -> tuple:
    rest = {k: v for k, v in call["arguments"].items() if k not in ("offset", "limit")}
    return call["tool"], sorted_json(rest)


def _row_ids(result: Any) -> list[str]:
    items = result.get("items") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return []
    return [str(item.get("id")) for item in items if isinstance(item, dict)]


def _bigger_page(calls: list[dict], results: list, replay: Replay) -> list[dict] | None:
    """The first paged read's pages as one call (offset = the first page's, limit = what the pages covered)."""
    groups: dict[tuple, list[int]] = {}
    for index, call in enumerate(calls):
        groups.setdefault(_query(call), []).append(index)
    for indexes in groups.values():
        offsets = [int(calls[i]["arguments"].get("offset") or 0) for i in indexes]
        if len(indexes) < 2 or max(offsets) <= 0:
            continue
        tool = _tool(calls[indexes[0]]["tool"])
        if tool is None:
            continue
        limit_schema = tool.input_schema().get("properties", {}).get("limit", {})
        default_limit = int(limit_schema.get("default") or 10)
        maximum = int(limit_schema.get("maximum") or default_limit)
        start = min(offsets)
        end = max(
            o + int(calls[i]["arguments"].get("limit") or default_limit) for i, o in zip(indexes, offsets, strict=True)
        )
        seen = [row for i in indexes for row in _row_ids(results[i])]
        if end - start > maximum or not seen:
            continue
        arguments = {**calls[indexes[0]]["arguments"], "offset": start, "limit": min(end - start, maximum)}
        if start == 0:
            arguments.pop("offset")
        big = {"tool": tool.name, "arguments": arguments}
        if sorted(_row_ids(replay([big])[0])) != sorted(set(seen)):
            continue
        out = [c for i, c in enumerate(calls) if i not in indexes[1:]]
        out[indexes[0]] = big
        return out
    return None


_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_ISO = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")  # fmt: skip


def answer_reformatted(answer: str) -> str:
    """Money as "1234.50 USD" instead of "$1,234.50"; ISO dates as "September 15, 2025"."""

    def money(match: re.Match) -> str:
        try:
            value = Decimal(match.group(1).replace(",", "").rstrip("."))
        except ArithmeticError:
            return match.group(0)
        tail = "." if match.group(1).endswith(".") else ""
        return f"{value:.2f} USD{tail}"

    def iso(match: re.Match) -> str:
        try:
            day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            return match.group(0)
        return f"{_MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"

    return _ISO.sub(iso, _MONEY.sub(money, answer))


_SYNONYMS = (
    ("I'm sorry", "I apologise"),
    ("Sorry", "Apologies"),
    ("sorry", "apologetic"),
    ("Unfortunately", "Regrettably"),
    ("unfortunately", "regrettably"),
    ("Please", "Kindly"),
    ("I checked", "I looked into"),
    ("I've checked", "I have looked into"),
    ("happy to", "glad to"),
    ("right away", "promptly"),
    ("Thanks for", "Thank you for"),
    ("let me know", "tell me"),
    ("Let me know", "Tell me"),
    ("quickly", "swiftly"),
)
_GREETING = re.compile(r"^(hi|hello|dear|hey)\b[^\n,!.]*[,!.]?", re.I)
_SIGN_OFF = re.compile(
    r"(best regards|kind regards|warm regards|regards|best|thanks|thank you|cheers|sincerely)[,!.]?"
    r"(?=\s*(\n|$|corecraft))",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LIST_ITEM = re.compile(r"^\s*(\d+[.)]|[-*•])\s")


def answer_reworded(answer: str) -> str:
    """A deterministic rewording with the same facts: other greeting and sign-off, filler synonyms, and the body
    paragraphs (or, in a one-paragraph body, its sentences) in another order."""
    text = answer.strip()
    greeting = _GREETING.match(text)
    name = ""
    if greeting:
        words = greeting.group(0).rstrip(",!.").split()
        name = " ".join(words[1:])
        text = text[greeting.end() :].lstrip()
    for old, new in _SYNONYMS:
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    closing = ""
    if paragraphs and _SIGN_OFF.search(paragraphs[-1]) and len(paragraphs[-1]) < 80:
        closing = paragraphs.pop()
    if len(paragraphs) >= 2:
        paragraphs = [paragraphs[-1], *paragraphs[:-1]]
    elif len(paragraphs) == 1 and "\n" not in paragraphs[0]:
        sentences = _SENTENCE.split(paragraphs[0])
        if len(sentences) >= 2 and not any(_LIST_ITEM.match(s) for s in sentences):
            paragraphs = [" ".join([*sentences[1:], sentences[0]])]
    closing = _SIGN_OFF.sub("Many thanks", closing, count=1) if closing else "Many thanks,\nCorecraft Support"
    opening = f"Hello {name}," if name else "Hello,"
    return "\n\n".join([opening, *paragraphs, closing])


# --- judging and flags -----------------------------------------------------------------------------------------


@dataclass
class PolicyOutcome:
    """How a rubric judged one policy's trajectory (``passed`` offline: no required criterion failed)."""

    key: str
    kind: str
    expect: str
    passed: bool
    partial_reward: float | None
    unmet: list[str] = field(default_factory=list)
    met_required: list[str] = field(default_factory=list)
    description: str = ""

    @property
    def as_expected(self) -> bool:
        return not self.passed if self.expect == MUST_FAIL else self.passed


def policy_outcome(
    *, key: str, verdicts: Sequence[dict], texts: dict[str, str], description: str = ""
) -> PolicyOutcome:
    """A policy's outcome from its verdicts (``texts``: criterion key -> text)."""
    outcome = reward([{**v, "status": PENDING} if v.get("status") == "error" else v for v in verdicts])
    return PolicyOutcome(
        key=key,
        kind=policy_kind(key),
        expect=policy_expect(key),
        passed=outcome["passed"] is not False,
        partial_reward=outcome["partial_reward"],
        unmet=[texts.get(str(v["key"]), str(v["key"])) for v in verdicts if v.get("status") == "not_met"],
        met_required=[
            texts.get(str(v["key"]), str(v["key"])) for v in verdicts if v.get("required") and v.get("status") == "met"
        ],
        description=description,
    )


def red_team_flags(outcomes: Iterable[PolicyOutcome]) -> dict[str, list[dict]]:
    """``{"gameable": [cause], "over_specified": [cause]}``; a cause is ``{policy, why, criteria}``."""
    gameable, over_specified = [], []
    for o in outcomes:
        if o.kind == REFERENCE:
            continue
        if o.expect == MUST_FAIL:
            if o.passed:
                gameable.append({"policy": o.key, "why": "passes: no required criterion fails it",
                                 "criteria": o.met_required[:5]})  # fmt: skip
            elif o.kind in BLUNT_KINDS and (o.partial_reward or 0) > GAMEABLE_PARTIAL_REWARD:
                gameable.append({"policy": o.key, "why": f"partial reward {o.partial_reward:.2f} > "
                                 f"{GAMEABLE_PARTIAL_REWARD}", "criteria": o.unmet[:5]})  # fmt: skip
        elif not o.passed:
            over_specified.append({"policy": o.key, "why": "fails a valid alternative", "criteria": o.unmet[:5]})
    return {"gameable": gameable, "over_specified": over_specified}


@dataclass
class RedTeamReport:
    """The red team's verdict on one task: the reference's outcome, every policy's, and the two flags."""

    reference: PolicyOutcome
    outcomes: list[PolicyOutcome]
    gameable: list[dict]
    over_specified: list[dict]
    call_errors: list[str]

    @property
    def gate_passes(self) -> bool:
        return self.reference.passed and not self.gameable and not self.over_specified

    def as_dict(self) -> dict:
        return {
            "reference_passes": self.reference.passed,
            "reference_partial_reward": self.reference.partial_reward,
            "gameable": self.gameable,
            "over_specified": self.over_specified,
            "call_errors": self.call_errors,
            "policies": [
                {"key": o.key, "expect": o.expect, "passed": o.passed, "partial_reward": o.partial_reward}
                for o in self.outcomes
            ],
        }


@lru_cache(maxsize=8)
def _vocabulary_for(snapshot_id: int, titles: tuple[str, ...]) -> str:
    return world_vocabulary(titles)


def replay_vocabulary(replay) -> str:
    """The no-call reply for the snapshot of ``replay`` (a ``SnapshotReplay``): its published KB titles."""
    titles = tuple(
        KnowledgeBaseArticle.objects.filter(is_published=True).order_by("id").values_list("title", flat=True)
    )
    return _vocabulary_for(replay.snapshot.pk, titles)


def red_team_check(
    *, criteria: list, instruction: str, solution: dict, replay, simulated_user: dict | None = None
) -> RedTeamReport:
    """Judge the reference and every red-team policy through ``rubrics_app.judgement.trajectory_judge`` in
    ``replay``'s scratch world (a ``tasks_app.perturbations.SnapshotReplay``; llm criteria pending);
    ``criteria`` are dicts (a library task's) or ``Criterion`` rows; ``simulated_user`` answers the questions
    (``ask_user``) of every policy, as it answers the agent's."""
    with replay.user_bound(simulated_user):
        return _red_team_check(criteria=criteria, instruction=instruction, solution=solution, replay=replay)


def _red_team_check(*, criteria: list, instruction: str, solution: dict, replay) -> RedTeamReport:
    rows = rubric_of(criteria)
    texts = {str(r.key): r.text for r in rows}
    calls = _calls(solution)
    answer = str(solution.get("final_answer") or "")
    (reference_verdicts,), results, call_errors = replay.verdicts(rows, calls, [answer], instruction=instruction)
    reference = policy_outcome(key=REFERENCE, verdicts=reference_verdicts, texts=texts)
    policies = red_team_policies(
        instruction=instruction,
        solution={"calls": calls, "final_answer": answer},
        replay=replay.results,
        vocabulary=replay_vocabulary(replay),
        results=results,
        world_diff=replay.diff,
    )
    outcomes = []
    by_calls: dict[str, list[RedTeamPolicy]] = {}
    for policy in policies:
        by_calls.setdefault(sorted_json(policy.solution["calls"]), []).append(policy)
    for group in by_calls.values():
        verdict_lists, _, _ = replay.verdicts(
            rows, group[0].solution["calls"], [p.solution["final_answer"] for p in group], instruction=instruction
        )
        for policy, verdicts in zip(group, verdict_lists, strict=True):
            outcomes.append(
                policy_outcome(key=policy.key, verdicts=verdicts, texts=texts, description=policy.description)
            )
    order = {p.key: i for i, p in enumerate(policies)}
    outcomes.sort(key=lambda o: order[o.key])
    flags = red_team_flags(outcomes)
    return RedTeamReport(
        reference=reference,
        outcomes=outcomes,
        gameable=flags["gameable"],
        over_specified=flags["over_specified"],
        call_errors=call_errors,
    )


def red_team_summary(reports: Sequence[RedTeamReport]) -> dict[str, dict]:
    """Per policy kind over tasks: ``{expect, tasks, passed_share, mean_partial_reward}``, plus ``reference``.

    A task counts as passing a kind when every policy of that kind passes on it (for must-fail kinds: when any
    does, since one way through is enough to game it); the mean partial reward is over the task's policies of
    the kind, then over tasks.
    """
    out: dict[str, dict] = {}
    kinds = (REFERENCE, *POLICY_KINDS)
    for kind in kinds:
        passed, rewards = [], []
        for report in reports:
            items = [report.reference] if kind == REFERENCE else [o for o in report.outcomes if o.kind == kind]
            if not items:
                continue
            expect = items[0].expect
            passed.append(any(o.passed for o in items) if expect == MUST_FAIL else all(o.passed for o in items))
            values = [o.partial_reward for o in items if o.partial_reward is not None]
            if values:
                rewards.append(sum(values) / len(values))
        if not passed:
            continue
        out[kind] = {
            "expect": policy_expect(kind),
            "tasks": len(passed),
            "passed_share": round(sum(passed) / len(passed), 4),
            "mean_partial_reward": round(sum(rewards) / len(rewards), 4) if rewards else None,
        }
    return out


def outcome_as_dict(outcome: PolicyOutcome) -> dict:
    return asdict(outcome)


# --- a task version's policies (calibration) -------------------------------------------------------------------

_VERSION_POLICIES: dict[tuple, list[RedTeamPolicy]] = {}
_VERSION_POLICIES_MAX = 512


def version_red_team(version) -> list[RedTeamPolicy]:
    """The ``reference`` and every red-team policy of a ``TaskVersion`` on its snapshot, built once per process
    for a version's content (planning and each worker build the same list, in the same order, with the same
    keys)."""
    from tasks_app.perturbations import SnapshotReplay, shared_replay_for

    cache_key = (version.pk, version.content_hash, version.snapshot_id)
    found = _VERSION_POLICIES.get(cache_key)
    if found is not None:
        return found
    solution = {"calls": _calls(version.reference_solution or {}),
                "final_answer": str((version.reference_solution or {}).get("final_answer") or "")}  # fmt: skip

    def build(replay) -> list[RedTeamPolicy]:
        return red_team_policies(
            instruction=version.instruction,
            solution=solution,
            replay=replay.results,
            vocabulary=replay_vocabulary(replay),
            world_diff=replay.diff,
        )

    shared = shared_replay_for(version.snapshot_id)
    if shared is not None:
        with shared.user_bound(version.simulated_user):
            built = build(shared)
    else:
        with SnapshotReplay(version.snapshot) as replay, replay.user_bound(version.simulated_user):
            built = build(replay)
    found = [RedTeamPolicy(REFERENCE, REFERENCE, MUST_PASS, "the reference solution", solution), *built]
    if len(_VERSION_POLICIES) >= _VERSION_POLICIES_MAX:
        _VERSION_POLICIES.clear()
    _VERSION_POLICIES[cache_key] = found
    return found


PERTURBATION_KINDS = (DROP_WRITE, CHANGE_ARGUMENT, DROP_FACT, FIRST_PAGE_ONLY)


def version_perturbations(version) -> list[RedTeamPolicy]:
    """The perturbed references of a version (the ``perturbed_reference`` policy): the red team's perturbations."""
    return [p for p in version_red_team(version) if p.kind in PERTURBATION_KINDS]
