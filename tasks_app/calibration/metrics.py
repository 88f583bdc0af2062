"""What a calibration run says about each task: pass@k, pass^k, reward spread, difficulty and warning flags.

The figures are pure functions of a task version's judged rollouts; ``task_calibration_update`` folds a run's
rollouts into one ``TaskCalibration`` row per task version.

Which rollouts count for what:
- the *model* population (policy ``model``, every endpoint pooled; per policy in ``per_policy``) gives pass@k,
  pass^k, reward mean/std, per-criterion pass rates and the calibrated difficulty. A task calibrated with the
  reference policy only (``calibrate --policy reference``) uses its reference rollouts for the figures, so the
  row is not empty, but its calibrated difficulty is ``not_calibrated``: reference, perturbed and red-team runs
  are not model rollouts, and say nothing about how hard the task is for a model.
- ``reference`` rollouts decide ``reference_fails``; ``perturbed_reference`` rollouts decide ``perturbed_passes``.
- ``red_team`` rollouts (``calibrate --policy red_team``: the reference and every policy of ``tasks_app.red_team``)
  decide ``gameable`` and ``over_specified`` (and ``reference_fails`` through their ``red_team:reference``);
  the causes (policy, why, criteria) are kept in ``TaskCalibration.red_team``.

Calibrated difficulty from the model rollouts' pass rate p (the mean of passed): ``easy`` p >= 0.8, ``medium``
0.4 <= p < 0.8, ``hard`` 0 < p < 0.4, ``unsolved`` p == 0, and ``not_calibrated`` without model rollouts. Its
provenance (the model policies, how many rollouts, the agent contract versions; the judge configuration is the
row's) is kept beside it. The author's ``expected_difficulty`` (the task's ``difficulty`` field, what split
strata use) is another thing and is never overwritten by it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean, pstdev
from typing import Any

from tasks_app.models import CalibrationItem, Criterion, Rollout, RolloutStatus, TaskCalibration
from tasks_app.red_team import REFERENCE, policy_outcome, red_team_flags

EASY_MIN_PASS_RATE = 0.8
MEDIUM_MIN_PASS_RATE = 0.4
# Below this share of a judge's own samples agreeing with their majority, the judge is unstable on the task.
JUDGE_STABLE_MIN_AGREEMENT = 0.8
# A reward spread this small is no signal for a group-relative update (GRPO's advantage is then ~0).
NO_VARIANCE_STD = 1e-9
K_VALUES = (1, 2, 4, 8, 16, 32)

FLAG_REFERENCE_FAILS = "reference_fails"
FLAG_NO_REWARD_VARIANCE = "no_reward_variance"
FLAG_PERTURBED_PASSES = "perturbed_passes"
FLAG_JUDGE_UNSTABLE = "judge_unstable"
FLAG_GAMEABLE = "gameable"
FLAG_OVER_SPECIFIED = "over_specified"
FLAGS = (
    FLAG_REFERENCE_FAILS,
    FLAG_NO_REWARD_VARIANCE,
    FLAG_PERTURBED_PASSES,
    FLAG_JUDGE_UNSTABLE,
    FLAG_GAMEABLE,
    FLAG_OVER_SPECIFIED,
)
NOT_CALIBRATED = "not_calibrated"
DIFFICULTIES = ("easy", "medium", "hard", "unsolved", NOT_CALIBRATED)


def _check(n: int, c: int, k: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k samples passes), unbiased from n samples with c passes: 1 - C(n-c, k) / C(n, k)."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (tau-bench): P(all k samples pass), unbiased from n samples with c passes: C(c, k) / C(n, k)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def k_values(n: int) -> list[int]:
    """The k reported for n samples: powers of two up to n, and n itself."""
    return sorted({k for k in K_VALUES if k <= n} | ({n} if n else set()))


def pass_curves(passed: Sequence[bool]) -> tuple[dict[str, float], dict[str, float]]:
    """({k: pass@k}, {k: pass^k}) for the k of ``k_values`` (keys are strings, as JSON stores them)."""
    n, c = len(passed), sum(1 for p in passed if p)
    ks = k_values(n)
    return {str(k): pass_at_k(n, c, k) for k in ks}, {str(k): pass_hat_k(n, c, k) for k in ks}


def reward_stats(rewards: Iterable[float]) -> tuple[float | None, float | None]:
    """(mean, population standard deviation) of the rewards; (None, None) when there are none."""
    values = [float(r) for r in rewards]
    if not values:
        return None, None
    return fmean(values), pstdev(values)


def criterion_pass_rates(verdict_lists: Iterable[Sequence[dict]]) -> dict[str, float]:
    """{criterion key: share of its judged verdicts that are met}; pending and error verdicts do not count."""
    met: dict[str, int] = defaultdict(int)
    judged: dict[str, int] = defaultdict(int)
    order: list[str] = []
    for verdicts in verdict_lists:
        for verdict in verdicts:
            key = verdict["key"]
            if key not in judged and key not in order:
                order.append(key)
            if verdict.get("status") in ("met", "not_met"):
                judged[key] += 1
                met[key] += verdict["status"] == "met"
    return {key: met[key] / judged[key] for key in order if judged[key]}


def judge_self_agreement(verdict_lists: Iterable[Sequence[dict]]) -> float | None:
    """Mean share of the judge's own samples agreeing with their majority, over llm verdicts judged with n > 1."""
    values = [
        float(v["agreement"])
        for verdicts in verdict_lists
        for v in verdicts
        if v.get("kind") == "llm" and v.get("agreement") is not None and (v.get("samples") or 0) > 1
    ]
    return fmean(values) if values else None


