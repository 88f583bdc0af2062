"""Look-ups of the live world while writing: search as you type, and any entity with its related rows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.tasks_app.factories import author, reviewer
from world_app.models import ENTITY_MODELS, Customer, Order, Product, SupportTicket
from world_app.selectors_lookup import PAGE_SIZE, world_entity, world_lookup

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def user(client):
    person = author()
    client.force_login(person)
    return person


def test_orders_are_found_by_id_prefix_and_by_customer(seeded_world):
    order = Order.objects.select_related("customer").order_by("id")[5]
    by_id = world_lookup(kind="order", query=order.pk)
    assert [r.id for r in by_id.rows] == [order.pk]
    assert order.customer_id in by_id.rows[0].detail and str(order.total) in by_id.rows[0].detail
    by_email = world_lookup(kind="order", query=order.customer.email)
    assert order.pk in {r.id for r in by_email.rows}
    assert all(r.entity_type == "order" for r in by_email.rows)


def test_every_word_must_match_and_pages_are_bounded(seeded_world):
    customer = Customer.objects.order_by("id")[3]
    found = world_lookup(kind="customer", query=f"{customer.first_name} {customer.last_name}")
    assert customer.pk in {r.id for r in found.rows}
    assert all(customer.last_name.lower() in r.title.lower() for r in found.rows)
    first = world_lookup(kind="product", query="")
    assert len(first.rows) == PAGE_SIZE and first.has_more
    second = world_lookup(kind="product", query="", page=2)
    assert not {r.id for r in first.rows} & {r.id for r in second.rows}
    ticket = SupportTicket.objects.order_by("id").first()
    assert [r.id for r in world_lookup(kind="ticket", query=ticket.pk).rows] == [ticket.pk]
    assert ticket.pk in {r.id for r in world_lookup(kind="ticket", query=f"{ticket.customer_id} {ticket.subject}").rows}
    with pytest.raises(ValueError):
        world_lookup(kind="employee", query="x")


def test_lookup_page_answers_htmx_with_results_only_in_one_query(client, user, seeded_world, django_assert_num_queries):
    product = Product.objects.order_by("id")[7]
    client.get(reverse("world:lookup"))  # warm the session and the user
    # session, user, its user and group permissions (reading the live world is a grant), the one page of products
    with django_assert_num_queries(5):
        response = client.get(reverse("world:lookup"), {"kind": "product", "q": product.sku}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert product.name in body and reverse("world:entity", args=["product", product.pk]) in body
    full = client.get(reverse("world:lookup"), {"kind": "product", "q": product.sku})
    text = full.content.decode()
    assert 'hx-trigger="input changed delay:300ms from:#lookup-q' in text and product.name in text
    assert "Nothing matches" in client.get(reverse("world:lookup"), {"q": "zzzz-no-such"}, **HTMX).content.decode()


@pytest.mark.parametrize("model", ENTITY_MODELS, ids=lambda m: m._meta.model_name)
def test_every_entity_type_opens_with_its_fields_and_links(client, user, seeded_world, model):
    row = model.objects.order_by("pk").first()
    response = client.get(reverse("world:entity", args=[model._meta.model_name, row.pk]))
    body = response.content.decode()
    assert response.status_code == 200 and row.pk in body
    for field in model._meta.concrete_fields:
        if field.is_relation and getattr(row, field.attname):
            target = reverse("world:entity", args=[field.related_model._meta.model_name, getattr(row, field.attname)])
            assert target in body, field.name


def test_an_order_page_lists_its_lines_payments_and_tickets(client, user, seeded_world, django_assert_max_num_queries):
    order = Order.objects.filter(tickets__isnull=False).order_by("id").first()
    page = world_entity(entity_type="order", pk=order.pk)
    labels = " ".join(group.label for group in page.related)
    assert "Order line items" in labels and "Payments" in labels and "Support tickets" in labels
    line = order.line_items.order_by("id").first()
    with django_assert_max_num_queries(14):
        body = client.get(reverse("world:entity", args=["order", order.pk]), **HTMX).content.decode()
    assert reverse("world:entity", args=["orderlineitem", line.pk]) in body
    assert reverse("world:entity", args=["customer", order.customer_id]) in body


def test_unknown_entities_are_404(client, user, seeded_world):
    assert client.get(reverse("world:entity", args=["order", "ord-nope"])).status_code == 404
    assert client.get(reverse("world:entity", args=["spaceship", "x"])).status_code == 404


def test_lookups_need_a_login_and_are_open_to_every_role(client, seeded_world):
    assert client.get(reverse("world:lookup")).status_code == 302
    client.force_login(reviewer())
    assert client.get(reverse("world:lookup"), {"kind": "ticket", "q": "tkt"}).status_code == 200
