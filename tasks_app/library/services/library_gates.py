"""The library's gates: the gate of every starter task and family instance, as ``load_tasks`` would load them,
computed or read from the stored gate file (what ``manage.py library_gates`` writes and checks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from tasks_app.calibration.services.gates import findings_problems, gate_entry, gate_entry_findings, gate_key_of
from tasks_app.library.families import families_instantiate
from tasks_app.library.services.library_files import library_task_validate, starter_tasks_read
from tasks_app.library.services.task_library import library_snapshot
from tasks_app.perturbations import SnapshotReplay
from tasks_app.red_team import red_team_check


@dataclass
class LibraryGates:
    """The gates of the library as ``load_tasks`` loads it (``library_gates_compute``)."""

    entries: dict[str, dict]  # gate key -> gate file entry, the current ones only
    tasks: int = 0
    from_file: int = 0
    computed: int = 0
    missing: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source key, the gate's problems)
    reports: list = field(default_factory=list)  # the red team's reports of the gates computed here


def library_gates_compute(
    *, families: int | None = 20, stored: Mapping[str, dict] | None = None, compute: bool = True, snapshot=None
) -> LibraryGates:
    """The gate of every starter task and family instance (``families`` per family; None = all) on ``snapshot``
    (default the latest), under its gate key: from ``stored`` where it holds the key, else (with ``compute``)
    played by the red team in one scratch world. What ``manage.py library_gates`` writes to the gate file."""
    snapshot = library_snapshot(snapshot)
    stored = stored or {}
    tasks, _ = starter_tasks_read()
    for name, instances in families_instantiate(None, snapshot=snapshot, limit=families).items():
        for instance in instances:
            data = {**instance.as_fixture(), "family": name}
            try:
                tasks.append(library_task_validate(data, source_key=instance.source_key, where=instance.source_key))
            except ValidationError:
                continue  # load_tasks reports it; it has no gate
    result = LibraryGates(entries={}, tasks=len(tasks))
    with SnapshotReplay(snapshot) as replay:
        for task in tasks:
            solution = task.fields["reference_solution"]
            user = task.fields.get("simulated_user") or {}
            key = gate_key_of(instruction=task.fields["instruction"], criteria_hashes=task.criteria_hashes(),
                              reference_solution=solution, snapshot=snapshot, simulated_user=user)  # fmt: skip
            entry = stored.get(key)
            if entry is not None:
                result.from_file += 1
            elif compute:
                report = red_team_check(criteria=task.criteria, instruction=task.fields["instruction"],
                                        solution=solution, replay=replay, simulated_user=user)  # fmt: skip
                entry = gate_entry(report.as_dict())
                result.reports.append(report)
                result.computed += 1
            else:
                result.missing += 1
                continue
            result.entries[key] = entry
            findings = gate_entry_findings(entry)
            if not (findings["reference_passes"] and not findings["gameable"] and not findings["over_specified"]):
                result.refused.append((task.source_key, findings_problems(findings)))
    return result
