"""The tools page: every tool from the registry with its parameters and a real example call on the latest snapshot."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core.cache import cache
from django.urls import reverse

from tests.factories import UserFactory
from world_app.checksum import world_content_checksum
from world_app.models import Episode, WorldSnapshot
from world_app.tool_examples import EPISODE_LABEL, _cache_key, tool_examples_get, tool_examples_run
from world_app.tool_reference import parameter_rows
from world_app.tools import all_tools, get_tool

pytestmark = pytest.mark.django_db(databases=["default", "episode"])

TOOLS_URL = "/world/tools/"


@pytest.fixture
def viewer_client(client):
    client.force_login(UserFactory(username="tools-reader"))
    return client


@pytest.fixture
def fresh_examples(snapshot):
    cache.delete(_cache_key(snapshot))
    yield
    cache.delete(_cache_key(snapshot))


def test_the_page_needs_a_login(client):
    response = client.get(TOOLS_URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_every_example_is_a_real_successful_call_that_changes_nothing_live(snapshot):
    live_before = world_content_checksum()
    examples = tool_examples_run(snapshot=snapshot)
    assert list(examples) == [t.name for t in all_tools()]
    failed = {name: e.result for name, e in examples.items() if e.is_error}
    assert not failed
    # Arguments name real rows of the snapshot, and writes really wrote.
    assert examples["get_order_details"].result["order"]["id"] == examples["get_order_details"].arguments["order_id"]
    assert examples["create_refund"].result["refund"]["status"] == "approved"
    assert examples["update_ticket_status"].result["ticket"]["status"] == "open"
    assert examples["create_warranty_claim"].result["claim"]["status"] == "approved"
    assert not Episode.objects.filter(label=EPISODE_LABEL).exists()
    assert world_content_checksum() == live_before


def test_the_page_shows_every_tool_with_parameters_and_its_example(viewer_client, snapshot, fresh_examples):
    response = viewer_client.get(TOOLS_URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert f"snapshot <strong>v{snapshot.version}</strong>" in html
    for tool in all_tools():
        assert f'<details class="card tool" id="{tool.name}">' in html
        assert f'href="#{tool.name}"' in html  # in the table of contents
        section = html[html.index(f'id="{tool.name}"') :]
        section = section[: section.index("</details>")]
        for row in parameter_rows(tool.input_schema()):
            assert f">{row.name}</td>" in section
        results = re.findall(r'<pre class="json result">(.*?)</pre>', section, re.S)
        assert len(results) == 1 and results[0].strip().startswith("{")
        assert "is_error" not in section
    assert cache.get(_cache_key(snapshot)) is not None
    assert reverse("world:tools") in html  # the nav link


def test_examples_are_cached_per_snapshot(viewer_client, snapshot, fresh_examples):
    first = tool_examples_get(snapshot=snapshot)
    cached = cache.get(_cache_key(snapshot))
    cached["get_product"]["result"] = {"marker": "served from the cache"}
    cache.set(_cache_key(snapshot), cached)
    assert tool_examples_get(snapshot=snapshot)["get_product"].result == {"marker": "served from the cache"}
    assert unescape(viewer_client.get(TOOLS_URL).content.decode()).count('"marker": "served from the cache"') == 1
    assert first["get_product"].result != {"marker": "served from the cache"}


def test_without_a_snapshot_the_page_still_documents_every_tool(viewer_client, snapshot):
    Episode.objects.all().delete()
    WorldSnapshot.objects.all().delete()
    html = viewer_client.get(TOOLS_URL).content.decode()
    assert "No snapshot is published yet" in html
    assert html.count('<details class="card tool"') == len(all_tools())
    assert '<pre class="json result">' not in html


def test_parameter_rows_read_the_json_schema():
    rows = {row.name: row for row in parameter_rows(get_tool("create_refund").input_schema())}
    assert rows["reason"].required and "one of: customer_remorse" in rows["reason"].constraints
    assert rows["lines"].type == "array of object" and "at most 50 items" in rows["lines"].constraints
    assert rows["lines[].quantity"].depth == 1 and rows["lines[].quantity"].constraints == "≥ 1; ≤ 1000"
    assert rows["notes"].default == '""'
    search = {row.name: row for row in parameter_rows(get_tool("search_products").input_schema())}
    assert search["limit"].default == "10" and search["limit"].constraints == "≥ 1; ≤ 50"
    assert search["query"].constraints == "not empty; at most 200 characters"
    assert search["specs"].type.startswith("object (name → ")
