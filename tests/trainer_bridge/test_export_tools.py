"""The tool schemas travel once (issue 18): rows and JSONL lines name them by ``tools_sha256``; the release detail,
``releases/<slug>/tools/<sha256>`` and a jsonl export's tools file serve them; ``tools=inline`` keeps the standalone
rows; the client gives every row its ``tools`` back. A holdout row's tools are named only to eval:read."""

from __future__ import annotations

import json

import pytest

from corecraft_site.canonical import canonical_sha256
from tests.trainer_bridge.test_bridge_client import Scripted, fast
from tests.trainer_bridge.trainer_fixtures import trainer_world_make
from trainer_bridge.client import CorecraftClient, NotFoundError, TransportError, read_jsonl
from trainer_bridge.client.tool_sets import jsonl_tools_path, tools_digest
from trainer_bridge.models import ReleaseRow

pytestmark = pytest.mark.django_db


def stream_lines(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_rows_and_the_stream_name_the_tools_and_tools_inline_carries_them(frozen_release, token_client):
    client = token_client("train:read")
    digest = canonical_sha256(frozen_release.tools)
    detail = client.get("/api/v1/releases/r1/").json()
    assert detail["tools_sha256"] == digest and detail["tool_sets"] == {digest: frozen_release.tools}
    assert "tool_sets" not in client.get("/api/v1/releases/").json()["results"][0]  # the list stays small
    rows = client.get("/api/v1/releases/r1/rows/?split=train&limit=500").json()["results"]
    inline = client.get("/api/v1/releases/r1/rows/?split=train&limit=500&tools=inline").json()["results"]
    assert {row["tools_sha256"] for row in rows} == {digest} and not any("tools" in row for row in rows)
    assert [row.pop("tools") for row in inline] == [frozen_release.tools] * 15 and inline == rows
    lines = stream_lines(client.get("/api/v1/releases/r1/rows.jsonl?split=train"))
    standalone = stream_lines(client.get("/api/v1/releases/r1/rows.jsonl?split=train&tools=inline"))
    assert [line["row_id"] for line in lines] == [row["row_id"] for row in rows]
    assert all("tools" not in line and line["tools_sha256"] == digest for line in lines)
    assert all(line["tools"] == frozen_release.tools for line in standalone)
    bad_queries = (
        "rows/?split=train&tools=all",
        "rows.jsonl?split=train&tools=none",
        "exports/hf?split=train&tools=inline",
    )
    for bad in bad_queries:
        refused = client.get(f"/api/v1/releases/r1/{bad}")
        assert refused.status_code == 400 and "tools" in refused.json()["error"]["fields"], bad


def test_the_tools_endpoint_serves_a_digest_once_and_refuses_the_rest(frozen_release, token_client):
    client = token_client("train:read")
    digest = canonical_sha256(frozen_release.tools)
    found = client.get(f"/api/v1/releases/r1/tools/{digest}")
    assert found.status_code == 200 and found.json() == {"tools_sha256": digest, "tools": frozen_release.tools}
    assert "immutable" in found["Cache-Control"]
    assert client.get(f"/api/v1/releases/r1/tools/{'0' * 64}").status_code == 404
    assert client.get(f"/api/v1/releases/nope/tools/{digest}").status_code == 404
    malformed = client.get("/api/v1/releases/r1/tools/ABC")
    assert malformed.status_code == 400 and "sha256" in malformed.json()["error"]["fields"]
    assert token_client("episodes").get(f"/api/v1/releases/r1/tools/{digest}").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get(f"/api/v1/releases/r1/tools/{digest}").status_code == 401


def test_a_holdout_rows_own_tools_are_named_only_to_eval_read(frozen_release, token_client):
    held = ReleaseRow.objects.filter(release=frozen_release, split="holdout").first()
    held.content["tools"] = held.content["tools"][:3]
    held.save(update_fields=["content"])
    own = canonical_sha256(frozen_release.tools[:3])
    train, evaluation = token_client("train:read"), token_client("eval:read")
    assert own not in train.get("/api/v1/releases/r1/").json()["tool_sets"]
    assert train.get(f"/api/v1/releases/r1/tools/{own}").status_code == 404
    assert own in evaluation.get("/api/v1/releases/r1/").json()["tool_sets"]
    assert evaluation.get(f"/api/v1/releases/r1/tools/{own}").json()["tools"] == frozen_release.tools[:3]
    row = evaluation.get("/api/v1/releases/r1/rows/?split=holdout&limit=500").json()["results"]
    assert [r["tools_sha256"] for r in row if r["row_id"] == held.pk] == [own]


def test_a_jsonl_download_names_its_tools_file(frozen_release, token_client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client = token_client("train:read")
    response = client.get("/api/v1/releases/r1/exports/jsonl?split=train")
    assert response.status_code == 200
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    tools_file = client.get(response["Tools-Url"])
    assert tools_file.status_code == 200 and tools_file["Content-Type"] == "application/json"
    sets = json.loads(b"".join(tools_file.streaming_content))
    assert {line["tools_sha256"] for line in lines} == set(sets) and all(tools_digest(t) == d for d, t in sets.items())
    again = client.get("/api/v1/releases/r1/exports/jsonl?split=train", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304 and again["Tools-Url"] == response["Tools-Url"]
    # tools=inline is the standalone file; it and the parquet files have no tools file.
    inline = client.get("/api/v1/releases/r1/exports/jsonl?split=train&tools=inline")
    standalone = [json.loads(line) for line in b"".join(inline.streaming_content).decode().splitlines()]
    assert inline.status_code == 200 and "Tools-Url" not in inline and standalone[0]["tools"] == frozen_release.tools
    assert [{k: v for k, v in line.items() if k != "tools"} for line in standalone] == lines
    hf = client.get("/api/v1/releases/r1/exports/hf?split=train")
    assert hf.status_code == 200 and "Tools-Url" not in hf
    jobs = {job.format: job for job in frozen_release.exports.all()}
    assert client.get(f"/api/v1/exports/{jobs['hf'].pk}/tools/").status_code == 404
    assert client.get(f"/api/v1/exports/{jobs['jsonl'].pk}/").json()["tools_url"] == response["Tools-Url"]
    assert client.get(f"/api/v1/exports/{jobs['jsonl-inline'].pk}/").json()["tools_url"] is None


def test_a_queued_jsonl_job_has_no_tools_file_yet(frozen_release, token_client, settings, tmp_path):
    from trainer_bridge import export_jobs

    settings.MEDIA_ROOT = tmp_path
    job = export_jobs.export_request(release=frozen_release, split="train", format="jsonl", inline=False)
    client = token_client("train:read")
    assert client.get(f"/api/v1/exports/{job.pk}/").json()["tools_url"] is None
    assert client.get(f"/api/v1/exports/{job.pk}/tools/").status_code == 409
    holdout = export_jobs.export_request(release=frozen_release, split="holdout", format="jsonl")
    assert client.get(f"/api/v1/exports/{holdout.pk}/tools/").status_code == 404  # not for train:read


# --- the client gives rows their tools back --------------------------------------------------------------------


def test_the_client_fetches_a_digest_once_and_checks_it():
    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    digest = tools_digest(tools)
    row = {"row_id": 1, "split": "train", "instruction": "i", "tools_sha256": digest, "rubric": [], "metadata": {}}
    pages = [
        (200, {"count": 2, "next": "/api/v1/releases/r/rows/?split=train&page=2", "results": [row]}, {}),
        (200, {"tools_sha256": digest, "tools": tools}, {}),
        (200, {"count": 2, "next": None, "results": [{**row, "row_id": 2}]}, {}),
    ]
    with Scripted(pages) as s:
        rows = list(fast(s.url).rows("r", split="train"))
    assert [r.tools for r in rows] == [tools, tools] and rows[0].tools_sha256 == digest
    assert [r["path"] for r in s.requests][1] == f"/api/v1/releases/r/tools/{digest}" and len(s.requests) == 3
    wrong = [(200, {"count": 1, "next": None, "results": [row]}, {}), (200, {"tools": []}, {})]
    with Scripted(wrong) as s, pytest.raises(TransportError, match="do not hash"):
        list(fast(s.url).rows("r", split="train"))


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_the_client_resolves_rows_streams_and_downloaded_files_on_a_live_server(live_server, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    tw = trainer_world_make(slug="live-tools")
    client = CorecraftClient(live_server.url, token=tw.token("train:read", "episodes"), retries=0)
    rows = list(client.rows("live-tools", split="train", page_size=3))
    streamed = list(client.stream_rows("live-tools", split="train"))
    assert all(len(r.tools) == 23 + 1 and r.tools_sha256 == tools_digest(r.tools) for r in rows)
    assert [s["tools"] for s in streamed] == [r.tools for r in rows]
    # The open shares the digest: the client already holds the schemas, so the open leaves them out.
    opened = client.create_episode(release="live-tools", row_id=rows[0].row_id)
    assert opened.tools == rows[0].tools and opened.tools_sha256 == rows[0].tools_sha256
    dest = tmp_path / "train.jsonl"
    got = client.download_export("live-tools", "jsonl", split="train", dest=dest, poll_interval=0.1)
    assert got.tools_path == jsonl_tools_path(dest) == tmp_path / "train.tools.json" and got.tools_path.is_file()
    assert [row["tools"] for row in read_jsonl(dest)] == [s["tools"] for s in streamed]
    got.tools_path.unlink()  # a 304 fetches a lost tools file again
    assert client.download_export("live-tools", "jsonl", split="train", dest=dest).tools_path.is_file()
    inline = client.download_export("live-tools", "jsonl-inline", split="train", dest=tmp_path / "inline.jsonl")
    assert inline.tools_path is None and list(read_jsonl(inline.path)) == list(read_jsonl(dest))
    with pytest.raises(NotFoundError):
        client.tool_set("live-tools", "0" * 64)
