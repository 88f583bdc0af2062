"""The gate a task version passes before approval: its reference passes on its snapshot, no must-fail red-team
policy passes, and every must-pass policy does (``tasks_app.red_team``).

The result is stored once per (version, snapshot) in ``RubricGate``, with a hash of the criteria it judged: a
version's criteria never change after it is made, so the stored gate is reused by approving, loading the library
and building releases; a calibration run with the ``red_team`` policy refreshes it from its rollouts (judged in
real episodes). ``gate_checklist`` is what the reviewer sees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from tasks_app.models import RubricGate, TaskVersion


@contextmanager
def gate_replay(snapshot) -> Iterator[None]:
    """Inside this block, gates of versions on ``snapshot`` are computed in one scratch world (much faster than a
    scratch world each when many versions are approved at once)."""
    from tasks_app.perturbations import shared_replay

    with shared_replay(snapshot):
        yield


def criteria_hash(version: TaskVersion) -> str:
    """sha256 of the version's criteria content hashes in order (what a gate result was computed for)."""
    hashes = list(version.criteria.order_by("position").values_list("content_hash", flat=True))
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def rubric_gate_current(version: TaskVersion) -> RubricGate | None:
    """The stored gate of the version on its snapshot, if it was computed for the version's criteria."""
    gate = RubricGate.objects.filter(version=version, snapshot_id=version.snapshot_id).first()
    if gate is None or gate.criteria_hash != criteria_hash(version):
        return None
    return gate


@transaction.atomic
def rubric_gate_store(*, version: TaskVersion, findings: dict[str, Any], source: str) -> RubricGate:
    """Store (or replace) the gate of ``version`` from red-team ``findings``
    (``{reference_passes, gameable, over_specified, policies}``)."""
    reference_passes = bool(findings.get("reference_passes"))
    gameable = list(findings.get("gameable") or [])
    over_specified = list(findings.get("over_specified") or [])
    gate, _ = RubricGate.objects.update_or_create(
        version=version,
        snapshot_id=version.snapshot_id,
        defaults={
            "reference_passes": reference_passes,
            "gameable": gameable,
            "over_specified": over_specified,
            "passes": reference_passes and not gameable and not over_specified,
            "policies": list(findings.get("policies") or []),
            "criteria_hash": criteria_hash(version),
            "source": source[:100],
        },
    )
    return gate


def rubric_gate_compute(*, version: TaskVersion, replay=None) -> RubricGate:
    """Play the reference and every red-team policy of ``version`` in a scratch world of its snapshot (or in
    ``replay``, a ``SnapshotReplay`` of that snapshot, to check many versions in one) and store the gate."""
    from tasks_app.perturbations import SnapshotReplay
    from tasks_app.red_team import red_team_check

    criteria = list(version.criteria.order_by("position"))
    solution = version.reference_solution or {}
    from tasks_app.perturbations import shared_replay_for

    replay = replay or shared_replay_for(version.snapshot_id)
    if replay is None:
        with SnapshotReplay(version.snapshot) as scratch:
            report = red_team_check(
                criteria=criteria, instruction=version.instruction, solution=solution, replay=scratch
            )
    else:
        report = red_team_check(criteria=criteria, instruction=version.instruction, solution=solution, replay=replay)
    return rubric_gate_store(version=version, findings=report.as_dict(), source="red team check")


def rubric_gate_ensure(*, version: TaskVersion, replay=None) -> RubricGate:
    """The stored gate of the version, computed first when there is none for its criteria."""
    return rubric_gate_current(version) or rubric_gate_compute(version=version, replay=replay)


def _causes(causes: list[dict]) -> list[str]:
    return [f"{c.get('policy')}: {c.get('why')}" + (f" ({'; '.join(c['criteria'])})" if c.get("criteria") else "")
            for c in causes]  # fmt: skip


def gate_checklist(gate: RubricGate) -> list[dict[str, Any]]:
    """The three checks as the review page shows them: ``{check, ok, details}``."""
    return [
        {
            "check": "The reference solution passes on the task's snapshot",
            "ok": gate.reference_passes,
            "details": [] if gate.reference_passes else ["a required criterion fails the reference"],
        },
        {
            "check": "No policy that must fail passes (dump, spray, no-call reply, echo, over-acting, perturbations)",
            "ok": not gate.gameable,
            "details": _causes(gate.gameable),
        },
        {
            "check": "Every valid alternative passes (reordered reads, an extra read, a bigger page, formats, "
            "rewording)",
            "ok": not gate.over_specified,
            "details": _causes(gate.over_specified),
        },
    ]


def gate_record(gate: RubricGate) -> dict[str, Any]:
    """What a review keeps of the gate it was decided under."""
    return {
        "passes": gate.passes,
        "snapshot": gate.snapshot_id,
        "source": gate.source,
        "checks": [{"check": c["check"], "ok": c["ok"], "details": c["details"][:10]} for c in gate_checklist(gate)],
    }


def gate_problems(gate: RubricGate) -> str:
    """One sentence naming the failed checks (for a refusal)."""
    failed = [c for c in gate_checklist(gate) if not c["ok"]]
    return "; ".join(
        f"{c['check']}: no" + (f" ({', '.join(c['details'][:3])})" if c["details"] else "") for c in failed
    )
