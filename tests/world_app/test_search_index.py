"""The search indexes in snapshot images (world_app/episodes/search_index.py): searches answered or narrowed by
them answer exactly what the scan answers, before and after an episode's writes (an order's customer renamed
included) and a rebuild from the log, and snapshots without them still load and scan."""

import json
import random

import pytest
from django.db import connections

from tests.factories import CustomerFactory, OrderFactory
from world_app.episodes import episode_close, episode_create, episode_step, episode_world
from world_app.episodes import search_index as search_index_module
from world_app.episodes.cache import episode_cache
from world_app.episodes.images import snapshot_images_clear
from world_app.episodes.search_index import TEXT_INDEXES, phrase_query, word_mode, world_searchable
from world_app.episodes.world_db import current_schema_fingerprint
from world_app.models import Build, Customer, Order, Payment, Shipment, SupportTicket
from world_app.routers import EPISODE_ALIAS
from world_app.snapshots import snapshot_publish
from world_app.tools.registry import invoke_tool

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

EDGE_WORDS = [
    *("a", "ab", "abc", "SMITH", "sMiTh", "%", "_", "50%", "a_b", '"', '""x', "\\", "x\\y"),
    *("é", "É", "straße", "Ω", "cus-0", "ORD-00", "@", "zzzqqq", "the", "1"),
]
SEARCHES = {
    "search_customers": [{}, {"sort": "name", "offset": 240}, {"created_after": "2020-01-01T00:00:00Z"}],
    "search_orders": [{"sort": "total_desc"}, {"status": "fulfilled", "min_total": "10.00"}],
    "search_tickets": [{}, {"offset": 220}],
    "search_shipments": [{}],
    "search_payments": [{}],
    "search_builds": [{}],
    "search_products": [{}],
    "search_knowledge_base": [{"sort": "relevance"}],
}


def _fragments(rng, values, count):
    out = []
    values = [str(v) for v in values if v]
    for _ in range(count):
        value = rng.choice(values)
        start = rng.randrange(len(value))
        out.append(value[start : start + rng.randint(1, 8)].strip() or value)
    return out


def _queries(rng):
    words = [
        *_fragments(rng, Customer.objects.values_list("last_name", flat=True), 15),
        *_fragments(rng, Customer.objects.values_list("email", flat=True), 8),
        *_fragments(rng, Customer.objects.values_list("addresses", flat=True), 5),
        *_fragments(rng, Order.objects.values_list("notes", flat=True), 8),
        *_fragments(rng, Order.objects.values_list("id", flat=True), 5),
        *_fragments(rng, SupportTicket.objects.values_list("subject", flat=True), 8),
        *_fragments(rng, Shipment.objects.values_list("tracking_number", flat=True), 4),
        *_fragments(rng, Payment.objects.values_list("transaction_id", flat=True), 4),
        *_fragments(rng, Build.objects.values_list("name", flat=True), 4),
        *EDGE_WORDS,
    ]
    return (
        words + [" ".join(rng.sample(words, 2)) for _ in range(15)] + [" ".join(rng.sample(words, 3)) for _ in range(5)]
    )


def _both(conn, name, args):
    """The answer with the indexes, then with them switched off for the connection (the scan)."""
    answers = []
    for searchable in (True, False):
        conn.searchable = searchable
        answers.append(json.dumps(invoke_tool(name, args), sort_keys=True, default=str))
    conn.searchable = True
    return answers


def _assert_same_answers(conn, queries):
    found = 0
    for query in queries:
        for name, variants in SEARCHES.items():
            for extra in variants:
                indexed, scanned = _both(conn, name, {"query": query, **extra})
                assert indexed == scanned, (name, query, extra)
                found += '"total": 0' not in indexed
    return found


def test_a_word_is_one_quoted_phrase_in_the_columns_asked():
    assert phrase_query("abcd") == '"abcd"'
    assert phrase_query('a"bc"') == '"a""bc"""'
    assert phrase_query("smith", "first_name last_name") == '{first_name last_name} : "smith"'


def test_how_a_word_is_found():
    assert [word_mode(w) for w in ("ab", "abc", "ORD-00", "50%", "é", "josé", "straße")] == [
        *("scan", "index", "index", "index", "scan", "narrow", "narrow")
    ]


def test_indexed_searches_answer_as_the_scan(seeded_world):
    snapshot = snapshot_publish(note="search index")
    episode = episode_create(snapshot=snapshot, label="search index")
    with episode_world(episode):
        conn = connections[EPISODE_ALIAS].connection
        assert world_searchable(conn)
        queries = _queries(random.Random(18))
        assert _assert_same_answers(conn, queries) > 50  # most queries find rows: the comparison means something
        # The index is what answers: a word in no row is answered without touching the table's rows.
        index = TEXT_INDEXES["world_app_customer"].name
        plan = " ".join(
            row[-1]
            for row in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT count(*) FROM world_app_customer WHERE rowid IN "
                f"(SELECT rowid FROM {index} WHERE {index} MATCH ?)",
                [phrase_query("smith")],
            )
        )
        assert "VIRTUAL TABLE INDEX" in plan and "SCAN world_app_customer" not in plan
        # A common word's total counts index entries: no row of the table is matched with LIKE.
        assert invoke_tool("search_orders", {"query": "the"})["total"] > 0
    episode_close(episode)


