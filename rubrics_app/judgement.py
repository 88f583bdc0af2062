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

Programmatic criteria are decided by ``rubrics_app.programmatic.criteria_evaluate``; ``llm`` criteria by the LLM
judge (``rubrics_app.judge``) when a judge configuration is given, else they stay ``pending``.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from corecraft_site.canonical import canonical_json, canonical_sha256
from corecraft_site.code_version import code_version
from corecraft_site.llm import ChatClient
from rubrics_app.criteria import criterion_content_hash
from rubrics_app.endpoints import endpoint_client
from rubrics_app.judge import judge_llm_criterion
from rubrics_app.models import CriterionKind, JudgeConfig, Verdict, VerdictStatus
from rubrics_app.programmatic import ERROR, MET, NOT_MET, PENDING, criteria_evaluate
from world_app.contract import CONVERSATION_TOOLS
from world_app.conversation import facts_disclosed
from world_app.models import Episode, EpisodeStep

PENDING_NO_JUDGE = "pending: no LLM judge is configured"
NO_EPISODE = "the trajectory has no episode to judge"


class _OpenWorld:
    """The episode marker of a trajectory whose world the caller holds open (a scratch replay in a savepoint)."""

    def __repr__(self) -> str:
        return "OPEN_WORLD"


OPEN_WORLD = _OpenWorld()


# --- the rubric ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RubricCriterion:
    """One criterion as the judgement reads it, whatever it was made from (a ``Criterion`` row or a dict)."""

    key: str
    kind: str
    text: str
    spec: dict
    weight: float
    category: str
    required: bool
    content_hash: str
    position: int = 0


def _criterion_of(item: Any, index: int) -> RubricCriterion:
    get = item.get if isinstance(item, Mapping) else lambda name, default=None: getattr(item, name, default)
    fields = {
        "kind": get("kind"),
        "text": get("text") or "",
        "spec": get("spec") or {},
        "weight": get("weight") if get("weight") is not None else 1.0,
        "category": get("category") or "",
        "required": bool(get("required")),
    }
    key = get("key")
    position = get("position")
    return RubricCriterion(
        key=str(key) if key else str(uuid.UUID(int=index)),
        content_hash=get("content_hash") or criterion_content_hash(**fields),
        position=position if isinstance(position, int) else index,
        **fields,
    )


def rubric_of(criteria: Iterable[Any]) -> list[RubricCriterion]:
    """The rubric from ``Criterion`` rows (a task version's) or criteria dicts (a release row's, a fixture's).

    A dict without a key gets a stable one from its index; without a content hash, the hash of what it checks.
    """
    return [_criterion_of(item, index) for index, item in enumerate(criteria)]


def rubric_of_version(version: Any) -> list[RubricCriterion]:
    """A task version's rubric, in criterion order."""
    return rubric_of(version.criteria.order_by("position"))


# --- the trajectory ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any
    result: Any
    is_error: bool

    def as_dict(self) -> dict:
        return {"name": self.name, "arguments": self.arguments, "result": self.result, "is_error": self.is_error}


@dataclass(frozen=True)
class Trajectory:
    """What an agent did: its calls with their results and its final answer, on an instruction and snapshot.

    ``episode`` (an ``Episode`` or its id) is where the state criteria read the final world; ``OPEN_WORLD`` when
    the caller already has the world open; None when there is none (programmatic criteria are then errors).
    ``simulated_user``: the task's simulated user spec (``world_app.conversation``; ``{}``: none), who answered
    the agent's questions: the conversation turns (``conversation``) are the ``ask_user`` calls with their
    replies, and ``asked`` criteria read which held-back facts each question drew out.
    """

    instruction: str
    snapshot_version: int | None
    tool_calls: tuple[ToolCall, ...]
    final_answer: str
    episode: Any = None
    simulated_user: dict = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        instruction: str,
        snapshot_version: int | None,
        tool_calls: Iterable[Mapping[str, Any]],
        final_answer: str,
        episode: Any = None,
        simulated_user: Mapping[str, Any] | None = None,
    ) -> Trajectory:
        """From call dicts (``name`` or ``tool``, ``arguments``, ``result``, ``is_error``) as every path stores them."""
        calls = tuple(
            ToolCall(
                name=str(c.get("name") or c.get("tool") or ""),
                arguments=c.get("arguments") if c.get("arguments") is not None else {},
                result=c.get("result"),
                is_error=bool(c.get("is_error")),
            )
            for c in tool_calls
        )
        return cls(
            instruction=instruction or "",
            snapshot_version=snapshot_version,
            tool_calls=calls,
            final_answer=final_answer or "",
            episode=episode,
            simulated_user=dict(simulated_user or {}),
        )

    @classmethod
    def from_episode(
        cls, *, episode: Any, instruction: str, snapshot_version: int | None, final_answer: str
    ) -> Trajectory:
        """From an episode's logged steps (the trainer API's trajectories: every call the agent made is a step);
        its simulated user is the one the episode was opened with."""
        steps = (
            EpisodeStep.objects.filter(episode=episode)
            .order_by("seq")
            .values("name", "arguments", "result", "is_error")
        )
        return cls.of(
            instruction=instruction,
            snapshot_version=snapshot_version,
            tool_calls=list(steps),
            final_answer=final_answer,
            episode=episode,
            simulated_user=Episode.objects.filter(pk=getattr(episode, "pk", episode))
            .values_list("simulated_user", flat=True)
            .first(),
        )

    def tool_call_dicts(self) -> list[dict]:
        return [c.as_dict() for c in self.tool_calls]

    def conversation(self) -> list[dict]:
        """The conversation beyond the first message: each question the agent asked (``ask_user``) with the reply
        and the held-back facts it drew out, in order (``call``: the call's index among the tool calls)."""
        turns = []
        for index, call in enumerate(self.tool_calls):
            if call.name not in CONVERSATION_TOOLS or call.is_error:
                continue
            question = str((call.arguments or {}).get("message", "")) if isinstance(call.arguments, dict) else ""
            reply = call.result.get("reply", "") if isinstance(call.result, dict) else ""
            turns.append({"call": index, "question": question, "reply": reply,
                          "facts": list(facts_disclosed(self.simulated_user, question))})  # fmt: skip
        return turns


