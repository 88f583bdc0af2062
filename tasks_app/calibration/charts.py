"""Inline SVG charts for the calibration pages: geometry only (positions and sizes), drawn by the templates.

Pure functions of the figures the selectors give; no query, no JS library.
"""

from __future__ import annotations

import math
from collections import Counter

from tasks_app.calibration.metrics import DIFFICULTIES

# Row labels are drawn right-aligned against the plot, so the label column must be as wide as its longest label or
# the SVG cuts the label's start off ("erturbed_reference:change_ar…"). Widths are estimated from the label font
# (12px: at most ~7px a character), the column is sized to the longest label, within bounds, and a label longer
# than the widest column is shortened at its end, with the whole label in the row's tooltip.
LABEL_CHAR_PX = 7
LABEL_PAD_PX = 12
LABEL_COLUMN_MIN, LABEL_COLUMN_MAX = 80, 320


def label_column(labels: list[str]) -> tuple[int, int]:
    """The label column's width in px and the most characters a label may keep, for ``labels``."""
    longest = max((len(label) for label in labels), default=0)
    width = min(LABEL_COLUMN_MAX, max(LABEL_COLUMN_MIN, math.ceil(longest * LABEL_CHAR_PX) + LABEL_PAD_PX))
    return width, (width - LABEL_PAD_PX) // LABEL_CHAR_PX


def fit_label(label: str, max_chars: int) -> str:
    return label if len(label) <= max_chars else label[: max_chars - 1] + "…"


def bar_chart(rows: list[tuple[str, float | None, str]], *, title: str, bar_w: int = 270) -> dict:
    """Horizontal bars of values in [0, 1]: ``rows`` are (label, value, note shown after the bar)."""
    label_w, max_chars = label_column([label for label, _, _ in rows])
    width, row_h = label_w + bar_w + 90, 24
    bars = []
    for index, (label, value, note) in enumerate(rows):
        share = max(0.0, min(1.0, value or 0.0))
        bars.append(
            {
                "label": fit_label(label, max_chars),
                "full_label": label,
                "y": index * row_h + 4,
                "text_y": index * row_h + 18,
                "w": round(share * bar_w, 1),
                "note": note,
                "note_x": label_w + round(share * bar_w, 1) + 6,
                "missing": value is None,
            }
        )
    return {
        "kind": "bars",
        "title": title,
        "width": width,
        "height": max(len(rows), 1) * row_h + 8,
        "label_w": label_w,
        "bar_w": bar_w,
        "bars": bars,
    }


def column_chart(columns: list[tuple[str, int]], *, title: str, width: int = 420, height: int = 180) -> dict:
    """Vertical bars of counts (a histogram over named bins)."""
    top = max((count for _, count in columns), default=0) or 1
    plot_h, base = height - 40, height - 24
    slot = width / max(len(columns), 1)
    bars = []
    for index, (label, count) in enumerate(columns):
        h = round(count / top * plot_h, 1)
        bars.append(
            {
                "label": label,
                "count": count,
                "x": round(index * slot + slot * 0.15, 1),
                "w": round(slot * 0.7, 1),
                "y": round(base - h, 1),
                "h": h,
                "mid": round(index * slot + slot / 2, 1),
                "count_y": round(base - h - 4, 1),
            }
        )
    return {
        "kind": "columns",
        "title": title,
        "width": width,
        "height": height,
        "base": base,
        "bars": bars,
        "label_y": height - 8,
    }


REWARD_BINS = 10


def reward_bins(rewards: list[float]) -> list[int]:
    """Counts of rewards in ten equal bins over [0, 1] (1.0 falls in the last)."""
    counts = [0] * REWARD_BINS
    for reward in rewards:
        counts[min(REWARD_BINS - 1, max(0, int(float(reward) * REWARD_BINS)))] += 1
    return counts


def strip_chart(rows: list[tuple[str, list[float]]], *, title: str, plot_w: int = 300) -> dict:
    """A small reward histogram per row (task or policy): ten bins over [0, 1], bar height = share of rollouts."""
    label_w, max_chars = label_column([label for label, _ in rows])
    width, row_h = label_w + plot_w + 60, 30
    bin_w = plot_w / REWARD_BINS
    strips = []
    for index, (label, rewards) in enumerate(rows):
        counts = reward_bins(rewards)
        top = max(counts) or 1
        base = index * row_h + row_h - 4
        cells = []
        for b, count in enumerate(counts):
            h = round(count / top * (row_h - 8), 1)
            cells.append(
                {
                    "x": round(label_w + b * bin_w + 1, 1),
                    "w": round(bin_w - 2, 1),
                    "y": round(base - h, 1),
                    "h": h,
                    "count": count,
                    "low": b / REWARD_BINS,
                    "high": (b + 1) / REWARD_BINS,
                }
            )
        strips.append(
            {
                "label": fit_label(label, max_chars),
                "full_label": label,
                "text_y": index * row_h + 19,
                "base": base,
                "cells": cells,
                "n": len(rewards),
            }
        )
    height = max(len(rows), 1) * row_h + 22
    return {
        "kind": "strips",
        "title": title,
        "width": width,
        "height": height,
        "label_w": label_w,
        "plot_w": plot_w,
        "axis_y": height - 6,
        "strips": strips,
        "end_x": label_w + plot_w,
    }


def difficulty_histogram(labels: list[str], *, title: str = "Difficulty of the tasks") -> dict:
    counts = Counter(labels)
    return column_chart([(name, counts.get(name, 0)) for name in DIFFICULTIES], title=title)


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"
