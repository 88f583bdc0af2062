"""The gate a task version passes before approval: its reference passes on its snapshot, no must-fail red-team
policy passes, and every must-pass policy does (``tasks_app.red_team``).

The result is stored once per version and snapshot in ``RubricGate`` under its **gate key** (``gate_key``): a
sha256 of everything the result depends on, namely the version's instruction, criteria (content hashes) and
reference solution, the snapshot's content checksum, schema fingerprint and clock, and the gate's own code
(``gate_code_version``: the sources of the red team, the judge and the tools). A stored result whose key is not
the current one (the code changed since, say) is stale: it is computed again, never trusted. Approving, loading
the library and building releases read it; a calibration run with the ``red_team`` policy refreshes it from its
rollouts (judged in real episodes).

The starter library ships its gates precomputed (``tasks_app/fixtures/library_gates.json``, written by
``manage.py library_gates --write``) so that ``make demo`` approves through the gate without playing the red
team on every task: an entry is used only under its key (content addressed), so an entry that no longer matches
its task, snapshot or code is simply not found and the gate is computed (ADR 0005). ``gate_checklist`` is what
the reviewer sees.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path
from typing import Any

from django.db import transaction

from corecraft_site.canonical import sorted_json_sha256
from corecraft_site.code_version import code_version
from tasks_app.models import RubricGate, TaskVersion
from tasks_app.perturbations import SnapshotReplay, shared_replay, shared_replay_for
from tasks_app.red_team import red_team_check

ROOT = Path(__file__).resolve().parents[3]  # the repository (this is tasks_app/calibration/services/gates.py)
# The sources a gate's result depends on (besides the task and the snapshot): the red team's policies, the judge
# that scores them, and the tools whose results the policies replay. Editing any of them makes every stored gate
# stale. Directories mean every .py file under them.
GATE_CODE_PATHS = (
    "tasks_app/red_team",
    "world_app/conversation.py",
    "tasks_app/perturbations",
    "rubrics_app/judgement.py",
    "rubrics_app/judgement_types.py",
    "rubrics_app/programmatic",
    "rubrics_app/answer_facts.py",
    "rubrics_app/patterns.py",
    "rubrics_app/criteria.py",
    "rubrics_app/criterion_specs.py",
    "world_app/tools",
    "world_app/store_rules.py",
    "world_app/money.py",
    "world_app/episodes/diff.py",
)
LIBRARY_GATES_FILE = ROOT / "tasks_app" / "fixtures" / "library_gates.json"
LIBRARY_GATES_FORMAT = 1


def gate_code_version() -> str:
    """sha256 over the gate's code (``GATE_CODE_PATHS``: each file's path and bytes, in path order)."""
    return code_version(GATE_CODE_PATHS)


def snapshot_identity(snapshot) -> str:
    """What the red team's replay of a snapshot depends on: its content, schema and clock (not the image's bytes,
    which differ between two publications of the same world)."""
    now = snapshot.world_now.astimezone(UTC).isoformat()
    return f"{snapshot.content_checksum}:{snapshot.schema_fingerprint}:{now}"


def gate_key_of(
    *,
    instruction: str,
    criteria_hashes: Iterable[str],
    reference_solution: dict,
    snapshot,
    simulated_user: dict | None = None,
) -> str:
    """The gate key of a task's content on ``snapshot`` under the current gate code (see the module docstring);
    a task's simulated user (who answers ``ask_user``) is part of it when it has one."""
    payload = {
        "code": gate_code_version(),
        "snapshot": snapshot_identity(snapshot),
        "instruction": instruction,
        "criteria": list(criteria_hashes),
        "reference_solution": reference_solution or {},
    }
    if simulated_user:
        payload["simulated_user"] = simulated_user
    return sorted_json_sha256(payload)


def gate_key(version: TaskVersion) -> str:
    """The gate key of a task version on its snapshot."""
    hashes = list(version.criteria.order_by("position").values_list("content_hash", flat=True))
    return gate_key_of(instruction=version.instruction, criteria_hashes=hashes,
                       reference_solution=version.reference_solution or {}, snapshot=version.snapshot,
                       simulated_user=version.simulated_user)  # fmt: skip


@contextmanager
def gate_replay(snapshot) -> Iterator[None]:
    """Inside this block, gates of versions on ``snapshot`` are computed in one scratch world (much faster than a
    scratch world each when many versions are approved at once)."""

    with shared_replay(snapshot):
        yield


def rubric_gate_current(version: TaskVersion) -> RubricGate | None:
    """The stored gate of the version on its snapshot, if it was computed under the current gate key."""
    gate = RubricGate.objects.filter(version=version, snapshot_id=version.snapshot_id).first()
    if gate is None or gate.gate_key != gate_key(version):
        return None
    return gate


