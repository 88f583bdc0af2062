"""Which tasks go into a release, and on which side of the train/holdout split (deterministic for a seed).

``split_plan(candidates, sizes, seed)`` is pure: no database, no clock, no process-dependent hashing, so the same
candidates, sizes and seed always give the same split. Choosing the candidates from the database (and
``release_plan``, choose then split) is ``release_candidates``.

How the split is made:
1. Tasks of one family, and near-duplicate instructions (``tasks_app.library.similarity.near_duplicate_groups``), are
   joined into *units* (connected components); a unit goes to one side as a whole, so neither a family nor a
   near-duplicate ever crosses the split.
2. Targets per stratum (task type x difficulty) are apportioned by largest remainder: the release's total
   over the strata in proportion to their sizes, then the holdout over the strata in proportion to those totals.
3. Units are placed largest first (ties in a seeded order): each goes to the side where it overflows its
   strata's targets least, preferring the side that still needs more of them; when the release takes fewer
   tasks than qualify, a unit that would overflow both sides stays out. Single tasks fill the gaps last, so
   with small units every stratum lands within one task of its target.
4. Within a split, rows are ordered by a seeded hash of their task key.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

TRAIN = "train"
HOLDOUT = "holdout"
EXCLUDED = "excluded"


class SplitError(ValueError):
    """The sizes cannot be met by the tasks that qualify (the message says why)."""


class ReleaseFilters(BaseModel):
    """What a task needs to be chosen. Calibration filters drop tasks that have no calibration yet."""

    model_config = ConfigDict(extra="forbid")

    task_types: list[str] = Field(default_factory=list)
    difficulties: list[str] = Field(default_factory=list)
    families: list[str] = Field(default_factory=list)
    pass_rate_min: float | None = Field(default=None, ge=0, le=1)
    pass_rate_max: float | None = Field(default=None, ge=0, le=1)
    min_reward_variance: float | None = Field(default=None, ge=0)
    exclude_flags: list[str] = Field(default_factory=list, description="Calibration flags that disqualify a task.")
    include_flagged: bool = Field(
        default=False,
        description="Keep tasks the gate flags: a refused stored gate (tasks_app.calibration.services.gates), or a "
        "calibration flagging them gameable or over-specified. Off by default: they are left out.",
    )
    near_duplicate_threshold: float = Field(default=0.8, gt=0, le=1)

    @model_validator(mode="after")
    def _window(self) -> ReleaseFilters:
        low, high = self.pass_rate_min, self.pass_rate_max
        if low is not None and high is not None and low > high:
            raise ValueError("pass_rate_min must not exceed pass_rate_max")
        return self

    @property
    def needs_calibration(self) -> bool:
        return (
            self.pass_rate_min is not None
            or self.pass_rate_max is not None
            or self.min_reward_variance is not None
            or bool(self.exclude_flags)
        )


class ReleaseSizes(BaseModel):
    """Train and holdout sizes: counts (1000 / 150) or fractions of the qualifying tasks (0.87 / 0.13)."""

    model_config = ConfigDict(extra="forbid")

    train: float = Field(ge=0)
    holdout: float = Field(ge=0)
    fraction: bool = False

    @model_validator(mode="after")
    def _kind(self) -> ReleaseSizes:
        if self.fraction:
            if self.train > 1 or self.holdout > 1 or self.train + self.holdout > 1 + 1e-9:
                raise ValueError("fractions of train and holdout must each be at most 1 and add up to at most 1")
        elif self.train != int(self.train) or self.holdout != int(self.holdout):
            raise ValueError("give both sizes as counts (1000, 150) or both as fractions (0.87, 0.13)")
        if self.train + self.holdout == 0:
            raise ValueError("a release needs at least one task")
        return self

    def resolve(self, available: int) -> tuple[int, int]:
        """(train, holdout) counts for ``available`` qualifying tasks."""
        if self.fraction:
            holdout = round(self.holdout * available)
            total = min(available, max(holdout, round((self.train + self.holdout) * available)))
            return total - holdout, holdout
        train, holdout = int(self.train), int(self.holdout)
        if train + holdout > available:
            raise SplitError(f"{train} + {holdout} tasks asked for, but only {available} qualify")
        return train, holdout

    def as_json(self) -> dict:
        if self.fraction:
            return {"train": self.train, "holdout": self.holdout, "fraction": True}
        return {"train": int(self.train), "holdout": int(self.holdout), "fraction": False}


def filters_parse(raw: dict | None) -> ReleaseFilters:
    return ReleaseFilters.model_validate(raw or {})


def sizes_parse(raw: dict | None) -> ReleaseSizes:
    """Sizes from JSON or a form: a value with a fractional part ("0.87") makes both fractions, else counts."""
    raw = dict(raw or {})
    values: dict[str, Any] = {}
    fraction = bool(raw.pop("fraction", False))
    for name in ("train", "holdout"):
        value = raw.pop(name, None)
        if isinstance(value, str):
            text = value.strip()
            with contextlib.suppress(ValueError):
                value = float(text) if ("." in text or "e" in text.lower()) else int(text)
        if isinstance(value, float) and not value.is_integer():
            fraction = True
        values[name] = value
    values.update(raw)  # unknown keys: refused by the model
    values["fraction"] = fraction
    return ReleaseSizes.model_validate(values)


@dataclass(frozen=True)
class Candidate:
    """A qualifying task, as the split sees it."""

    task_id: int
    version_id: int
    key: str
    task_type: str
    difficulty: str
    family: str = ""
    instruction: str = ""

    @property
    def stratum(self) -> tuple[str, str]:
        return (self.task_type, self.difficulty)


@dataclass
class SplitPlan:
    seed: int
    train: list[Candidate] = field(default_factory=list)
    holdout: list[Candidate] = field(default_factory=list)
    excluded: list[Candidate] = field(default_factory=list)
    targets: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    units: int = 0

    def strata(self) -> list[dict[str, Any]]:
        """Per stratum: available, target and actual per split (sorted by type, difficulty)."""
        actual: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {TRAIN: 0, HOLDOUT: 0, EXCLUDED: 0})
        for side, items in ((TRAIN, self.train), (HOLDOUT, self.holdout), (EXCLUDED, self.excluded)):
            for c in items:
                actual[c.stratum][side] += 1
        rows = []
        for stratum in sorted(set(actual) | set(self.targets)):
            got, want = actual[stratum], self.targets.get(stratum, {TRAIN: 0, HOLDOUT: 0})
            rows.append(
                {
                    "task_type": stratum[0],
                    "difficulty": stratum[1],
                    "available": got[TRAIN] + got[HOLDOUT] + got[EXCLUDED],
                    "train_target": want[TRAIN],
                    "train": got[TRAIN],
                    "holdout_target": want[HOLDOUT],
                    "holdout": got[HOLDOUT],
                }
            )
        return rows

    def max_deviation(self) -> int:
        return max(
            (max(abs(s["train"] - s["train_target"]), abs(s["holdout"] - s["holdout_target"])) for s in self.strata()),
            default=0,
        )


def _digest(*parts: Any) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


def apportion(total: int, weights: dict[Any, int], *, seed: int = 0) -> dict[Any, int]:
    """Largest-remainder apportionment of ``total`` over ``weights`` (ties broken by a seeded hash, never above
    a weight)."""
    weight_sum = sum(weights.values())
    if weight_sum == 0 or total == 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / weight_sum for k, w in weights.items()}
    shares = {k: min(int(v), weights[k]) for k, v in exact.items()}
    left = total - sum(shares.values())
    order = sorted(weights, key=lambda k: (-(exact[k] - int(exact[k])), _digest(seed, "apportion", k)))
    while left > 0:
        progressed = False
        for k in order:
            if left == 0:
                break
            if shares[k] < weights[k]:
                shares[k] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return shares


def units_of(candidates: list[Candidate], near_duplicates: Iterable[set]) -> list[list[Candidate]]:
    """Connected components of "same family" and "near-duplicate instruction"."""
    index = {c.task_id: i for i, c in enumerate(candidates)}
    parent = list(range(len(candidates)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def join(a: int, b: int) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first_of_family: dict[str, int] = {}
    for i, c in enumerate(candidates):
        if c.family:
            join(i, first_of_family.setdefault(c.family, i))
    for group in near_duplicates:
        members = [index[t] for t in group if t in index]
        for other in members[1:]:
            join(members[0], other)
    units: dict[int, list[Candidate]] = defaultdict(list)
    for i, c in enumerate(candidates):
        units[root(i)].append(c)
    return list(units.values())


def split_plan(
    candidates: Iterable[Candidate],
    *,
    sizes: ReleaseSizes,
    seed: int,
    near_duplicates: Iterable[set] = (),
) -> SplitPlan:
    """Split ``candidates`` into train and holdout (see the module docstring); pure and deterministic."""
    candidates = sorted(candidates, key=lambda c: (c.key, c.task_id))
    n_train, n_holdout = sizes.resolve(len(candidates))
    total = n_train + n_holdout

    available: dict[tuple[str, str], int] = defaultdict(int)
    for c in candidates:
        available[c.stratum] += 1
    in_release = apportion(total, dict(available), seed=seed)
    holdout_t = apportion(n_holdout, in_release, seed=seed + 1)
    targets = {s: {TRAIN: in_release[s] - holdout_t[s], HOLDOUT: holdout_t[s]} for s in available}

    units = units_of(candidates, near_duplicates)
    for unit in units:
        unit.sort(key=lambda c: (c.key, c.task_id))
    units.sort(key=lambda u: (-len(u), _digest(seed, "unit", u[0].key)))

    need = {side: {s: t[side] for s, t in targets.items()} for side in (TRAIN, HOLDOUT)}
    placed: dict[str, list[Candidate]] = {TRAIN: [], HOLDOUT: [], EXCLUDED: []}
    may_exclude = total < len(candidates)
    for unit in units:
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for c in unit:
            counts[c.stratum] += 1
        scores = {}
        for side in (HOLDOUT, TRAIN):
            overflow = sum(max(0, n - max(0, need[side][s])) for s, n in counts.items())
            fill = sum(min(n, max(0, need[side][s])) for s, n in counts.items())
            wanted = sum(need[side][s] for s in counts) / max(1, sum(targets[s][side] for s in counts))
            scores[side] = (overflow, -fill, -wanted, side)
        side = min(scores, key=lambda k: scores[k])
        if may_exclude and scores[side][0] > 0 and (scores[side][1] == 0 or scores[side][0] >= -scores[side][1]):
            side = EXCLUDED
        placed[side].extend(unit)
        if side != EXCLUDED:
            for s, n in counts.items():
                need[side][s] -= n

    def ordered(items: list[Candidate]) -> list[Candidate]:
        return sorted(items, key=lambda c: _digest(seed, "order", c.key))

    return SplitPlan(
        seed=seed,
        train=ordered(placed[TRAIN]),
        holdout=ordered(placed[HOLDOUT]),
        excluded=sorted(placed[EXCLUDED], key=lambda c: c.key),
        targets=targets,
        units=len(units),
    )


__all__ = [
    "Candidate",
    "ReleaseFilters",
    "ReleaseSizes",
    "SplitError",
    "SplitPlan",
    "ValidationError",
    "apportion",
    "filters_parse",
    "sizes_parse",
    "split_plan",
    "units_of",
]
