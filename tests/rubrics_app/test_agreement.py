"""Judge against humans: agreement and Cohen's kappa against hand-computed values, and the flagged criteria."""

from __future__ import annotations

import pytest

from rubrics_app.agreement import agreement_row, cohen_kappa, judge_agreement_report, percent_agreement
from rubrics_app.models import JudgeConfig, ModelEndpoint, Verdict, VerdictLabel
from tasks_app.calibration.selectors import criterion_texts
from tests.tasks_app.factories import reviewer, task_make


def pairs(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> list[tuple[bool, bool]]:
    return [(True, True)] * yes_yes + [(True, False)] * yes_no + [(False, True)] * no_yes + [(False, False)] * no_no


def test_kappa_matches_the_textbook_example():
    # 50 items: p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    assert cohen_kappa(pairs(20, 5, 10, 15)) == pytest.approx(0.4)
    assert percent_agreement(pairs(20, 5, 10, 15)) == pytest.approx(0.7)


def test_kappa_hand_computed_edge_cases():
    assert cohen_kappa(pairs(3, 0, 0, 2)) == pytest.approx(1.0)
    assert cohen_kappa(pairs(0, 2, 2, 0)) == pytest.approx(-1.0)
    # p_o = 0.8, p_e = 0.8*0.8 + 0.2*0.2 = 0.68, kappa = 0.12 / 0.32 = 0.375.
    assert cohen_kappa(pairs(7, 1, 1, 1)) == pytest.approx(0.375)
    assert cohen_kappa(pairs(4, 0, 0, 0)) is None  # both always "met": chance agreement is 1, kappa undefined
    assert cohen_kappa([]) is None and percent_agreement([]) is None


def test_flagging_needs_enough_labels():
    few = agreement_row(pairs(2, 1, 1, 0), judge_config_id=1, criterion_key="k")
    assert few.labels == 4 and not few.flagged
    enough = agreement_row(pairs(3, 1, 1, 0), judge_config_id=1, criterion_key="k")
    assert enough.flagged and any(r.startswith("kappa") for r in enough.reasons)
    good = agreement_row(pairs(5, 0, 0, 5), judge_config_id=1, criterion_key="k")
    assert not good.flagged and good.kappa == 1.0


def test_flag_thresholds_come_from_settings(settings):
    settings.JUDGE_AGREEMENT_MIN_LABELS = 2
    assert agreement_row(pairs(1, 1, 0, 0), judge_config_id=1, criterion_key="k").flagged


@pytest.mark.django_db
def test_report_per_criterion_and_config_from_labels():
    task = task_make()
    llm = task.current_version.criteria.get(kind="llm")
    endpoint = ModelEndpoint.objects.create(name="j", base_url="http://127.0.0.1:9/v1", model="m")
    config = JudgeConfig.objects.create(name="judge-a", endpoint=endpoint)
    human = reviewer()
    # judge says met 5 times; the human agrees 3 times: judge (T,T,T,T,T) vs human (T,T,T,F,F), plus 1 not-met agreed.
    for index, (met, agrees) in enumerate([(True, True)] * 3 + [(True, False)] * 2 + [(False, True)]):
        verdict = Verdict.objects.create(
            trajectory_hash=f"t{index}",
            criterion_key=llm.key,
            criterion_hash=llm.content_hash,
            judge_config=config,
            met=met,
            status="met" if met else "not_met",
        )
        VerdictLabel.objects.create(verdict=verdict, labeller=human, agrees=agrees)
    # Errors and programmatic verdicts are not part of the comparison.
    error = Verdict.objects.create(
        trajectory_hash="e",
        criterion_key=llm.key,
        criterion_hash=llm.content_hash,
        judge_config=config,
        met=None,
        status="error",
    )
    VerdictLabel.objects.create(verdict=error, labeller=human, agrees=False)

    report = judge_agreement_report(criterion_texts=criterion_texts)
    [row] = report["criteria"]
    assert row.labels == 6 and row.criterion_key == str(llm.key) and row.criterion_text == llm.text
    # judge (T,T,T,T,T,F) vs human (T,T,T,F,F,F): p_o = 4/6; p_e = 5/6*3/6 + 1/6*3/6 = 0.5; kappa = 1/3.
    assert row.agreement == pytest.approx(4 / 6) and row.kappa == pytest.approx(1 / 3)
    assert row.flagged and report["flagged"] == [row]
    [overall] = report["configs"]
    assert overall.judge_config_id == config.pk and overall.labels == 6
