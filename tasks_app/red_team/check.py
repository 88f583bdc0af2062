"""Playing the red team against a rubric: each policy's outcome, the flags, a task's report, the library's
summary, and a task version's policies for calibration."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from corecraft_site.canonical import sorted_json
from rubrics_app.judgement import rubric_of
from rubrics_app.programmatic import PENDING, reward
from tasks_app.perturbations import (
    CHANGE_ARGUMENT,
    DROP_FACT,
    DROP_WRITE,
    FIRST_PAGE_ONLY,
    SnapshotReplay,
    shared_replay_for,
)
from tasks_app.red_team.kinds import (
    BLUNT_KINDS,
    GAMEABLE_PARTIAL_REWARD,
    MUST_FAIL,
    MUST_PASS,
    POLICY_KINDS,
    REFERENCE,
    RedTeamPolicy,
    policy_expect,
    policy_kind,
    solution_calls,
)
from tasks_app.red_team.must_fail import world_vocabulary
from tasks_app.red_team.policies import red_team_policies
from world_app.models import KnowledgeBaseArticle

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
    calls = solution_calls(solution)
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

    cache_key = (version.pk, version.content_hash, version.snapshot_id)
    found = _VERSION_POLICIES.get(cache_key)
    if found is not None:
        return found
    solution = {"calls": solution_calls(version.reference_solution or {}),
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
