"""The calibration charts' geometry: row labels are drawn right-aligned against the plot, so the label column is as
wide as its longest label (issue 17: nine policy labels were cut at their start, "erturbed_reference:change_ar…")."""

from __future__ import annotations

from tasks_app.calibration.charts import (
    LABEL_CHAR_PX,
    LABEL_COLUMN_MAX,
    LABEL_COLUMN_MIN,
    bar_chart,
    label_column,
    strip_chart,
)

POLICIES = [
    "reference",
    "perturbed_reference:change_argument",
    "perturbed_reference:drop_fact",
    "perturbed_reference:first_page_only",
]


def fits(chart: dict, rows: list[dict]) -> bool:
    """Every drawn label fits between the SVG's left edge and the label column's right edge (x = label_w - 6)."""
    return all(len(row["label"]) * LABEL_CHAR_PX <= chart["label_w"] - 6 for row in rows)


def test_long_policy_labels_are_drawn_whole_inside_the_svg():
    chart = bar_chart([(name, 0.5, "50%") for name in POLICIES], title="Pass rate per policy / model")
    assert [bar["label"] for bar in chart["bars"]] == POLICIES  # nothing shortened
    assert fits(chart, chart["bars"])
    assert chart["width"] == chart["label_w"] + 270 + 90  # the plot moves right, it does not shrink
    strips = strip_chart([(name, [0.0, 1.0]) for name in POLICIES], title="Reward distribution per policy")
    assert [strip["label"] for strip in strips["strips"]] == POLICIES
    assert fits(strips, strips["strips"])
    assert strips["end_x"] == strips["label_w"] + strips["plot_w"]


def test_a_label_longer_than_the_widest_column_is_shortened_at_its_end_and_kept_whole_in_the_tooltip():
    title = "A very long task title that a real author might well write for a task " * 2
    chart = bar_chart([(title, 0.2, "20%"), ("short", None, "—")], title="t")
    assert chart["label_w"] == LABEL_COLUMN_MAX
    long_bar, short_bar = chart["bars"]
    assert long_bar["label"].endswith("…") and title.startswith(long_bar["label"][:-1])
    assert long_bar["full_label"] == title
    assert short_bar["label"] == "short" and short_bar["missing"]
    assert fits(chart, chart["bars"])


def test_short_labels_keep_a_narrow_column():
    assert label_column(["ok"])[0] == LABEL_COLUMN_MIN
    assert label_column([])[0] == LABEL_COLUMN_MIN
