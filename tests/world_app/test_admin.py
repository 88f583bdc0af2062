"""The live world in the Django admin: every table browsable and editable, edits validated, no N+1."""

from __future__ import annotations

import importlib.util
import json
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse

from tests.world_app.admin_fixtures import CPU_SPECS, form_data, many_orders, small_world
from world_app import models as w
from world_app.loyalty import SPEND_STATUSES_EXCLUDED, has_loyalty_exception, tier_before_review, tier_for_spend
from world_app.services import order_merchandise_discount, order_recalculate_totals
from world_app.store_rules import LOYALTY_SPEND_MONTHS
from world_app.tools.coverage import add_months
from world_app.tools.results import local_date

WORLD_APP_MODELS = list(apps.get_app_config("world_app").get_models())
READ_ONLY_MODELS = {w.WorldSnapshot, w.Episode, w.EpisodeStep}


def changelist_url(model) -> str:
    return reverse(f"admin:world_app_{model._meta.model_name}_changelist")


def change_url(obj) -> str:
    return reverse(f"admin:world_app_{obj._meta.model_name}_change", args=[quote(obj.pk)])


def add_url(model) -> str:
    return reverse(f"admin:world_app_{model._meta.model_name}_add")


def edit(client, obj, **changes):
    """POST the object's admin change form as a browser would, with ``changes`` applied."""
    page = client.get(change_url(obj))
    assert page.status_code == 200
    data = form_data(page.content.decode(), form_id=f"{obj._meta.model_name}_form")
    data.update({k: v for k, v in changes.items()})
    data["_save"] = "Save"
    return client.post(change_url(obj), data)


def field_errors(response, field: str) -> list[str]:
    return list(response.context["adminform"].form.errors.get(field, []))


@pytest.fixture
def world(db) -> object:
    return small_world()


def test_every_world_model_is_in_the_admin():
    missing = [m.__name__ for m in WORLD_APP_MODELS if not admin.site.is_registered(m)]
    assert missing == []


def test_site_header_names_the_live_world(admin_client, db):
    response = admin_client.get(reverse("admin:index"))
    assert "Corecraft Studio — live world" in response.content.decode()


@pytest.mark.parametrize("model", WORLD_APP_MODELS, ids=lambda m: m.__name__)
def test_changelist_add_and_change_pages_load(admin_client, world, model):
    assert admin_client.get(changelist_url(model)).status_code == 200
    obj = model.objects.first()
    assert obj is not None, f"the test world has no {model.__name__}"
    assert admin_client.get(change_url(obj)).status_code == 200
    expected_add = 403 if model in READ_ONLY_MODELS else 200
    assert admin_client.get(add_url(model)).status_code == expected_add


@pytest.mark.parametrize(
    ("model", "query", "expected", "unexpected"),
    [
        (w.Customer, "dana.reyes@admin-test.example", "cus-adm-1", "cus-adm-2"),
        (w.Order, "sam.okafor@admin-test.example", "ord-adm-002", "ord-adm-001"),
        (w.Order, "1ZADMTEST00000001", "ord-adm-001", "ord-adm-002"),
        (w.Shipment, "1ZADMTEST00000001", "shp-adm-1", "ord-adm-002"),
        (w.Product, "SKU-ADM-GPU", "prd-adm-gpu", "prd-adm-cpu"),
        (w.SupportTicket, "does not boot", "tkt-adm-1", "tkt-adm-2"),
        (w.Payment, "txn-adm-0002", "pay-adm-2", "pay-adm-1"),
        (w.Employee, "ivy.chen@admin-test", "emp-adm-1", "emp-adm-2"),
    ],
)
def test_search(admin_client, world, model, query, expected, unexpected):
    body = admin_client.get(changelist_url(model), {"q": query}).content.decode()
    assert expected in body
    assert unexpected not in body


