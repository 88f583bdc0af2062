"""The full check of the task library (the tests check a sample of the families): run by hand.

For every starter fixture file and every family instance (or ``--per-family N`` of them) on the latest published
snapshot: the reference solution meets every programmatic criterion; at least one single-fault copy of it is
detected by the rubric (``--exhaustive``: judge every copy and report the detection rate per kind); every
entity the task names exists; no two instructions are near duplicates. Prints the figures, the problems, and
last a one-line JSON object.

    .venv/bin/python bench/task_library.py [--per-family N] [--exhaustive] [--no-families] [--path DIR]

``--red-team`` instead plays every red-team policy (``tasks_app.red_team``) on every task in the scratch world
(the demo's library by default: the starter files and 20 instances per family, as ``make demo`` loads) and
prints, per policy, the share of tasks passed and the mean partial reward (llm criteria pending), the tasks
flagged gameable or over-specified (``--show N`` of each, with the policy and criteria), and the JSON line.
``--task KEY`` (repeatable) checks only those source keys and prints every policy's outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django

django.setup()

from tasks_app.library.families import FAMILIES, family_instantiate  # noqa: E402
from tasks_app.library.services.library_files import starter_tasks_read  # noqa: E402
from tasks_app.library.services.task_library import entities_missing, entity_ids_named  # noqa: E402
from tasks_app.library.similarity import NEAR_DUPLICATE_THRESHOLD, most_similar, near_duplicate_pairs  # noqa: E402
from tasks_app.perturbations import SnapshotReplay, rubric_check  # noqa: E402
from world_app.snapshots import snapshot_latest  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-family", type=int, default=None, help="Check N instances per family (default all).")
    parser.add_argument("--exhaustive", action="store_true", help="Judge every perturbed copy, not just until one.")
    parser.add_argument("--no-families", action="store_true")
    parser.add_argument(
        "--episodes", action="store_true", help="Replay in real, logged episodes (slower) instead of a scratch world."
    )
    parser.add_argument("--path", default=None, help="Fixture directory (default: the starter library).")
    parser.add_argument("--red-team", action="store_true", help="Play the red-team policies on every task.")
    parser.add_argument("--show", type=int, default=10, help="With --red-team: flagged tasks shown per flag.")
    parser.add_argument("--task", action="append", default=[], help="With --red-team: only this source key.")
    args = parser.parse_args()
    if args.red_team:
        return red_team_main(args)
    snapshot = snapshot_latest()
    started = time.perf_counter()
    starter, errors = starter_tasks_read(args.path)
    items = [(t.source_key, t.fields["instruction"], t.criteria, t.fields["reference_solution"]) for t in starter]
    users = {t.source_key: t.fields.get("simulated_user") or {} for t in starter}  # who answers ask_user
    family_counts = {}
    if not args.no_families:
        for name in FAMILIES:
            instances = family_instantiate(name, snapshot=snapshot)
            family_counts[name] = len(instances)
            chosen = instances if args.per_family is None else instances[: args.per_family]
            items += [(i.source_key, i.instruction, i.criteria, i.reference_solution) for i in chosen]
    built = time.perf_counter() - started
    problems = list(errors)
    detected_kinds, undetected_kinds = Counter(), Counter()
    checked = 0
    replay = None if args.episodes else SnapshotReplay(snapshot).__enter__()
    for key, _, criteria, solution in items:
        result = rubric_check(
            criteria=criteria,
            solution=solution,
            snapshot=snapshot,
            replay=replay,
            exhaustive=args.exhaustive,
            simulated_user=users.get(key),
        )
        checked += 1
        if not result.reference_passes:
            problems.append(f"{key}: reference fails: {'; '.join(result.unmet)}")
        if result.call_errors:
            problems.append(f"{key}: reference calls return errors: {'; '.join(result.call_errors)}")
        if result.blind:
            problems.append(f"{key}: the rubric detects none of {len(result.undetected)} perturbed copies")
        detected_kinds.update(k.split("[")[0] for k in result.detected)
        undetected_kinds.update(k.split("[")[0] for k in result.undetected)
        missing = entities_missing(entity_ids_named([criteria, solution, _]), snapshot=snapshot)
        if missing:
            problems.append(f"{key}: names entities missing from the world: {', '.join(missing)}")
    if replay is not None:
        replay.__exit__(None, None, None)
    texts = [text for _, text, _, _ in items]
    pairs = near_duplicate_pairs(texts)
    for i, j, score in pairs:
        problems.append(f"near duplicates ({score:.2f}): {items[i][0]} and {items[j][0]}")
    top, _ = most_similar(texts, floor=0.3)
    elapsed = time.perf_counter() - started
    for line in problems:
        print("PROBLEM", line)
    print(f"starter tasks: {len(starter)} valid, {len(errors)} invalid file problem(s)")
    print(f"family instances: {sum(family_counts.values())} {family_counts} (built in {built:.1f}s)")
    highest = f"{top:.3f}" if top else "< 0.3"
    print(f"checked {checked} tasks in {elapsed:.1f}s; highest instruction similarity {highest}")
    if args.exhaustive:
        for kind in sorted(set(detected_kinds) | set(undetected_kinds)):
            total = detected_kinds[kind] + undetected_kinds[kind]
            print(f"  {kind:<16} detected {detected_kinds[kind]}/{total}")
    print(
        json.dumps(
            {
                "starter": len(starter),
                "family_instances": sum(family_counts.values()),
                "checked": checked,
                "problems": len(problems),
                "near_duplicate_pairs": len(pairs),
                "max_similarity": round(top, 3),
                "threshold": NEAR_DUPLICATE_THRESHOLD,
                "seconds": round(elapsed, 1),
            }
        )
    )
    return 1 if problems else 0


def red_team_main(args) -> int:
    from tasks_app.library.families import families_instantiate
    from tasks_app.red_team import red_team_check, red_team_summary

    snapshot = snapshot_latest()
    started = time.perf_counter()
    starter, _ = starter_tasks_read(args.path)
    items = [(t.source_key, t.fields["instruction"], t.criteria, t.fields["reference_solution"]) for t in starter]
    users = {t.source_key: t.fields.get("simulated_user") or {} for t in starter}  # who answers ask_user
    if not args.no_families:
        per_family = 20 if args.per_family is None else (args.per_family or None)
        for instances in families_instantiate(None, snapshot=snapshot, limit=per_family).values():
            items += [(i.source_key, i.instruction, i.criteria, i.reference_solution) for i in instances]
    if args.task:
        items = [item for item in items if item[0] in set(args.task)]
    reports = []
    with SnapshotReplay(snapshot) as replay:
        for key, instruction, criteria, solution in items:
            report = red_team_check(
                criteria=criteria,
                instruction=instruction,
                solution=solution,
                replay=replay,
                simulated_user=users.get(key),
            )
            reports.append((key, report))
            if args.task:
                print(f"== {key}: reference passes {report.reference.passed} ({report.reference.partial_reward})")
                for o in report.outcomes:
                    mark = "ok " if o.as_expected else "BAD"
                    print(f"  {mark} {o.expect:<9} {o.key:<40} passed={o.passed!s:<5} partial={o.partial_reward}")
                    if not o.as_expected:
                        print(f"        {o.description}; unmet: {o.unmet}")
    elapsed = time.perf_counter() - started
    summary = red_team_summary([r for _, r in reports])
    for flag in ("gameable", "over_specified"):
        flagged = [(k, getattr(r, flag)) for k, r in reports if getattr(r, flag)]
        print(f"{flag}: {len(flagged)} of {len(reports)} tasks")
        for key, causes in flagged[: args.show]:
            print(f"  {key}: " + "; ".join(f"{c['policy']} ({c['why']}: {c['criteria'][:2]})" for c in causes[:3]))
    failing = [k for k, r in reports if not r.reference.passed]
    print(f"reference fails: {len(failing)} {failing[:10]}")
    print(f"{'policy':<16} {'expect':<10} {'tasks':>5} {'passed':>7} {'partial':>8}")
    for kind, row in summary.items():
        partial = "-" if row["mean_partial_reward"] is None else f"{row['mean_partial_reward']:.3f}"
        print(f"{kind:<16} {row['expect']:<10} {row['tasks']:>5} {row['passed_share']:>7.1%} {partial:>8}")
    gate = sum(1 for _, r in reports if r.gate_passes)
    print(f"checked {len(reports)} tasks in {elapsed:.1f}s; the gate passes {gate}")
    print(
        json.dumps(
            {
                "tasks": len(reports),
                "gate_passes": gate,
                "gameable": sum(1 for _, r in reports if r.gameable),
                "over_specified": sum(1 for _, r in reports if r.over_specified),
                "reference_fails": len(failing),
                "seconds": round(elapsed, 1),
                "policies": summary,
            },
            sort_keys=True,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
