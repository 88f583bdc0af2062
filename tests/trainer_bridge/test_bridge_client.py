"""trainer_bridge.client: transport behaviour against a scripted HTTP server, then the real API on a live server."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from trainer_bridge.client import (
    ApiError,
    ConflictError,
    CorecraftClient,
    NotFoundError,
    PermissionDeniedError,
    ServerError,
    TransportError,
    ValidationError,
)

# --- a scripted server: what the client does with retries, errors, pages and exports ----------------------------


class Scripted:
    """Answers requests from a queue of (status, body, headers) and records what came in."""

    def __init__(self, answers):
        self.answers = deque(answers)
        self.requests: list[dict] = []

    def __enter__(self):
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                scripted.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": raw}
                )
                status, payload, headers = scripted.answers.popleft()
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def error(code: str, message: str, fields=None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def fast(url: str, **kwargs) -> CorecraftClient:
    return CorecraftClient(url, token="cc_test", backoff=0.0, **kwargs)


def test_5xx_and_refused_connections_are_retried_then_the_answer_arrives():
    manifest = {"slug": "r", "name": "R", "seed": 7, "checksum": "abc", "splits": {"train": {"count": 3}}}
    with Scripted(
        [(503, error("unavailable", "later"), {"Retry-After": "0"}), (500, b"oops", {}), (200, manifest, {})]
    ) as s:
        got = fast(s.url).manifest("r")
    assert got.slug == "r" and got.splits == {"train": {"count": 3}} and got.seed == 7
    assert len(s.requests) == 3 and s.requests[0]["headers"]["Authorization"] == "Bearer cc_test"
    assert s.requests[0]["path"] == "/api/v1/releases/r/"

    with pytest.raises(TransportError):
        CorecraftClient("http://127.0.0.1:9", token="x", retries=1, backoff=0.0).releases()


def test_errors_carry_the_apis_error_body_and_are_typed():
    answers = [
        (400, error("invalid", "Invalid input.", {"row_id": ["A valid integer is required."]}), {}),
        (404, error("row_not_found", "no such row"), {}),
        (403, error("permission_denied", "needs episodes"), {}),
        (409, error("episode_finished", "finished"), {}),
    ]
    with Scripted(answers) as s:
        client = fast(s.url)
        with pytest.raises(ValidationError) as invalid:
            client.create_episode(release="r", row_id=1)
        with pytest.raises(NotFoundError) as missing:
            client.create_episode(release="r", row_id=1)
        with pytest.raises(PermissionDeniedError):
            client.create_episode(release="r", row_id=1)
        with pytest.raises(ConflictError) as conflict:
            client.finish("e1", final_answer="x")
    assert invalid.value.fields == {"row_id": ["A valid integer is required."]} and invalid.value.status == 400
    assert missing.value.code == "row_not_found" and "no such row" in str(missing.value)
    assert conflict.value.body["error"]["code"] == "episode_finished"
    assert len(s.requests) == 4  # 4xx are never retried


def test_a_tool_call_is_not_retried_after_a_500_but_finish_is():
    outcome = {"result": {"ok": 1}, "is_error": False, "step": {"seq": 1, "tool": "t", "duration_ms": 1.0}}
    reward = {"episode_id": "e1", "reward": 0.5, "partial_reward": 0.5, "passed": False, "final": True, "note": "",
              "verdicts": [], "status": "finished"}  # fmt: skip
    with Scripted([(500, error("internal_error", "boom"), {}), (502, b"bad gateway", {}), (200, outcome, {}),
                   (500, error("internal_error", "boom"), {}), (200, reward, {})]) as s:  # fmt: skip
        client = fast(s.url)
        with pytest.raises(ServerError):
            client.call_tool("e1", "t", {})  # the server may have run it: not sent again
        called = client.call_tool("e1", "t", {"a": 1})  # a 502 from a proxy: it never ran, so it is retried
        judged = client.finish("e1", final_answer="x")  # finish is idempotent on the server: retried
    assert (
        called.result == {"ok": 1} and called.seq == 1 and json.loads(s.requests[2]["body"]) == {"arguments": {"a": 1}}
    )
    assert judged.reward == 0.5 and judged.final and judged.value() == 0.5
    assert len(s.requests) == 5


def test_pages_are_followed_and_rows_are_typed():
    row = {"row_id": 1, "split": "train", "task_key": "k", "instruction": "i", "snapshot_version": 1, "tools": [],
           "rubric": [], "metadata": {}}  # fmt: skip
    second = "/api/v1/releases/r/rows/?split=train&page=2"
    pages = [
        (200, {"count": 3, "next": second, "results": [row, {**row, "row_id": 2}]}, {}),
        (200, {"count": 3, "next": None, "results": [{**row, "row_id": 3}]}, {}),
    ]
    with Scripted(pages) as s:
        rows = list(fast(s.url).rows("r", split="train"))
    assert [r.row_id for r in rows] == [1, 2, 3] and rows[0].release == "r" and rows[0].instruction == "i"
    assert s.requests[0]["path"] == "/api/v1/releases/r/rows/?split=train"
    assert s.requests[1]["path"] == "/api/v1/releases/r/rows/?split=train&page=2"


def test_an_export_is_waited_for_then_downloaded_and_revalidated_by_etag(tmp_path):
    dest = tmp_path / "train.parquet"
    answers = [
        (202, {"status": "running", "progress": 0.5}, {}),
        (200, b"PAR1 file bytes", {"ETag": '"abc"', "Content-Type": "application/octet-stream"}),
        (304, b"", {"ETag": '"abc"'}),
    ]
    with Scripted(answers) as s:
        client = fast(s.url)
        first = client.download_export("r", "verl-parquet", split="train", dest=dest, poll_interval=0.0)
        again = client.download_export("r", "verl-parquet", split="train", dest=dest, poll_interval=0.0)
    assert first.downloaded and first.etag == '"abc"' and dest.read_bytes() == b"PAR1 file bytes"
    assert not again.downloaded and s.requests[2]["headers"]["If-None-Match"] == '"abc"'
    assert s.requests[0]["path"] == "/api/v1/releases/r/exports/verl-parquet?split=train"


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="http"):
        CorecraftClient("file:///etc/passwd", token="x")


# --- the real API on a live server ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_the_client_drives_a_whole_rollout_on_a_live_server(live_server):
    tw = trainer_world_make(slug="live-r1")
    client = CorecraftClient(live_server.url, token=tw.token("train:read", "episodes", "reward"), retries=0)
    row = tw.rows("train", llm=False)[0]

    opened = client.create_episode(release=tw.release.slug, row_id=row.pk)
    assert opened.row_id == row.pk and opened.split == "train" and len(opened.tools) == 23 + 1  # world tools + ask_user
    looked = client.call_tool(opened.episode_id, "get_order_details", {"order_id": tw.order_id})
    assert looked.is_error is False and looked.seq == 1 and tw.order_id in looked.as_text()
    refused = client.call_tool(
        opened.episode_id, "update_order_status", {"order_id": "ord-nope", "status": "backorder"}
    )
    assert refused.is_error is True and refused.result["error"]["code"]
    client.call_tool(opened.episode_id, "update_order_status", {"order_id": tw.order_id, "status": "backorder"})
    judged = client.finish(opened.episode_id, final_answer=GOOD_ANSWER, messages=[{"role": "user", "content": "hi"}])
    assert judged.reward == 1.0 and judged.passed is True and judged.final
    assert [v.status for v in judged.verdicts] == ["met", "met", "met"]
    assert client.finish(opened.episode_id, final_answer=GOOD_ANSWER).reward == 1.0  # a retry is safe
    with pytest.raises(ConflictError) as finished:
        client.call_tool(opened.episode_id, "get_order_details", {"order_id": tw.order_id})
    assert finished.value.code == "episode_finished"

    again = client.create_episode(release=tw.release.slug, row_id=row.pk)  # the schemas named, not sent again
    assert again.tools == opened.tools and again.tools_sha256 == opened.tools_sha256 != ""
    group = [client.create_episode(release=tw.release.slug, row_id=row.pk).episode_id for _ in range(2)]
    results = client.batch_rewards(
        [{"episode_id": group[0], "final_answer": "no"}, {"episode_id": "nope", "final_answer": ""},
         {"episode_id": group[1], "final_answer": "backorder"}]
    )  # fmt: skip
    assert [r.ok for r in results] == [True, False, True]
    assert results[0].reward.reward == 0.0 and results[2].reward.reward == 0.25  # the response criterion alone
    assert isinstance(results[1].error, ApiError) and results[1].error.code == "invalid"

    holdout = tw.rows("holdout")[0]
    with pytest.raises(NotFoundError):
        client.create_episode(release=tw.release.slug, row_id=holdout.pk)
    pending = client.finish(client.create_episode(release=tw.release.slug, row_id=tw.rows("train", llm=True)[0].pk)
                            .episode_id, final_answer="backorder")  # fmt: skip
    assert pending.final is False and pending.reward is None and "partial" in pending.note
    assert pending.value(on_pending="partial") == pending.partial_reward and pending.value(on_pending="none") is None
    with pytest.raises(ValueError, match="not final"):
        pending.value(on_pending="raise")


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_the_client_reads_releases_and_rows_on_a_live_server(live_server):
    tw = trainer_world_make(slug="live-r2")
    client = CorecraftClient(live_server.url, token=tw.token("train:read", "episodes"), retries=0)
    assert "live-r2" in [r.slug for r in client.releases()]
    manifest = client.manifest("live-r2")
    assert manifest.slug == "live-r2" and set(manifest.splits) == {"train"}  # no holdout counts for train:read
    rows = list(client.rows("live-r2", split="train", page_size=3))  # 4 rows: two pages
    assert sorted(r.row_id for r in rows) == sorted(r.pk for r in tw.rows("train"))
    assert all(r.split == "train" and r.instruction and len(r.tools) == 23 + 1 for r in rows)  # world tools + ask_user
    streamed = list(client.stream_rows("live-r2", split="train"))
    assert sorted(r["row_id"] for r in streamed) == sorted(r.row_id for r in rows)
    with pytest.raises((NotFoundError, PermissionDeniedError)):
        list(client.rows("live-r2", split="holdout"))
