"""Calibration where decisions are made: a task's figures and flags as columns, filters and sorting of the task list
and the review queue, in the same one query per page.

Every figure is of the task's current version: its newest ``TaskCalibration`` (pass@1, reward spread, rollouts,
flags) and its stored gate on its snapshot (``RubricGate``: gameable, over-specified, the reference fails). A
version with ``llm`` criteria judged without a judge configuration has them pending: its figures and flags cover
the programmatic criteria only and are marked provisional.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import BooleanField, Exists, F, FloatField, JSONField, OuterRef, Q, QuerySet, Subquery

from tasks_app.models import Criterion, RubricGate, Task, TaskCalibration

# The calibration flags that leave a task out of a release (with a refused stored gate: ``gate_flagged_versions``).
GATE_FLAGS = ("gameable", "over_specified")

FLAG_FILTERS: dict[str, str] = {
    "": "Any calibration",
    "gate_flagged": "Flagged by the gate (left out of releases)",
    "gameable": "Gameable",
    "over_specified": "Over-specified",
    "any_flag": "Any calibration flag",
    "clean": "Calibrated, no flag",
    "uncalibrated": "Not calibrated",
    "provisional": "Provisional (llm criteria pending)",
}
SORTS: dict[str, tuple[str, Any]] = {
    "": ("Default order", None),
    "pass_rate": ("Pass rate, lowest first", F("cal_pass_rate").asc(nulls_last=True)),
    "-pass_rate": ("Pass rate, highest first", F("cal_pass_rate").desc(nulls_last=True)),
    "reward_std": ("Reward spread, widest first", F("cal_reward_std").desc(nulls_last=True)),
    "rollouts": ("Fewest rollouts first", F("cal_rollouts").asc(nulls_first=True)),
}


def _latest_calibration() -> QuerySet[TaskCalibration]:
    return TaskCalibration.objects.filter(version_id=OuterRef("current_version_id")).order_by("-updated_at", "-pk")


def _gate() -> QuerySet[RubricGate]:
    # the gate of the version on its own snapshot (a gate on another snapshot says nothing of this one)
    return RubricGate.objects.filter(version_id=OuterRef("current_version_id"), snapshot_id=F("version__snapshot_id"))


def _flag_in(name: str) -> Q:
    return Q(flags__contains=[name])


def tasks_with_calibration(tasks: QuerySet[Task]) -> QuerySet[Task]:
    """``tasks`` with their current version's figures annotated (no extra query: subqueries of the same one):
    ``cal_pass_rate``, ``cal_reward_std``, ``cal_rollouts``, ``cal_flags``, ``cal_judged`` (a judge configuration
    judged its llm criteria), ``gate_passes``, ``gate_gameable``, ``gate_over_specified``, ``has_llm``."""
    latest = _latest_calibration()
    gate = _gate()
    return tasks.annotate(
        cal_pass_rate=Subquery(latest.values("pass_at_1")[:1], output_field=FloatField()),
        cal_reward_std=Subquery(latest.values("reward_std")[:1], output_field=FloatField()),
        cal_rollouts=Subquery(latest.values("n_rollouts")[:1]),
        cal_flags=Subquery(latest.values("flags")[:1], output_field=JSONField()),
        cal_judged=Exists(latest.filter(judge_config__isnull=False)),
        gate_passes=Subquery(gate.values("passes")[:1], output_field=BooleanField()),
        gate_gameable=Subquery(gate.values("gameable")[:1], output_field=JSONField()),
        gate_over_specified=Subquery(gate.values("over_specified")[:1], output_field=JSONField()),
        has_llm=Exists(Criterion.objects.filter(version_id=OuterRef("current_version_id"), kind="llm")),
    )


def calibration_filter(tasks: QuerySet[Task], flag: str) -> QuerySet[Task]:
    """Only the tasks whose current version matches ``flag`` (a key of ``FLAG_FILTERS``; "" keeps all)."""
    latest = TaskCalibration.objects.filter(version_id=OuterRef("current_version_id"))
    gate = _gate()
    if flag == "gate_flagged":
        # the release's rule (gate_flagged_versions): a refused gate, or a gate flag in calibration
        return tasks.filter(
            Exists(gate.filter(passes=False)) | Exists(latest.filter(_flag_in(GATE_FLAGS[0]) | _flag_in(GATE_FLAGS[1])))
        )
    if flag in GATE_FLAGS:
        stored = gate.exclude(**{flag: []})
        return tasks.filter(Exists(stored) | Exists(latest.filter(_flag_in(flag))))
    if flag == "any_flag":
        return tasks.filter(Exists(latest.exclude(flags=[])) | Exists(gate.filter(passes=False)))
    if flag == "clean":
        return tasks.filter(Exists(latest.filter(flags=[]))).exclude(Exists(gate.filter(passes=False)))
    if flag == "uncalibrated":
        return tasks.exclude(Exists(latest))
    if flag == "provisional":
        has_llm = Criterion.objects.filter(version_id=OuterRef("current_version_id"), kind="llm")
        return tasks.filter(Exists(has_llm)).exclude(Exists(latest.filter(judge_config__isnull=False)))
    return tasks


def calibration_order(tasks: QuerySet[Task], sort: str, default: tuple[Any, ...]) -> QuerySet[Task]:
    """``tasks`` (annotated by ``tasks_with_calibration``) ordered by ``sort`` (a ``SORTS`` key), then ``default``."""
    expression = SORTS.get(sort, SORTS[""])[1]
    if expression is None:
        return tasks.order_by(*default)
    return tasks.order_by(expression, *default)


@dataclass(frozen=True)
class CalibrationCell:
    """What a row shows of a task's calibration and gate."""

    pass_rate: float | None
    reward_std: float | None
    rollouts: int | None
    flags: list[str]
    gate: str  # "passes", "refused" or "" (no stored gate)
    provisional: bool

    @property
    def flag_names(self) -> list[tuple[str, str]]:
        """(flag, a short name for a table cell)."""
        return [(flag, flag.replace("_", " ")) for flag in self.flags]

    @property
    def gate_flagged(self) -> bool:
        return self.gate == "refused" or bool(set(self.flags) & set(GATE_FLAGS))


