"""The export API: a train:read token never sees the holdout; eval:read does; rows, JSONL stream, downloads."""

from __future__ import annotations

import json

import pytest

from trainer_bridge.models import ReleaseRow

pytestmark = pytest.mark.django_db


def holdout_instructions(release) -> list[str]:
    """Every holdout instruction (each task's is its own: a leak of one would show)."""
    return [row.content["instruction"] for row in ReleaseRow.objects.filter(release=release, split="holdout")]


def test_train_token_never_sees_the_holdout(frozen_release, token_client):
    # Holdout rubrics get a text of their own, so a leak of it anywhere is visible.
    for row in ReleaseRow.objects.filter(release=frozen_release, split="holdout"):
        row.content["rubric"][0]["text"] = f"HOLDOUT-ONLY criterion {row.pk}"
        row.save(update_fields=["content"])
    client = token_client("train:read")
    answers = [
        client.get("/api/v1/releases/"),
        client.get("/api/v1/releases/r1/"),
        client.get("/api/v1/releases/r1/rows/?split=train&limit=500"),
        client.get("/api/v1/releases/r1/rows/?split=holdout"),
        client.get("/api/v1/releases/r1/rows.jsonl?split=holdout"),
        client.get("/api/v1/releases/r1/exports/jsonl?split=holdout"),
        client.get("/api/v1/releases/r1/rows/?split=nonsense"),
    ]
    statuses = [a.status_code for a in answers]
    assert statuses == [200, 200, 200, 403, 403, 403, 400]
    manifest = answers[1].json()
    assert set(manifest["splits"]) == {"train"}
    assert {s["split"] for s in manifest["strata"]} == {"train"}
    rows = answers[2].json()
    assert rows["count"] == 15 and {r["split"] for r in rows["results"]} == {"train"}
    whole = " ".join(a.content.decode() for a in answers)
    assert "HOLDOUT-ONLY" not in whole
    for text in holdout_instructions(frozen_release):
        assert text not in whole
    holdout_count = frozen_release.manifest["splits"]["holdout"]
    assert holdout_count["checksum"] not in whole
    assert '"holdout"' not in json.dumps(manifest)
    # The stream of the train split holds train rows only.
    stream = client.get("/api/v1/releases/r1/rows.jsonl?split=train")
    lines = b"".join(stream.streaming_content).decode().splitlines()
    assert len(lines) == 15 and {json.loads(line)["split"] for line in lines} == {"train"}


def test_eval_token_sees_the_holdout_and_not_train(frozen_release, token_client):
    client = token_client("eval:read")
    manifest = client.get("/api/v1/releases/r1/").json()
    assert set(manifest["splits"]) == {"holdout"} and manifest["splits"]["holdout"]["count"] == 5
    rows = client.get("/api/v1/releases/r1/rows/?split=holdout").json()
    assert rows["count"] == 5 and all(r["rubric"] for r in rows["results"])
    assert client.get("/api/v1/releases/r1/rows/?split=train").status_code == 403
    both = token_client("train:read", "eval:read").get("/api/v1/releases/r1/").json()
    assert set(both["splits"]) == {"train", "holdout"}


def test_rows_carry_tools_sha256_rubric_and_snapshot(frozen_release, token_client):
    client = token_client("train:read")
    page = client.get("/api/v1/releases/r1/rows/?split=train&limit=2&offset=1").json()
    assert page["count"] == 15 and len(page["results"]) == 2 and page["next"] and page["previous"]
    row = page["results"][0]
    assert row["position"] == 1 and "tools" not in row
    assert row["tools_sha256"] == frozen_release.manifest["tools_sha256"]
    assert row["rubric"][0]["kind"] in {"llm", "response"}
    assert isinstance(row["snapshot_version"], int) and row["task_key"].startswith("test:")
    assert row["release"] == "r1" and isinstance(row["row_id"], int)


def test_unknown_or_draft_release_is_404(frozen_release, token_client, admin_user):
    from trainer_bridge.services import release_create

    release_create(slug="draft-one", seed=1, sizes={"train": 1, "holdout": 1}, user=admin_user)
    client = token_client("train:read")
    assert client.get("/api/v1/releases/draft-one/").status_code == 404
    assert client.get("/api/v1/releases/nope/rows/").status_code == 404
    assert [r["slug"] for r in client.get("/api/v1/releases/").json()["results"]] == ["r1"]


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl-inline", "verl-parquet", "hf"])
def test_download_has_an_etag_and_if_none_match_gives_304(frozen_release, token_client, fmt, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client = token_client("train:read")
    response = client.get(f"/api/v1/releases/r1/exports/{fmt}?split=train")
    assert response.status_code == 200, response.content[:300]
    etag = response["ETag"]
    body = b"".join(response.streaming_content)
    import hashlib

    assert etag == f'"{hashlib.sha256(body).hexdigest()}"'
    again = client.get(f"/api/v1/releases/r1/exports/{fmt}?split=train", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag
    assert client.get(f"/api/v1/releases/r1/exports/{fmt}?split=train", HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_unknown_format_is_400(frozen_release, token_client):
    response = token_client("train:read").get("/api/v1/releases/r1/exports/csv?split=train")
    assert response.status_code == 400
    assert "format" in response.json()["error"]["fields"]


def test_large_export_is_a_job_with_progress_then_a_download(
    frozen_release, token_client, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from trainer_bridge import export_jobs
    from trainer_bridge.models import ExportJob

    settings.MEDIA_ROOT = tmp_path
    monkeypatch.setattr(export_jobs, "EXPORT_INLINE_MAX_ROWS", 3)
    client = token_client("train:read")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.get("/api/v1/releases/r1/exports/hf?split=train")
    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued" and job["download_url"] is None and len(callbacks) == 1
    assert client.get(job["url"]).json()["progress"] == 0.0
    # What the "exports" worker runs:
    export_jobs.export_job_run(job_id=job["id"])
    done = client.get(job["url"]).json()
    assert done["status"] == "done" and done["progress"] == 1.0 and done["rows_written"] == 15
    download = client.get(done["download_url"])
    assert download.status_code == 200 and download["ETag"] == f'"{done["sha256"]}"'
    assert ExportJob.objects.count() == 1
    # A holdout job is invisible to this token.
    holdout = export_jobs.export_request(release=frozen_release, split="holdout", format="jsonl", inline=False)
    assert client.get(f"/api/v1/exports/{holdout.pk}/").status_code == 404


def test_staff_session_sees_everything(frozen_release, admin_user, client):
    admin_user.is_staff = True
    admin_user.save()
    client.force_login(admin_user)
    assert set(client.get("/api/v1/releases/r1/").json()["splits"]) == {"train", "holdout"}


def test_row_ids_do_not_reveal_the_holdout_size(frozen_release, admin_user, make_approved):
    """Sequential ids would: the gaps between a train reader's ids count the holdout rows between them."""
    from trainer_bridge.services import release_create, release_freeze

    second = release_freeze(
        release=release_create(slug="r1-again", seed=7, sizes={"train": 15, "holdout": 5}, user=admin_user)
    )
    for release in (frozen_release, second):
        train = sorted(ReleaseRow.objects.filter(release=release, split="train").values_list("pk", flat=True))
        assert train[-1] - train[0] > 10**6  # spread over a 2**52 range, not a run of consecutive ids
    both = set(ReleaseRow.objects.values_list("pk", flat=True))
    assert len(both) == 40 and min(both) >= 2**40 and max(both) < 2**53
