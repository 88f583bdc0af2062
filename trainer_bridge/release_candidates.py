"""Which approved tasks a release may take (reads the database), and ``release_plan``: choose them, then split them
with ``splits.split_plan``.

``candidates_select(filters)`` reads the approved tasks (their current version) that pass the filters: type,
difficulty, family, the calibrated pass-rate window and a minimum reward variance from ``TaskCalibration``, and
leaves out what the gate flags (``tasks_app.calibration.selectors.gate_flagged_versions``, the same rule as the
task list's "flagged by the gate" filter) unless the filters include flagged tasks.
"""

from __future__ import annotations

from tasks_app.calibration.selectors import gate_flagged_versions
from tasks_app.library.similarity import near_duplicate_groups
from tasks_app.models import Task, TaskCalibration, TaskStatus
from trainer_bridge.splits import (
    Candidate,
    ReleaseFilters,
    ReleaseSizes,
    SplitError,
    SplitPlan,
    filters_parse,
    sizes_parse,
    split_plan,
)


def candidates_select(filters: ReleaseFilters) -> list[Candidate]:
    """Approved tasks (their current version) that pass ``filters``, in key order."""
    tasks = Task.objects.filter(status=TaskStatus.APPROVED, current_version__isnull=False)
    if filters.task_types:
        tasks = tasks.filter(task_type__in=filters.task_types)
    if filters.difficulties:
        tasks = tasks.filter(difficulty__in=filters.difficulties)
    if filters.families:
        tasks = tasks.filter(family__in=filters.families)
    rows = tasks.values_list(
        "pk", "source_key", "current_version_id", "current_version__task_type", "current_version__difficulty",
        "current_version__family", "current_version__instruction",
    )  # fmt: skip
    calibrations = _calibrations(filters) if filters.needs_calibration else None
    flagged = set() if filters.include_flagged else gate_flagged_versions()
    chosen = []
    for task_id, source_key, version_id, task_type, difficulty, family, instruction in rows.iterator(chunk_size=2000):
        if calibrations is not None and not _calibration_passes(calibrations.get(version_id), filters):
            continue
        if version_id in flagged:
            continue
        chosen.append(
            Candidate(
                task_id=task_id,
                version_id=version_id,
                key=source_key or f"task:{task_id}",
                task_type=task_type,
                difficulty=difficulty,
                family=family,
                instruction=instruction,
            )
        )
    return sorted(chosen, key=lambda c: (c.key, c.task_id))


def _calibrations(filters: ReleaseFilters) -> dict[int, dict]:
    """The calibration summary per task version: the programmatic one (no judge config) first, else the latest."""
    found: dict[int, dict] = {}
    rows = TaskCalibration.objects.order_by("version_id", "judge_config_id", "-updated_at").values(
        "version_id", "judge_config_id", "pass_at_1", "reward_std", "flags"
    )
    for row in rows.iterator(chunk_size=5000):
        found.setdefault(row["version_id"], row)
    return found


def _calibration_passes(calibration: dict | None, filters: ReleaseFilters) -> bool:
    if calibration is None:
        return False
    pass_rate = calibration["pass_at_1"]
    if filters.pass_rate_min is not None and (pass_rate is None or pass_rate < filters.pass_rate_min):
        return False
    if filters.pass_rate_max is not None and (pass_rate is None or pass_rate > filters.pass_rate_max):
        return False
    if filters.min_reward_variance is not None:
        std = calibration["reward_std"]
        if std is None or std * std < filters.min_reward_variance:
            return False
    return not set(filters.exclude_flags) & set(calibration["flags"] or [])


def near_duplicates_of(candidates: list[Candidate], threshold: float = 0.8) -> list[set]:
    return near_duplicate_groups([(c.task_id, c.instruction) for c in candidates], threshold)


def release_plan(*, filters: dict | ReleaseFilters, sizes: dict | ReleaseSizes, seed: int) -> SplitPlan:
    """Choose and split (reads the database; deterministic for the same tasks)."""
    filters = filters if isinstance(filters, ReleaseFilters) else filters_parse(filters)
    sizes = sizes if isinstance(sizes, ReleaseSizes) else sizes_parse(sizes)
    candidates = candidates_select(filters)
    if not candidates:
        raise SplitError("no approved task passes the filters")
    groups = near_duplicates_of(candidates, filters.near_duplicate_threshold)
    return split_plan(candidates, sizes=sizes, seed=seed, near_duplicates=groups)