def calibrated_difficulty(pass_rate: float | None) -> str:
    """easy >= 0.8 > medium >= 0.4 > hard > 0 = unsolved, of the model rollouts' pass rate; ``not_calibrated``
    when there is none (no model rollout was judged)."""
    if pass_rate is None:
        return NOT_CALIBRATED
    if pass_rate <= 0:
        return "unsolved"
    if pass_rate >= EASY_MIN_PASS_RATE:
        return "easy"
    if pass_rate >= MEDIUM_MIN_PASS_RATE:
        return "medium"
    return "hard"


def calibration_flags(
    *,
    reference_passed: Sequence[bool | None],
    model_rewards: Sequence[float],
    perturbed_passed: Sequence[bool | None],
    judge_agreement: float | None,
) -> list[str]:
    """The warning flags, in ``FLAGS`` order.

    - reference_fails: a judged reference rollout did not pass (the rubric or the reference is wrong).
    - no_reward_variance: at least two model rollouts and every reward equal (useless for GRPO).
    - perturbed_passes: a perturbed reference still passed, and no criterion judged it differently from the
      reference (the rubric is blind to that fault; ``perturbed_passed`` holds those "passed unnoticed").
    - judge_unstable: the judge's own samples agree less than ``JUDGE_STABLE_MIN_AGREEMENT``.
    """
    flags = []
    if any(p is False for p in reference_passed):
        flags.append(FLAG_REFERENCE_FAILS)
    if len(model_rewards) >= 2 and (pstdev(model_rewards) <= NO_VARIANCE_STD):
        flags.append(FLAG_NO_REWARD_VARIANCE)
    if any(p is True for p in perturbed_passed):
        flags.append(FLAG_PERTURBED_PASSES)
    if judge_agreement is not None and judge_agreement < JUDGE_STABLE_MIN_AGREEMENT:
        flags.append(FLAG_JUDGE_UNSTABLE)
    return flags


def population_summary(rollouts: Sequence[Any]) -> dict:
    """Figures of judged rollouts (objects with ``passed``, ``reward``, ``verdicts``): n, passes, pass@k..."""
    judged = [r for r in rollouts if r.passed is not None]
    passed = [bool(r.passed) for r in judged]
    pass_k, pass_hat = pass_curves(passed)
    mean, std = reward_stats(r.reward for r in rollouts if r.reward is not None)
    return {
        "n": len(judged),
        "passes": sum(passed),
        "pass_rate": (sum(passed) / len(passed)) if passed else None,
        "pass_at_k": pass_k,
        "pass_hat_k": pass_hat,
        "reward_mean": mean,
        "reward_std": std,
    }


def _judged_statuses(verdicts: Sequence[dict]) -> dict[str, str]:
    return {str(v.get("key")): v.get("status") for v in verdicts or [] if v.get("status") in ("met", "not_met")}


def perturbed_unnoticed(perturbed: Any, reference: Sequence[Any]) -> bool | None:
    """Whether a perturbed copy passed with every judged criterion as the reference had it.

    A copy that passes but loses a non-required criterion was noticed by the rubric (its reward drops): the
    flag is for a fault no criterion sees. Without a reference rollout, passing is all there is to go on.
    """
    if perturbed.passed is not True:
        return perturbed.passed
    if not reference:
        return True
    before = _judged_statuses(reference[0].verdicts)
    after = _judged_statuses(perturbed.verdicts)
    return all(after.get(key, status) == status for key, status in before.items())


def difficulty_provenance(model_rollouts: Sequence[Any]) -> dict:
    """Where a calibrated difficulty comes from: the model policies, the rollouts counted, the contract versions."""
    return {
        "policies": sorted({r.policy_label or r.policy for r in model_rollouts}),
        "model_rollouts": len(model_rollouts),
        "contract_versions": sorted({getattr(r, "contract_version", "") or "" for r in model_rollouts} - {""}),
    }


