"""The API tests share one published snapshot of the seed-7 world, committed for this package and removed after."""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.conftest import TEST_WORLD_NOW, _seed_test_world
from tests.factories import UserFactory
from trainer_bridge.services import api_token_create
from world_app.episodes.cache import episode_cache
from world_app.models import Customer, Episode, WorldSnapshot
from world_app.snapshots import snapshot_publish


@pytest.fixture(scope="package")
def published_snapshot(seeded_world_session, django_db_blocker) -> WorldSnapshot:
    with django_db_blocker.unblock(), override_settings(WORLD_NOW=TEST_WORLD_NOW):
        if not Customer.objects.filter(pk="cus-00001").exists():
            _seed_test_world()  # a transactional test elsewhere emptied the database
        snapshot = snapshot_publish(note="api tests")
    yield snapshot
    with django_db_blocker.unblock():
        Episode.objects.filter(snapshot=snapshot).delete()
        WorldSnapshot.objects.filter(pk=snapshot.pk).delete()
    episode_cache.clear()


@pytest.fixture
def snapshot(published_snapshot, seeded_world) -> WorldSnapshot:
    """The published snapshot, with the live world it was made from in place."""
    return published_snapshot


@pytest.fixture
def api_user(db):
    return UserFactory(username="api-tester")


@pytest.fixture
def api_client(api_user) -> APIClient:
    client = APIClient()
    issued = api_token_create(name="api tests", scopes=["episodes"], created_by=api_user)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    client.token = issued.token
    return client