@pytest.mark.parametrize(
    ("model", "params", "expected", "unexpected"),
    [
        (w.Product, {"category__exact": "gpu", "q": "adm"}, "prd-adm-gpu", "prd-adm-cpu"),
        (w.Customer, {"loyalty_tier__exact": "gold", "q": "adm"}, "cus-adm-1", "cus-adm-2"),
        (w.SupportTicket, {"priority__exact": "high", "q": "adm"}, "tkt-adm-1", "tkt-adm-2"),
        (w.Order, {"customer": "cus-adm-2"}, "ord-adm-002", "ord-adm-001"),
    ],
)
def test_filters(admin_client, world, model, params, expected, unexpected):
    response = admin_client.get(changelist_url(model), params)
    assert response.status_code == 200
    body = response.content.decode()
    assert expected in body
    assert unexpected not in body


def test_filter_sidebar_offers_status_and_category(admin_client, world):
    body = admin_client.get(changelist_url(w.Product)).content.decode()
    assert "?category__exact=cooling" in body
    assert "?lifecycle__exact=active" in body


# --- Edits that must be refused, with the input kept -----------------------------------------------


def test_specs_that_do_not_fit_the_category_are_refused_and_kept(admin_client, world):
    bad = json.dumps({**CPU_SPECS, "socket": "AM9", "cores": 0})
    response = edit(admin_client, world.cpu, specs=bad)
    assert response.status_code == 200
    errors = " ".join(field_errors(response, "specs"))
    assert "socket" in errors and "cores" in errors
    assert '"AM9"' in response.context["adminform"].form["specs"].value()
    assert "&quot;AM9&quot;" in response.content.decode()
    world.cpu.refresh_from_db()
    assert world.cpu.specs["socket"] == "AM5"


def test_specs_of_another_category_are_refused(admin_client, world):
    response = edit(admin_client, world.cpu, category="gpu")
    assert response.status_code == 200
    assert field_errors(response, "specs")
    world.cpu.refresh_from_db()
    assert world.cpu.category == "cpu"


def test_broken_json_is_refused_with_its_position_and_kept_verbatim(admin_client, world):
    broken = '{"socket": "AM5",\n  "cores": 8,,}'
    response = edit(admin_client, world.cpu, specs=broken)
    assert response.status_code == 200
    [error] = field_errors(response, "specs")
    assert error.startswith("Enter valid JSON") and "line 2" in error
    textarea = response.context["adminform"].form["specs"].value()
    assert textarea == broken


def test_negative_price_is_refused(admin_client, world):
    response = edit(admin_client, world.gpu, price="-1.00")
    assert response.status_code == 200
    assert field_errors(response, "price")
    world.gpu.refresh_from_db()
    assert world.gpu.price == Decimal("599.00")


def test_payment_for_another_customers_order_is_refused(admin_client, world):
    response = edit(admin_client, world.payment, order=world.other_order.pk)
    assert response.status_code == 200
    assert field_errors(response, "customer") == ["is not the order's customer"]
    world.payment.refresh_from_db()
    assert world.payment.order_id == world.order.pk


def test_ticket_on_another_customers_order_is_refused(admin_client, world):
    response = edit(admin_client, world.ticket, order=world.other_order.pk)
    assert response.status_code == 200
    assert field_errors(response, "order") == ["belongs to another customer"]
    world.ticket.refresh_from_db()
    assert world.ticket.order_id == world.order.pk


def test_resolved_ticket_needs_an_assignee(admin_client, world):
    response = edit(admin_client, world.ticket, status="resolved", assignee="")
    assert response.status_code == 200
    assert field_errors(response, "assignee")


def test_ticket_resolved_before_it_was_opened_is_refused(admin_client, world):
    response = edit(admin_client, world.ticket, resolved_at_0="2025-01-01", resolved_at_1="09:00:00")
    assert response.status_code == 200
    assert field_errors(response, "resolved_at") == ["is before the ticket was opened"]


def test_message_sent_before_its_ticket_was_opened_is_refused(admin_client, world):
    response = edit(admin_client, world.message, sent_at_0="2025-01-01", sent_at_1="09:00:00")
    assert response.status_code == 200
    assert field_errors(response, "sent_at") == ["is before the ticket was opened"]


