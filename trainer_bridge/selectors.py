"""Reads of releases, their rows and exports, and what a token's scopes let it see of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Count, QuerySet

from corecraft_site.canonical import canonical_sha256
from tasks_app.models import Criterion
from trainer_bridge.held import Held
from trainer_bridge.models import ExportJob, Release, ReleaseRow, ReleaseStatus, Scope, Split

ROW_CHUNK = 1000


def visible_splits(scopes: set[str]) -> set[str]:
    """train:read sees the train split, eval:read the holdout; a token with both sees both."""
    splits = set()
    if Scope.TRAIN_READ in scopes:
        splits.add(Split.TRAIN.value)
    if Scope.EVAL_READ in scopes:
        splits.add(Split.HOLDOUT.value)
    return splits


def release_list(*, frozen_only: bool = False) -> QuerySet[Release]:
    releases = Release.objects.select_related("created_by").order_by("-created_at", "-pk")
    return releases.filter(status=ReleaseStatus.FROZEN) if frozen_only else releases


def release_get(*, slug: str, frozen_only: bool = False) -> Release | None:
    return release_list(frozen_only=frozen_only).filter(slug=slug).first()


def release_rows(*, release: Release, split: str | None = None) -> QuerySet[ReleaseRow]:
    rows = ReleaseRow.objects.filter(release=release)
    if split:
        rows = rows.filter(split=split)
    return rows.order_by("split", "position")


def release_row_get(*, release: str, row_id: str | int) -> ReleaseRow | None:
    """A row of a frozen release by its id (the row's primary key); None for anything that does not name one."""
    try:
        pk = int(str(row_id))
    except (TypeError, ValueError):
        return None
    if pk <= 0 or pk > 2**62:
        return None
    return (
        ReleaseRow.objects.select_related("release", "version")
        .filter(pk=pk, release__slug=release, release__status=ReleaseStatus.FROZEN)
        .first()
    )


def release_row_criteria(row: ReleaseRow) -> list:
    """The row's frozen rubric as unsaved ``Criterion`` objects (what ``criteria_evaluate`` reads)."""
    fields = ("key", "position", "kind", "text", "spec", "weight", "category", "required", "content_hash")
    return [Criterion(**{f: item.get(f) for f in fields if f in item}) for item in row.content.get("rubric", [])]


def release_tools_by_name(release: Release) -> dict[str, dict]:
    return {schema["function"]["name"]: schema for schema in release.tools or []}


class ReleaseToolSets:
    """The tool schema lists a release's rows offer, each with its digest (``canonical_sha256`` of the list, the
    ``tools_sha256`` of rows and trainer opens), made once per distinct list of tool names: a row names its tools,
    the release holds their schemas once, and most rows name the same list."""

    def __init__(self, release: Release) -> None:
        self.by_name = release_tools_by_name(release)
        self._sets: dict[tuple[str, ...], tuple[list[dict], str]] = {}

    def of(self, names: list[str] | tuple[str, ...]) -> tuple[list[dict], str]:
        """The schemas of ``names`` (those the release holds, in the row's order) and their digest."""
        key = tuple(names)
        found = self._sets.get(key)
        if found is None:
            tools = [self.by_name[name] for name in key if name in self.by_name]
            found = self._sets[key] = (tools, canonical_sha256(tools))
        return found


def release_tool_sets(*, release: Release, splits: set[str]) -> dict[str, list[dict]]:
    """Every tool list the rows of ``splits`` offer, by digest: what a row's ``tools_sha256`` resolves to. Only the
    readable splits' rows are looked at, so a digest names nothing a reader could not see on a row."""
    key = (release.pk, release.checksum, frozenset(splits))
    held = _TOOL_SETS_HELD.get(key)
    if held is None:
        names = (
            ReleaseRow.objects.filter(release=release, split__in=splits)
            .values_list("content__tools", flat=True)
            .distinct()
        )
        sets = ReleaseToolSets(release)
        held = {}
        for row_names in names:
            tools, digest = sets.of(row_names or [])
            held[digest] = tools
        _TOOL_SETS_HELD.put(key, held)
    return held


# A frozen release's rows never change: its tool sets are held per process (a release's checksum changes only on
# freezing, so a draft's rows never linger).
_TOOL_SETS_HELD = Held(64)


def row_calibrated_difficulty(content: dict) -> str:
    """The calibrated difficulty frozen with the row; ``not_calibrated`` without a calibration from model rollouts
    (rows frozen before the two were named apart carried ``difficulty_label``, from any policy: not trusted)."""
    calibration = (content.get("metadata") or {}).get("calibration") or {}
    return calibration.get("calibrated_difficulty") or "not_calibrated"


def release_row_payload(
    row: ReleaseRow,
    *,
    release: Release | None = None,
    tool_sets: ReleaseToolSets | None = None,
    inline_tools: bool = False,
) -> dict:
    """The API's row: the frozen content and the digest of its tool schemas (``tools_sha256``); the schemas
    themselves (``tools``, the same 40 KB on nearly every row) only with ``inline_tools``."""
    release = release or row.release
    tool_sets = tool_sets if tool_sets is not None else ReleaseToolSets(release)
    content = row.content
    tools, tools_sha256 = tool_sets.of(content.get("tools", []))
    payload = {
        "row_id": row.pk,
        "release": release.slug,
        "task_key": row.task_key,
        "version_id": row.version_id,
        "split": row.split,
        "position": row.position,
        "task_type": row.task_type,
        "difficulty": row.difficulty,
        "expected_difficulty": row.difficulty,
        "calibrated_difficulty": row_calibrated_difficulty(content),
        "family": row.family,
        "instruction": content["instruction"],
        "snapshot_version": content["snapshot_version"],
        "tools_sha256": tools_sha256,
        "rubric": content["rubric"],
        "metadata": content.get("metadata", {}),
        "simulated_user": content.get("simulated_user") or {},
        "checksum": row.checksum,
    }
    if inline_tools:
        payload["tools"] = tools
    return payload


def release_row_payloads(
    *, release: Release, split: str, chunk_size: int = ROW_CHUNK, inline_tools: bool = False
) -> Iterator[dict]:
    """Every row of a split as payloads, streamed from the database in chunks (constant memory)."""
    tool_sets = ReleaseToolSets(release)
    rows = (
        ReleaseRow.objects.filter(release=release, split=split)
        .order_by("position")
        .only(
            "pk",
            "split",
            "position",
            "version_id",
            "task_key",
            "task_type",
            "difficulty",
            "family",
            "content",
            "checksum",
        )
    )
    for row in rows.iterator(chunk_size=chunk_size):
        yield release_row_payload(row, release=release, tool_sets=tool_sets, inline_tools=inline_tools)


def release_strata(*, release: Release, splits: set[str] | None = None) -> list[dict[str, Any]]:
    """Row counts per (task type, difficulty, split) of a frozen release, only for ``splits`` when given."""
    rows = ReleaseRow.objects.filter(release=release)
    if splits is not None:
        rows = rows.filter(split__in=splits)
    return list(
        rows.values("task_type", "difficulty", "split").annotate(count=Count("pk")).order_by("task_type", "difficulty")
    )


def release_manifest_for(*, release: Release, splits: set[str]) -> dict:
    """The manifest with only the splits a reader may see (no holdout count or checksum for train:read)."""
    manifest = release.manifest or {}
    visible = {name: info for name, info in (manifest.get("splits") or {}).items() if name in splits}
    strata = [s for s in manifest.get("strata", []) if s.get("split") in splits]
    if set(manifest.get("splits") or {}) - set(splits):
        # A split's target per stratum comes from the stratum's whole size: with its count it tells the other's.
        strata = [{k: v for k, v in s.items() if k != "target"} for s in strata]
    return {
        "id": release.pk,
        "slug": release.slug,
        "name": release.name,
        "seed": release.seed,
        "status": release.status,
        "created_at": release.created_at,
        "frozen_at": release.frozen_at,
        # A digest of both splits' checksums: it tells a train:read reader nothing about the holdout's size.
        "checksum": release.checksum,
        "splits": visible,
        "strata": strata,
        "snapshot_versions": manifest.get("snapshot_versions", []),
        "tool_names": [schema["function"]["name"] for schema in release.tools or []],
        "tools_sha256": manifest.get("tools_sha256") or canonical_sha256(release.tools or []),
    }


def export_jobs_for(*, release: Release, splits: set[str] | None = None) -> QuerySet[ExportJob]:
    jobs = ExportJob.objects.filter(release=release).order_by("split", "format")
    return jobs.filter(split__in=splits) if splits is not None else jobs


def release_compare(*, old: Release, new: Release) -> dict[str, Any]:
    """From ``old`` to ``new`` by task key: added, removed, new version, moved split; strata side by side."""

    def index(release: Release) -> dict[str, dict]:
        rows = ReleaseRow.objects.filter(release=release).values("task_key", "split", "version_id", "checksum")
        return {row["task_key"]: row for row in rows.iterator(chunk_size=ROW_CHUNK)}

    before, after = index(old), index(new)
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed, moved = [], []
    for key in sorted(set(before) & set(after)):
        a, b = before[key], after[key]
        if a["version_id"] != b["version_id"]:
            changed.append({"task_key": key, "old_version_id": a["version_id"], "new_version_id": b["version_id"]})
        if a["split"] != b["split"]:
            moved.append({"task_key": key, "old_split": a["split"], "new_split": b["split"]})
    strata: dict[tuple[str, str], dict[str, int]] = {}
    for side, release in (("old", old), ("new", new)):
        for row in release_strata(release=release):
            cell = strata.setdefault((row["task_type"], row["difficulty"]), {})
            cell[f"{side}_{row['split']}"] = row["count"]
    zero = {"old_train": 0, "old_holdout": 0, "new_train": 0, "new_holdout": 0}
    return {
        "added": [{"task_key": k, "split": after[k]["split"]} for k in added],
        "removed": [{"task_key": k, "split": before[k]["split"]} for k in removed],
        "changed_version": changed,
        "moved_split": moved,
        "unchanged": sum(1 for k in set(before) & set(after) if before[k]["checksum"] == after[k]["checksum"]),
        "strata": [{"task_type": t, "difficulty": d, **zero, **counts} for (t, d), counts in sorted(strata.items())],
    }
