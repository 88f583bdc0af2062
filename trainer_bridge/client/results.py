"""The client's typed results: a release, its manifest and rows, an opened episode, a tool call's outcome, the
reward with its verdicts, a batch reward's item and a downloaded export file. Each ``from_api`` reads the API's
JSON. Standard library only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer_bridge.client.errors import ApiError


@dataclass(frozen=True)
class ReleaseSummary:
    slug: str
    name: str
    status: str
    created_at: str | None
    frozen_at: str | None
    checksum: str
    raw: dict = field(repr=False)

    @classmethod
    def from_api(cls, data: dict) -> ReleaseSummary:
        return cls(
            slug=data["slug"],
            name=data.get("name", ""),
            status=data.get("status", ""),
            created_at=data.get("created_at"),
            frozen_at=data.get("frozen_at"),
            checksum=data.get("checksum", ""),
            raw=data,
        )


@dataclass(frozen=True)
class Manifest:
    slug: str
    name: str
    seed: int | None
    checksum: str
    splits: dict[str, dict]
    raw: dict = field(repr=False)

    @classmethod
    def from_api(cls, data: dict) -> Manifest:
        return cls(
            slug=data["slug"],
            name=data.get("name", ""),
            seed=data.get("seed"),
            checksum=data.get("checksum", ""),
            splits=dict(data.get("splits") or {}),
            raw=data,
        )


@dataclass(frozen=True)
class ReleaseRowData:
    row_id: int
    release: str
    split: str
    task_key: str
    task_type: str
    difficulty: str  # the author's expected difficulty
    family: str
    instruction: str
    snapshot_version: int | None
    tools: list[dict]
    rubric: list[dict]
    metadata: dict
    raw: dict = field(repr=False)
    calibrated_difficulty: str = "not_calibrated"
    tools_sha256: str = ""  # the digest the API names ``tools`` by (the client resolves it)

    @classmethod
    def from_api(cls, data: dict, *, release: str = "") -> ReleaseRowData:
        return cls(
            row_id=int(data["row_id"]),
            release=data.get("release") or release,
            split=data.get("split", ""),
            task_key=data.get("task_key", ""),
            task_type=data.get("task_type", ""),
            difficulty=data.get("expected_difficulty") or data.get("difficulty", ""),
            calibrated_difficulty=data.get("calibrated_difficulty") or "not_calibrated",
            family=data.get("family", ""),
            instruction=data.get("instruction", ""),
            snapshot_version=data.get("snapshot_version"),
            tools=list(data.get("tools") or []),
            tools_sha256=data.get("tools_sha256") or "",
            rubric=list(data.get("rubric") or []),
            metadata=dict(data.get("metadata") or {}),
            raw=data,
        )


@dataclass(frozen=True)
class EpisodeOpened:
    episode_id: str
    release: str
    row_id: int
    split: str
    snapshot_version: int | None
    instruction: str
    tools: list[dict]
    max_turns: int
    # The agent contract frozen with the release: its system prompt, and the conversation to start from.
    system_prompt: str = ""
    messages: list[dict] = field(default_factory=list)
    tools_sha256: str = ""  # the digest of ``tools``, by which the next open may leave them out

    @classmethod
    def from_api(cls, data: dict) -> EpisodeOpened:
        return cls(
            episode_id=str(data["episode_id"]),
            release=data.get("release", ""),
            row_id=int(data["row_id"]),
            split=data.get("split", ""),
            snapshot_version=data.get("snapshot_version"),
            instruction=data.get("instruction", ""),
            tools=list(data.get("tools") or []),
            max_turns=int(data.get("max_turns") or 0),
            system_prompt=data.get("system_prompt") or "",
            messages=list(data.get("messages") or []),
            tools_sha256=data.get("tools_sha256") or "",
        )


@dataclass(frozen=True)
class ToolOutcome:
    result: Any
    is_error: bool
    seq: int
    tool: str
    duration_ms: float

    @classmethod
    def from_api(cls, data: dict) -> ToolOutcome:
        step = data.get("step") or {}
        return cls(
            result=data.get("result"),
            is_error=bool(data.get("is_error")),
            seq=int(step.get("seq", 0)),
            tool=step.get("tool", ""),
            duration_ms=float(step.get("duration_ms") or 0.0),
        )

    def as_text(self) -> str:
        """The result as the JSON text a model reads in its tool message."""
        return json.dumps(self.result, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Verdict:
    key: str
    kind: str
    status: str
    met: bool | None
    rationale: str
    weight: float
    required: bool
    evidence: Any = None

    @classmethod
    def from_api(cls, data: dict) -> Verdict:
        return cls(
            key=str(data.get("key", "")),
            kind=data.get("kind", ""),
            status=data.get("status", ""),
            met=data.get("met"),
            rationale=data.get("rationale", ""),
            weight=float(data.get("weight") or 0.0),
            required=bool(data.get("required")),
            evidence=data.get("evidence"),
        )


@dataclass(frozen=True)
class Reward:
    """A finished episode's judgement. ``final`` is False while criteria are pending (no LLM judge): then
    ``reward`` is None and ``partial_reward`` covers the judged criteria only; ``note`` says why."""

    episode_id: str
    reward: float | None
    partial_reward: float | None
    passed: bool | None
    final: bool
    note: str
    verdicts: list[Verdict]
    status: str = "finished"
    trajectory_hash: str = ""
    # The reward options the server applied (rubric dropout: rate, seed, kept and dropped criterion keys).
    reward_options: dict = field(default_factory=dict)

    @classmethod
    def from_api(cls, data: dict) -> Reward:
        return cls(
            status=data.get("status") or "finished",
            trajectory_hash=data.get("trajectory_hash") or "",
            reward_options=data.get("reward_options") or {},
            episode_id=str(data.get("episode_id", "")),
            reward=data.get("reward"),
            partial_reward=data.get("partial_reward"),
            passed=data.get("passed"),
            final=bool(data.get("final")),
            note=data.get("note") or "",
            verdicts=[Verdict.from_api(v) for v in data.get("verdicts") or []],
        )

    def value(self, *, on_pending: str = "partial") -> float | None:
        """A number for a trainer: the reward, or while pending the partial reward ("partial"), None ("none"),
        or an error ("raise")."""
        if self.final:
            return float(self.reward or 0.0)
        if on_pending == "partial":
            return float(self.partial_reward or 0.0)
        if on_pending == "none":
            return None
        raise ValueError(f"episode {self.episode_id}: the reward is not final: {self.note}")


@dataclass(frozen=True)
class BatchResult:
    index: int
    episode_id: str | None
    ok: bool
    reward: Reward | None
    error: ApiError | None

    @classmethod
    def from_api(cls, data: dict) -> BatchResult:
        if data.get("ok"):
            return cls(data["index"], data.get("episode_id"), True, Reward.from_api(data), None)
        error = data.get("error") or {}
        problem = ApiError(0, error.get("code", "error"), error.get("message", ""), error.get("fields"), data)
        return cls(data["index"], data.get("episode_id"), False, None, problem)


@dataclass(frozen=True)
class ExportFile:
    path: Path
    etag: str
    downloaded: bool  # False when the copy on disk was already current (304)
    tools_path: Path | None = None  # a jsonl export's tools file, saved beside it ({tools_sha256: [schemas]})
