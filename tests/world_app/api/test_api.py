"""The episode and tool API over HTTP: happy paths, auth, and every kind of bad input (never a 500)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from world_app.models import Employee, Episode, EpisodeStep, SupportTicket, WorldSnapshot
from world_app.tools import all_tools

pytestmark = pytest.mark.django_db(databases=["default", "episode"])

EPISODES = "/api/v1/episodes/"
UNKNOWN_EPISODE = "00000000-0000-4000-8000-000000000000"


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "fields"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


def open_episode(client: APIClient, **body) -> dict:
    response = client.post(EPISODES, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def call(client: APIClient, episode: dict, tool: str, arguments=None, **kwargs):
    url = f"{EPISODES}{episode['id']}/tools/{tool}/"
    return client.post(url, arguments if arguments is not None else {}, format="json", **kwargs)


def new_ticket_and_agent() -> tuple[str, str]:
    ticket = SupportTicket.objects.filter(status="new").order_by("id").first()
    agent = Employee.objects.filter(is_active=True, support_role="agent").order_by("id").first()
    assert ticket is not None and agent is not None
    return ticket.pk, agent.pk


# --- auth -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/snapshots/"),
        ("get", "/api/v1/snapshots/1/"),
        ("post", EPISODES),
        ("get", f"{EPISODES}{UNKNOWN_EPISODE}/"),
        ("get", "/api/v1/tools/"),
        ("get", "/api/v1/tools/get_product/"),
        ("post", f"{EPISODES}{UNKNOWN_EPISODE}/tools/get_product/"),
        ("get", f"{EPISODES}{UNKNOWN_EPISODE}/steps/"),
        ("get", f"{EPISODES}{UNKNOWN_EPISODE}/diff/"),
        ("get", f"{EPISODES}{UNKNOWN_EPISODE}/state-checksum/"),
        ("post", f"{EPISODES}{UNKNOWN_EPISODE}/close/"),
    ],
)
def test_every_endpoint_requires_credentials(method, path):
    response = getattr(APIClient(), method)(path, format="json")
    error = assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert error["fields"] == {}


def test_a_wrong_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer cc_not-a-real-token")
    assert_error(client.get("/api/v1/tools/"), 401, "authentication_failed")


def test_a_logged_in_session_works_and_its_writes_need_csrf(api_user, snapshot):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(api_user)
    assert client.get("/api/v1/tools/").status_code == 200
    assert_error(client.post(EPISODES, {}, format="json"), 403, "permission_denied")


# --- snapshots ------------------------------------------------------------------------------------------------


def test_snapshots_list_and_detail(api_client, snapshot):
    listed = api_client.get("/api/v1/snapshots/").json()
    assert listed["count"] == WorldSnapshot.objects.count()
    first = next(s for s in listed["results"] if s["version"] == snapshot.version)
    assert first["content_checksum"] == snapshot.content_checksum
    assert first["total_entities"] == sum(snapshot.entity_counts.values()) > 2500
    assert first["url"].endswith(f"/api/v1/snapshots/{snapshot.version}/")
    detail = api_client.get(f"/api/v1/snapshots/{snapshot.version}/").json()
    assert detail == first


@pytest.mark.parametrize("version", ["999999", "0", "abc", "99999999999999999999", "-1", "²", "\u0661"])
def test_an_unknown_snapshot_is_a_404(api_client, snapshot, version):
    assert_error(api_client.get(f"/api/v1/snapshots/{version}/"), 404, "snapshot_not_found")


# --- episodes -------------------------------------------------------------------------------------------------


def test_create_an_episode_on_the_latest_snapshot(api_client, snapshot):
    episode = open_episode(api_client, label="api test")
    assert episode["snapshot_version"] == WorldSnapshot.objects.order_by("-version").first().version
    assert episode["status"] == "open"
    assert episode["step_count"] == 0
    assert episode["label"] == "api test"
    assert episode["urls"]["self"] == f"http://testserver{EPISODES}{episode['id']}/"
    assert episode["urls"]["close"].endswith(f"{episode['id']}/close/")
    assert Episode.objects.filter(pk=episode["id"], snapshot__version=episode["snapshot_version"]).exists()
    assert api_client.get(episode["urls"]["self"]).json() == episode


def test_create_an_episode_on_a_named_snapshot_with_an_empty_body(api_client, snapshot):
    named = open_episode(api_client, snapshot_version=snapshot.version)
    assert named["snapshot_version"] == snapshot.version and named["label"] == ""
    response = api_client.post(EPISODES, "", content_type="application/json")
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"snapshot_version": 999999}, "snapshot_version"),
        ({"snapshot_version": 0}, "snapshot_version"),
        ({"snapshot_version": "latest"}, "snapshot_version"),
        ({"snapshot_version": 2**40}, "snapshot_version"),
        ({"label": "x" * 201}, "label"),
        ({"label": "a\u0000b"}, "label"),
        ({"label": ["a list"]}, "label"),
    ],
)
def test_bad_episode_input_is_a_400_naming_the_field(api_client, snapshot, body, field):
    error = assert_error(api_client.post(EPISODES, body, format="json"), 400, "invalid")
    assert list(error["fields"]) == [field]
    assert field in error["message"]
    assert not Episode.objects.exists()


def test_unknown_snapshot_version_lists_the_published_ones(api_client, snapshot):
    error = assert_error(api_client.post(EPISODES, {"snapshot_version": 999999}, format="json"), 400, "invalid")
    assert f"published versions: {snapshot.version}" in error["fields"]["snapshot_version"][0]


@pytest.mark.parametrize("body", ["[1, 2]", '"label"', "42", "null"])
def test_an_episode_body_that_is_not_an_object_is_a_400(api_client, snapshot, body):
    response = api_client.post(EPISODES, body, content_type="application/json")
    error = assert_error(response, 400, "invalid")
    assert "non_field_errors" in error["fields"]


def test_malformed_json_and_other_media_types_are_refused(api_client, snapshot):
    assert_error(api_client.post(EPISODES, "{label:", content_type="application/json"), 400, "parse_error")
    deep = "[" * 100_000 + "]" * 100_000
    assert_error(api_client.post(EPISODES, deep, content_type="application/json"), 400, "parse_error")
    form = api_client.post(EPISODES, "label=x", content_type="application/x-www-form-urlencoded")
    assert_error(form, 415, "unsupported_media_type")
    assert not Episode.objects.exists()


def test_no_published_snapshot_is_a_409(api_client, snapshot):
    Episode.objects.all().delete()
    WorldSnapshot.objects.all().delete()
    error = assert_error(api_client.post(EPISODES, {}, format="json"), 409, "snapshot_not_published")
    assert "publish_world" in error["message"]


@pytest.mark.parametrize("episode_id", [UNKNOWN_EPISODE, "not-a-uuid", "1234", "' OR 1=1 --"])
def test_an_unknown_or_malformed_episode_is_a_404_everywhere(api_client, snapshot, episode_id):
    base = f"{EPISODES}{episode_id}/"
    for response in (
        api_client.get(base),
        api_client.get(f"{base}steps/"),
        api_client.get(f"{base}diff/"),
        api_client.get(f"{base}state-checksum/"),
        api_client.post(f"{base}close/"),
        api_client.post(f"{base}tools/get_product/", {"product_id": "prd-00001"}, format="json"),
    ):
        assert_error(response, 404, "episode_not_found")


def test_a_method_an_endpoint_does_not_have_is_a_405(api_client, snapshot):
    assert_error(api_client.delete(EPISODES), 405, "method_not_allowed")
    assert_error(api_client.get(f"{EPISODES}{UNKNOWN_EPISODE}/close/"), 405, "method_not_allowed")


# --- tools ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "key"),
    [
        ("openai", "function"),
        ("openai-strict", "function"),
        ("mcp", "inputSchema"),
        ("registry", "input_schema"),
        (None, "function"),
    ],
)
def test_tool_schemas_in_each_format(api_client, fmt, key):
    url = "/api/v1/tools/" + (f"?format={fmt}" if fmt else "")
    body = api_client.get(url).json()
    assert body["format"] == (fmt or "openai")
    assert body["count"] == len(body["tools"]) == len(all_tools()) == 23 + 1  # + ask_user
    assert all(key in schema for schema in body["tools"])


def test_an_unknown_schema_format_is_a_400(api_client):
    error = assert_error(api_client.get("/api/v1/tools/?format=xml"), 400, "invalid")
    assert list(error["fields"]) == ["format"]


def test_one_tool_and_an_unknown_tool(api_client):
    tool = api_client.get("/api/v1/tools/create_refund/").json()
    assert tool["group"] == "write"
    assert tool["input_schema"]["required"] == ["reason"]
    assert tool["summary"] in tool["description"]
    assert_error(api_client.get("/api/v1/tools/drop_tables/"), 404, "unknown_tool")


# --- calling tools --------------------------------------------------------------------------------------------


def test_call_a_read_tool(api_client, snapshot):
    episode = open_episode(api_client)
    response = call(api_client, episode, "search_customers", {"loyalty_tier": "gold", "limit": 2})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"episode", "seq", "tool", "result", "is_error", "duration_ms"}
    assert body["episode"] == episode["id"] and body["seq"] == 1 and body["tool"] == "search_customers"
    assert body["is_error"] is False
    assert len(body["result"]["items"]) == 2 and body["result"]["has_more"] is True
    assert body["duration_ms"] > 0
    second = call(api_client, episode, "search_customers", None).json()
    assert second["seq"] == 2 and second["result"]["offset"] == 0


def test_bad_arguments_and_refusals_are_tool_results_not_http_errors(api_client, snapshot):
    episode = open_episode(api_client)
    invalid = call(api_client, episode, "get_order_details", {"order": "ord-1"})
    assert invalid.status_code == 200
    assert invalid.json()["is_error"] is True
    assert invalid.json()["result"]["error"]["code"] == "invalid_arguments"
    missing = call(api_client, episode, "get_order_details", {"order_id": "ord-nope"}).json()
    assert missing["is_error"] is True and missing["result"]["error"]["code"] == "not_found"
    ticket_id, _ = new_ticket_and_agent()
    refused = call(api_client, episode, "update_ticket_status", {"ticket_id": ticket_id, "status": "resolved"}).json()
    assert refused["is_error"] is True and refused["result"]["error"]["code"] == "policy_violation"
    assert [s.is_error for s in EpisodeStep.objects.filter(episode_id=episode["id"]).order_by("seq")] == [True] * 3


@pytest.mark.parametrize(
    ("body", "kind"), [("[]", "an array"), ('"x"', "a string"), ("3", "a number"), ("null", "null")]
)
def test_a_tool_call_body_that_is_not_an_object_is_a_400(api_client, snapshot, body, kind):
    episode = open_episode(api_client)
    url = f"{EPISODES}{episode['id']}/tools/search_customers/"
    error = assert_error(api_client.post(url, body, content_type="application/json"), 400, "invalid")
    assert error["fields"] == {"body": [f"the body must be a JSON object of the tool's named arguments, not {kind}"]}
    assert not EpisodeStep.objects.filter(episode_id=episode["id"]).exists()


@pytest.mark.parametrize(
    ("raw_body", "field"),
    [
        ('{"query": "a\\u0000b"}', "body.query"),
        ('{"query": "\\ud800"}', "body.query"),
        ('{"specs": {"x\\u0000": 1}}', "body.specs"),
        ('{"items": [{"product_id": "\\udfff"}]}', "body.items[0].product_id"),
    ],
)
def test_text_the_log_cannot_store_is_a_400(api_client, snapshot, raw_body, field):
    episode = open_episode(api_client)
    url = f"{EPISODES}{episode['id']}/tools/search_customers/"
    error = assert_error(api_client.post(url, raw_body, content_type="application/json"), 400, "invalid")
    assert list(error["fields"]) == [field]
    assert not EpisodeStep.objects.filter(episode_id=episode["id"]).exists()


def test_an_unknown_tool_is_a_404_and_is_not_logged(api_client, snapshot):
    episode = open_episode(api_client)
    assert_error(call(api_client, episode, "rm_rf", {}), 404, "unknown_tool")
    assert not EpisodeStep.objects.filter(episode_id=episode["id"]).exists()


def test_a_write_is_seen_by_its_episode_only(api_client, snapshot):
    ticket_id, agent_id = new_ticket_and_agent()
    mine, other = open_episode(api_client), open_episode(api_client)
    written = call(
        api_client, mine, "update_ticket_status", {"ticket_id": ticket_id, "status": "open", "assignee_id": agent_id}
    )
    assert written.json()["is_error"] is False, written.json()

    diff = api_client.get(mine["urls"]["diff"]).json()
    assert diff["counts"] == {"created": 0, "updated": 1, "deleted": 0}
    change = diff["diff"]["updated"][0]
    assert (change["model"], change["pk"]) == ("supportticket", ticket_id)
    assert change["fields"]["status"] == {"before": "new", "after": "open"}
    assert change["fields"]["assignee_id"]["after"] == agent_id

    assert api_client.get(other["urls"]["diff"]).json()["counts"] == {"created": 0, "updated": 0, "deleted": 0}
    seen_by_other = call(api_client, other, "get_customer_ticket_history", {"customer_id": _customer_of(ticket_id)})
    statuses = {t["id"]: t["status"] for t in seen_by_other.json()["result"]["items"]}
    assert statuses[ticket_id] == "new"
    assert SupportTicket.objects.get(pk=ticket_id).status == "new"  # the live world is untouched

    mine_sum = api_client.get(mine["urls"]["state_checksum"]).json()
    other_sum = api_client.get(other["urls"]["state_checksum"]).json()
    assert mine_sum["changed"] is True and mine_sum["state_checksum"] != snapshot.content_checksum
    assert other_sum == {
        "episode": other["id"],
        "state_checksum": snapshot.content_checksum,
        "snapshot_checksum": snapshot.content_checksum,
        "changed": False,
    }


def _customer_of(ticket_id: str) -> str:
    return SupportTicket.objects.get(pk=ticket_id).customer_id


def test_the_steps_endpoint_lists_the_calls_in_order(api_client, snapshot):
    episode = open_episode(api_client)
    ticket_id, agent_id = new_ticket_and_agent()
    calls = [
        ("search_tickets", {"status": "new", "limit": 1}),
        ("get_order_details", {"order_id": "ord-none"}),
        ("update_ticket_status", {"ticket_id": ticket_id, "status": "open", "assignee_id": agent_id}),
        ("search_employees", {"support_role": "agent", "limit": 1}),
    ]
    for tool, arguments in calls:
        call(api_client, episode, tool, arguments)

    page = api_client.get(f"{episode['urls']['steps']}?limit=3").json()
    assert page["count"] == 4 and page["previous"] is None and "offset=3" in page["next"]
    assert [(s["seq"], s["tool"], s["arguments"]) for s in page["results"]] == [
        (i + 1, tool, arguments) for i, (tool, arguments) in enumerate(calls[:3])
    ]
    assert [s["is_error"] for s in page["results"]] == [False, True, False]
    assert "changes" not in page["results"][0]
    rest = api_client.get(page["next"]).json()
    assert [s["seq"] for s in rest["results"]] == [4]
    beyond = api_client.get(f"{episode['urls']['steps']}?offset=99999999999999999999&limit=abc").json()
    assert beyond["count"] == 4 and beyond["results"] == []

    with_changes = api_client.get(f"{episode['urls']['steps']}?changes=true").json()["results"]
    assert [len(s["changes"]) for s in with_changes] == [0, 0, 1, 0]
    assert with_changes[2]["changes"][0]["pk"] == ticket_id
    assert api_client.get(episode["urls"]["self"]).json()["step_count"] == 4
    error = assert_error(api_client.get(f"{episode['urls']['steps']}?changes=maybe"), 400, "invalid")
    assert list(error["fields"]) == ["changes"]


def test_close_returns_the_final_diff_and_then_refuses_steps(api_client, snapshot):
    episode = open_episode(api_client)
    ticket_id, agent_id = new_ticket_and_agent()
    call(
        api_client, episode, "update_ticket_status", {"ticket_id": ticket_id, "status": "open", "assignee_id": agent_id}
    )
    live_checksum = api_client.get(episode["urls"]["state_checksum"]).json()["state_checksum"]

    closed = api_client.post(episode["urls"]["close"])
    assert closed.status_code == 200
    body = closed.json()
    assert body["episode"]["status"] == "closed" and body["episode"]["closed_at"]
    assert body["state_checksum"] == live_checksum
    assert [u["pk"] for u in body["diff"]["updated"]] == [ticket_id]

    error = assert_error(call(api_client, episode, "search_customers", {}), 409, "episode_closed")
    assert episode["id"] in error["message"]
    assert EpisodeStep.objects.filter(episode_id=episode["id"]).count() == 1
    again = api_client.post(episode["urls"]["close"]).json()
    assert again["state_checksum"] == body["state_checksum"] and again["diff"] == body["diff"]
    assert api_client.get(episode["urls"]["diff"]).json()["diff"] == body["diff"]
    assert api_client.get(episode["urls"]["steps"]).json()["count"] == 1


def test_the_openapi_schema_documents_the_episode_api(api_client):
    schema = api_client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    call_op = paths["/api/v1/episodes/{episode_id}/tools/{name}/"]["post"]
    assert call_op["requestBody"]["content"]["application/json"]["schema"]["type"] == "object"
    assert {"200", "400", "401", "404", "409"} <= set(call_op["responses"])
    name = next(p for p in call_op["parameters"] if p["name"] == "name")
    assert len(name["schema"]["enum"]) == 23 + 1  # 23 world tools + ask_user
    episode_id = next(p for p in call_op["parameters"] if p["name"] == "episode_id")
    assert episode_id["schema"]["format"] == "uuid"
    assert set(schema["components"]["schemas"]["ApiError"]["properties"]) == {"error"}
    assert set(schema["components"]["schemas"]["ApiErrorDetail"]["properties"]) == {"code", "message", "fields"}
    world_api = re.compile(r"^/api/v1/(snapshots|episodes|tools)/")  # the export and trainer APIs are documented too
    assert {p for p in paths if world_api.match(p)} == {
        "/api/v1/snapshots/",
        "/api/v1/snapshots/{version}/",
        "/api/v1/episodes/",
        "/api/v1/episodes/{episode_id}/",
        "/api/v1/episodes/{episode_id}/steps/",
        "/api/v1/episodes/{episode_id}/diff/",
        "/api/v1/episodes/{episode_id}/state-checksum/",
        "/api/v1/episodes/{episode_id}/close/",
        "/api/v1/episodes/{episode_id}/tools/{name}/",
        "/api/v1/tools/",
        "/api/v1/tools/{name}/",
    }


def test_the_api_docs_load_their_assets_from_this_server(api_client, client):
    """Swagger UI from drf-spectacular-sidecar: the page works offline, nothing comes from a CDN."""
    html = client.get(reverse("api-docs")).content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css|png))"', html)
    assert assets and all(a.startswith("/static/") for a in assets), assets
    assert "cdn" not in html.lower()
    schema = api_client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    stream = schema["paths"]["/api/v1/releases/{slug}/rows.jsonl"]["get"]
    assert "application/x-ndjson" in stream["responses"]["200"]["content"]
