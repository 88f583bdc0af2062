import uuid
from datetime import datetime

import pytest

# The public port's world clock; every test and the shared seeded world use it.
TEST_WORLD_NOW = datetime.fromisoformat("2025-09-15T14:00:00-05:00")
SEEDED_WORLD_SEED = 7
SEEDED_WORLD_SCALE = 1.0
# The production PBKDF2 hasher is left out: it would rehash every password a login checks at its own rounds.
QUICK_PASSWORD_HASHERS = ["tests.password_hashers.QuickPBKDF2PasswordHasher"]


def pytest_collection_modifyitems(items):
    """Run the tests on the shared seeded world after those that expect an empty one, and browser tests last.

    The seeded world is committed once (seeding it per test would cost seconds each), so a test that counts
    rows or creates fixture rows with the world's unique names must run before it exists. Playwright's sync
    API keeps an event loop in the main thread, which asyncio-based tests (MCP) cannot run beside.
    """

    def rank(item) -> int:
        if item.get_closest_marker("browser"):
            return 2
        return 1 if {"seeded_world", "seeded_world_session"} & set(item.fixturenames) else 0

    items.sort(key=rank)  # stable: files keep their order within a rank


@pytest.fixture(scope="session")
def _world_image_root(tmp_path_factory):
    return tmp_path_factory.mktemp("world-images")


@pytest.fixture(autouse=True)
def _world_image_dir(_world_image_root, monkeypatch):
    """Each test shares snapshot image files (world_app/episodes/shared_image.py) in a directory of its own, with
    the processes it starts, never with another test or run (a file is trusted by its image's SHA-256)."""
    monkeypatch.setenv("WORLD_IMAGE_DIR", str(_world_image_root / uuid.uuid4().hex))


@pytest.fixture(autouse=True)
def _world_clock(settings):
    """Every test sees the port's fixed world clock, whatever the environment says; and counts its failed logins
    on its own (the counts live in Redis, which outlives a test run); and writes token uses on the request path
    (a test's transaction is invisible to the background flusher's connection; tests/trainer_bridge/
    test_token_cache.py runs the batches); and hashes passwords at fewer PBKDF2 rounds (tests/password_hashers.py)."""
    settings.WORLD_NOW = TEST_WORLD_NOW
    settings.PASSWORD_HASHERS = QUICK_PASSWORD_HASHERS
    settings.API_USAGE_FLUSH_MS = 0
    settings.LOGIN_THROTTLE_KEY_PREFIX = f"test-login-failures-{uuid.uuid4().hex}"


def _seed_test_world():
    from django.test import override_settings

    from world_app.checksum import world_content_checksum
    from world_app.generator import world_seed

    with override_settings(WORLD_NOW=TEST_WORLD_NOW):
        manifest = world_seed(seed=SEEDED_WORLD_SEED, scale=SEEDED_WORLD_SCALE, reset=True)
        manifest.checksum = world_content_checksum()
    return manifest


@pytest.fixture(scope="session")
def seeded_world_session(django_db_setup, django_db_blocker):
    """The manifest of the world of seed 7, scale 1, seeded and committed ONCE per session, on first use.

    For session- or module-scoped fixtures that need the world. Tests should use ``seeded_world``.
    """
    with django_db_blocker.unblock():
        return _seed_test_world()


@pytest.fixture
def seeded_world(seeded_world_session, django_db_blocker):
    """The seed-7, scale-1 world in the test database, and its ``WorldManifest`` (counts, anomaly ids...).

    Seeded once per session and committed, so it costs nothing after the first test that asks for it. Use it
    with ``@pytest.mark.django_db``: whatever a test changes is rolled back with the test's transaction.
    A ``transaction=True`` test empties the database when it ends; the next test asking for the world then
    seeds it again inside its own transaction (slower, still correct).
    """
    from world_app.models import Customer, SupportTicket

    with django_db_blocker.unblock():
        intact = (
            Customer.objects.filter(pk="cus-00001").exists() and SupportTicket.objects.filter(pk="tkt-00001").exists()
        )
        if not intact:
            _seed_test_world()
    return seeded_world_session


@pytest.fixture
def fresh_episode_state():
    """This process starts and ends the test with no hot episode and no cached snapshot image, as a new process."""
    from world_app.episodes.cache import episode_cache
    from world_app.episodes.images import snapshot_images_clear

    episode_cache.clear()
    snapshot_images_clear()
    yield
    episode_cache.clear()
    snapshot_images_clear()


@pytest.fixture(autouse=True)
def trainer_reads_forgotten():
    """The trainer API's per-process copies of frozen rows and snapshots are dropped after each test: a test's
    database is gone after it, and the next test's snapshot v1 is another row."""
    yield
    from trainer_bridge import trainer_judge, trainer_services

    trainer_services._frozen_rows.clear()
    trainer_services._snapshots.clear()
    trainer_judge.judge_config_forget()


@pytest.fixture(autouse=True)
def step_writer_closed():
    """Deferred steps a test left are written, and the step writer's connection (which holds episode leases) is
    closed after each test: no lease outlives its test, and no connection keeps the test database from being
    dropped."""
    yield
    from world_app.episodes.step_log import step_writer

    step_writer.close()


@pytest.fixture
def wsgi_app():
    """The real WSGI app, keeping the test's connection (and transaction) across requests, as the test client does."""
    from django.core.signals import request_finished, request_started
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
