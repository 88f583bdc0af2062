"""The rows of tasks_app, by concern: ``tasks`` (tasks, versions, criteria), ``reviews`` (reviews, comments,
reference runs, saved filters), ``calibration`` (rollouts, runs and items, calibrations, stored gates).

One Django app, one migration history: the rows are shared by the three rooms (authoring, calibration, library),
so they sit below all of them (ADR 0007). Import from ``tasks_app.models``.
"""

from tasks_app.models.calibration import (
    CalibrationFlag,
    CalibrationItem,
    CalibrationItemStatus,
    CalibrationRun,
    CalibrationRunStatus,
    DifficultyLabel,
    Rollout,
    RolloutPolicy,
    RolloutStatus,
    RubricGate,
    TaskCalibration,
)
from tasks_app.models.reviews import (
    Comment,
    ReferenceRun,
    Review,
    ReviewDecision,
    ReviewStage,
    SavedFilter,
    SavedFilterPage,
)
from tasks_app.models.tasks import Criterion, Difficulty, Task, TaskStatus, TaskType, TaskVersion

__all__ = [
    "CalibrationFlag",
    "CalibrationItem",
    "CalibrationItemStatus",
    "CalibrationRun",
    "CalibrationRunStatus",
    "Comment",
    "Criterion",
    "Difficulty",
    "DifficultyLabel",
    "ReferenceRun",
    "Review",
    "ReviewDecision",
    "ReviewStage",
    "Rollout",
    "RolloutPolicy",
    "RolloutStatus",
    "RubricGate",
    "SavedFilter",
    "SavedFilterPage",
    "Task",
    "TaskCalibration",
    "TaskStatus",
    "TaskType",
    "TaskVersion",
]
