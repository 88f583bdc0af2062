"""The one judgement: a trajectory against a rubric, the same way for every path that scores one.

Calibration rollouts, the trainer API's finish and batch, reference runs (and so the playground), the library's
rubric checks and the red-team policies all call :func:`trajectory_judge`. It reads

- a **rubric**: a list of :class:`RubricCriterion` made by :func:`rubric_of` from a task version's ``Criterion``
  rows or a frozen release row's criteria dicts (both become the same thing);
- a :class:`Trajectory`: the tool calls with their results, the final answer, the instruction and snapshot the
  agent worked on, and the episode whose final world and diff the state criteria read;

and returns a :class:`Judgement`. There is one trajectory hash (:func:`trajectory_hash`) and one verdict cache
(``Verdict`` rows keyed by trajectory hash, criterion content hash and judge configuration; programmatic verdicts
under no configuration, valid only for the programmatic judge's code version that decided them), so a trajectory
judged once in calibration is not judged again in training, and the two can never disagree about it.

The rubric, the trajectory, the options and the result are values of ``rubrics_app.judgement_types``, imported
from here. Programmatic criteria are decided by ``rubrics_app.programmatic.criteria_evaluate``; ``llm`` criteria
by the LLM judge (``rubrics_app.judge``) when a judge configuration is given, else they stay ``pending``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from corecraft_site.canonical import canonical_json
from corecraft_site.code_version import code_version
from corecraft_site.llm import ChatClient
from rubrics_app.endpoints import endpoint_client
from rubrics_app.judge import judge_llm_criterion
from rubrics_app.judgement_types import (
    OPEN_WORLD,
    Judgement,
    JudgeOptions,
    RubricCriterion,
    ToolCall,
    Trajectory,
    judgement_fold,
    rubric_dropout,
    rubric_of,
    rubric_of_version,
    trajectory_hash,
)
from rubrics_app.models import CriterionKind, JudgeConfig, Verdict, VerdictStatus
from rubrics_app.programmatic import ERROR, MET, NOT_MET, PENDING, criteria_evaluate

PENDING_NO_JUDGE = "pending: no LLM judge is configured"
NO_EPISODE = "the trajectory has no episode to judge"


# --- the entry point -----------------------------------------------------------------------------------------------


def trajectory_judge(
    *,
    rubric: Sequence[RubricCriterion],
    trajectory: Trajectory,
    judge_config: JudgeConfig | None = None,
    client: ChatClient | None = None,
    options: JudgeOptions | None = None,
) -> Judgement:
    """Judge ``trajectory`` against ``rubric``: a verdict per criterion (rubric order), the rewards and the pass.

    Cached verdicts are served (programmatic ones under no judge configuration, llm ones under ``judge_config``);
    the rest are decided and stored. Without ``judge_config`` llm criteria are ``pending``. Not one transaction:
    model calls must not hold database locks.
    """
    options = options or JudgeOptions()
    applied: dict = {}
    criteria = list(rubric)
    if options.dropout:
        kept = rubric_dropout(criteria, rate=options.dropout, seed=options.dropout_seed)
        kept_keys = {c.key for c in kept}
        applied["dropout"] = {
            "rate": options.dropout,
            "seed": options.dropout_seed,
            "kept": [c.key for c in criteria if c.key in kept_keys],
            "dropped": [c.key for c in criteria if c.key not in kept_keys],
        }
        criteria = [c for c in criteria if c.key in kept_keys]
    digest = trajectory_hash(trajectory)
    verdicts = _programmatic(criteria, trajectory=trajectory, digest=digest)
    for index, criterion in enumerate(criteria):
        if criterion.kind != CriterionKind.LLM:
            continue
        if judge_config is None:
            verdicts[index] = {**_verdict_dict(criterion, status=PENDING, rationale=PENDING_NO_JUDGE)}
            continue
        client = client or endpoint_client(judge_config.endpoint)
        row = judge_llm_criterion(
            judge_config=judge_config,
            criterion=criterion,
            instruction=trajectory.instruction,
            tool_calls=trajectory.tool_call_dicts(),
            final_answer=trajectory.final_answer,
            trajectory_hash=digest,
            client=client,
        )
        verdicts[index] = _row_dict(criterion, row)
    return judgement_fold([verdicts[i] for i in range(len(criteria))], trajectory_hash=digest, options=applied)


def _verdict_dict(criterion: RubricCriterion, *, status: str, rationale: str, evidence: Any = None) -> dict:
    return {
        "key": criterion.key,
        "kind": criterion.kind,
        "text": criterion.text,
        "content_hash": criterion.content_hash,
        "status": status,
        "met": None if status in (PENDING, ERROR) else status == MET,
        "rationale": rationale,
        "evidence": evidence,
        "weight": criterion.weight,
        "required": criterion.required,
    }


def _row_dict(criterion: RubricCriterion, row: Verdict) -> dict:
    data = _verdict_dict(criterion, status=row.status, rationale=row.rationale, evidence=row.evidence)
    data["verdict_id"] = row.pk
    if criterion.kind == CriterionKind.LLM:
        data["agreement"] = row.agreement
        data["samples"] = len(row.samples or [])
        data["judge_config"] = row.judge_config_id
    return data


def _programmatic(criteria: list[RubricCriterion], *, trajectory: Trajectory, digest: str) -> dict[int, dict]:
    """Verdicts of the programmatic criteria by index: cached rows, the rest evaluated, stored and read back."""
    programmatic = [(i, c) for i, c in enumerate(criteria) if c.kind != CriterionKind.LLM]
    if not programmatic:
        return {}
    hashes = {c.content_hash for _, c in programmatic}
    rows = _cached(digest, hashes)
    missing = [(i, c) for i, c in programmatic if c.content_hash not in rows]
    if missing and trajectory.episode is None:
        return {
            i: _row_dict(c, rows[c.content_hash])
            if c.content_hash in rows
            else _verdict_dict(c, status=ERROR, rationale=NO_EPISODE)
            for i, c in programmatic
        }
    found = {c.content_hash: _row_dict(c, rows[c.content_hash]) for _, c in programmatic if c.content_hash in rows}
    if missing:
        unique = list({c.content_hash: c for _, c in missing}.values())
        evaluated = criteria_evaluate(
            criteria=unique,
            episode=None if trajectory.episode is OPEN_WORLD else trajectory.episode,
            final_answer=trajectory.final_answer,
            tool_calls=trajectory.tool_call_dicts(),
            simulated_user=trajectory.simulated_user,
        )
        decided = [(c, v) for c, v in zip(unique, evaluated, strict=True) if v["status"] in (MET, NOT_MET)]
        # An error is not cached (the next judgement tries again) but its reason reaches the verdict.
        why_not = {
            c.content_hash: v.get("rationale") or ""
            for c, v in zip(unique, evaluated, strict=True)
            if v["status"] not in (MET, NOT_MET)
        }
        # One upsert that returns the rows' ids: a row another worker stored meanwhile is rewritten with the same
        # verdict (programmatic verdicts of one trajectory are deterministic), so every path reads the same ids.
        stored = Verdict.objects.bulk_create(
            [
                Verdict(
                    trajectory_hash=digest,
                    criterion_key=_key_uuid(c.key),
                    criterion_hash=c.content_hash,
                    judge_config=None,
                    met=v["met"],
                    status=v["status"],
                    rationale=v["rationale"],
                    evidence=_as_json(v["evidence"]) if v["evidence"] is not None else [],
                    judge_version=programmatic_version(),
                )
                for c, v in decided
            ],
            update_conflicts=True,
            unique_fields=["trajectory_hash", "criterion_hash", "judge_config"],
            update_fields=["status", "met", "rationale", "evidence", "judge_version"],
        )
        for (c, _), row in zip(decided, stored, strict=True):
            found[c.content_hash] = _row_dict(c, row)
    else:
        why_not = {}
    out = {}
    for i, c in programmatic:
        if c.content_hash in found:
            out[i] = {**found[c.content_hash], "key": c.key, "text": c.text}
        else:
            reason = why_not.get(c.content_hash) or "the criterion could not be evaluated"
            out[i] = _verdict_dict(c, status=ERROR, rationale=reason)
    return out


def _as_json(value: Any) -> Any:
    """``value`` as it reads back from a JSON column (so a fresh verdict equals its cached copy)."""
    return json.loads(canonical_json(value))


def _key_uuid(key: str) -> uuid.UUID:
    """The criterion key as the Verdict row stores it (a key that is no UUID gets a stable one from its text)."""
    try:
        return uuid.UUID(str(key))
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"corecraft-criterion:{key}")


# The code a programmatic verdict depends on (besides the criterion and the trajectory): a cached verdict decided
# by other code is stale and is decided again.
PROGRAMMATIC_CODE_PATHS = (
    "rubrics_app/programmatic",
    "rubrics_app/answer_facts.py",
    "rubrics_app/patterns.py",
    "rubrics_app/criteria.py",
    "rubrics_app/criterion_specs.py",
)


def programmatic_version() -> str:
    """The programmatic judge's code version (a sha256 of ``PROGRAMMATIC_CODE_PATHS``)."""
    return code_version(PROGRAMMATIC_CODE_PATHS)


def _cached(digest: str, hashes: set[str]) -> dict[str, Verdict]:
    return {
        v.criterion_hash: v
        for v in Verdict.objects.filter(
            trajectory_hash=digest,
            judge_config__isnull=True,
            criterion_hash__in=hashes,
            judge_version=programmatic_version(),
        ).exclude(status=VerdictStatus.ERROR)
    }


__all__ = [
    "OPEN_WORLD",
    "JudgeOptions",
    "Judgement",
    "RubricCriterion",
    "ToolCall",
    "Trajectory",
    "judgement_fold",
    "rubric_dropout",
    "rubric_of",
    "rubric_of_version",
    "trajectory_hash",
    "trajectory_judge",
]
