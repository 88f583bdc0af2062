"""Baked queries answer exactly what the ORM answers, on Postgres and in an episode's SQLite world."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Q

from world_app.episodes import episode_create, episode_world
from world_app.episodes.cache import episode_cache
from world_app.episodes.images import snapshot_images_clear
from world_app.models import Order, OrderLineItem, Payment, Product
from world_app.snapshots import snapshot_publish
from world_app.tools.baked import BakedQuery
from world_app.tools.records import article_record, customer_record, employee_record, product_record, ticket_record
from world_app.tools.search.base import paged
from world_app.tools.search.catalog import PRODUCT_SEARCH
from world_app.tools.search.commerce import CUSTOMER_SEARCH
from world_app.tools.search.knowledge_base import ARTICLE_SEARCH
from world_app.tools.search.staff import EMPLOYEE_SEARCH
from world_app.tools.search.tickets import TICKET_SEARCH

pytestmark = pytest.mark.django_db(databases=["default", "episode"])

LINES = BakedQuery(OrderLineItem, lambda ids: OrderLineItem.objects.filter(order_id__in=ids).order_by("id"))
ORDERS = BakedQuery(
    Order,
    lambda customer_id, status: Order.objects.filter(customer_id=customer_id, **({"status": status} if status else {})),
)
PRODUCTS_OF = BakedQuery(
    Product,
    lambda category, *, cheapest: Product.objects.filter(Q(category=category) | Q(category="cable")).order_by(
        "price" if cheapest else "-price", "id"
    ),
)
NAMED = BakedQuery(
    Product,
    lambda words: Product.objects.filter(*[Q(name__icontains=w) | Q(sku__contains=w) for w in words]).order_by("id"),
)


@pytest.fixture(autouse=True)
def _fresh_episode_state():
    episode_cache.clear()
    snapshot_images_clear()
    yield
    episode_cache.clear()
    snapshot_images_clear()


def field_values(rows) -> list[dict]:
    return [{f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields} for row in rows]


def assert_same(baked_rows, orm_rows):
    assert [type(row) for row in baked_rows] == [type(row) for row in orm_rows]
    assert field_values(baked_rows) == field_values(orm_rows)
    for row, orm in zip(baked_rows, orm_rows, strict=True):
        assert (row._state.adding, row._state.db) == (False, orm._state.db)


def answers(shop) -> None:
    """Every baked query against its ORM twin, in whatever world the router points at."""
    orders = [shop.recent.id, shop.bulk.id, shop.old.id, shop.transit.id, "ord-missing"]
    for count in range(len(orders) + 1):
        ids = orders[:count]
        assert_same(LINES(ids), list(OrderLineItem.objects.filter(order_id__in=ids).order_by("id")))
    assert LINES([]) == []
    for status in (None, "fulfilled", "cancelled"):
        expected = Order.objects.filter(customer_id=shop.customer.id, **({"status": status} if status else {}))
        assert_same(ORDERS(shop.customer.id, status), list(expected))
    for cheapest in (True, False):
        expected = Product.objects.filter(Q(category="gpu") | Q(category="cable"))
        expected = expected.order_by("price" if cheapest else "-price", "id")
        assert_same(PRODUCTS_OF("gpu", cheapest=cheapest), list(expected))
        assert PRODUCTS_OF.count("gpu", cheapest=cheapest) == expected.count()
    assert ORDERS.count(shop.customer.id, None) == Order.objects.filter(customer_id=shop.customer.id).count()
    assert LINES.count([]) == 0
    names = [name for name in Product.objects.order_by("id").values_list("name", flat=True)]
    # Words from real names, in other cases, and ones that need escaping in LIKE: % _ and \ match themselves.
    for words in ([names[0].split()[0].upper()], names[1].lower().split()[:2], ["%"], ["_"], ["\\"], ["a", "%e"]):
        expected = Product.objects.filter(*[Q(name__icontains=w) | Q(sku__contains=w) for w in words]).order_by("id")
        assert_same(NAMED(words), list(expected))
        assert NAMED.count(words) == expected.count()


def test_baked_rows_equal_the_orms_on_postgres(shop):
    answers(shop)
    [line] = LINES([shop.recent.id])[:1]
    assert line.unit_price == shop.recent.line_items.order_by("id").first().unit_price  # Decimal, converted


def test_baked_rows_equal_the_orms_in_an_episode(shop):
    snapshot_publish(note="baked")
    episode = episode_create(label="baked")
    with episode_world(episode):
        assert connections["episode"].vendor == "sqlite"
        answers(shop)
        # The episode's world, not the live one: a write made there is what the baked query sees.
        Payment.objects.filter(order_id=shop.recent.id).update(status="refunded")
        baked = BakedQuery(Payment, lambda order_id: Payment.objects.filter(order_id=order_id))
        assert {p.status for p in baked(shop.recent.id)} == {"refunded"}
    assert {p.status for p in baked(shop.recent.id)} == {"captured"}


def test_in_an_episode_rows_skip_djangos_cursor_and_make_the_same_instances(shop, monkeypatch):
    """On the episode's SQLite the baked query runs on the sqlite3 connection itself and builds instances without
    Model.__init__: the same attributes and state as the ORM's; an execute wrapper (a statement count) still sees
    every statement, through Django's cursor."""
    snapshot_publish(note="baked raw")
    ids = [shop.recent.id, shop.bulk.id]
    with episode_world(episode_create(label="baked raw")):
        orm = list(OrderLineItem.objects.filter(order_id__in=ids).order_by("id"))
        episode = connections["episode"]
        with monkeypatch.context() as patched:
            patched.setattr(episode, "cursor", lambda *args: pytest.fail("Django's cursor ran a baked query"))
            baked = LINES(ids)
            assert LINES.count(ids) == len(orm)
        assert [{k: v for k, v in vars(row).items() if k != "_state"} for row in baked] == [
            {k: v for k, v in vars(row).items() if k != "_state"} for row in orm
        ]
        assert [(row._state.adding, row._state.db) for row in baked] == [(False, "episode")] * len(orm)
        assert baked[0].order.id == baked[0].order_id  # relations load as on an ORM instance
        seen = []

        def record(execute, sql, params, many, context):
            seen.append(sql)
            return execute(sql, params, many, context)

        with episode.execute_wrapper(record):
            assert field_values(LINES(ids)) == field_values(orm)
            assert LINES.count(ids) == len(orm)
        assert len(seen) == 2


