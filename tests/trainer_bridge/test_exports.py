"""The export writers: verl parquet with verl's columns, HF/TRL parquet, JSONL; streaming in chunks."""

from __future__ import annotations

import io
import json

import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest

from corecraft_site.canonical import canonical_sha256
from trainer_bridge.export_jobs import export_job_run, export_request, export_tools_path
from trainer_bridge.exports import AGENT_NAME, CHUNK, export_write
from trainer_bridge.models import ExportJob, ExportStatus, ReleaseRow

pytestmark = pytest.mark.django_db

VERL_COLUMNS = {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}


def test_verl_parquet_reads_with_pyarrow_and_has_verls_columns(frozen_release):
    out = io.BytesIO()
    assert export_write(release=frozen_release, split="train", format="verl-parquet", out=out) == 15
    table = pq.read_table(io.BytesIO(out.getvalue()))
    assert set(table.column_names) == VERL_COLUMNS
    first = table.to_pylist()[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["agent_name"] == AGENT_NAME
    assert first["reward_model"]["style"] == "rule"
    info = first["extra_info"]
    assert info["split"] == "train" and info["index"] == 0 and info["release"] == "r1"
    row = ReleaseRow.objects.get(pk=info["row_id"])
    assert first["prompt"][1]["content"] == row.content["instruction"]
    assert json.loads(first["reward_model"]["ground_truth"]) == {"release": "r1", "row_id": row.pk}
    tool = row.content["tools"][0]
    assert info["tools_kwargs"][tool]["create_kwargs"] == {"release": "r1", "row_id": row.pk}
    assert info["need_tools_kwargs"] is True and info["interaction_kwargs"]["row_id"] == row.pk


def test_hf_parquet_has_a_conversational_prompt_and_the_reward_columns(frozen_release):
    out = io.BytesIO()
    export_write(release=frozen_release, split="holdout", format="hf", out=out)
    rows = pq.read_table(io.BytesIO(out.getvalue())).to_pylist()
    assert len(rows) == 5
    assert {"prompt", "release", "row_id", "task_key", "split", "tools", "rubric"} <= set(rows[0])
    assert rows[0]["prompt"][1]["role"] == "user" and rows[0]["split"] == "holdout"
    assert json.loads(rows[0]["tools"])[0]["type"] == "function"
    assert json.loads(rows[0]["rubric"])[0]["text"]


def test_jsonl_names_the_tools_by_digest_and_jsonl_inline_carries_them(frozen_release):
    out = io.BytesIO()
    export_write(release=frozen_release, split="train", format="jsonl", out=out)
    lines = out.getvalue().decode().splitlines()
    assert len(lines) == 15
    rows = [json.loads(line) for line in lines]
    first = rows[0]
    assert {"instruction", "tools_sha256", "rubric", "snapshot_version", "metadata", "row_id", "task_key"} <= set(first)
    assert [row["position"] for row in rows] == list(range(15))
    # Every line the same shape, and none repeats the schemas: the digest names them (the trainer open's digest).
    assert all(set(row) == set(first) and "tools" not in row for row in rows)
    assert {row["tools_sha256"] for row in rows} == {canonical_sha256(frozen_release.tools)}
    inline = io.BytesIO()
    export_write(release=frozen_release, split="train", format="jsonl-inline", out=inline)
    standalone = [json.loads(line) for line in inline.getvalue().decode().splitlines()]
    assert [row["tools"] for row in standalone] == [frozen_release.tools] * 15
    assert [{k: v for k, v in row.items() if k != "tools"} for row in standalone] == rows
    assert len(out.getvalue()) * 10 < len(inline.getvalue())
    # Both read as one table by arrow's JSON reader (what datasets.load_dataset("json") reads lines with).
    for written in (out, inline):
        table = pa_json.read_json(io.BytesIO(written.getvalue()))
        assert table.num_rows == 15 and "tools_sha256" in table.column_names


def test_parquet_is_written_in_row_groups_of_a_chunk(frozen_release, monkeypatch):
    from trainer_bridge import exports

    monkeypatch.setattr(exports, "CHUNK", 4)
    out = io.BytesIO()
    exports.export_write(release=frozen_release, split="train", format="verl-parquet", out=out)
    meta = pq.ParquetFile(io.BytesIO(out.getvalue())).metadata
    assert meta.num_rows == 15 and meta.num_row_groups == 4
    assert CHUNK == 1000


def test_export_job_writes_the_file_under_media_root(frozen_release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = export_request(release=frozen_release, split="train", format="jsonl")
    assert job.status == ExportStatus.DONE and job.rows_written == 15 and job.size_bytes > 0
    path = tmp_path / job.file_path
    assert path.is_file() and path.parent.parent.name == "exports"
    # Asking again reuses the file; a lost file is written again.
    assert export_request(release=frozen_release, split="train", format="jsonl").pk == job.pk
    path.unlink()
    again = export_request(release=frozen_release, split="train", format="jsonl")
    assert again.pk == job.pk and (tmp_path / again.file_path).is_file() and again.sha256 == job.sha256


def test_a_jsonl_export_job_writes_its_tools_file_beside_it(frozen_release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = export_request(release=frozen_release, split="train", format="jsonl")
    tools_file = export_tools_path(job)
    assert tools_file.parent == (tmp_path / job.file_path).parent and tools_file.name == "train.jsonl.tools.json"
    sets = json.loads(tools_file.read_text())
    assert sets == {canonical_sha256(frozen_release.tools): frozen_release.tools}
    digests = {json.loads(line)["tools_sha256"] for line in (tmp_path / job.file_path).read_text().splitlines()}
    assert digests == set(sets)
    # A lost tools file is a lost export: asked again, both are written again.
    tools_file.unlink()
    again = export_request(release=frozen_release, split="train", format="jsonl")
    assert again.pk == job.pk and tools_file.is_file() and again.sha256 == job.sha256
    # The other formats carry (or name) the tools on every row and have no tools file.
    for fmt in ("jsonl-inline", "hf", "verl-parquet"):
        other = export_request(release=frozen_release, split="train", format=fmt)
        assert other.status == ExportStatus.DONE and not export_tools_path(other).exists()


def test_a_failed_export_is_recorded_and_retried(frozen_release, settings, tmp_path, monkeypatch):
    from trainer_bridge import export_jobs

    settings.MEDIA_ROOT = tmp_path

    def broken(**kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export_jobs, "export_write", broken)  # the name the export job calls
    job = export_request(release=frozen_release, split="train", format="hf")
    assert job.status == ExportStatus.FAILED and "disk full" in job.error
    assert not list(tmp_path.rglob("*.part"))
    monkeypatch.undo()
    settings.MEDIA_ROOT = tmp_path
    assert export_request(release=frozen_release, split="train", format="hf").status == ExportStatus.DONE


def test_a_job_is_claimed_once(frozen_release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    job = export_request(release=frozen_release, split="train", format="jsonl", inline=False)
    assert job.status == ExportStatus.QUEUED
    export_job_run(job_id=job.pk)
    ExportJob.objects.filter(pk=job.pk).update(rows_written=0)
    # A second delivery of the same message finds it done and writes nothing.
    assert export_job_run(job_id=job.pk).rows_written == 0
