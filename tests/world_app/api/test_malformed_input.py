"""Malformed input is a 400 that says what is wrong, never a 500: numbers no float holds, NUL characters,
bodies over the size limit; and the pages that take free text (look-ups, entity URLs) the same."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.tasks_app.factories import author

pytestmark = pytest.mark.django_db(databases=["default", "episode"])

EPISODES = "/api/v1/episodes/"


def _open(api_client) -> str:
    response = api_client.post(EPISODES, {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize("raw", ['{"order_id": 1e400}', '{"order_id": -1e999}', '{"order_id": NaN}', "[Infinity]"])
def test_numbers_json_cannot_carry_are_a_400(api_client, snapshot, raw):
    episode_id = _open(api_client)
    response = api_client.post(
        f"{EPISODES}{episode_id}/tools/get_order_details/", data=raw, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "parse_error"
    assert "JSON parse error" in response.json()["error"]["message"]


def test_a_body_over_the_limit_is_a_400(api_client, snapshot, settings):
    episode_id = _open(api_client)
    body = json.dumps({"query": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)})
    response = api_client.post(
        f"{EPISODES}{episode_id}/tools/search_orders/", data=body, content_type="application/json"
    )
    assert response.status_code in (400, 413), response.content
    assert response.status_code != 500


def test_nul_in_an_episode_url_is_a_404_not_a_500(api_client, snapshot):
    response = api_client.get(f"{EPISODES}abc%00def/")
    assert response.status_code == 404


def test_nul_in_look_ups_and_entity_urls_is_a_400(client, snapshot):
    client.force_login(author())
    response = client.get(reverse("world:lookup"), {"kind": "customer", "q": "ab\x00c"})
    assert response.status_code == 400 and b"NUL" in response.content
    response = client.get("/world/entity/customer/cus%0000001/")
    assert response.status_code == 400 and b"NUL" in response.content