def test_an_in_list_is_padded_so_few_forms_are_compiled(shop):
    baked = BakedQuery(Product, lambda ids: Product.objects.filter(pk__in=ids))
    products = list(Product.objects.order_by("id").values_list("id", flat=True))
    for count in range(1, len(products) + 1):
        assert sorted(p.id for p in baked(products[:count])) == products[:count]
    assert len(baked._statements) == (len(products) - 1).bit_length() + 1  # 1, 2, 4, 8, ... on one database


def test_look_ups_that_rewrite_their_value_and_joins_are_refused(shop):
    fuzzy = BakedQuery(Product, lambda name: Product.objects.filter(name__istartswith=name))
    with pytest.raises(ImproperlyConfigured, match="rewritten"):
        fuzzy("gpu")
    joined = BakedQuery(OrderLineItem, lambda pk: OrderLineItem.objects.filter(order_id=pk).select_related())
    with pytest.raises(ImproperlyConfigured, match="select_related"):
        joined(shop.recent.id)
    numbers = BakedQuery(Product, lambda ids: Product.objects.filter(pk__in=ids))
    with pytest.raises(ImproperlyConfigured, match="strings"):
        numbers([1, 2])


SEARCH_CASES = [
    (CUSTOMER_SEARCH, customer_record, {"query": "a"}),
    (CUSTOMER_SEARCH, customer_record, {"query": "A  e r", "limit": 1, "sort": "name"}),
    # Escaped like Django escapes them: an unescaped % or _ would match every row.
    (CUSTOMER_SEARCH, customer_record, {"query": "%"}),
    (CUSTOMER_SEARCH, customer_record, {"query": "_"}),
    (PRODUCT_SEARCH, product_record, {"query": "_ x", "in_stock": True}),
    (PRODUCT_SEARCH, product_record, {"category": "gpu", "limit": 1, "offset": 1, "sort": "newest"}),
    (ARTICLE_SEARCH, article_record, {"query": "gpu", "limit": 1}),
    (ARTICLE_SEARCH, article_record, {"query": "\\", "include_unpublished": True}),
    (EMPLOYEE_SEARCH, employee_record, {"permission": "approve_refunds_over_limit", "limit": 1}),
    (TICKET_SEARCH, ticket_record, {"sort": "priority", "limit": 2}),
]


