"""Calibration figures: pass@k, pass^k against hand-computed values, flags, difficulty, and the TaskCalibration rows."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tasks_app.calibration.metrics import (
    calibrated_difficulty,
    calibration_flags,
    criterion_pass_rates,
    judge_self_agreement,
    k_values,
    pass_at_k,
    pass_curves,
    pass_hat_k,
    reward_stats,
    version_calibration,
)


def test_pass_at_k_matches_hand_computed_values():
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 4, 2) == 1.0  # fewer failures than k: some sample must pass


def test_pass_hat_k_is_the_chance_all_k_pass():
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)  # C(2,2)/C(5,2)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(4, 3, 4) == 0.0
    for n, c in [(8, 3), (3, 1), (6, 6)]:
        assert pass_hat_k(n, c, 1) == pytest.approx(c / n) == pass_at_k(n, c, 1)
        assert pass_hat_k(n, c, 2) <= pass_at_k(n, c, 2)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (-1, 0, 1)])
def test_impossible_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_k_values_and_curves():
    assert k_values(5) == [1, 2, 4, 5]
    assert k_values(1) == [1]
    assert k_values(0) == []
    at, hat = pass_curves([True, False, True, True])
    assert at == {"1": pytest.approx(0.75), "2": pytest.approx(1.0), "4": pytest.approx(1.0)}
    assert hat == {"1": pytest.approx(0.75), "2": pytest.approx(0.5), "4": pytest.approx(0.0)}


def test_reward_stats_population_std():
    assert reward_stats([]) == (None, None)
    mean, std = reward_stats([0.0, 1.0, 0.5, 0.5])
    assert mean == pytest.approx(0.5) and std == pytest.approx(math.sqrt(0.125))


def test_criterion_pass_rates_skip_pending_and_errors():
    verdicts = [
        [{"key": "a", "status": "met"}, {"key": "b", "status": "pending"}, {"key": "c", "status": "error"}],
        [{"key": "a", "status": "not_met"}, {"key": "b", "status": "met"}, {"key": "c", "status": "error"}],
        [{"key": "a", "status": "met"}, {"key": "b", "status": "met"}],
    ]
    assert criterion_pass_rates(verdicts) == {"a": pytest.approx(2 / 3), "b": 1.0}


def test_judge_self_agreement_only_counts_multi_sample_llm_verdicts():
    verdicts = [
        [{"kind": "llm", "agreement": 1.0, "samples": 3}, {"kind": "state", "agreement": None}],
        [{"kind": "llm", "agreement": 2 / 3, "samples": 3}, {"kind": "llm", "agreement": 1.0, "samples": 1}],
    ]
    assert judge_self_agreement(verdicts) == pytest.approx(5 / 6)
    assert judge_self_agreement([[{"kind": "llm", "agreement": 1.0, "samples": 1}]]) is None


@pytest.mark.parametrize(
    ("rate", "label"),
    [
        (None, "not_calibrated"),
        (0.0, "unsolved"),
        (0.1, "hard"),
        (0.39, "hard"),
        (0.4, "medium"),
        (0.79, "medium"),
        (0.8, "easy"),
        (1.0, "easy"),
    ],
)
def test_difficulty_thresholds(rate, label):
    assert calibrated_difficulty(rate) == label


def test_without_model_rollouts_the_difficulty_is_not_calibrated_never_easy_or_unsolved():
    assert calibrated_difficulty(None) == "not_calibrated"
    for policy in ("reference", "perturbed_reference"):
        assert version_calibration([rollout(policy, True, 1.0)])["calibrated_difficulty"] == "not_calibrated"
        assert version_calibration([rollout(policy, False, 0.0)])["calibrated_difficulty"] == "not_calibrated"


def test_flags_each_raised_by_its_cause_only():
    calm = {
        "reference_passed": [True],
        "model_rewards": [0.2, 0.9],
        "perturbed_passed": [False, None],
        "judge_agreement": 0.9,
    }
    assert calibration_flags(**calm) == []
    assert calibration_flags(**{**calm, "reference_passed": [True, False]}) == ["reference_fails"]
    assert calibration_flags(**{**calm, "model_rewards": [0.5, 0.5, 0.5]}) == ["no_reward_variance"]
    assert calibration_flags(**{**calm, "model_rewards": [0.5]}) == []  # one sample says nothing about variance
    assert calibration_flags(**{**calm, "perturbed_passed": [False, True]}) == ["perturbed_passes"]
    assert calibration_flags(**{**calm, "judge_agreement": 0.6}) == ["judge_unstable"]
    assert calibration_flags(
        reference_passed=[False], model_rewards=[1.0, 1.0], perturbed_passed=[True], judge_agreement=0.5
    ) == ["reference_fails", "no_reward_variance", "perturbed_passes", "judge_unstable"]


def rollout(policy: str, passed, reward, label: str | None = None, verdicts=None):
    return SimpleNamespace(
        policy=policy, policy_label=label or policy, passed=passed, reward=reward, verdicts=verdicts or [],
        contract_version="c1",
    )  # fmt: skip


def test_version_calibration_uses_model_rollouts_and_splits_per_policy():
    met = [{"key": "k1", "kind": "state", "status": "met"}]
    missed = [{"key": "k1", "kind": "state", "status": "not_met"}]
    rollouts = [
        rollout("model", True, 1.0, "model:a", met),
        rollout("model", False, 0.5, "model:a", missed),
        rollout("model", False, 0.0, "model:b", missed),
        rollout("model", True, 1.0, "model:b", met),
        rollout("reference", True, 1.0, verdicts=met),
        rollout("perturbed_reference", True, 1.0, "perturbed_reference:drop_write[0]", met),
    ]
    figures = version_calibration(rollouts)
    assert figures["n_rollouts"] == 6
    assert figures["pass_at_1"] == pytest.approx(0.5)
    assert figures["pass_at_k"]["4"] == 1.0 and figures["pass_hat_k"]["2"] == pytest.approx(1 / 6)
    assert figures["reward_mean"] == pytest.approx(0.625)
    assert figures["criterion_pass_rates"] == {"k1": 0.5}
    assert figures["calibrated_difficulty"] == "medium"
    assert figures["difficulty_provenance"] == {
        "policies": ["model:a", "model:b"],
        "model_rollouts": 4,
        "contract_versions": ["c1"],
    }
    assert figures["flags"] == ["perturbed_passes"]
    assert set(figures["per_policy"]) == {"model:a", "model:b", "reference", "perturbed_reference:drop_write[0]"}
    assert figures["per_policy"]["model:a"]["passes"] == 1 and figures["per_policy"]["model:a"]["n"] == 2


def test_version_calibration_with_reference_only_and_no_rollouts():
    figures = version_calibration([rollout("reference", False, 0.25)])
    assert figures["pass_at_1"] == 0.0 and figures["calibrated_difficulty"] == "not_calibrated"
    assert figures["flags"] == ["reference_fails"]
    empty = version_calibration([])
    assert empty["n_rollouts"] == 0 and empty["pass_at_1"] is None
    assert empty["calibrated_difficulty"] == "not_calibrated"


def test_a_perturbed_copy_that_passes_but_loses_a_criterion_was_noticed():
    both = [{"key": "req", "kind": "state", "status": "met"}, {"key": "opt", "kind": "response", "status": "met"}]
    lost = [{"key": "req", "kind": "state", "status": "met"}, {"key": "opt", "kind": "response", "status": "not_met"}]
    reference = rollout("reference", True, 1.0, verdicts=both)
    noticed = rollout("perturbed_reference", True, 0.5, "perturbed_reference:drop_fact[0]", lost)
    blind = rollout("perturbed_reference", True, 1.0, "perturbed_reference:change_argument[0].x", both)
    assert version_calibration([reference, noticed])["flags"] == []
    assert version_calibration([reference, noticed, blind])["flags"] == ["perturbed_passes"]