def test_customer_message_cannot_name_an_employee_author(admin_client, world):
    response = edit(admin_client, world.message, employee=world.agent.pk)
    assert response.status_code == 200
    assert field_errors(response, "employee") == ["a customer message has no employee author"]


def test_refund_above_what_was_paid_is_refused(admin_client, world):
    response = edit(admin_client, world.refund, amount="100000.00")
    assert response.status_code == 200
    assert "more than the" in field_errors(response, "amount")[0]


def test_refund_lines_must_belong_to_the_paid_order(admin_client, world):
    lines = json.dumps([{"line_item_id": "li-adm-002-1", "quantity": 1}])
    response = edit(admin_client, world.refund, line_items=lines)
    assert response.status_code == 200
    assert "not lines of order ord-adm-001" in field_errors(response, "line_items")[0]


def test_bad_customer_address_is_an_error_on_the_field_not_a_crash(admin_client, world):
    bad = json.dumps([{"label": "home", "name": "Dana", "line1": "1 A St", "city": "X", "state": "Oregon"}])
    response = edit(admin_client, world.gold, addresses=bad)
    assert response.status_code == 200
    errors = " ".join(field_errors(response, "addresses"))
    assert "label" in errors and "state" in errors and "postal_code" in errors


def test_bad_order_shipping_address_is_an_error_on_the_field(admin_client, world):
    response = edit(admin_client, world.order, shipping_address=json.dumps({"label": "shipping"}))
    assert response.status_code == 200
    assert field_errors(response, "shipping_address")


def test_unknown_employee_permission_is_refused(admin_client, world):
    response = edit(admin_client, world.agent, permissions='["view_orders", "launch_rockets"]')
    assert response.status_code == 200
    assert "launch_rockets" in field_errors(response, "permissions")[0]


def test_article_tags_must_be_a_list_of_words(admin_client, world):
    response = edit(admin_client, world.article, tags='{"returns": true}')
    assert response.status_code == 200
    assert field_errors(response, "tags") == ["must be a list of strings"]


def test_shipment_events_must_be_a_list_of_objects(admin_client, world):
    response = edit(admin_client, world.shipment, events='["scanned"]')
    assert response.status_code == 200
    assert field_errors(response, "events") == ["must be a list of scan event objects"]


def test_shipment_delivered_before_it_left_is_refused(admin_client, world):
    response = edit(admin_client, world.shipment, delivered_at_0="2025-08-01", delivered_at_1="10:00:00")
    assert response.status_code == 200
    assert field_errors(response, "delivered_at")


def test_emptied_json_box_means_the_default_not_a_crash(admin_client, world):
    response = edit(admin_client, world.gold, addresses="")
    assert response.status_code == 302
    world.gold.refresh_from_db()
    assert world.gold.addresses == []


# --- Edits that must save -----------------------------------------------------------------------------


def test_valid_specs_edit_saves(admin_client, world):
    specs = json.dumps({**CPU_SPECS, "cores": 12, "threads": 24})
    response = edit(admin_client, world.cpu, specs=specs, name="Ryzen 9 7900")
    assert response.status_code == 302
    world.cpu.refresh_from_db()
    assert world.cpu.specs["cores"] == 12
    assert world.cpu.name == "Ryzen 9 7900"


def test_specs_are_shown_as_indented_json(admin_client, world):
    body = admin_client.get(change_url(world.cpu)).content.decode()
    assert 'class="vLargeTextField json-editor"' in body
    # Indented, in the order the category's spec model lists the fields (jsonb reorders keys).
    assert "{\n  &quot;socket&quot;: &quot;AM5&quot;,\n  &quot;cores&quot;: 8," in body


