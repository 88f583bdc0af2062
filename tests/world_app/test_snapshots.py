import hashlib
import sqlite3
import zlib
from datetime import datetime
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command, get_commands

from tests.factories import CustomerFactory, OrderFactory, small_world
from world_app.checksum import world_content_checksum
from world_app.episodes import (
    SnapshotIntegrityError,
    SnapshotNotPublished,
    episode_create,
    episode_state_checksum,
    episode_state_from_log,
    episode_step,
)
from world_app.episodes.image_codec import ZSTD_MAGIC, image_decompress
from world_app.episodes.images import snapshot_image, snapshot_images_clear
from world_app.episodes.shared_image import in_place_loading
from world_app.models import WORLD_MODELS, Customer, Order, WorldSnapshot
from world_app.snapshots import snapshot_latest, snapshot_publish

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


def _image_db(snapshot: WorldSnapshot) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    stored = WorldSnapshot.objects.get(pk=snapshot.pk)
    conn.deserialize(image_decompress(bytes(stored.image), stored.image_bytes))
    return conn


def test_publish_freezes_every_world_table_with_checksums():
    world = small_world()
    snapshot = snapshot_publish(note="first")

    assert snapshot.version == 1
    assert snapshot.content_checksum == world_content_checksum()
    stored = WorldSnapshot.objects.get(pk=snapshot.pk)
    image = image_decompress(bytes(stored.image), stored.image_bytes)
    assert bytes(stored.image)[:4] == ZSTD_MAGIC
    assert hashlib.sha256(image).hexdigest() == stored.image_sha256
    assert len(image) == stored.image_bytes
    assert stored.entity_counts["customer"] == 1
    assert stored.entity_counts["order"] == 1
    assert stored.world_now == datetime.fromisoformat("2025-09-15T14:00:00-05:00")

    conn = _image_db(snapshot)
    for model in WORLD_MODELS:
        rows = conn.execute(f'SELECT count(*) FROM "{model._meta.db_table}"').fetchone()[0]
        assert rows == model.objects.count(), model.__name__
    assert conn.execute("SELECT total FROM world_app_order WHERE id = ?", [world["order"].id]).fetchone() == (
        float(world["order"].total),
    )
    # The change-capture table ships empty: copying the world is nobody's change.
    assert conn.execute("SELECT count(*) FROM _episode_changes").fetchone() == (0,)


def test_versions_are_numbered_and_if_changed_reuses_an_identical_snapshot():
    CustomerFactory()
    first = snapshot_publish(note="first")
    same = snapshot_publish(note="again", if_changed=True)
    assert same.pk == first.pk
    assert WorldSnapshot.objects.count() == 1

    CustomerFactory()
    second = snapshot_publish(note="second", if_changed=True)
    assert second.version == first.version + 1
    assert second.content_checksum != first.content_checksum
    forced = snapshot_publish(note="forced")
    assert forced.version == 3
    assert forced.content_checksum == second.content_checksum
    assert snapshot_latest().pk == forced.pk


def test_editing_the_live_world_after_publishing_changes_nothing_in_the_snapshot():
    order = OrderFactory(status="paid")
    snapshot = snapshot_publish(note="before edits")
    stored = WorldSnapshot.objects.get(pk=snapshot.pk)
    image_sha, checksum = stored.image_sha256, stored.content_checksum

    Order.objects.filter(pk=order.pk).update(status="cancelled", total=Decimal("0.00"))
    Customer.objects.filter(pk=order.customer_id).update(first_name="Renamed")
    CustomerFactory()

    stored.refresh_from_db()
    assert (stored.image_sha256, stored.content_checksum) == (image_sha, checksum)
    assert world_content_checksum() != checksum
    conn = _image_db(snapshot)
    assert conn.execute("SELECT status FROM world_app_order WHERE id = ?", [order.id]).fetchone() == ("paid",)
    assert conn.execute("SELECT count(*) FROM world_app_customer").fetchone() == (1,)


def test_image_loads_in_any_process_and_its_content_matches_the_recorded_checksum():
    small_world()
    snapshot = snapshot_publish(note="v1")
    loaded = snapshot_image(snapshot.pk)
    assert loaded.version == 1
    assert hashlib.sha256(loaded.image.read()).hexdigest() == snapshot.image_sha256
    # On CPython + Linux every episode maps this one image copy-on-write instead of copying it.
    assert in_place_loading()


def test_the_image_file_is_shared_by_every_process_of_the_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("WORLD_IMAGE_DIR", str(tmp_path))
    small_world()
    snapshot = snapshot_publish(note="v1")
    first = snapshot_image(snapshot.pk)
    assert first.image.path == tmp_path / f"{snapshot.image_sha256}.sqlite"
    snapshot_images_clear()  # as a new process
    # The next process opens the file another wrote: the stored image is not even read.
    WorldSnapshot.objects.filter(pk=snapshot.pk).update(image=b"")
    again = snapshot_image(snapshot.pk)
    assert again.image.path == first.image.path
    assert hashlib.sha256(again.image.read()).hexdigest() == snapshot.image_sha256
    episode = episode_create(snapshot=snapshot, label="shared file")
    assert episode_state_from_log(episode)["state_checksum"] == snapshot.content_checksum


def test_a_shared_directory_others_may_write_to_is_not_trusted(monkeypatch, tmp_path):
    open_to_all = tmp_path / "images"
    open_to_all.mkdir(mode=0o777)
    open_to_all.chmod(0o777)
    monkeypatch.setenv("WORLD_IMAGE_DIR", str(open_to_all))
    small_world()
    snapshot = snapshot_publish(note="v1")
    loaded = snapshot_image(snapshot.pk)
    assert loaded.image.path is None  # a private copy: a file planted there could hold another world
    assert list(open_to_all.iterdir()) == []
    assert hashlib.sha256(loaded.image.read()).hexdigest() == snapshot.image_sha256


