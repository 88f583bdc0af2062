"""What the judgement reads and returns: the rubric (``RubricCriterion``, ``rubric_of``), the trajectory
(``ToolCall``, ``Trajectory``, ``trajectory_hash``), the options (``JudgeOptions``, ``rubric_dropout``) and the
result (``Judgement``, ``judgement_fold``). Values (reading a version's criteria or an episode's logged calls is
their only database access); ``rubrics_app.judgement`` judges with them and is where callers import them from.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from corecraft_site.canonical import canonical_sha256
from rubrics_app.criteria import criterion_content_hash
from rubrics_app.programmatic import ERROR, MET, NOT_MET, PENDING
from world_app.contract import CONVERSATION_TOOLS
from world_app.conversation import facts_disclosed
from world_app.episodes import episode_log_settle
from world_app.models import Episode, EpisodeStep


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
        its simulated user is the one the episode was opened with. ``episode``: its id, or its row; a closed row
        (what ``episode_close`` returns) is judged as it is: its log was settled before it closed and takes no
        step after, and the row carries the simulated user (two statements less)."""
        row = episode if isinstance(episode, Episode) and episode.status == Episode.Status.CLOSED else None
        if row is None:
            episode_log_settle(episode)  # every step the agent saw answered is in the log before it is judged
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
            simulated_user=row.simulated_user
            if row is not None
            else Episode.objects.filter(pk=getattr(episode, "pk", episode))
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
