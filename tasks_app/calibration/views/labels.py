"""The judge against humans: labelling llm verdicts, and agreement per judge configuration and criterion."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from corecraft_site.service_errors import add_service_errors
from rubrics_app.agreement import (
    judge_agreement_report,
    thresholds,
    verdict_label_set,
    verdict_labeller_check,
    verdicts_to_label,
)
from rubrics_app.models import JudgeConfig, Verdict
from tasks_app.calibration.charts import bar_chart
from tasks_app.calibration.forms import LabelForm
from tasks_app.calibration.selectors import criterion_texts
from tasks_app.calibration.selectors_results import verdict_label_cards
from tasks_app.calibration.views import forbidden_as_page
from tasks_app.permissions import calibration_view_check

LABEL_BATCH = 10


def _label_cards(verdicts: list[Verdict]) -> list[dict]:
    return [{**card, "form": LabelForm(prefix=f"v{card['verdict'].pk}")} for card in verdict_label_cards(verdicts)]


def _labels_context(request: HttpRequest, *, bound: dict | None = None) -> dict:
    judges = list(JudgeConfig.objects.order_by("name"))
    judge = next((j for j in judges if str(j.pk) == request.GET.get("judge", "")), None)
    pending = verdicts_to_label(user=request.user, judge_config=judge)
    cards = _label_cards(list(pending[:LABEL_BATCH]))
    if bound is not None:
        # The card just posted with errors goes first, with what was typed.
        cards = [bound, *[c for c in cards if c["verdict"].pk != bound["verdict"].pk]]
    return {
        "cards": cards,
        "judges": judges,
        "judge": judge,
        "remaining": pending.count(),
        "labelled": request.user.verdict_labels.count(),
    }


@require_GET
@login_required
@forbidden_as_page
def labels(request: HttpRequest) -> HttpResponse:
    """A batch of llm verdicts this reviewer has not labelled, each with agree / disagree and a note."""
    verdict_labeller_check(request.user)
    return render(request, "calibration/labels.html", _labels_context(request))


@require_POST
@login_required
@forbidden_as_page
def label_verdict(request: HttpRequest, verdict_id: int) -> HttpResponse:
    """Record this reviewer's label; htmx swaps the card, bad input keeps the card with its errors (400)."""
    verdict_labeller_check(request.user)
    verdict = get_object_or_404(Verdict.objects.select_related("judge_config"), pk=verdict_id)
    form = LabelForm(request.POST, prefix=f"v{verdict.pk}")
    label = None
    if form.is_valid():
        try:
            label = verdict_label_set(
                verdict=verdict, user=request.user, agrees=form.cleaned_data["agrees"], note=form.cleaned_data["note"]
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
    [card] = _label_cards([verdict])
    card["form"], card["label"] = form, label
    status = 200 if label is not None else 400
    if request.htmx:
        return render(request, "calibration/labels.html#card", {"card": card}, status=status)
    if label is not None:
        messages.success(request, "Label saved.")
        return redirect(reverse("calibration:labels"))
    return render(request, "calibration/labels.html", _labels_context(request, bound=card), status=status)


@require_GET
@login_required
@forbidden_as_page
def agreement(request: HttpRequest) -> HttpResponse:
    """Judge against humans: agreement and Cohen's kappa per judge configuration and per criterion, flags."""
    calibration_view_check(request.user)
    report = judge_agreement_report(criterion_texts=criterion_texts)
    judges = {j.pk: j for j in JudgeConfig.objects.all()}
    for row in [*report["criteria"], *report["configs"]]:
        row.judge = judges.get(row.judge_config_id)
    min_labels, max_kappa, min_agreement = thresholds()
    context = {
        **report,
        "min_labels": min_labels,
        "max_kappa": max_kappa,
        "min_agreement": min_agreement,
        "kappa_chart": bar_chart(
            [
                (
                    f"{row.judge.name if row.judge else '?'} · {row.criterion_text[:40]}",
                    max(row.kappa or 0, 0),
                    f"κ {row.kappa:.2f}" if row.kappa is not None else "κ —",
                )
                for row in report["criteria"]
            ],
            title="Cohen's kappa per criterion (negative shown as 0)",
        ),
    }
    return render(request, "calibration/agreement.html", context)