def test_without_a_shared_directory_each_process_keeps_its_own_copy(monkeypatch):
    monkeypatch.setenv("WORLD_IMAGE_DIR", "")
    small_world()
    snapshot = snapshot_publish(note="v1")
    loaded = snapshot_image(snapshot.pk)
    assert loaded.image.path is None
    assert hashlib.sha256(loaded.image.read()).hexdigest() == snapshot.image_sha256


def test_a_snapshot_of_other_world_models_is_refused():
    CustomerFactory()
    snapshot = snapshot_publish(note="v1")
    WorldSnapshot.objects.filter(pk=snapshot.pk).update(schema_fingerprint="0" * 64)
    with pytest.raises(SnapshotIntegrityError, match="publish a new snapshot"):
        snapshot_image(snapshot.pk)


def test_a_tampered_image_is_refused():
    CustomerFactory()
    snapshot = snapshot_publish(note="v1")
    conn = _image_db(snapshot)
    conn.execute("UPDATE world_app_customer SET first_name = 'Mallory'")
    conn.commit()
    WorldSnapshot.objects.filter(pk=snapshot.pk).update(image=zlib.compress(conn.serialize()))

    with pytest.raises(SnapshotIntegrityError):
        snapshot_image(snapshot.pk)


def test_latest_without_any_snapshot_says_how_to_publish():
    with pytest.raises(SnapshotNotPublished, match="publish_world"):
        snapshot_latest()


def test_publish_world_command_prints_version_checksum_and_size(capsys):
    small_world()
    call_command("publish_world", "--note", "from the command")
    out = capsys.readouterr().out
    snapshot = snapshot_latest()
    assert f"v{snapshot.version}" in out
    assert snapshot.content_checksum in out
    assert snapshot.note == "from the command"

    call_command("publish_world", "--note", "unchanged", "--if-changed")
    assert f"world v{snapshot.version} is unchanged" in capsys.readouterr().out
    assert WorldSnapshot.objects.count() == 1


@pytest.mark.skipif("seed_world" not in get_commands(), reason="the world generator is not installed")
def test_a_generated_world_with_its_mess_survives_the_trip_into_the_image_and_back():
    call_command("seed_world", seed=7, scale=0.25, stdout=StringIO())
    snapshot = snapshot_publish(note="generated")  # verifies the image's checksum against the live world's
    assert snapshot.content_checksum == world_content_checksum()
    assert sum(snapshot.entity_counts.values()) > 500

    episode = episode_create(snapshot=snapshot)
    order = Order.objects.order_by("pk").first()

    def cancel():
        Order.objects.filter(pk=order.pk).update(status="cancelled", notes="cancelled in the episode")
        return {"ok": True}

    episode_step(episode=episode, name="cancel", arguments={}, fn=cancel)
    rebuilt = episode_state_from_log(episode)
    assert rebuilt["state_checksum"] == episode_state_checksum(episode)
    assert rebuilt["diff"]["updated"][0]["fields"]["notes"]["after"] == "cancelled in the episode"


def test_publish_stores_the_table_digests_an_episode_checksum_starts_from(monkeypatch):
    from world_app import checksum
    from world_app.episodes import images
    from world_app.episodes.images import snapshot_images_clear, snapshot_table_digests

    small_world()
    snapshot = snapshot_publish(note="v1")
    stored = WorldSnapshot.objects.get(pk=snapshot.pk).table_digests
    assert set(stored) == {model._meta.db_table for model in WORLD_MODELS}
    scanned = checksum.world_table_digests()
    assert checksum.table_digests_read(stored) == scanned
    assert checksum.checksum_from_digests(checksum.table_digests_read(stored)) == snapshot.content_checksum

    # A fresh process reads them with the image: no scan of the world on its first episode close.
    snapshot_images_clear()
    scans = []
    monkeypatch.setattr(checksum, "world_table_digests", lambda **kw: scans.append(kw) or scanned)
    assert snapshot_table_digests(images.snapshot_image(snapshot.pk)) == scanned and scans == []

    # A snapshot published before digests were stored (or with digests that do not make its checksum) is scanned.
    for wrong in ({}, {**stored, "world_app_customer": [99, "0" * 64]}):
        WorldSnapshot.objects.filter(pk=snapshot.pk).update(table_digests=wrong)
        snapshot_images_clear()
        assert snapshot_table_digests(images.snapshot_image(snapshot.pk)) == scanned
    assert len(scans) == 2


def test_an_image_stored_with_zlib_before_zstd_still_loads(monkeypatch):
    """Snapshots published before zstd hold zlib streams: they load, from Postgres and decompressed, as before."""
    monkeypatch.setenv("WORLD_IMAGE_DIR", "")  # no shared file from an earlier load: read from Postgres
    CustomerFactory(first_name="Zed")
    snapshot = snapshot_publish(note="zlib")
    stored = WorldSnapshot.objects.get(pk=snapshot.pk)
    image = image_decompress(bytes(stored.image), stored.image_bytes)
    WorldSnapshot.objects.filter(pk=snapshot.pk).update(image=zlib.compress(image, 6))
    snapshot_images_clear()
    loaded = snapshot_image(snapshot.pk)
    assert hashlib.sha256(loaded.image.read()).hexdigest() == snapshot.image_sha256
    conn = sqlite3.connect(":memory:")
    conn.deserialize(loaded.image.read())
    assert conn.execute("SELECT count(*) FROM world_app_customer WHERE first_name = 'Zed'").fetchone() == (1,)
