import json
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from tests.factories import CustomerFactory, OrderFactory, ProductFactory, small_world
from tests.processes import ROOT, app_process_env
from world_app.checksum import world_content_checksum
from world_app.clock import world_now
from world_app.episodes import (
    EpisodeClosed,
    EpisodeError,
    EpisodeNotFound,
    episode_close,
    episode_create,
    episode_diff,
    episode_log_settle,
    episode_state_checksum,
    episode_state_from_log,
    episode_step,
    episode_world,
    episodes_close_idle,
    episodes_purge_closed,
)
from world_app.episodes.cache import EpisodeCache, episode_cache
from world_app.episodes.images import snapshot_images_clear
from world_app.models import Customer, Episode, EpisodeStep, Order, Product, WorldSnapshot
from world_app.snapshots import snapshot_publish

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def world():
    rows = small_world()
    rows["snapshot"] = snapshot_publish(note="test world")
    return rows


def set_order_status(order_id: str, status: str):
    def call():
        order = Order.objects.get(pk=order_id)
        order.status = status
        order.save(update_fields=["status"])
        return {"order_id": order_id, "status": order.status}

    return call


def add_customer(customer_id: str, first_name: str):
    def call():
        Customer.objects.create(id=customer_id, first_name=first_name, last_name="Novak", email=f"{customer_id}@x.io")
        return {"customer_id": customer_id}

    return call


def delete_article(article_id: str):
    def call():
        from world_app.models import KnowledgeBaseArticle

        KnowledgeBaseArticle.objects.filter(pk=article_id).delete()
        return {"deleted": article_id}

    return call


def order_status_in(episode, order_id: str) -> str:
    with episode_world(episode):
        return Order.objects.get(pk=order_id).status


def test_two_episodes_change_the_same_row_and_each_sees_only_its_own_change(world):
    order_id = world["order"].id
    live_checksum = world_content_checksum()
    first, second = episode_create(label="a"), episode_create(label="b")

    episode_step(episode=first, name="cancel", arguments={}, fn=set_order_status(order_id, "cancelled"))
    episode_step(episode=second, name="refund", arguments={}, fn=set_order_status(order_id, "refunded"))
    episode_step(episode=first, name="add", arguments={}, fn=add_customer("cus-new01", "Ada"))
    episode_step(episode=second, name="drop", arguments={}, fn=delete_article(world["article"].id))

    assert order_status_in(first, order_id) == "cancelled"
    assert order_status_in(second, order_id) == "refunded"
    with episode_world(first):
        assert Customer.objects.filter(pk="cus-new01").exists()
        assert world["article"].__class__.objects.filter(pk=world["article"].id).exists()
    with episode_world(second):
        assert not Customer.objects.filter(pk="cus-new01").exists()
        assert not world["article"].__class__.objects.filter(pk=world["article"].id).exists()

    # The live world and the snapshot are untouched.
    assert Order.objects.get(pk=order_id).status == "paid"
    assert not Customer.objects.filter(pk="cus-new01").exists()
    assert world_content_checksum() == live_checksum
    snapshot = WorldSnapshot.objects.get(pk=world["snapshot"].pk)
    assert snapshot.content_checksum == live_checksum
    fresh = episode_create(label="untouched")
    assert episode_state_checksum(fresh) == live_checksum
    with episode_world(fresh):
        assert world_content_checksum(using="episode") == live_checksum  # the full scan agrees
    assert episode_state_checksum(first) not in {live_checksum, episode_state_checksum(second)}
    # The checksum of a changed episode is updated from the snapshot's table digests, not rescanned: it must
    # equal a full scan of the episode's world (an update, an insert and a delete among them).
    for episode in (first, second):
        with episode_world(episode):
            scanned = world_content_checksum(using="episode")
        assert episode_state_checksum(episode) == scanned