def red_team_outcomes(rollouts: Sequence[Any], texts: dict[str, str] | None = None) -> list:
    """``tasks_app.red_team.PolicyOutcome`` of each ``red_team`` rollout (its key is after ``red_team:``)."""

    return [
        policy_outcome(key=r.policy_label.split(":", 1)[1], verdicts=r.verdicts or [], texts=texts or {})
        for r in rollouts
        if r.policy == "red_team" and ":" in (r.policy_label or "")
    ]


def red_team_findings(rollouts: Sequence[Any], texts: dict[str, str] | None = None) -> dict:
    """``{reference_passes, gameable, over_specified, policies}`` from a version's red_team rollouts, or {}."""

    outcomes = red_team_outcomes(rollouts, texts)
    if not outcomes:
        return {}
    reference = next((o for o in outcomes if o.kind == REFERENCE), None)
    return {
        "reference_passes": reference.passed if reference is not None else None,
        **red_team_flags(outcomes),
        "policies": [
            {"key": o.key, "expect": o.expect, "passed": o.passed, "partial_reward": o.partial_reward} for o in outcomes
        ],
    }


def version_calibration(rollouts: Sequence[Any], texts: dict[str, str] | None = None) -> dict:
    """A task version's calibration figures from its finished rollouts (objects with ``policy``,
    ``policy_label``, ``passed``, ``reward``, ``verdicts``): the fields of a ``TaskCalibration`` row.
    ``texts`` (criterion key -> text) names the criteria in the red team's causes."""
    model = [r for r in rollouts if r.policy == "model"]
    reference = [r for r in rollouts if r.policy == "reference"]
    perturbed = [r for r in rollouts if r.policy == "perturbed_reference"]
    red_reference = [r for r in rollouts if r.policy == "red_team" and r.policy_label == "red_team:reference"]
    population = model or reference or red_reference
    summary = population_summary(population)
    by_label: dict[str, list] = defaultdict(list)
    for rollout in rollouts:
        by_label[rollout.policy_label or rollout.policy].append(rollout)
    per_policy = {
        label: {"policy": items[0].policy, **population_summary(items)} for label, items in sorted(by_label.items())
    }
    agreement = judge_self_agreement(r.verdicts or [] for r in rollouts)
    red_team = red_team_findings(rollouts, texts)
    flags = calibration_flags(
        reference_passed=[r.passed for r in reference],
        model_rewards=[r.reward for r in model if r.reward is not None],
        perturbed_passed=[perturbed_unnoticed(r, reference) for r in perturbed],
        judge_agreement=agreement,
    )
    if red_team:
        if red_team["reference_passes"] is False and FLAG_REFERENCE_FAILS not in flags:
            flags.insert(0, FLAG_REFERENCE_FAILS)
        flags += [flag for flag in (FLAG_GAMEABLE, FLAG_OVER_SPECIFIED) if red_team[flag]]
    return {
        "n_rollouts": len(rollouts),
        "pass_at_1": summary["pass_at_k"].get("1"),
        "pass_at_k": summary["pass_at_k"],
        "pass_hat_k": summary["pass_hat_k"],
        "reward_mean": summary["reward_mean"],
        "reward_std": summary["reward_std"],
        "criterion_pass_rates": criterion_pass_rates(r.verdicts or [] for r in population),
        "judge_agreement": agreement,
        "calibrated_difficulty": calibrated_difficulty(population_summary(model)["pass_rate"] if model else None),
        "difficulty_provenance": difficulty_provenance(model),
        "flags": flags,
        "per_policy": per_policy,
        "red_team": red_team,
    }


def task_calibration_update(*, run) -> list:
    """One ``TaskCalibration`` per task version of ``run`` (under the run's judge config) from its finished rollouts.

    The row summarises the latest run of the version: rollouts of earlier runs are not mixed in (they may have
    been judged by another configuration, or made on an older world). Three queries plus one upsert per version.
    """
    from django.db import transaction

    version_ids = list(
        CalibrationItem.objects.filter(run=run).order_by("version_id").values_list("version_id", flat=True).distinct()
    )
    rollouts: dict[int, list] = defaultdict(list)
    for rollout in Rollout.objects.filter(run=run, status=RolloutStatus.FINISHED).only(
        "version_id", "policy", "policy_label", "passed", "reward", "verdicts", "contract_version"
    ):
        rollouts[rollout.version_id].append(rollout)
    texts = {
        str(key): text for key, text in Criterion.objects.filter(version_id__in=version_ids).values_list("key", "text")
    }
    updated = []
    config = run.judge_config
    judge = {"name": config.name, "config_hash": config.config_hash} if config is not None else None
    with transaction.atomic():
        for version_id in version_ids:
            fields = version_calibration(rollouts.get(version_id, []), texts)
            fields["difficulty_provenance"]["judge_config"] = judge
            row, _ = TaskCalibration.objects.update_or_create(
                version_id=version_id, judge_config=run.judge_config, defaults={"run": run, **fields}
            )
            updated.append(row)
    return updated