def trajectory_hash(trajectory: Trajectory) -> str:
    """sha256 of what decides a verdict: snapshot, instruction, each call with its result, the final answer (and
    the simulated user, when the task has one).

    Call ids, latencies, tokens and which path produced it are left out: the same behaviour hashes the same.
    """
    content = {
        "snapshot": trajectory.snapshot_version,
        "instruction": trajectory.instruction,
        "calls": trajectory.tool_call_dicts(),
        "final_answer": trajectory.final_answer,
    }
    if trajectory.simulated_user:
        # Who answered decides which facts a question drew out (a trajectory without one hashes as it did).
        content["simulated_user"] = trajectory.simulated_user
    return canonical_sha256(content)


# --- options and the result ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeOptions:
    """Training-time reward options. ``dropout``: the share of criteria left out of this judgement, drawn with
    ``dropout_seed`` (required criteria are always kept, and at least one criterion is); off at 0."""

    dropout: float = 0.0
    dropout_seed: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout is a share of the criteria: at least 0, below 1")
        if self.dropout and self.dropout_seed is None:
            raise ValueError("rubric dropout needs a seed (it is recorded with the reward)")


def rubric_dropout(rubric: Sequence[RubricCriterion], *, rate: float, seed: int) -> list[RubricCriterion]:
    """The criteria kept for one rollout: required ones always; each other kept with probability ``1 - rate``.

    Seeded: the same seed keeps the same criteria. When nothing would be left, one optional criterion is kept.
    """
    rng = random.Random(seed)
    draws = [rng.random() for _ in rubric]
    kept = [c for c, draw in zip(rubric, draws, strict=True) if c.required or draw >= rate]
    if not kept and rubric:
        kept = [rubric[rng.randrange(len(rubric))]]
    return kept


@dataclass(frozen=True)
class Judgement:
    """A trajectory's judgement.

    ``reward``: weighted fraction met, a pending or error verdict counted as not met. ``partial_reward``: weighted
    fraction met over the decided criteria only. ``passed``: every required criterion met (None while a required
    one is undecided and none failed). ``final``: no verdict pending or in error. ``options``: what was applied
    (rubric dropout: rate, seed, kept and dropped keys).
    """

    verdicts: list[dict]
    reward: float
    partial_reward: float | None
    passed: bool | None
    final: bool
    trajectory_hash: str
    options: dict = field(default_factory=dict)
    met: int = 0
    not_met: int = 0
    pending: int = 0
    errors: int = 0

    @property
    def final_reward(self) -> float | None:
        """The reward when final, else None (what the stored rows and the trainer API call ``reward``)."""
        return self.reward if self.final else None

    def outcome(self) -> dict:
        """The counts and rewards as one dict (what reference runs store as their outcome)."""
        return {
            "final": self.final,
            "reward": self.final_reward,
            "passed": self.passed,
            "partial_reward": self.partial_reward,
            "met": self.met,
            "not_met": self.not_met,
            "pending": self.pending,
            "errors": self.errors,
            "options": self.options,
        }


def judgement_fold(verdicts: list[dict], *, trajectory_hash: str, options: dict | None = None) -> Judgement:
    """The judgement of a list of verdicts (rewards, pass, counts)."""
    decided = [v for v in verdicts if v["status"] in (MET, NOT_MET)]
    total = sum(v["weight"] for v in verdicts)
    decided_weight = sum(v["weight"] for v in decided)
    earned = sum(v["weight"] for v in decided if v["status"] == MET)
    pending = sum(1 for v in verdicts if v["status"] == PENDING)
    errors = sum(1 for v in verdicts if v["status"] == ERROR)
    if any(v["required"] and v["status"] == NOT_MET for v in verdicts):
        passed: bool | None = False
    elif any(v["required"] and v["status"] in (PENDING, ERROR) for v in verdicts):
        passed = None
    else:
        passed = True
    return Judgement(
        verdicts=verdicts,
        reward=earned / total if total else 0.0,
        partial_reward=earned / decided_weight if decided_weight else None,
        passed=passed,
        final=pending == 0 and errors == 0,
        trajectory_hash=trajectory_hash,
        options=options or {},
        met=sum(1 for v in decided if v["status"] == MET),
        not_met=len(decided) - sum(1 for v in decided if v["status"] == MET),
        pending=pending,
        errors=errors,
    )


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
    "rubrics_app/programmatic.py",
    "rubrics_app/answer_facts.py",
    "rubrics_app/patterns.py",
    "rubrics_app/criteria.py",
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
