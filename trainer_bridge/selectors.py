"""Reads of releases, their rows and exports, and what a token's scopes let it see of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Count, QuerySet

from tasks_app.models import Criterion
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


def row_calibrated_difficulty(content: dict) -> str:
    """The calibrated difficulty frozen with the row; ``not_calibrated`` without a calibration from model rollouts
    (rows frozen before the two were named apart carried ``difficulty_label``, from any policy: not trusted)."""
    calibration = (content.get("metadata") or {}).get("calibration") or {}
    return calibration.get("calibrated_difficulty") or "not_calibrated"


def release_row_payload(row: ReleaseRow, *, release: Release | None = None, tools_by_name: dict | None = None) -> dict:
    """The API's row: the frozen content with the release's tool schemas filled in."""
    release = release or row.release
    tools_by_name = tools_by_name if tools_by_name is not None else release_tools_by_name(release)
    content = row.content
    return {
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
        "tools": [tools_by_name[name] for name in content.get("tools", []) if name in tools_by_name],
        "rubric": content["rubric"],
        "metadata": content.get("metadata", {}),
        "simulated_user": content.get("simulated_user") or {},
        "checksum": row.checksum,
    }


def release_row_payloads(*, release: Release, split: str, chunk_size: int = ROW_CHUNK) -> Iterator[dict]:
    """Every row of a split as payloads, streamed from the database in chunks (constant memory)."""
    tools_by_name = release_tools_by_name(release)
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
        yield release_row_payload(row, release=release, tools_by_name=tools_by_name)


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
