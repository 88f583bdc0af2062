"""The MCP server end to end: real server processes, the official ``mcp`` client, the test database.

Tests are transactional (rows committed) so that the server processes, which connect to the test database
through DATABASE_URL, see the world and snapshot the test made.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.factories import SupportTicketFactory, UserFactory, small_world
from tests.processes import ROOT, app_process_env
from trainer_bridge.services import api_token_create, api_token_revoke
from world_app.episodes import episode_close, episode_create, episode_diff
from world_app.models import EpisodeStep, SupportTicket
from world_app.snapshots import snapshot_publish
from world_app.tools import all_tools

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.slow,
    pytest.mark.usefixtures("fresh_episode_state"),
]

SERVER_START_TIMEOUT_S = 60
CLIENT_TIMEOUT_S = 60
CALL_TIMEOUT_S = 30
PAGE = 10
EXTRA_TICKETS = 23  # with small_world's own ticket: 24 for the customer, so pages at offsets 0, 10 and 20
# What the SDK client sends first on its legacy (initialize) handshake, for raw HTTP probes.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def mcp_world() -> dict:
    """A small world whose customer has 24 open tickets, published as a snapshot the servers can load; and the
    bearer tokens of a trainer and of another user (``episodes``), of a reader without it, and a revoked one."""
    rows = small_world()
    rows["tickets"] = [rows["ticket"], *SupportTicketFactory.create_batch(EXTRA_TICKETS, customer=rows["customer"])]
    rows["snapshot"] = snapshot_publish(note="mcp test world")
    owner = rows["owner"] = UserFactory(username="mcp-trainer")
    rows["token"] = api_token_create(name="mcp", scopes=["episodes"], created_by=owner).secret
    stranger = UserFactory(username="mcp-other-trainer")
    rows["other_token"] = api_token_create(name="mcp other", scopes=["episodes"], created_by=stranger).secret
    rows["reader_token"] = api_token_create(name="reader", scopes=["train:read"], created_by=owner).secret
    revoked = api_token_create(name="revoked", scopes=["episodes"], created_by=owner)
    api_token_revoke(token=revoked.token)
    rows["revoked_token"] = revoked.secret
    return rows


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def mcp_client(url: str, secret: str, **kwargs) -> Client:
    """The SDK client on ``url`` with the bearer token (its own HTTP client, closed with the session)."""
    http = httpx2.AsyncClient(headers=bearer(secret), timeout=CALL_TIMEOUT_S)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT_S, **kwargs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mcp_server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"mcp_server did not listen on port {port} within {SERVER_START_TIMEOUT_S}s")


@contextmanager
def mcp_server() -> Iterator[str]:
    """``manage.py mcp_server`` as a real process on a free port, against the test database; yields its base URL."""
    port = _free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(  # noqa: S603
            [sys.executable, "manage.py", "mcp_server", "--port", str(port)],
            cwd=ROOT,
            env=app_process_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_listening(proc, port)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
            log.seek(0)
            print(f"--- mcp_server on port {port} ---\n{log.read().decode(errors='replace')}")  # shown on failure


def run_async(fn, *args):
    """Run a client scenario with a bound on its whole duration."""

    async def bounded():
        with anyio.fail_after(CLIENT_TIMEOUT_S):
            return await fn(*args)

    return anyio.run(bounded)


async def create_episode(http: httpx2.AsyncClient, base: str, **body) -> dict:
    response = await http.post(f"{base}/mcp/episodes", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def call(client: Client, name: str, arguments: dict) -> dict:
    result = await client.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT_S)
    assert result.structured_content is not None
    return {"is_error": result.is_error, "result": result.structured_content, "text": result.content[0].text}


async def ticket_status(client: Client, ticket_id: str) -> str:
    answer = await call(client, "search_tickets", {"query": ticket_id})
    assert not answer["is_error"], answer
    [ticket] = [t for t in answer["result"]["items"] if t["id"] == ticket_id]
    return ticket["status"]


async def search_pages(client: Client, customer_id: str) -> list[dict]:
    pages, offset = [], 0
    while True:
        answer = await call(client, "search_tickets", {"customer_id": customer_id, "offset": offset, "limit": PAGE})
        assert not answer["is_error"], answer
        pages.append(answer["result"])
        if not answer["result"]["has_more"]:
            return pages
        offset += PAGE
        assert offset <= 100, "the search never said has_more=false"


def unwrap_mcp_error(group: BaseExceptionGroup) -> MCPError:
    """The SDK raises a connect-time MCPError from inside its task groups."""
    for exc in group.exceptions:
        if isinstance(exc, MCPError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            return unwrap_mcp_error(exc)
    raise AssertionError(f"no MCPError in {group!r}")


async def first_server(base: str, world: dict) -> dict:
    ticket_id = world["ticket"].pk
    token = world["token"]
    async with httpx2.AsyncClient(headers=bearer(token), timeout=CALL_TIMEOUT_S) as http:
        mine = await create_episode(http, base, label="mcp e2e")
        other = await create_episode(http, base)
        unknown = f"{base}/mcp/episodes/{uuid.uuid4()}"
        raw_unknown = await http.post(unknown, json=INITIALIZE, headers=MCP_ACCEPT)
        raw_unnamed = await http.post(f"{base}/mcp", json=INITIALIZE, headers=MCP_ACCEPT)
        bad_version = await http.post(f"{base}/mcp/episodes", json={"snapshot_version": 999})
        foreign_host = await http.post(f"{base}/mcp/episodes", json={}, headers={"Host": "evil.example"})
        foreign_origin = await http.post(
            mine["mcp_url"], json=INITIALIZE, headers={**MCP_ACCEPT, "Origin": "http://evil.example"}
        )
    async with httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as anonymous:
        no_token = await anonymous.post(mine["mcp_url"], json=INITIALIZE, headers=MCP_ACCEPT)
        no_token_create = await anonymous.post(f"{base}/mcp/episodes", json={})
        metadata = await anonymous.get(f"{base}/.well-known/oauth-protected-resource/mcp")
        bad = {}
        for name in ("revoked_token", "reader_token", "other_token"):
            answer = await anonymous.post(
                mine["mcp_url"], json=INITIALIZE, headers={**MCP_ACCEPT, **bearer(world[name])}
            )
            bad[name] = (answer.status_code, answer.headers.get("www-authenticate", ""), answer.text)
        bad["unknown_token"] = (
            await anonymous.post(
                mine["mcp_url"], json=INITIALIZE, headers={**MCP_ACCEPT, **bearer("cc_not-a-real-token")}
            )
        ).status_code

    out: dict = {"mine": mine, "other": other, "bad": bad}
    out["raw_unknown"] = (raw_unknown.status_code, raw_unknown.json())
    out["raw_unnamed"] = (raw_unnamed.status_code, raw_unnamed.json())
    out["bad_version"] = bad_version.status_code
    out["foreign_host"] = foreign_host.status_code
    out["foreign_origin"] = foreign_origin.status_code
    out["no_token"] = (no_token.status_code, no_token.headers.get("www-authenticate", ""))
    out["no_token_create"] = no_token_create.status_code
    out["metadata"] = (metadata.status_code, metadata.json())
    try:
        async with mcp_client(unknown, token, mode="legacy"):
            out["unknown_error"] = None
    except BaseExceptionGroup as group:
        out["unknown_error"] = unwrap_mcp_error(group).message

    # The handshake era (initialize), as the issue names it.
    async with mcp_client(mine["mcp_url"], token, mode="legacy") as client:
        out["server_name"] = client.server_info.name
        out["instructions"] = client.instructions
        listed = await client.list_tools()
        out["tools"] = {tool.name: tool.input_schema for tool in listed.tools}
        out["pages"] = await search_pages(client, world["customer"].pk)
        out["write"] = await call(
            client, "update_ticket_status", {"ticket_id": ticket_id, "status": "pending_customer"}
        )
        out["after_write"] = await ticket_status(client, ticket_id)
        out["bad_arguments"] = await call(client, "update_ticket_status", {"ticket_id": ticket_id, "state": "open"})
        out["unknown_tool"] = await call(client, "delete_everything", {})

    # A second connection to another episode; the default client mode (the 2026 era: no initialize).
    async with mcp_client(other["mcp_url"], token) as client:
        out["other_protocol"] = client.protocol_version
        out["other_sees"] = await ticket_status(client, ticket_id)
    return out


async def second_server(base: str, mine_url_path: str, first_base: str, world: dict) -> dict:
    """Another process serves the same episode: it sees the first write, and its write is seen by the first."""
    ticket_id, second_ticket_id = world["ticket"].pk, world["tickets"][1].pk
    out: dict = {}
    async with mcp_client(f"{base}{mine_url_path}", world["token"]) as client:
        out["sees_first_write"] = await ticket_status(client, ticket_id)
        out["write"] = await call(
            client, "update_ticket_status", {"ticket_id": second_ticket_id, "status": "pending_customer"}
        )
    async with mcp_client(f"{first_base}{mine_url_path}", world["token"]) as client:
        out["first_sees_second_write"] = await ticket_status(client, second_ticket_id)
    return out


async def restarted_server(base: str, mine: dict, other: dict, world: dict) -> dict:
    ticket_ids = [world["ticket"].pk, world["tickets"][1].pk]
    out: dict = {}
    # The episode named by header on the fixed /mcp endpoint this time.
    headers = {"X-Corecraft-Episode": mine["episode_id"], **bearer(world["token"])}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), read_timeout_seconds=CALL_TIMEOUT_S) as client,
    ):
        out["mine"] = [await ticket_status(client, t) for t in ticket_ids]
    async with mcp_client(f"{base}/mcp/episodes/{other['episode_id']}", world["token"]) as client:
        out["closed_call"] = await call(client, "search_tickets", {"query": ticket_ids[0]})
    return out


def test_mcp_over_streamable_http_end_to_end(mcp_world):
    world = mcp_world
    ticket_id, second_ticket_id = world["ticket"].pk, world["tickets"][1].pk
    registry = {tool.name: tool.input_schema() for tool in all_tools()}

    with mcp_server() as first_base:
        first = run_async(first_server, first_base, world)
        mine, other = first["mine"], first["other"]
        mine_path = f"/mcp/episodes/{mine['episode_id']}"
        assert mine["mcp_url"] == f"{first_base}{mine_path}/mcp"  # a URL that ends in /mcp (the Inspector's form)
        assert mine["snapshot_version"] == world["snapshot"].version

        # Unknown episodes and unnamed requests are refused before MCP, with a message that says what to do:
        # a JSON-RPC error for the request's id, not a 404 (which clients read as "session expired").
        status, body = first["raw_unknown"]
        assert status == 200 and body["id"] == INITIALIZE["id"]
        assert "no episode" in body["error"]["message"]
        assert "POST /mcp/episodes" in body["error"]["message"]
        assert first["raw_unnamed"][0] == 400
        assert first["bad_version"] == 404
        assert first["unknown_error"] is not None
        assert "no episode" in first["unknown_error"]

        # Only the token that opened an episode reaches it; no token is a 401 that names the metadata document.
        status, challenge = first["no_token"]
        metadata_url = f"{first_base}/.well-known/oauth-protected-resource/mcp"
        assert status == 401
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
        assert first["no_token_create"] == 401
        assert first["metadata"] == (
            200,
            {
                "resource": f"{first_base}/mcp",
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["episodes"],
                "resource_name": "Corecraft Computers support tools (Corecraft Studio)",
            },
        )
        assert first["bad"]["revoked_token"][0] == 401
        assert 'error="invalid_token"' in first["bad"]["revoked_token"][1]
        assert first["bad"]["unknown_token"] == 401
        assert first["bad"]["reader_token"][0] == 403
        assert 'error="insufficient_scope"' in first["bad"]["reader_token"][1]
        # Another user's episode is answered like an unknown one: a JSON-RPC error for the request.
        other_status, _, other_text = first["bad"]["other_token"]
        assert other_status == 200 and "no episode" in other_text
        # Host and Origin are checked on every request, episode creation included.
        assert first["foreign_host"] == 421
        assert first["foreign_origin"] == 403

        assert first["server_name"] == "corecraft-computers"
        assert "offset + limit" in first["instructions"]
        # The 23 world tools and ask_user, with the registry's schemas verbatim.
        assert len(first["tools"]) == 23 + 1
        assert first["tools"] == registry

        # Paging: offsets 0, 10, 20; one total throughout; every ticket exactly once.
        pages = first["pages"]
        assert [p["offset"] for p in pages] == [0, 10, 20]
        assert {p["total"] for p in pages} == {len(world["tickets"])}
        assert [p["has_more"] for p in pages] == [True, True, False]
        seen = [item["id"] for p in pages for item in p["items"]]
        assert sorted(seen) == sorted(t.pk for t in world["tickets"])

        write = first["write"]
        assert not write["is_error"], write
        assert first["after_write"] == "pending_customer"
        # Bad arguments and unknown tools are tool results the model can read, not protocol errors.
        assert first["bad_arguments"]["is_error"]
        assert first["bad_arguments"]["result"]["error"]["code"] == "invalid_arguments"
        assert "state" in first["bad_arguments"]["text"]
        assert first["unknown_tool"]["is_error"]
        assert first["unknown_tool"]["result"]["error"]["code"] == "unknown_tool"
        # The other episode, over the other protocol era, never sees the write.
        assert first["other_protocol"] == "2026-07-28"
        assert first["other_sees"] == "open"

        # A second process serving the same episode at the same time.
        with mcp_server() as second_base:
            second = run_async(second_server, second_base, mine_path, first_base, world)
        assert second["sees_first_write"] == "pending_customer"
        assert not second["write"]["is_error"], second["write"]
        assert second["first_sees_second_write"] == "pending_customer"

    # The live world is untouched, and the log holds what each episode did.
    assert set(SupportTicket.objects.filter(pk__in=[ticket_id, second_ticket_id]).values_list("status", flat=True)) == {
        "open"
    }
    writes = EpisodeStep.objects.filter(name="update_ticket_status", is_error=False)
    assert sorted(writes.values_list("episode_id", flat=True)) == [uuid.UUID(mine["episode_id"])] * 2
    assert not EpisodeStep.objects.filter(episode_id=other["episode_id"]).exclude(name="search_tickets").exists()
    updated = {(row["table"], row["pk"]) for row in episode_diff(mine["episode_id"])["updated"]}
    table = SupportTicket._meta.db_table
    assert updated == {(table, ticket_id), (table, second_ticket_id)}

    episode_close(other["episode_id"])
    with mcp_server() as restarted_base:
        restarted = run_async(restarted_server, restarted_base, mine, other, world)
    # Nothing was lost with the processes: the episode's state came back from its log.
    assert restarted["mine"] == ["pending_customer", "pending_customer"]
    closed = restarted["closed_call"]
    assert closed["is_error"]
    assert closed["result"]["error"]["code"] == "episode_closed"
    assert "closed" in closed["result"]["error"]["message"]


async def stdio_session(episode_id: str, ticket_id: str, errlog) -> dict:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--transport", "stdio", "--episode", episode_id],
        cwd=ROOT,
        env=app_process_env(),
    )
    async with Client(
        stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S
    ) as client:
        listed = await client.list_tools()
        write = await call(client, "update_ticket_status", {"ticket_id": ticket_id, "status": "pending_customer"})
        return {"instructions": client.instructions, "tools": [t.name for t in listed.tools], "write": write}


def test_mcp_over_stdio_serves_the_named_episode(mcp_world):
    episode = episode_create(snapshot=mcp_world["snapshot"], label="mcp stdio test")
    ticket_id = mcp_world["ticket"].pk
    with tempfile.TemporaryFile(mode="w+") as errlog:
        try:
            session = run_async(stdio_session, str(episode.pk), ticket_id, errlog)
        finally:
            errlog.seek(0)
            print(f"--- mcp_server stdio ---\n{errlog.read()}")

    assert session["tools"] == [tool.name for tool in all_tools()]
    assert str(episode.pk) in session["instructions"]
    assert not session["write"]["is_error"], session["write"]
    assert session["write"]["result"]["ticket"]["status"] == "pending_customer"
    [step] = EpisodeStep.objects.filter(episode=episode)
    assert (step.name, step.arguments["ticket_id"]) == ("update_ticket_status", ticket_id)
    assert SupportTicket.objects.get(pk=ticket_id).status == "open"


MCP1_PYTHON = Path(os.environ.get("MCP1_PYTHON") or ROOT / ".venv-mcp1" / "bin" / "python")


@pytest.mark.skipif(not MCP1_PYTHON.exists(), reason="no MCP 1.x client here: `make mcp-clients` builds .venv-mcp1")
def test_an_mcp_1x_client_shows_why_an_episode_is_refused(mcp_world):
    owned = {"owner_id": mcp_world["owner"].pk, "credential": "test"}
    opened = episode_create(snapshot=mcp_world["snapshot"], label="mcp 1.x client", **owned)
    closed = episode_create(snapshot=mcp_world["snapshot"], label="mcp 1.x client, closed", **owned)
    episode_close(closed.pk)
    with mcp_server() as base:
        urls = [f"{base}/mcp/episodes/{episode}/mcp" for episode in (uuid.uuid4(), closed.pk, opened.pk)]
        done = subprocess.run(  # noqa: S603 (our own script, with the 1.x SDK's interpreter)
            [str(MCP1_PYTHON), "tests/world_app/mcp1_client.py", *urls],
            env={**os.environ, "MCP_TOKEN": mcp_world["token"]},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The message the server wrote, not "Session terminated" (what a 1.x client makes of a 404).
    assert "no episode" in seen["unknown"] and "POST /mcp/episodes" in seen["unknown"]
    assert seen["closed"]["is_error"] and json.loads(seen["closed"]["text"])["error"]["code"] == "episode_closed"
    assert seen["open"]["tools"] == 23 + 1 and not seen["open"]["is_error"]
