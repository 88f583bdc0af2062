"""How far the LLM judge agrees with human reviewers: raw agreement and Cohen's kappa, per criterion and per judge.

A ``VerdictLabel`` says whether a reviewer agrees with one llm ``Verdict``; the human's own answer is then the
verdict's ``met`` (agrees) or its opposite (disagrees). Kappa compares the judge's met/not-met with the humans'
beyond what their base rates would give by chance. A criterion is flagged for rewriting once it has at least
``JUDGE_AGREEMENT_MIN_LABELS`` labels and kappa < ``JUDGE_AGREEMENT_MAX_KAPPA`` or agreement <
``JUDGE_AGREEMENT_MIN_AGREEMENT`` (settings; 5, 0.4 and 0.8 unless the environment says otherwise).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from corecraft_site.roles import ADMIN, REVIEWER, user_roles
from rubrics_app.models import Verdict, VerdictLabel, VerdictStatus


def thresholds() -> tuple[int, float, float]:
    """(min labels, kappa below which, agreement below which) a criterion is flagged."""
    return (
        settings.JUDGE_AGREEMENT_MIN_LABELS,
        settings.JUDGE_AGREEMENT_MAX_KAPPA,
        settings.JUDGE_AGREEMENT_MIN_AGREEMENT,
    )


def percent_agreement(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Share of (judge, human) pairs that agree; None without pairs."""
    if not pairs:
        return None
    return sum(1 for a, b in pairs if a == b) / len(pairs)


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters over binary labels: (p_o - p_e) / (1 - p_e).

    None without pairs, or when chance agreement is already 1 (both raters gave one and the same label to
    everything: kappa is undefined there, and the raw agreement tells the story).
    """
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    first_yes = sum(1 for a, _ in pairs if a) / n
    second_yes = sum(1 for _, b in pairs if b) / n
    expected = first_yes * second_yes + (1 - first_yes) * (1 - second_yes)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


@dataclass
class AgreementRow:
    """Agreement of one judge configuration with the humans on one criterion (or overall when key is None)."""

    judge_config_id: int | None
    criterion_key: str | None
    labels: int = 0
    agreement: float | None = None
    kappa: float | None = None
    flagged: bool = False
    reasons: list[str] = field(default_factory=list)
    criterion_text: str = ""


def agreement_row(
    pairs: Sequence[tuple[bool, bool]], *, judge_config_id: int | None, criterion_key: str | None
) -> AgreementRow:
    """Figures for one group of (judge met, human met) pairs, flagged against ``thresholds()``."""
    min_labels, max_kappa, min_agreement = thresholds()
    row = AgreementRow(judge_config_id=judge_config_id, criterion_key=criterion_key, labels=len(pairs))
    row.agreement = percent_agreement(pairs)
    row.kappa = cohen_kappa(pairs)
    if len(pairs) >= min_labels:
        if row.kappa is not None and row.kappa < max_kappa:
            row.reasons.append(f"kappa {row.kappa:.2f} < {max_kappa}")
        if row.agreement is not None and row.agreement < min_agreement:
            row.reasons.append(f"agreement {row.agreement:.2f} < {min_agreement}")
    row.flagged = bool(row.reasons)
    return row


def label_pairs(labels: Iterable[tuple[int | None, str, bool, bool]]) -> dict[tuple[int | None, str], list]:
    """Group (judge config id, criterion key, judge met, human agrees) into {(config, key): [(judge, human)]}."""
    grouped: dict[tuple[int | None, str], list[tuple[bool, bool]]] = defaultdict(list)
    for config_id, key, judge_met, agrees in labels:
        grouped[(config_id, str(key))].append((judge_met, judge_met if agrees else not judge_met))
    return grouped


def judge_agreement_report(
    *, judge_config=None, criterion_texts: Callable[[set[str]], Mapping[str, str]] | None = None
) -> dict:
    """Agreement with the humans from every ``VerdictLabel`` on a decided llm verdict.

    ``{"criteria": [AgreementRow per (judge config, criterion)], "configs": [AgreementRow per judge config],
    "flagged": [the criterion rows flagged for rewriting]}``; one query whatever the number of labels, plus what
    ``criterion_texts`` asks (the criteria are the tasks' rows, above this app: it maps the criterion keys to their
    texts, e.g. ``tasks_app.calibration.selectors.criterion_texts``; None leaves the texts empty).
    """
    labels = VerdictLabel.objects.filter(verdict__judge_config__isnull=False, verdict__met__isnull=False)
    if judge_config is not None:
        labels = labels.filter(verdict__judge_config=judge_config)
    rows = list(
        labels.values_list("verdict__judge_config_id", "verdict__criterion_key", "verdict__met", "agrees").order_by()
    )
    grouped = label_pairs(rows)
    texts = criterion_texts({key for _, key in grouped}) if criterion_texts is not None and grouped else {}
    criteria = []
    per_config: dict[int | None, list[tuple[bool, bool]]] = defaultdict(list)
    for (config_id, key), pairs in sorted(grouped.items(), key=lambda item: (item[0][0] or 0, item[0][1])):
        row = agreement_row(pairs, judge_config_id=config_id, criterion_key=key)
        row.criterion_text = texts.get(key, "")
        criteria.append(row)
        per_config[config_id].extend(pairs)
    configs = [
        agreement_row(pairs, judge_config_id=config_id, criterion_key=None)
        for config_id, pairs in sorted(per_config.items(), key=lambda item: item[0] or 0)
    ]
    return {"criteria": criteria, "configs": configs, "flagged": [row for row in criteria if row.flagged]}


def verdict_labeller_check(user) -> None:
    """Labelling the judge's verdicts: reviewers and admins."""
    if not {REVIEWER, ADMIN} & user_roles(user):
        raise PermissionDenied("Only reviewers and admins label the judge's verdicts.")


@transaction.atomic
def verdict_label_set(*, verdict, user, agrees: bool, note: str = ""):
    """Record (or change) ``user``'s agree / disagree on a decided llm verdict; reviewers and admins only."""
    verdict_labeller_check(user)
    if verdict.judge_config_id is None:
        raise ValidationError({"verdict": "programmatic verdicts are not labelled; only the LLM judge's are"})
    if verdict.status == VerdictStatus.ERROR:
        raise ValidationError({"verdict": "a judge error has no verdict to agree or disagree with"})
    label, _ = VerdictLabel.objects.update_or_create(
        verdict=verdict, labeller=user, defaults={"agrees": agrees, "note": note.strip()}
    )
    return label


def verdicts_to_label(*, user, judge_config=None):
    """Decided llm verdicts ``user`` has not labelled yet, in a stable pseudo-random order (by trajectory hash)."""
    verdicts = Verdict.objects.filter(judge_config__isnull=False).exclude(status=VerdictStatus.ERROR)
    if judge_config is not None:
        verdicts = verdicts.filter(judge_config=judge_config)
    return verdicts.exclude(labels__labeller=user).select_related("judge_config").order_by("trajectory_hash", "pk")