def test_ids_are_fixed_once_saved_and_generated_when_left_blank(admin_client, world):
    page = admin_client.get(change_url(world.cpu)).content.decode()
    assert 'name="id"' not in page
    page = admin_client.get(add_url(w.Customer)).content.decode()
    data = form_data(page, form_id="customer_form")
    data.update(first_name="New", last_name="Person", email="new@example.com", addresses="", _save="Save")
    data.update({"created_at_0": "2025-09-01", "created_at_1": "10:00:00"})
    data.update({"updated_at_0": "2025-09-01", "updated_at_1": "10:00:00"})
    response = admin_client.post(add_url(w.Customer), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    created = w.Customer.objects.get(email="new@example.com")
    assert created.id.startswith("cus-")


def test_order_line_items_edited_inline_keep_totals_consistent(admin_client, world):
    page = admin_client.get(change_url(world.order)).content.decode()
    data = form_data(page, form_id="order_form")
    # Add a line: 2 coolers at the product's price (unit price left empty), and raise shipping.
    index = int(data["line_items-TOTAL_FORMS"])
    data["line_items-TOTAL_FORMS"] = str(index + 1)
    data.update({f"line_items-{index}-product": world.cooler.pk, f"line_items-{index}-quantity": "2"})
    data[f"line_items-{index}-unit_price"] = ""
    data[f"line_items-{index}-order"] = world.order.pk
    data["shipping_cost"] = "19.99"
    data["_save"] = "Save"
    response = admin_client.post(change_url(world.order), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    world.order.refresh_from_db()
    # 299.00 + 189.99 + 2 x 49.99 = 588.97; gold = 10% off merchandise = 58.90; shipping is not discounted.
    assert world.order.subtotal == Decimal("588.97")
    assert world.order.discount_total == Decimal("58.90")
    assert world.order.total == Decimal("588.97") - Decimal("58.90") + Decimal("19.99")
    world.order.full_clean()


def test_payment_added_on_the_order_page_is_paid_by_the_orders_customer(admin_client, world):
    page = admin_client.get(change_url(world.order)).content.decode()
    data = form_data(page, form_id="order_form")
    index = int(data["payments-TOTAL_FORMS"])
    data["payments-TOTAL_FORMS"] = str(index + 1)
    data.update(
        {
            f"payments-{index}-order": world.order.pk,
            f"payments-{index}-amount": "12.00",
            f"payments-{index}-method": "paypal",
            f"payments-{index}-status": "captured",
            f"payments-{index}-transaction_id": "txn-inline-1",
            "_save": "Save",
        }
    )
    response = admin_client.post(change_url(world.order), data)
    assert response.status_code == 302
    assert w.Payment.objects.get(transaction_id="txn-inline-1").customer_id == world.gold.pk


def test_order_inline_line_item_with_negative_price_is_refused(admin_client, world):
    page = admin_client.get(change_url(world.order)).content.decode()
    data = form_data(page, form_id="order_form")
    data["line_items-0-unit_price"] = "-5.00"
    data["_save"] = "Save"
    response = admin_client.post(change_url(world.order), data)
    assert response.status_code == 200
    formset = next(f for f in response.context["inline_admin_formsets"] if f.formset.prefix == "line_items")
    assert formset.formset.errors[0]["unit_price"]
    world.order.refresh_from_db()
    assert world.order.subtotal == Decimal("488.99")


def test_recalculate_totals_action(admin_client, world):
    w.Order.objects.filter(pk=world.order.pk).update(subtotal=Decimal("1.00"), total=Decimal("10.99"))
    response = admin_client.post(
        changelist_url(w.Order), {"action": "recalculate_totals", "_selected_action": [world.order.pk]}, follow=True
    )
    assert "Recalculated the totals of 1 order" in response.content.decode()
    world.order.refresh_from_db()
    assert world.order.subtotal == Decimal("488.99")
    assert world.order.total == Decimal("488.99") - Decimal("48.90") + Decimal("9.99")


# --- The totals service ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "discount"),
    [("none", "0.00"), ("silver", "24.45"), ("gold", "48.90"), ("platinum", "73.35")],
)
def test_loyalty_discount_per_tier(tier, discount):
    # 488.99 x 5% = 24.4495 -> 24.45; x 15% = 73.3485 -> 73.35 (half-up to the cent).
    assert order_merchandise_discount(subtotal=Decimal("488.99"), loyalty_tier=tier) == Decimal(discount)


@pytest.mark.parametrize(
    ("tier", "coupon", "subtotal", "discount"),
    [
        ("gold", "WELCOME10", "200.00", "38.00"),  # 10% loyalty = 20.00, then 10% of the 180.00 left = 18.00
        ("none", "SAVE25", "250.00", "25.00"),
        ("none", "SAVE25", "199.99", "0.00"),  # below the coupon's $200 minimum
        ("silver", "BUILD50", "1000.00", "100.00"),  # 5% = 50.00, then $50
        ("none", "FREESHIP", "80.00", "0.00"),  # takes nothing off merchandise
        ("none", "save25", "300.00", "25.00"),  # codes are case-insensitive
        ("platinum", "NOSUCHCODE", "100.00", "15.00"),
    ],
)
def test_coupon_applies_after_the_loyalty_discount(tier, coupon, subtotal, discount):
    got = order_merchandise_discount(subtotal=Decimal(subtotal), loyalty_tier=tier, coupon_code=coupon)
    assert got == Decimal(discount)


def _tier_held_on_the_day(order, orders_of_customer) -> str:
    """The tier the customer's spend earned the day before ``order`` (kb-0004's rule): the casebook's accounts
    are priced with the tier they held that day, so an order placed before a customer reached today's tier
    carries the smaller discount. Spend is order totals, less the refunds made before ``order``."""
    day = local_date(order.created_at) - timedelta(days=1)
    since = add_months(day, -LOYALTY_SPEND_MONTHS)
    spend = Decimal(0)
    for other in orders_of_customer:
        if other.pk == order.pk or other.status in SPEND_STATUSES_EXCLUDED:
            continue
        if not since <= local_date(other.created_at) <= day:
            continue
        refunded = sum(
            (
                refund.amount
                for payment in other.payments.all()
                for refund in payment.refunds.all()
                if refund.status != "rejected" and refund.created_at < order.created_at
            ),
            Decimal(0),
        )
        spend += other.total - refunded
    return tier_for_spend(spend)


@pytest.mark.django_db
def test_recalculated_totals_agree_with_every_generated_order(seeded_world):
    """Every order's subtotal and discount are the policy's: the customer's tier of today, or, for an account
    whose tier follows its spend (no loyalty exception), the tier it held on the order's day: before the review that
    re-tiered it, the tier its "Loyalty review" note records, after it the tier its spend earned."""
    orders = list(
        w.Order.objects.select_related("customer").prefetch_related("line_items", "payments__refunds").order_by("pk")
    )
    by_customer = defaultdict(list)
    for order in orders:
        by_customer[order.customer_id].append(order)
    mismatched, priced_on_the_day = [], 0
    for order in orders:
        subtotal = sum((li.unit_price * li.quantity for li in order.line_items.all()), Decimal("0.00"))
        discount = order_merchandise_discount(
            subtotal=subtotal, loyalty_tier=order.customer.loyalty_tier, coupon_code=order.discount_code
        )
        if (subtotal, discount) == (order.subtotal, order.discount_total):
            continue
        before = tier_before_review(order.customer)
        if before is not None and local_date(order.created_at) <= before[0]:
            # Placed before the review (run at the world's now) that re-tiered the account: the tier it held then.
            held = before[1]
        else:
            held = _tier_held_on_the_day(order, by_customer[order.customer_id])
        on_the_day = order_merchandise_discount(subtotal=subtotal, loyalty_tier=held, coupon_code=order.discount_code)
        if has_loyalty_exception(order.customer) or (subtotal, on_the_day) != (order.subtotal, order.discount_total):
            mismatched.append(order.pk)
        else:
            priced_on_the_day += 1
    assert len(orders) > 100
    assert mismatched == []
    # The casebook's accounts climb tiers over time: some of their orders carry an earlier tier's discount.
    assert priced_on_the_day > 0


def test_unknown_coupon_is_refused_on_the_order_form(admin_client, world):
    response = edit(admin_client, world.order, discount_code="FREEMONEY")
    assert response.status_code == 200
    assert "unknown coupon" in field_errors(response, "discount_code")[0]


def test_order_recalculate_totals_math(world):
    order = world.order
    w.Customer.objects.filter(pk=order.customer_id).update(loyalty_tier="platinum")
    order.customer.refresh_from_db()
    order.tax_total = Decimal("3.00")
    order.save()
    w.OrderLineItem.objects.filter(order=order, product=world.cpu).update(quantity=3)
    order_recalculate_totals(order=order)
    order.refresh_from_db()
    assert order.subtotal == Decimal("1086.99")  # 3 x 299.00 + 189.99
    assert order.discount_total == Decimal("163.05")  # 15% of 1086.99 = 163.0485
    assert order.total == Decimal("1086.99") - Decimal("163.05") + Decimal("9.99") + Decimal("3.00")
    order.full_clean()


def test_order_without_lines_totals_to_shipping(world):
    order = world.other_order
    order.line_items.all().delete()
    order_recalculate_totals(order=order)
    assert (order.subtotal, order.discount_total, order.total) == (Decimal("0.00"), Decimal("0.00"), Decimal("9.99"))


# --- Snapshots and episodes: history, read-only --------------------------------------------------


def test_snapshot_cannot_be_changed_or_deleted(admin_client, world):
    page = admin_client.get(change_url(world.snapshot)).content.decode()
    assert 'name="_save"' not in page
    assert (
        admin_client.post(reverse("admin:world_app_worldsnapshot_delete", args=[world.snapshot.pk])).status_code == 403
    )
    assert "a" * 12 in admin_client.get(changelist_url(w.WorldSnapshot)).content.decode()


def test_snapshot_changelist_offers_publishing_to_admins(admin_client, world):
    body = admin_client.get(changelist_url(w.WorldSnapshot)).content.decode()
    assert reverse("admin:world_app_worldsnapshot_publish") in body
    assert admin_client.get(reverse("admin:world_app_worldsnapshot_publish")).status_code == 200


@pytest.mark.skipif(importlib.util.find_spec("world_app.snapshots") is None, reason="world_app.snapshots not built yet")
@pytest.mark.django_db(databases=["default", "episode"])
def test_publish_button_publishes_a_new_version(admin_client, world):
    response = admin_client.post(reverse("admin:world_app_worldsnapshot_publish"), {"note": "after edits"}, follow=True)
    assert response.status_code == 200
    assert f"Published world v{world.snapshot.version + 1}." in response.content.decode()
    latest = w.WorldSnapshot.objects.defer("image").first()
    assert latest.version == world.snapshot.version + 1 and latest.note == "after edits"


def test_episode_is_read_only_with_its_steps(admin_client, world):
    page = admin_client.get(change_url(world.episode)).content.decode()
    assert "get_order" in page and "ord-adm-001" in page
    assert 'name="_save"' not in page


@pytest.mark.skipif(importlib.util.find_spec("world_app.episodes") is None, reason="world_app.episodes not built yet")
@pytest.mark.django_db(databases=["default", "episode"])
def test_close_episodes_action(admin_client, world):
    from world_app.episodes import episode_create
    from world_app.snapshots import snapshot_publish

    episode = episode_create(snapshot=snapshot_publish(note="for episodes"), label="admin close test")
    selected = [str(episode.pk), str(world.episode.pk)]
    w.Episode.objects.filter(pk=world.episode.pk).update(status=w.Episode.Status.CLOSED)
    response = admin_client.post(
        changelist_url(w.Episode), {"action": "close_episodes", "_selected_action": selected}, follow=True
    )
    assert "Closed 1 episode(s) (1 already closed)." in response.content.decode()
    episode.refresh_from_db()
    assert episode.status == w.Episode.Status.CLOSED
    assert episode.final_checksum


# --- Query counts -------------------------------------------------------------------------------------

BULK_ROWS = 60


@pytest.fixture
def crowded_world(world):
    many_orders(BULK_ROWS, products=[world.cpu, world.gpu], employee=world.agent)
    return world


@pytest.mark.parametrize(
    "model",
    [
        w.Customer,
        w.Employee,
        w.Product,
        w.Order,
        w.OrderLineItem,
        w.Payment,
        w.Shipment,
        w.Refund,
        w.SupportTicket,
        w.TicketMessage,
        w.Resolution,
        w.Escalation,
        w.Episode,
    ],
    ids=lambda m: m.__name__,
)
def test_changelist_query_count_does_not_grow_with_rows(
    admin_client, crowded_world, model, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8):
        response = admin_client.get(changelist_url(model))
    assert response.status_code == 200


@pytest.fixture
def long_children(crowded_world):
    """Twenty child rows under each parent that has inlines: an N+1 in an inline would add twenty queries."""
    world = crowded_world
    spare = w.Product.objects.bulk_create(
        w.Product(id=f"prd-admx-{i}", sku=f"ADMX-{i}", name=f"Cable {i}", brand="B", category="cable", price=Decimal(5))
        for i in range(BULK_ROWS // 3)
    )
    for i, item in enumerate(spare):
        w.OrderLineItem.objects.create(
            id=f"li-admx-{i}", order=world.order, product=item, quantity=1, unit_price=item.price
        )
        w.BundleItem.objects.create(id=f"bni-admx-{i}", bundle=world.bundle, product=item)
        w.BuildComponent.objects.create(id=f"bcp-admx-{i}", build=world.build, product=item)
        w.TicketMessage.objects.create(
            id=f"msg-admx-{i}",
            ticket=world.ticket,
            author_kind="employee",
            employee=world.lead,
            body="…",
            sent_at=world.ticket.created_at,
        )
        w.EpisodeStep.objects.create(episode=world.episode, seq=i + 2, name="search_orders", arguments={"page": i})
    return world


@pytest.mark.parametrize("attr", ["order", "ticket", "gold", "build", "bundle", "episode", "cpu", "payment", "refund"])
def test_change_page_query_count_does_not_grow_with_inline_rows(
    admin_client, long_children, attr, django_assert_max_num_queries
):
    obj = getattr(long_children, attr)
    with django_assert_max_num_queries(10):
        response = admin_client.get(change_url(obj))
    assert response.status_code == 200


def test_search_query_count_is_bounded(admin_client, crowded_world, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        response = admin_client.get(changelist_url(w.Order), {"q": "bulk1@"})
    assert "ord-bulk-0001" in response.content.decode()


def test_world_times_are_shown_and_typed_in_the_world_zone(admin_client, world):
    # The order was placed 20 days before the world's "now" (2025-09-15 14:00 EST).
    data = form_data(admin_client.get(change_url(world.order)).content.decode(), form_id="order_form")
    assert (data["created_at_0"], data["created_at_1"]) == ("2025-08-26", "14:00:00")
    response = edit(admin_client, world.shipment, delivered_at_0="2025-09-01", delivered_at_1="09:30:00")
    assert response.status_code == 302
    world.shipment.refresh_from_db()
    assert world.shipment.delivered_at.isoformat() == "2025-09-01T14:30:00+00:00"


def test_date_filters_follow_the_world_clock(admin_client, world):
    response = admin_client.get(changelist_url(w.SupportTicket))
    body = response.content.decode()
    # The world's today is 2025-09-15 (EST): the past 7 days start on 2025-09-08 whatever the server's date.
    assert "created_at__gte=2025-09-08" in body
    assert "Past 30 days" in body
    response = admin_client.get(
        changelist_url(w.SupportTicket),
        {"created_at__gte": "2025-09-08 00:00:00-05:00", "created_at__lt": "2025-09-16 00:00:00-05:00", "q": "adm"},
    )
    body = response.content.decode()
    assert "tkt-adm-2" in body and "tkt-adm-1" not in body  # opened 3 and 10 days before the world's now