def test_diff_is_field_level_for_created_updated_and_deleted_rows(world):
    episode = episode_create()
    order = world["order"]
    episode_step(
        episode=episode, name="cancel", arguments={"order_id": order.id}, fn=set_order_status(order.id, "cancelled")
    )
    episode_step(episode=episode, name="add", arguments={}, fn=add_customer("cus-new02", "Grace"))
    episode_step(episode=episode, name="drop", arguments={}, fn=delete_article(world["article"].id))

    def touch_without_change():
        customer = Customer.objects.get(pk=world["customer"].id)
        customer.save()  # an UPDATE writing the same values: touched, but no difference

    episode_step(episode=episode, name="noop", arguments={}, fn=touch_without_change)

    diff = episode_diff(episode)
    assert diff["updated"] == [
        {
            "table": "world_app_order",
            "model": "order",
            "pk": order.id,
            "fields": {"status": {"before": "paid", "after": "cancelled"}},
        }
    ]
    [created] = diff["created"]
    assert (created["model"], created["pk"]) == ("customer", "cus-new02")
    assert created["row"]["first_name"] == "Grace"
    assert created["row"]["created_at"] == "2025-09-15T19:00:00+00:00"  # the world clock, canonical UTC
    [deleted] = diff["deleted"]
    assert (deleted["model"], deleted["pk"]) == ("knowledgebasearticle", world["article"].id)
    assert deleted["row"]["tags"] == ["returns", "policy"]
    json.dumps(diff)  # JSON all the way down


def test_a_change_undone_within_the_episode_leaves_no_diff_and_the_snapshots_checksum(world):
    episode = episode_create()
    order_id = world["order"].id
    episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(order_id, "cancelled"))
    episode_step(episode=episode, name="undo", arguments={}, fn=set_order_status(order_id, "paid"))
    assert episode_diff(episode) == {"created": [], "updated": [], "deleted": []}
    assert episode_state_checksum(episode) == world["snapshot"].content_checksum
    with episode_world(episode):
        assert world_content_checksum(using="episode") == world["snapshot"].content_checksum


def test_decimal_and_json_fields_diff_with_their_real_types(world):
    episode = episode_create()
    product_id = world["gpu"].id

    def reprice():
        product = Product.objects.get(pk=product_id)
        product.price = Decimal("449.50")
        product.specs = {**product.specs, "vram_gb": 16}
        product.save()

    episode_step(episode=episode, name="reprice", arguments={}, fn=reprice)
    [updated] = episode_diff(episode)["updated"]
    assert updated["fields"]["price"] == {"before": "499.99", "after": "449.50"}
    assert updated["fields"]["specs"]["before"]["vram_gb"] == 12
    assert updated["fields"]["specs"]["after"]["vram_gb"] == 16
    with episode_world(episode):
        assert Product.objects.get(pk=product_id).price == Decimal("449.50")


def test_the_world_clock_inside_an_episode_is_the_snapshots(world, settings):
    episode = episode_create()
    settings.WORLD_NOW = datetime.fromisoformat("2030-01-01T00:00:00+00:00")
    assert world_now() == settings.WORLD_NOW
    with episode_world(episode):
        assert world_now() == datetime.fromisoformat("2025-09-15T14:00:00-05:00")

    def stamp():
        return {"now": world_now().isoformat()}

    step = episode_step(episode=episode, name="clock", arguments={}, fn=stamp)
    assert step.result == {"now": "2025-09-15T19:00:00+00:00"}
    assert world_now() == settings.WORLD_NOW


def test_a_step_is_logged_with_its_result_and_changes(world):
    episode = episode_create()
    step = episode_step(
        episode=str(episode.pk),
        name="cancel_order",
        arguments={"order_id": world["order"].id},
        fn=set_order_status(world["order"].id, "cancelled"),
    )
    assert (step.seq, step.name, step.is_error) == (1, "cancel_order", False)
    assert step.result == {"order_id": world["order"].id, "status": "cancelled"}
    assert step.duration_ms >= 0
    [change] = step.changes
    assert (change["table"], change["pk"], change["op"]) == ("world_app_order", world["order"].id, "upsert")
    assert change["row"]["status"] == "cancelled"
    episode.refresh_from_db()
    assert episode.step_count == 1

    error = episode_step(episode=episode, name="lookup", arguments={}, fn=lambda: {"error": "no such order"})
    assert (error.seq, error.is_error, error.changes) == (2, True, [])


def test_a_call_that_raises_is_rolled_back_and_not_logged(world):
    episode = episode_create()
    order_id = world["order"].id

    def half_done():
        set_order_status(order_id, "cancelled")()
        raise ValueError("tool bug")

    with pytest.raises(ValueError, match="tool bug"):
        episode_step(episode=episode, name="broken", arguments={}, fn=half_done)

    def unloggable_result():
        set_order_status(order_id, "cancelled")()
        return {"refund": Decimal("10.00")}  # not JSON: the step cannot be logged, so it must not happen

    with pytest.raises(TypeError):
        episode_step(episode=episode, name="unloggable", arguments={}, fn=unloggable_result)
    assert order_status_in(episode, order_id) == "paid"
    assert EpisodeStep.objects.filter(episode=episode).count() == 0
    assert Episode.objects.get(pk=episode.pk).step_count == 0


