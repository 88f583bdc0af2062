"""What a frozen release's rows are made of: each approved version's content (instruction, rubric, snapshot, tool
names, calibration metadata, simulated user) read in a few queries, row ids drawn from a hash (sequential ids would
leak the holdout's size) and kept from clashing, the rows inserted with COPY, and the checksums of each row and split.
"""

from __future__ import annotations

import hashlib
import json

from tasks_app.models import Criterion, TaskCalibration, TaskVersion
from trainer_bridge.models import ReleaseRow


def _calibration_metadata(version_ids: list[int]) -> dict[int, dict]:
    found: dict[int, dict] = {}
    rows = (
        TaskCalibration.objects.filter(version_id__in=version_ids)
        .order_by("version_id", "judge_config_id", "-updated_at")
        .values(
            "version_id",
            "n_rollouts",
            "pass_at_1",
            "reward_mean",
            "reward_std",
            "calibrated_difficulty",
            "difficulty_provenance",
            "flags",
        )
    )
    for row in rows:
        found.setdefault(row.pop("version_id"), row)
    return found


CRITERION_FIELDS = ("key", "position", "kind", "text", "spec", "weight", "category", "required", "content_hash")


def _versions_content(version_ids: list[int], *, tool_names: list[str]) -> dict[int, dict]:
    """The frozen content of each version: three queries of plain values, whatever the number of versions."""
    versions = TaskVersion.objects.filter(pk__in=version_ids).values(
        "id", "instruction", "title", "tags", "number", "content_hash", "task_type", "difficulty", "family",
        "snapshot__version", "task__source_key", "simulated_user",
    )  # fmt: skip
    rubrics: dict[int, list[dict]] = {pk: [] for pk in version_ids}
    criteria = Criterion.objects.filter(version_id__in=version_ids).order_by("version_id", "position")
    for c in criteria.values("version_id", *CRITERION_FIELDS):
        item = {name: c[name] for name in CRITERION_FIELDS}
        item["key"] = str(item["key"])
        rubrics[c["version_id"]].append(item)
    calibrations = _calibration_metadata(version_ids)
    found = {}
    for v in versions:
        found[v["id"]] = {
            "instruction": v["instruction"],
            "rubric": rubrics[v["id"]],
            "snapshot_version": v["snapshot__version"],
            "tools": tool_names,
            "metadata": {
                "title": v["title"],
                "tags": list(v["tags"] or []),
                "version_number": v["number"],
                "content_hash": v["content_hash"],
                "source_key": v["task__source_key"],
                "calibration": calibrations.get(v["id"]),
            },
            "_row": {"task_type": v["task_type"], "difficulty": v["difficulty"], "family": v["family"]},
        }
        if v["simulated_user"]:
            # Who answers the agent's questions (ask_user) in the row's episodes: frozen with the row.
            found[v["id"]]["simulated_user"] = v["simulated_user"]
    return found


ROW_COLUMNS = (
    "id", "release_id", "split", "position", "task_id", "version_id", "task_key", "task_type", "difficulty", "family",
    "content", "checksum",
)  # fmt: skip


# Row ids are what the API calls row_id. Sequential ids would leak the holdout's size to a train:read reader (the
# gaps between a release's train ids, or between two releases' ids), so a row's id is drawn from a hash instead,
# above the sequence's range.
ROW_PK_FLOOR = 2**40
ROW_PK_SPAN = 2**52 - ROW_PK_FLOOR


def _row_pk(slug: str, task_key: str, attempt: int = 0) -> int:
    digest = hashlib.sha256(f"{slug}\x00{task_key}\x00{attempt}".encode()).digest()
    return ROW_PK_FLOOR + int.from_bytes(digest[:8], "big") % ROW_PK_SPAN


def _unclashing(rows: list[tuple], slug: str) -> list[tuple]:
    """Rows whose hashed id is taken (in this batch or the table) get the next attempt's id."""
    taken = set(ReleaseRow.objects.filter(pk__in=[r[0] for r in rows]).values_list("pk", flat=True))
    fixed = []
    for row in rows:
        pk, attempt = row[0], 0
        while pk in taken:
            attempt += 1
            pk = _row_pk(slug, row[6], attempt)
        taken.add(pk)
        fixed.append((pk, *row[1:]))
    return fixed


def _rows_copy(rows: list[tuple]) -> None:
    """Insert release rows with COPY (a release of 10,000 rows in well under a second; bulk_create takes ~10 s)."""
    from django.db import connection

    table = ReleaseRow._meta.db_table
    columns = ", ".join(ROW_COLUMNS)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _row_checksum(*, task_key: str, version_id: int, split: str, content_json: str) -> str:
    """``sha256_of({"task_key", "version_id", "split", "content"})``, reusing the content's canonical JSON."""
    text = (
        f'{{"content":{content_json},"split":{json.dumps(split)},'
        f'"task_key":{json.dumps(task_key, ensure_ascii=False)},"version_id":{int(version_id)}}}'
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _split_checksum(row_checksums: list[str]) -> str:
    return hashlib.sha256("\n".join(row_checksums).encode()).hexdigest()