@transaction.atomic
def rubric_gate_store(*, version: TaskVersion, findings: dict[str, Any], source: str) -> RubricGate:
    """Store (or replace) the gate of ``version`` from red-team ``findings``
    (``{reference_passes, gameable, over_specified, policies}``), under the version's current gate key."""
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
            "gate_key": gate_key(version),
            "source": source[:100],
        },
    )
    return gate


def rubric_gate_compute(*, version: TaskVersion, replay=None) -> RubricGate:
    """Play the reference and every red-team policy of ``version`` in a scratch world of its snapshot (or in
    ``replay``, a ``SnapshotReplay`` of that snapshot, to check many versions in one) and store the gate."""

    criteria = list(version.criteria.order_by("position"))
    solution = version.reference_solution or {}
    replay = replay or shared_replay_for(version.snapshot_id)
    if replay is None:
        with SnapshotReplay(version.snapshot) as scratch:
            report = red_team_check(
                criteria=criteria,
                instruction=version.instruction,
                solution=solution,
                replay=scratch,
                simulated_user=version.simulated_user,
            )
    else:
        report = red_team_check(
            criteria=criteria,
            instruction=version.instruction,
            solution=solution,
            replay=replay,
            simulated_user=version.simulated_user,
        )
    return rubric_gate_store(version=version, findings=report.as_dict(), source="red team check")


def rubric_gate_ensure(*, version: TaskVersion, replay=None, stored: Mapping[str, dict] | None = None) -> RubricGate:
    """The stored gate of the version; when there is none under its current key: the entry of ``stored`` (a
    precomputed gate file's ``gates``, by key) if it has one, else the red team is played (``rubric_gate_compute``)."""
    current = rubric_gate_current(version)
    if current is not None:
        return current
    if stored:
        key = gate_key(version)
        entry = stored.get(key)
        if entry is not None:
            return rubric_gate_store(version=version, findings=gate_entry_findings(entry),
                                     source=f"library gate file ({key[:12]})")  # fmt: skip
    return rubric_gate_compute(version=version, replay=replay)


# --- the precomputed gates of the library (a content-addressed file) -------------------------------------------


def gate_entry(findings: dict[str, Any]) -> dict[str, Any]:
    """A gate file entry from red-team findings: the flags as they are, each policy as [key, expect, passed,
    partial reward rounded to 4 places]."""
    return {
        "reference_passes": bool(findings.get("reference_passes")),
        "gameable": list(findings.get("gameable") or []),
        "over_specified": list(findings.get("over_specified") or []),
        "policies": [
            [p["key"], p["expect"], bool(p["passed"]),
             None if p.get("partial_reward") is None else round(float(p["partial_reward"]), 4)]
            for p in findings.get("policies") or []
        ],
    }  # fmt: skip


def gate_entry_findings(entry: dict[str, Any]) -> dict[str, Any]:
    """The findings a gate file entry holds (``rubric_gate_store``'s input)."""
    return {
        "reference_passes": entry.get("reference_passes"),
        "gameable": entry.get("gameable") or [],
        "over_specified": entry.get("over_specified") or [],
        "policies": [
            {"key": k, "expect": e, "passed": p, "partial_reward": r} for k, e, p, r in entry.get("policies") or []
        ],
    }


def library_gates_read(path: Path | str | None = None) -> dict[str, dict]:
    """The entries of a gate file by key (``{}`` when there is no file, or it is of another format: then every
    gate is computed)."""
    file = Path(path) if path else LIBRARY_GATES_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != LIBRARY_GATES_FORMAT:
        return {}
    gates = data.get("gates")
    return gates if isinstance(gates, dict) else {}


def library_gates_write(entries: Mapping[str, dict], path: Path | str | None = None) -> Path:
    """Write a gate file: one entry per line (readable diffs), keys sorted, the code version it was made under."""
    file = Path(path) if path else LIBRARY_GATES_FILE
    lines = [f"  {json.dumps(key)}: {json.dumps(entries[key], sort_keys=True, separators=(',', ':'))}"
             for key in sorted(entries)]  # fmt: skip
    head = json.dumps({"format": LIBRARY_GATES_FORMAT, "gate_code": gate_code_version()}, sort_keys=True)[:-1]
    file.write_text(head + ', "gates": {\n' + ",\n".join(lines) + "\n}}\n", encoding="utf-8")
    return file


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


def findings_problems(findings: dict[str, Any]) -> str:
    """``gate_problems`` of red-team findings not stored as a gate (the library's gate file)."""
    from types import SimpleNamespace

    return gate_problems(
        SimpleNamespace(
            reference_passes=bool(findings.get("reference_passes")),
            gameable=list(findings.get("gameable") or []),
            over_specified=list(findings.get("over_specified") or []),
        )
    )