def search_answers() -> None:
    for found, record, arguments in SEARCH_CASES:
        p = found.params.model_validate(arguments)
        baked = found.page(p, record)
        assert baked == paged(found.queryset(p), p, record), arguments


def test_baked_searches_answer_what_the_orm_answers(shop):
    search_answers()
    snapshot_publish(note="baked searches")
    with episode_world(episode_create(label="baked searches")):
        search_answers()


def test_save_fields_in_an_episode_writes_what_the_orms_save_writes(shop, monkeypatch):
    """The baked UPDATE stores the same values as ``save(update_fields=...)`` (the row images the log keeps
    included), refuses a row that is gone, and leaves Postgres to the ORM."""
    from django.db import DatabaseError

    from world_app.episodes import episode_step
    from world_app.models import SupportTicket
    from world_app.tools.baked import save_fields

    snapshot_publish(note="baked save")
    ticket_id = SupportTicket.objects.order_by("id").values_list("id", flat=True).first()
    changes = []
    for saver in (lambda t, f: t.save(update_fields=f), save_fields):
        episode = episode_create(label="baked save")

        def change(saver=saver):
            ticket = SupportTicket.objects.get(pk=ticket_id)
            ticket.status, ticket.assignee_id = "pending", shop.lead.id
            saver(ticket, ["status", "updated_at", "assignee"])
            return {}

        changes.append(episode_step(episode=episode, name="save", arguments={}, fn=change).changes)
    assert changes[0] == changes[1] and changes[0][0]["row"]["status"] == "pending"
    with episode_world(episode_create(label="baked save gone")):
        gone = SupportTicket.objects.get(pk=ticket_id)
        SupportTicket.objects.filter(pk=ticket_id).delete()
        with monkeypatch.context() as patched:
            patched.setattr(connections["episode"], "cursor", lambda *a: pytest.fail("the ORM's save ran"))
            with pytest.raises(DatabaseError, match="did not affect any rows"):
                save_fields(gone, ["status"])
    live = SupportTicket.objects.get(pk=ticket_id)
    live.status = "pending"
    save_fields(live, ["status"])  # Postgres: the ORM's save
    assert SupportTicket.objects.get(pk=ticket_id).status == "pending"


def test_create_row_in_an_episode_inserts_what_the_orms_create_inserts(shop):
    from world_app.episodes import episode_step
    from world_app.models import Resolution, SupportTicket
    from world_app.tools.baked import create_row

    snapshot_publish(note="baked insert")
    ticket_id = SupportTicket.objects.order_by("id").values_list("id", flat=True).first()
    changes, made = [], []
    for create in (lambda model, **values: model.objects.create(**values), create_row):
        episode = episode_create(label="baked insert")

        def insert(create=create):
            ticket = SupportTicket.objects.get(pk=ticket_id)
            made.append(
                create(
                    Resolution,
                    id="res-baked-1",
                    ticket=ticket,
                    outcome="no_action",
                    summary="s",
                    resolved_by_id=shop.agent.id,
                )
            )
            return {}

        changes.append(episode_step(episode=episode, name="insert", arguments={}, fn=insert).changes)
    assert changes[0] == changes[1] and [c["pk"] for c in changes[0]] == ["res-baked-1"]
    orm, baked = made
    assert {k: v for k, v in vars(orm).items() if k != "_state"} == {
        k: v for k, v in vars(baked).items() if k != "_state"
    }
    assert (baked._state.adding, baked._state.db) == (False, "episode")