def test_the_index_follows_an_episodes_writes_and_its_rebuild(db):
    customer = CustomerFactory(first_name="Quentin", last_name="Abernathy")
    OrderFactory(customer=customer, notes="gift wrap please")
    OrderFactory(notes="leave at the back door")
    snapshot = snapshot_publish(note="search index writes")
    episode = episode_create(snapshot=snapshot, label="search index writes")

    def rename(first, last):
        def step():
            Customer.objects.filter(pk=customer.pk).update(first_name=first, last_name=last)
            other = Customer.objects.exclude(pk=customer.pk).first()
            Order.objects.create(id="ord-srch-1", customer=other, notes="Zanzibar delivery", **_order_fields())
            Order.objects.filter(notes="leave at the back door").delete()
            return {}

        return step

    episode_step(episode=episode, name="rename", arguments={}, fn=rename("Marguerite", "Villanueva"))
    queries = ["Abernathy", "Villanueva", "margue", "Zanzibar", "back door", "gift", "ord-srch"]
    with episode_world(episode):
        conn = connections[EPISODE_ALIAS].connection
        assert invoke_tool("search_customers", {"query": "villanueva"})["total"] == 1
        assert invoke_tool("search_customers", {"query": "abernathy"})["total"] == 0
        assert invoke_tool("search_orders", {"query": "zanzibar"})["total"] == 1
        assert invoke_tool("search_orders", {"query": "back door"})["total"] == 0
        # The order's index holds its customer's name: renaming the customer re-indexed the order.
        assert invoke_tool("search_orders", {"query": "villanueva"})["total"] == 1
        assert invoke_tool("search_orders", {"query": "abernathy"})["total"] == 0
        _assert_same_answers(conn, queries)
    # Another process's copy: the image again, the log replayed on it (rows deleted and inserted anew).
    episode_cache.clear()
    snapshot_images_clear()
    with episode_world(episode):
        conn = connections[EPISODE_ALIAS].connection
        assert world_searchable(conn)
        assert invoke_tool("search_orders", {"query": "margue"})["total"] == 1
        _assert_same_answers(conn, queries)
    episode_close(episode)


def _order_fields():
    order = Order.objects.first()
    return {
        field.attname: getattr(order, field.attname)
        for field in Order._meta.concrete_fields
        if field.attname not in ("id", "customer_id", "notes")
    }


def test_a_snapshot_without_the_index_loads_and_scans(db, monkeypatch):
    CustomerFactory(last_name="Pemberton")
    monkeypatch.setattr(search_index_module, "fts5_available", lambda: False)
    monkeypatch.setattr("world_app.snapshots.fts5_available", lambda: False)
    plain = snapshot_publish(note="before the index")
    monkeypatch.undo()
    indexed = snapshot_publish(note="with the index")
    # The index is not world content: both images have the fingerprint this code expects.
    assert plain.schema_fingerprint == indexed.schema_fingerprint == current_schema_fingerprint()
    assert indexed.image_bytes > plain.image_bytes
    for snapshot in (plain, indexed):
        episode = episode_create(snapshot=snapshot, label="no index")
        with episode_world(episode):
            assert world_searchable(connections[EPISODE_ALIAS].connection) is (snapshot == indexed)
            assert invoke_tool("search_customers", {"query": "pemberton"})["total"] == 1
        episode_close(episode)


def test_publishing_the_same_world_again_upgrades_an_image_without_the_index(db, monkeypatch):
    """``publish_world --if-changed`` (what ``make demo`` runs) keeps a snapshot of the same content only when its
    image has this code's search indexes: an older image is published again, once."""
    CustomerFactory(last_name="Pemberton")
    monkeypatch.setattr(search_index_module, "fts5_available", lambda: False)
    monkeypatch.setattr("world_app.snapshots.fts5_available", lambda: False)
    plain = snapshot_publish(note="before the index")
    assert snapshot_publish(note="again", if_changed=True) == plain  # this process builds no index: nothing to gain
    monkeypatch.undo()
    upgraded = snapshot_publish(note="with the index", if_changed=True)
    assert upgraded.version == plain.version + 1 and upgraded.content_checksum == plain.content_checksum
    assert snapshot_publish(note="once more", if_changed=True) == upgraded
    episode = episode_create(snapshot=upgraded, label="upgraded")
    with episode_world(episode):
        assert world_searchable(connections[EPISODE_ALIAS].connection)
    episode_close(episode)