def test_a_dangling_foreign_key_fails_the_step_and_logs_nothing(world):
    episode = episode_create()

    def orphan():
        Order.objects.filter(pk=world["order"].id).update(customer_id="cus-missing")

    with pytest.raises(IntegrityError):
        episode_step(episode=episode, name="orphan", arguments={}, fn=orphan)
    assert EpisodeStep.objects.filter(episode=episode).count() == 0
    with episode_world(episode):
        assert Order.objects.get(pk=world["order"].id).customer_id == world["customer"].id


def test_reads_in_episode_world_never_write(world):
    episode = episode_create()
    with episode_world(episode):
        Order.objects.filter(pk=world["order"].id).update(status="cancelled")
        assert Order.objects.get(pk=world["order"].id).status == "cancelled"
    assert order_status_in(episode, world["order"].id) == "paid"
    assert episode_diff(episode) == {"created": [], "updated": [], "deleted": []}


def test_a_step_cannot_nest_inside_a_read_or_a_step_of_the_same_episode(world):
    episode, other = episode_create(), episode_create()
    with episode_world(episode), pytest.raises(EpisodeError, match="cannot run inside"):
        episode_step(episode=episode, name="nested", arguments={}, fn=lambda: None)

    def step_in_other_episode():
        episode_step(episode=other, name="inner", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
        return {"outer": True}

    episode_step(episode=episode, name="outer", arguments={}, fn=step_in_other_episode)
    assert order_status_in(other, world["order"].id) == "cancelled"
    assert order_status_in(episode, world["order"].id) == "paid"


def test_a_cold_episode_is_rebuilt_from_its_log(world):
    episode = episode_create()
    episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    episode_step(episode=episode, name="add", arguments={}, fn=add_customer("cus-new03", "Linus"))
    hot_checksum, hot_diff = episode_state_checksum(episode), episode_diff(episode)

    episode_cache.clear()  # as if this process had just started
    snapshot_images_clear()
    assert episode.pk not in episode_cache
    assert episode_state_checksum(episode) == hot_checksum
    assert episode_diff(episode) == hot_diff
    step = episode_step(episode=episode, name="ship", arguments={}, fn=set_order_status(world["order"].id, "fulfilled"))
    assert step.seq == 3
    assert order_status_in(episode, world["order"].id) == "fulfilled"
    assert episode_state_from_log(episode)["state_checksum"] == episode_state_checksum(episode)


def test_a_step_made_by_another_process_is_caught_up_before_the_next(world, monkeypatch):
    from world_app.episodes import engine

    episode = episode_create()
    episode_step(episode=episode, name="one", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    assert episode.pk in episode_cache  # this process holds it at step 1

    other_process = EpisodeCache()
    monkeypatch.setattr(engine, "episode_cache", other_process)
    episode_step(episode=episode, name="two", arguments={}, fn=add_customer("cus-new04", "Barbara"))
    other_process.clear()
    monkeypatch.setattr(engine, "episode_cache", episode_cache)

    def count_customers():
        return {"customers": Customer.objects.count()}

    step = episode_step(episode=episode, name="three", arguments={}, fn=count_customers)
    assert step.seq == 3
    assert step.result == {"customers": 2}  # the other process's new customer is there
    assert order_status_in(episode, world["order"].id) == "cancelled"


def test_a_step_rolled_back_by_the_callers_transaction_is_forgotten(world):
    episode = episode_create()

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
        raise Abandon

    assert EpisodeStep.objects.filter(episode=episode).count() == 0
    assert order_status_in(episode, world["order"].id) == "paid"
    step = episode_step(episode=episode, name="ship", arguments={}, fn=set_order_status(world["order"].id, "fulfilled"))
    assert step.seq == 1
    assert order_status_in(episode, world["order"].id) == "fulfilled"


def test_unique_values_swapped_within_one_step_replay_cleanly(world):
    first, second = world["gpu"], world["case"]
    episode = episode_create()

    def swap_skus():
        a, b = Product.objects.get(pk=first.id), Product.objects.get(pk=second.id)
        sku_a, sku_b = a.sku, b.sku
        Product.objects.filter(pk=a.pk).update(sku="TEMP")
        Product.objects.filter(pk=b.pk).update(sku=sku_a)
        Product.objects.filter(pk=a.pk).update(sku=sku_b)

    episode_step(episode=episode, name="swap", arguments={}, fn=swap_skus)
    rebuilt = episode_state_from_log(episode)
    assert rebuilt["state_checksum"] == episode_state_checksum(episode)
    assert {u["pk"]: u["fields"]["sku"]["after"] for u in rebuilt["diff"]["updated"]} == {
        first.id: second.sku,
        second.id: first.sku,
    }


def test_a_closed_episode_keeps_its_outcome_frees_its_world_and_refuses_steps(world):
    episode = episode_create()
    episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    checksum, diff = episode_state_checksum(episode), episode_diff(episode)

    closed = episode_close(episode)
    assert closed.status == Episode.Status.CLOSED
    assert closed.closed_at is not None
    assert (closed.final_checksum, closed.final_diff) == (checksum, diff)
    assert episode.pk not in episode_cache
    assert episode_diff(episode) == diff
    assert episode_state_checksum(episode) == checksum
    with pytest.raises(EpisodeClosed):
        episode_step(episode=episode, name="late", arguments={}, fn=lambda: None)
    assert episode.pk not in episode_cache
    assert episode_close(episode).closed_at == closed.closed_at  # closing twice is harmless


def test_unknown_episodes_are_reported_clearly(world):
    with pytest.raises(EpisodeNotFound):
        episode_step(episode="not-a-uuid", name="x", arguments={}, fn=lambda: None)
    with pytest.raises(EpisodeNotFound):
        episode_diff("6b0f6a4e-9a53-4a55-8a45-3c2a8f1f7a11")


def test_idle_episodes_are_closed_and_active_ones_kept(world, settings):
    settings.EPISODE_IDLE_TIMEOUT_S = 3600
    idle, active = episode_create(label="idle"), episode_create(label="active")
    episode_step(episode=idle, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    Episode.objects.filter(pk=idle.pk).update(last_activity_at=timezone.now() - timedelta(hours=2))

    assert episodes_close_idle() == 1
    idle.refresh_from_db()
    active.refresh_from_db()
    assert idle.status == Episode.Status.CLOSED
    assert idle.final_diff["updated"][0]["fields"]["status"]["after"] == "cancelled"
    assert active.status == Episode.Status.OPEN
    assert episodes_close_idle() == 0


def test_purge_deletes_old_closed_episodes_and_their_steps(world):
    old, recent, still_open = episode_create(), episode_create(), episode_create()
    for episode in (old, recent, still_open):
        episode_step(episode=episode, name="add", arguments={}, fn=lambda: {"ok": True})
    episode_close(old)
    episode_close(recent)
    Episode.objects.filter(pk=old.pk).update(closed_at=timezone.now() - timedelta(days=10))

    with episode_world(old):
        pass  # a closed episode's world can still be read (rebuilt from its log) until it is purged
    assert episodes_purge_closed(closed_before_days=7) == 1
    assert set(Episode.objects.values_list("pk", flat=True)) == {recent.pk, still_open.pk}
    assert not EpisodeStep.objects.filter(episode_id=old.pk).exists()
    assert old.pk not in episode_cache
    with pytest.raises(EpisodeNotFound):
        episode_diff(old)

    Episode.objects.filter(pk=recent.pk).update(closed_at=timezone.now() - timedelta(days=3))
    call_command("purge_episodes", "--closed-before-days", "2")
    assert list(Episode.objects.values_list("pk", flat=True)) == [still_open.pk]


def test_an_evicted_episode_comes_back_from_its_log(world, settings):
    settings.EPISODE_CACHE_SIZE = 2
    episodes = [episode_create(label=str(i)) for i in range(4)]
    for i, episode in enumerate(episodes):
        episode_step(episode=episode, name="add", arguments={}, fn=add_customer(f"cus-ev{i}", f"C{i}"))
    assert len(episode_cache) == 2
    for i, episode in enumerate(episodes):
        with episode_world(episode):
            assert list(Customer.objects.filter(pk__startswith="cus-ev").values_list("pk", flat=True)) == [f"cus-ev{i}"]


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_a_new_process_rebuilds_the_episode_with_the_same_state_and_diff():
    world = small_world()
    snapshot_publish(note="restart test")
    episode = episode_create(label="restart")
    episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    episode_step(episode=episode, name="add", arguments={}, fn=add_customer("cus-new05", "Edsger"))
    episode_step(episode=episode, name="drop", arguments={}, fn=delete_article(world["article"].id))
    extra = ProductFactory(id="prd-live-only")  # the live world moves on; the episode must not see it

    completed = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "episode_state", str(episode.pk), "--json"],
        cwd=ROOT,
        env=app_process_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    state = json.loads(completed.stdout)
    assert state["step_count"] == 3
    assert state["state_checksum"] == episode_state_checksum(episode)
    assert state["diff"] == json.loads(json.dumps(episode_diff(episode)))
    assert state["diff"]["created"][0]["pk"] == "cus-new05"
    assert extra.pk not in json.dumps(state)
    # A dozen customers and orders later the live world still has its own content.
    CustomerFactory.create_batch(3)
    OrderFactory()
    assert episode_state_checksum(episode) == state["state_checksum"]


OTHER_PROCESS_AGENT = """
from world_app.episodes import episode_step
from world_app.models import Product

def restock():
    product = Product.objects.get(pk={product_id!r})
    product.stock_quantity += 1
    product.save(update_fields=["stock_quantity"])
    return {{"stock": product.stock_quantity}}

for _ in range({steps}):
    episode_step(episode={episode_id!r}, name="restock", arguments={{"by": "process"}}, fn=restock)
"""


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_concurrent_steps_from_threads_and_another_process_are_serialised_and_none_is_lost():
    world = small_world()
    snapshot_publish(note="concurrency")
    episode = episode_create(label="shared")
    product_id, start = world["gpu"].id, world["gpu"].stock_quantity
    threads_steps, process_steps = 3 * 10, 30
    failures: list[BaseException] = []

    def restock():
        product = Product.objects.get(pk=product_id)
        product.stock_quantity += 1  # read-modify-write: a lost or stale step would show
        product.save(update_fields=["stock_quantity"])
        return {"stock": product.stock_quantity}

    def agent():
        try:
            for _ in range(threads_steps // 3):
                episode_step(episode=episode, name="restock", arguments={"by": "thread"}, fn=restock)
        except BaseException as exc:  # noqa: BLE001  (reported below, from the main thread)
            failures.append(exc)
        finally:
            connections.close_all()

    code = OTHER_PROCESS_AGENT.format(product_id=product_id, episode_id=str(episode.pk), steps=process_steps)
    other = subprocess.Popen(  # noqa: S603
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=app_process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not EpisodeStep.objects.filter(episode=episode).exists() and other.poll() is None:
        assert time.monotonic() < deadline, "the other process took no step"
        time.sleep(0.02)
    threads = [threading.Thread(target=agent) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    output, _ = other.communicate(timeout=120)
    assert other.returncode == 0, output
    assert not failures

    total = threads_steps + process_steps
    episode_log_settle(episode)  # a reader of the log: the threads' last batch is written first
    steps = list(EpisodeStep.objects.filter(episode=episode).values_list("seq", "result", "arguments"))
    assert [seq for seq, _, _ in steps] == list(range(1, total + 1))
    assert [result["stock"] for _, result, _ in steps] == [start + n for n in range(1, total + 1)]
    assert {arguments["by"] for _, _, arguments in steps} == {"thread", "process"}
    episode_cache.clear()
    with episode_world(episode):
        assert Product.objects.get(pk=product_id).stock_quantity == start + total


@contextmanager
def statements_run(alias: str = "default"):
    """The SQL of every statement run on ``alias`` inside the block."""
    seen: list[str] = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connections[alias].execute_wrapper(record):
        yield seen


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_a_step_on_a_current_copy_is_one_statement_and_moves_the_log_head(settings):
    """The synchronous append (deferral off, or a step inside a caller's transaction; deferred steps:
    test_episode_step_log.py)."""
    settings.EPISODE_LOG_DEFER = False
    world = small_world()
    snapshot_publish(note="one statement")
    episode = episode_create(label="head")
    with statements_run() as seen:
        first = episode_step(
            episode=episode, name="cancel", arguments={}, fn=set_order_status(world["order"].id, "cancelled")
        )
        second = episode_step(episode=episode, name="read", arguments={}, fn=lambda: {"ok": True})
    assert len(seen) == 2  # no BEGIN, lock, catch-up query or COMMIT: one autocommitted append each
    assert all("synchronous_commit" in sql for sql in seen)  # the step's own commit need not wait for the disk
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)  # ...and nothing else's: the setting lasted one transaction
    with statements_run() as seen, transaction.atomic():
        episode_step(episode=episode, name="in a transaction", arguments={}, fn=dict)
    assert not any("synchronous_commit" in sql for sql in seen)  # the caller's transaction keeps its durability
    stored = Episode.objects.get(pk=episode.pk)
    assert (stored.step_count, stored.head_step_id) == (3, EpisodeStep.objects.get(episode=episode, seq=3).pk)
    assert EpisodeStep.objects.get(pk=first.pk).seq == 1
    assert second.seq == 2 and second.created_at is not None and second._state.adding is False


def test_a_lost_step_overtaken_by_another_processs_step_of_the_same_number_is_noticed(world, monkeypatch):
    """Without the log head's step id, this copy (at step 1, its own lost step) would look current."""
    from world_app.episodes import engine

    episode = episode_create()
    order_id = world["order"].id

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        episode_step(episode=episode, name="lost", arguments={}, fn=set_order_status(order_id, "cancelled"))
        raise Abandon

    other_process = EpisodeCache()
    monkeypatch.setattr(engine, "episode_cache", other_process)
    theirs = episode_step(episode=episode, name="theirs", arguments={}, fn=set_order_status(order_id, "fulfilled"))
    other_process.clear()
    monkeypatch.setattr(engine, "episode_cache", episode_cache)
    assert theirs.seq == 1

    calls = []

    def read_status():
        calls.append(1)
        return {"status": Order.objects.get(pk=order_id).status}

    step = episode_step(episode=episode, name="read", arguments={}, fn=read_status)
    assert (step.seq, step.result) == (2, {"status": "fulfilled"})  # the log's step 1, not the lost one
    assert len(calls) == 2  # run on the stale copy, undone, run again on the rebuilt one
    assert list(EpisodeStep.objects.filter(episode=episode).values_list("name", flat=True)) == ["theirs", "read"]


def test_steps_under_the_row_lock_keep_every_guarantee(world, monkeypatch):
    """After lost races a step takes the episode's row lock; that path alone must also be correct."""
    from world_app.episodes import engine

    monkeypatch.setattr(engine, "OPTIMISTIC_ATTEMPTS", 0)
    episode = episode_create()
    order_id = world["order"].id
    episode_step(episode=episode, name="cancel", arguments={}, fn=set_order_status(order_id, "cancelled"))
    with pytest.raises(ValueError, match="tool bug"):
        episode_step(episode=episode, name="broken", arguments={}, fn=_raise)
    other_process = EpisodeCache()
    monkeypatch.setattr(engine, "episode_cache", other_process)
    episode_step(episode=episode, name="add", arguments={}, fn=add_customer("cus-lock1", "Ken"))
    other_process.clear()
    monkeypatch.setattr(engine, "episode_cache", episode_cache)
    step = episode_step(episode=episode, name="count", arguments={}, fn=lambda: {"n": Customer.objects.count()})
    assert (step.seq, step.result) == (3, {"n": 2})
    assert order_status_in(episode, order_id) == "cancelled"
    stored = Episode.objects.get(pk=episode.pk)
    assert (stored.step_count, stored.head_step_id) == (3, step.pk)
    episode_close(episode)
    with pytest.raises(EpisodeClosed):
        episode_step(episode=episode, name="late", arguments={}, fn=dict)


def _raise():
    raise ValueError("tool bug")


def test_a_copy_of_an_episode_another_process_closed_refuses_the_step_and_writes_nothing(world, monkeypatch):
    from world_app.episodes import engine, lifecycle

    episode = episode_create()
    episode_step(episode=episode, name="one", arguments={}, fn=dict)
    assert episode.pk in episode_cache

    other_process = EpisodeCache()  # another process's cache, wherever this process's close looks
    for module in (engine, lifecycle):
        monkeypatch.setattr(module, "episode_cache", other_process)
    episode_close(episode)
    for module in (engine, lifecycle):
        monkeypatch.setattr(module, "episode_cache", episode_cache)
    assert episode.pk in episode_cache  # this process still holds its copy

    with pytest.raises(EpisodeClosed):
        episode_step(episode=episode, name="late", arguments={}, fn=set_order_status(world["order"].id, "cancelled"))
    assert episode.pk not in episode_cache
    assert EpisodeStep.objects.filter(episode=episode).count() == 1
    assert Episode.objects.get(pk=episode.pk).final_diff == {"created": [], "updated": [], "deleted": []}
