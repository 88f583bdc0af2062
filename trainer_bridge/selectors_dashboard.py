"""What an RL lead opens first: the task library by status and type, how much of it is calibrated and gated, pass
rates per model and task type over time, and the frozen releases with what trainers did with them.

A fixed number of queries whatever the size of the library (each figure is one grouped query)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Exists, F, Max, OuterRef, Q, Sum
from django.db.models.functions import TruncWeek

from tasks_app.models import Rollout, RolloutStatus, RubricGate, Task, TaskCalibration, TaskStatus, TaskType
from trainer_bridge.models import ApiTokenUse, Release, ReleaseStatus
from trainer_bridge.trainer_models import TrainerEpisode

WEEKS_SHOWN = 8
RELEASES_SHOWN = 10


@dataclass
class PassRateRow:
    model: str
    task_type: str
    weeks: list[tuple[datetime, int, int]]  # (week, rollouts, passed), oldest first

    @property
    def total(self) -> tuple[int, int]:
        return sum(n for _, n, _ in self.weeks), sum(p for _, _, p in self.weeks)


@dataclass
class ReleaseUse:
    release: Release
    episodes: int
    finished: int
    mean_reward: float | None
    tokens: int  # distinct tokens that opened episodes or read the release through the API
    api_reads: int
    last_used: datetime | None


@dataclass
class LeadDashboard:
    statuses: list[tuple[str, str]]
    types: list[tuple[str, str]]
    by_status_type: dict[str, dict[str, int]]  # type -> status -> count
    status_totals: dict[str, int]
    approved: int
    calibrated: int  # approved tasks whose current version has a calibration
    model_calibrated: int  # ... from model rollouts (a calibrated difficulty)
    gated: int  # approved tasks whose current version has a stored gate on its snapshot
    gate_refused: int
    weeks: list[datetime] = field(default_factory=list)
    pass_rates: list[PassRateRow] = field(default_factory=list)
    releases: list[ReleaseUse] = field(default_factory=list)

    def table(self) -> list[tuple[str, list[int]]]:
        """(type label, count per status in ``statuses`` order), one row per task type that has tasks."""
        return [
            (label, [self.by_status_type[value].get(status, 0) for status, _ in self.statuses])
            for value, label in self.types
            if value in self.by_status_type
        ]

    def totals(self) -> list[int]:
        return [self.status_totals.get(status, 0) for status, _ in self.statuses]


def lead_dashboard() -> LeadDashboard:
    """The dashboard's figures (six queries)."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    status_totals: dict[str, int] = defaultdict(int)
    for row in Task.objects.order_by().values("task_type", "status").annotate(n=Count("pk")):
        counts[row["task_type"]][row["status"]] = row["n"]
        status_totals[row["status"]] += row["n"]
    current = OuterRef("current_version_id")
    gate = RubricGate.objects.filter(version_id=current, snapshot_id=F("version__snapshot_id"))
    coverage = Task.objects.filter(status=TaskStatus.APPROVED).aggregate(
        approved=Count("pk"),
        calibrated=Count("pk", filter=Q(Exists(TaskCalibration.objects.filter(version_id=current)))),
        model_calibrated=Count(
            "pk",
            filter=Q(
                Exists(
                    TaskCalibration.objects.filter(version_id=current).exclude(calibrated_difficulty="not_calibrated")
                )
            ),
        ),
        gated=Count("pk", filter=Q(Exists(gate))),
        gate_refused=Count("pk", filter=Q(Exists(gate.filter(passes=False)))),
    )
    dashboard = LeadDashboard(
        statuses=list(TaskStatus.choices),
        types=list(TaskType.choices),
        by_status_type=dict(counts),
        status_totals=dict(status_totals),
        **coverage,
    )
    _pass_rates(dashboard)
    _releases(dashboard)
    return dashboard


def _pass_rates(dashboard: LeadDashboard) -> None:
    """Model rollouts judged, per model (its policy label) x task type x week, for the last ``WEEKS_SHOWN`` weeks
    that have any."""
    judged = Rollout.objects.filter(policy="model", status=RolloutStatus.FINISHED, passed__isnull=False)
    rows = list(
        judged.annotate(week=TruncWeek("finished_at"))
        .values("policy_label", "version__task__task_type", "week")
        .annotate(n=Count("pk"), passed=Count("pk", filter=Q(passed=True)))
        .order_by("-week")[:2000]
    )
    weeks = sorted({r["week"] for r in rows if r["week"] is not None})[-WEEKS_SHOWN:]
    grid: dict[tuple[str, str], dict[datetime, tuple[int, int]]] = defaultdict(dict)
    for r in rows:
        if r["week"] in weeks:
            grid[(r["policy_label"] or "model", r["version__task__task_type"])][r["week"]] = (r["n"], r["passed"])
    dashboard.weeks = weeks
    dashboard.pass_rates = [
        PassRateRow(model, task_type, [(w, *cells.get(w, (0, 0))) for w in weeks])
        for (model, task_type), cells in sorted(grid.items())
    ]


def _releases(dashboard: LeadDashboard) -> None:
    """The newest frozen releases with the trainer episodes opened on them and the API reads of each."""
    releases = list(
        Release.objects.filter(status=ReleaseStatus.FROZEN)
        .select_related("created_by")
        .defer("manifest", "tools", "contract")
        .order_by("-frozen_at")[:RELEASES_SHOWN]
    )
    if not releases:
        return
    episodes: dict[int, dict] = {}
    per_token = (
        TrainerEpisode.objects.filter(release__in=releases)
        .order_by()
        .values("release_id", "token_id")
        .annotate(
            n=Count("pk"),
            finished=Count("pk", filter=Q(finished_at__isnull=False)),
            rewarded=Count("reward"),
            reward_sum=Sum("reward"),
            last=Max("created_at"),
        )
    )
    for row in per_token:
        entry = episodes.setdefault(
            row["release_id"], {"n": 0, "finished": 0, "rewarded": 0, "reward_sum": 0.0, "tokens": set(), "last": None}
        )
        for name in ("n", "finished", "rewarded"):
            entry[name] += row[name]
        entry["reward_sum"] += row["reward_sum"] or 0.0
        if row["token_id"] is not None:
            entry["tokens"].add(row["token_id"])
        entry["last"] = max(filter(None, (entry["last"], row["last"])), default=None)
    reads: dict[str, dict] = {}
    uses = ApiTokenUse.objects.filter(
        Q(*(Q(path__startswith=f"/api/v1/releases/{r.slug}/") for r in releases), _connector=Q.OR)
    )
    for use in uses.order_by().values("path", "token_id").annotate(n=Count("pk"), last=Max("at")):
        slug = use["path"].removeprefix("/api/v1/releases/").split("/", 1)[0]
        entry = reads.setdefault(slug, {"n": 0, "tokens": set(), "last": None})
        entry["n"] += use["n"]
        entry["tokens"].add(use["token_id"])
        entry["last"] = max(filter(None, (entry["last"], use["last"])), default=None)
    for release in releases:
        ep = episodes.get(release.pk, {"n": 0, "finished": 0, "rewarded": 0, "tokens": set(), "last": None})
        read = reads.get(release.slug, {"n": 0, "tokens": set(), "last": None})
        last = max(filter(None, (ep["last"], read["last"])), default=None)
        dashboard.releases.append(
            ReleaseUse(
                release=release,
                episodes=ep["n"],
                finished=ep["finished"],
                mean_reward=ep["reward_sum"] / ep["rewarded"] if ep["rewarded"] else None,
                tokens=len(ep["tokens"] | read["tokens"]),
                api_reads=read["n"],
                last_used=last,
            )
        )