def calibration_cell(task: Task) -> CalibrationCell:
    """The cell of a task annotated by ``tasks_with_calibration``."""
    flags = list(getattr(task, "cal_flags", None) or [])
    for name, stored in (("gameable", task.gate_gameable), ("over_specified", task.gate_over_specified)):
        if stored and name not in flags:
            flags.append(name)
    gate = "" if task.gate_passes is None else ("passes" if task.gate_passes else "refused")
    calibrated = task.cal_rollouts is not None or gate
    return CalibrationCell(
        pass_rate=task.cal_pass_rate,
        reward_std=task.cal_reward_std,
        rollouts=task.cal_rollouts,
        flags=flags,
        gate=gate,
        provisional=bool(task.has_llm and calibrated and not task.cal_judged),
    )


def tasks_calibrated(tasks: QuerySet[Task], *, flag: str = "", sort: str = "") -> QuerySet[Task]:
    """``tasks`` filtered by ``flag``, annotated with their figures, ordered by ``sort`` then their own order."""
    default = tuple(tasks.query.order_by) or ("-pk",)
    return calibration_order(tasks_with_calibration(calibration_filter(tasks, flag)), sort, default)


def with_cells(tasks: list[Task]) -> list[Task]:
    """Each task gets ``.calibration`` (a ``CalibrationCell``) for the templates."""
    for task in tasks:
        task.calibration = calibration_cell(task)
    return tasks


__all__ = [
    "FLAG_FILTERS",
    "GATE_FLAGS",
    "SORTS",
    "CalibrationCell",
    "calibration_cell",
    "calibration_filter",
    "calibration_order",
    "tasks_calibrated",
    "tasks_with_calibration",
    "with_cells",
]


def criterion_texts(keys: set[str]) -> dict[str, str]:
    """Each criterion key's text in its latest version (the judge-agreement page names the criteria it figures)."""
    return {
        str(key): text
        for key, text in Criterion.objects.filter(key__in=keys)
        .order_by("key", "-version__number")
        .distinct("key")
        .values_list("key", "text")
    }


def gate_flagged_versions() -> set[int]:
    """Task versions the gate flags, which a release leaves out: a stored gate that refuses them on their snapshot,
    or a calibration that found them gameable or over-specified (``GATE_FLAGS``)."""
    refused = RubricGate.objects.filter(passes=False, snapshot_id=F("version__snapshot_id"))
    found = set(refused.values_list("version_id", flat=True))
    for version_id, flags in TaskCalibration.objects.values_list("version_id", "flags").iterator(chunk_size=5000):
        if set(flags or []) & set(GATE_FLAGS):
            found.add(version_id)
    return found
