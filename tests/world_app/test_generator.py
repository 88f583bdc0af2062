"""The generated world: size, determinism, the relations that must hold, and the mess that must be there."""

import re
from collections import Counter, defaultdict
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.db import models

from world_app.checksum import world_content_checksum
from world_app.clock import world_now, world_zone
from world_app.compatibility import check_compatibility
from world_app.generator import ANOMALY_KINDS, WorldExistsError, generate_world, world_seed
from world_app.generator.timeline import add_months
from world_app.loyalty import tier_before_review, tier_for_spend
from world_app.models import (
    ENTITY_MODELS,
    WORLD_MODELS,
    ArticleKind,
    Build,
    CompatibilityRule,
    Customer,
    Escalation,
    KnowledgeBaseArticle,
    Lifecycle,
    Order,
    OrderLineItem,
    Payment,
    Product,
    ProductCategory,
    Refund,
    Resolution,
    Shipment,
    SupportTicket,
    TicketMessage,
    WarrantyClaim,
)
from world_app.selectors import entity_type_name, world_counts
from world_app.specs import validate_specs
from world_app.store_rules import (
    COUPONS,
    FREE_GROUND_SHIPPING_OVER,
    LOYALTY_DISCOUNT_PCT,
    LOYALTY_SPEND_MONTHS,
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RETURN_WINDOW_DAYS,
    SALES_TAX_PCT,
    SHIPPING_RATES,
)

pytestmark = pytest.mark.django_db

CENT = Decimal("0.01")
MOVING_REFUNDS = ("approved", "processed")
PAID_STATUSES = ("captured", "completed", "refunded", "partially_refunded")


def q(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def anomaly_ids(manifest, kind: str) -> set[str]:
    return set(manifest.anomaly_ids(kind))


# --- size and shape --------------------------------------------------------------------------------------


def test_scale_1_has_at_least_2500_entities_over_all_14_types(seeded_world):
    counts = world_counts()
    assert len(counts) == 14
    assert all(n > 0 for n in counts.values()), counts
    assert sum(counts.values()) >= 2500
    assert seeded_world.counts == counts
    assert seeded_world.total == sum(counts.values())


def test_counts_are_near_the_planned_mix(seeded_world):
    # The base world (about 620 customers, 800 orders, 350 tickets) plus the casebook's accounts (casebook.py).
    counts = seeded_world.counts
    assert 1300 <= counts["customer"] <= 1600
    assert 50 <= counts["employee"] <= 80
    assert 230 <= counts["product"] <= 280
    assert 1800 <= counts["order"] <= 2300
    assert 150 <= counts["refund"] <= 260
    assert 420 <= counts["support_ticket"] <= 580
    assert 150 <= counts["resolution"] <= 320
    assert 20 <= counts["escalation"] <= 80
    assert 50 <= counts["knowledge_base_article"] <= 80
    assert counts["build"] == 150


def test_catalogue_covers_every_category_with_valid_specs_and_a_lifecycle_mix(seeded_world):
    products = list(Product.objects.all())
    assert {p.category for p in products} == set(ProductCategory.values)
    for product in products:
        assert validate_specs(product.category, product.specs) == product.specs, product.id
    lifecycles = Counter(p.lifecycle for p in products)
    assert lifecycles[Lifecycle.DISCONTINUED] > 0 and lifecycles[Lifecycle.END_OF_LIFE] > 0
    assert lifecycles[Lifecycle.ACTIVE] > len(products) / 2
    assert any(p.stock_quantity == 0 and p.backorderable for p in products)
    assert any(p.stock_quantity == 0 and not p.backorderable for p in products)
    assert len({p.sku for p in products}) == len(products)


def test_every_generated_row_passes_full_clean(seeded_world):
    related = {
        Order: ("build",),
        Payment: ("order",),
        Shipment: ("order",),
        Refund: ("payment",),
        SupportTicket: ("order", "build"),
        Resolution: ("ticket", "refund__payment"),
        WarrantyClaim: ("line_item__order",),
    }
    for model in WORLD_MODELS:
        for row in model.objects.select_related(*related.get(model, ())).iterator(chunk_size=2000):
            row.full_clean(validate_unique=False)


def test_ids_are_readable_and_follow_the_order_date(seeded_world):
    zone = world_zone()
    for order_id, created in Order.objects.values_list("id", "created_at"):
        assert re.fullmatch(r"ord-\d{6}-\d{3,}", order_id)
        assert order_id[4:10] == created.astimezone(zone).strftime("%y%m%d")
    assert all(re.fullmatch(r"cus-\d{5}", pk) for pk in Customer.objects.values_list("id", flat=True))
    assert all(re.fullmatch(r"tkt-\d{5}", pk) for pk in SupportTicket.objects.values_list("id", flat=True))
    assert all(
        pk.startswith(f"li-{order_id[4:]}-") for pk, order_id in OrderLineItem.objects.values_list("id", "order")
    )


def test_time_lies_between_2023_and_the_world_now(seeded_world):
    now = world_now()
    for model in ENTITY_MODELS:
        latest = model.objects.order_by("-created_at").values_list("created_at", flat=True).first()
        assert latest <= now, model
    dates = [c.astimezone(world_zone()).date() for c in Order.objects.values_list("created_at", flat=True)]
    assert min(dates) >= date(2023, 1, 1)
    today = now.astimezone(world_zone()).date()
    assert sum(1 for d in dates if (today - d).days <= 30) >= 40
    # Denser recently: the last year holds more orders than the first.
    assert sum(1 for d in dates if d.year == 2023) < sum(1 for d in dates if (today - d).days <= 365)
    delivered = Shipment.objects.filter(delivered_at__isnull=False).values_list("delivered_at", flat=True)
    around_a_year = [d for d in delivered if 11 * 30 <= (now - d).days <= 13 * 30]
    assert len(around_a_year) >= 20


# --- determinism ----------------------------------------------------------------------------------------


def test_same_seed_gives_the_same_checksum_and_another_seed_another(seeded_world):
    assert world_content_checksum() == seeded_world.checksum
    again = world_seed(seed=7, scale=1, reset=True)
    assert world_content_checksum() == seeded_world.checksum
    assert again.counts == seeded_world.counts
    assert again.anomalies == seeded_world.anomalies
    world_seed(seed=8, scale=1, reset=True)
    assert world_content_checksum() != seeded_world.checksum


def test_small_worlds_are_deterministic_too(seeded_world):
    world_seed(seed=3, scale=0.2, reset=True)
    first = world_content_checksum()
    world_seed(seed=3, scale=0.2, reset=True)
    assert world_content_checksum() == first
    world_seed(seed=3, scale=0.2, mess_rate=0.1, reset=True)
    assert world_content_checksum() != first


def test_generating_over_an_existing_world_is_refused(seeded_world):
    with pytest.raises(WorldExistsError):
        generate_world(seed=7, scale=1)
    assert world_content_checksum() == seeded_world.checksum


def test_the_world_now_is_configurable_and_moves_the_world(seeded_world, settings):
    settings.WORLD_NOW = world_now() - timedelta(days=200)
    manifest = world_seed(seed=7, scale=0.2, reset=True)
    assert manifest.world_now.startswith("2025-02-27")
    assert Order.objects.order_by("-created_at").first().created_at <= settings.WORLD_NOW


# --- commerce invariants --------------------------------------------------------------------------------


def _orders_with_lines():
    lines = defaultdict(list)
    for line in OrderLineItem.objects.select_related("product"):
        lines[line.order_id].append(line)
    return list(Order.objects.select_related("customer").order_by("created_at", "id")), lines


def test_order_money_adds_up_by_the_policies(seeded_world):
    orders, lines = _orders_with_lines()
    seen_customers = set()
    for order in orders:
        first_order = order.customer_id not in seen_customers
        seen_customers.add(order.customer_id)
        subtotal = sum((li.unit_price * li.quantity for li in lines[order.id]), Decimal("0"))
        assert order.subtotal == subtotal, order.id
        # Priced with the account's tier: the one it holds, the one it held before the loyalty review re-tiered it
        # (its "Loyalty review" note; every order precedes the review), or for the casebook's accounts the one its
        # spend of the year before the order earned.
        remaining, free_shipping = _priced(order, subtotal, order.customer.loyalty_tier, first_order=first_order)
        before = tier_before_review(order.customer)
        if order.discount_total != subtotal - remaining and before is not None:
            remaining, free_shipping = _priced(order, subtotal, before[1], first_order=first_order)
        if order.discount_total != subtotal - remaining:
            tier = _tier_earned_before(order)
            remaining, free_shipping = _priced(order, subtotal, tier, first_order=first_order)
        assert order.discount_total == subtotal - remaining, order.id
        assert order.tax_total == q(remaining * SALES_TAX_PCT / 100)
        assert order.total == order.subtotal - order.discount_total + order.shipping_cost + order.tax_total
        if order.shipping_service:
            rate = SHIPPING_RATES[order.shipping_service]
            free = free_shipping or (order.shipping_service == "ground" and remaining > FREE_GROUND_SHIPPING_OVER)
            assert order.shipping_cost == (Decimal("0.00") if free else rate), order.id


def _priced(order: Order, subtotal: Decimal, tier: str, *, first_order: bool) -> tuple[Decimal, bool]:
    remaining = subtotal - q(subtotal * LOYALTY_DISCOUNT_PCT[tier] / 100)
    if not order.discount_code:
        return remaining, False
    coupon = COUPONS[order.discount_code]
    day = order.created_at.astimezone(world_zone()).date()
    assert subtotal >= coupon.min_merchandise, order.id
    assert coupon.valid_from is None or coupon.valid_from <= day, order.id
    assert coupon.valid_until is None or day <= coupon.valid_until, order.id
    assert first_order or not coupon.first_order_only, order.id
    if coupon.kind == "percent":
        return remaining - q(remaining * coupon.value / 100), False
    if coupon.kind == "amount":
        return remaining - min(coupon.value, remaining), False
    return remaining, True


def _tier_earned_before(order: Order) -> str:
    day = order.created_at.astimezone(world_zone()).date() - timedelta(days=1)
    since = add_months(day, -LOYALTY_SPEND_MONTHS)
    spend = Decimal(0)
    for earlier in Order.objects.filter(customer_id=order.customer_id).exclude(status__in=("pending", "cancelled")):
        if since <= earlier.created_at.astimezone(world_zone()).date() <= day:
            refunded = Refund.objects.filter(payment__order=earlier).exclude(status="rejected")
            spend += earlier.total - sum((r.amount for r in refunded), Decimal(0))
    return tier_for_spend(spend)


def test_payments_match_the_order_total(seeded_world):
    mess = anomaly_ids(seeded_world, "duplicate_charge")
    short = {r.related[0] for r in seeded_world.anomalies["payment_short_by_cents"]}
    unpaid = anomaly_ids(seeded_world, "unpaid_order")
    disputed = {r.related[0] for r in seeded_world.anomalies["disputed_payment"]}
    payments = defaultdict(list)
    for payment in Payment.objects.order_by("created_at", "id"):
        payments[payment.order_id].append(payment)
    for order in Order.objects.all():
        mine = payments[order.id]
        assert mine, order.id
        assert all(p.customer_id == order.customer_id for p in mine)
        taken = [p for p in mine if p.status in PAID_STATUSES]
        if order.id in mess:
            assert len(taken) == 2 and all(p.amount == order.total for p in taken)
            continue
        # Failed attempts come first; one payment goes through (or none: an unpaid order).
        assert all(p.status == "failed" for p in mine[:-1]), order.id
        last = mine[-1]
        if order.id in unpaid:
            assert last.status == "failed" and order.status in ("pending", "cancelled"), order.id
            continue
        if last.status == "disputed":
            assert order.id in disputed and last.amount == order.total, order.id
            continue
        if order.status in ("paid", "fulfilled", "refunded", "partially_refunded"):
            assert last.status in PAID_STATUSES, order.id
            if order.id in short:
                assert Decimal("0.01") <= order.total - last.amount <= Decimal("0.07")
                assert "cent difference" in order.notes
            else:
                assert sum(p.amount for p in taken) == order.total, order.id
        elif order.status in ("pending", "backorder"):
            assert last.status in ("pending", "authorized") and last.amount == order.total
        elif order.status == "cancelled":
            assert last.status == "voided"


def test_refunds_never_exceed_what_was_paid_and_exclude_shipping(seeded_world):
    for payment in Payment.objects.prefetch_related("refunds").select_related("order"):
        moving = [r for r in payment.refunds.all() if r.status != "rejected"]
        refunded = sum((r.amount for r in moving), Decimal("0"))
        assert refunded <= payment.amount, payment.id
        fees = sum((r.restocking_fee for r in moving), Decimal("0"))
        assert refunded + fees <= payment.order.total - payment.order.shipping_cost, payment.id


def test_refund_amounts_follow_the_refund_formula(seeded_world):
    lines = {li.id: li for li in OrderLineItem.objects.select_related("product")}
    orders = {o.id: o for o in Order.objects.all()}
    checked = 0
    for refund in Refund.objects.select_related("payment"):
        order = orders[refund.payment.order_id]
        refunded_units = Counter()
        for entry in refund.line_items:
            line = lines[entry["line_item_id"]]
            assert line.order_id == order.id
            refunded_units[line.id] += entry["quantity"]
            assert refunded_units[line.id] <= line.quantity
        if refund.reason in ("price_match", "other") or not refund.line_items:
            assert refund.restocking_fee == 0
            continue
        expected_paid = Decimal("0")
        fee = Decimal("0")
        for entry in refund.line_items:
            line = lines[entry["line_item_id"]]
            merchandise = line.unit_price * entry["quantity"]
            paid = merchandise - (q(merchandise * order.discount_total / order.subtotal) if order.subtotal else 0)
            expected_paid += paid
            if refund.restocking_fee and line.product.category not in RESTOCKING_FEE_EXEMPT_CATEGORIES:
                fee += q(paid * RESTOCKING_FEE_PCT / 100)
        assert refund.restocking_fee == fee, refund.id
        if refund.reason == "defective":
            assert refund.restocking_fee == 0
        # The amount is the formula's, or capped by what is left to refund on the order (never shipping).
        assert abs(refund.amount - (expected_paid - fee)) <= Decimal("0.02") or refund.amount < expected_paid - fee
        checked += 1
    assert checked > 50


def test_order_and_payment_status_follow_the_refunds(seeded_world):
    refunds = defaultdict(list)
    for refund in Refund.objects.select_related("payment"):
        refunds[refund.payment.order_id].append(refund)
    line_units = defaultdict(dict)
    for line_id, order_id, quantity in OrderLineItem.objects.values_list("id", "order_id", "quantity"):
        line_units[order_id][line_id] = quantity
    for order in Order.objects.prefetch_related("payments"):
        moving = [r for r in refunds[order.id] if r.status in MOVING_REFUNDS]
        if not moving:
            assert order.status not in ("refunded", "partially_refunded"), order.id
            continue
        returned = Counter()
        for refund in moving:
            if refund.reason not in ("price_match", "other"):
                for entry in refund.line_items:
                    returned[entry["line_item_id"]] += entry["quantity"]
        everything = all(returned[line] >= units for line, units in line_units[order.id].items())
        assert order.status == ("refunded" if everything else "partially_refunded"), order.id
        for refund in moving:
            assert refund.payment.status == order.status, refund.id


def test_a_defective_refund_is_approved_at_once(seeded_world):
    for refund in Refund.objects.filter(reason="defective"):
        if refund.amount <= REFUND_APPROVAL_LIMIT:
            assert refund.status in MOVING_REFUNDS, refund.id


def test_shipments_leave_after_the_order_and_arrive_after_leaving(seeded_world):
    for shipment in Shipment.objects.select_related("order"):
        order = shipment.order
        assert shipment.created_at >= order.created_at
        if shipment.shipped_at:
            assert shipment.shipped_at >= order.created_at, shipment.id
        if shipment.delivered_at:
            assert shipment.shipped_at and shipment.delivered_at >= shipment.shipped_at, shipment.id
        assert (shipment.status == "delivered") == (shipment.delivered_at is not None), shipment.id
        times = [e["at"] for e in shipment.events]
        assert times == sorted(times), shipment.id
        assert order.status not in ("pending", "cancelled", "backorder"), shipment.id
    unshipped = Order.objects.filter(status__in=["pending", "cancelled", "backorder"]).count()
    assert unshipped > 0


def test_warranty_end_is_delivery_plus_warranty_months(seeded_world):
    zone = world_zone()
    delivered = dict(Shipment.objects.filter(delivered_at__isnull=False).values_list("order_id", "delivered_at"))
    claims = list(WarrantyClaim.objects.select_related("line_item", "product", "ticket"))
    assert claims
    for claim in claims:
        delivered_on = delivered[claim.line_item.order_id].astimezone(zone).date()
        assert claim.warranty_expires_on == add_months(delivered_on, claim.product.warranty_months)
        filed_on = claim.ticket.created_at.astimezone(zone).date()
        if claim.status == "approved":
            assert filed_on <= claim.warranty_expires_on, claim.id
        if "warranty expired" in claim.decision_reason:
            assert filed_on > claim.warranty_expires_on, claim.id
    for resolution in Resolution.objects.filter(
        outcome__in=["warranty_claim_filed", "replacement_sent"]
    ).select_related("ticket"):
        ticket = resolution.ticket
        if ticket.ticket_type != "warranty":
            continue
        claim = next(c for c in claims if c.ticket_id == ticket.id)
        assert ticket.created_at.astimezone(zone).date() <= claim.warranty_expires_on


def test_builds_break_no_rule_or_exactly_the_planned_one(seeded_world):
    rules = list(CompatibilityRule.objects.all())
    incompatible = set(seeded_world.scenarios["incompatible_builds"])
    assert incompatible
    for build in Build.objects.prefetch_related("components__product"):
        parts = [(c.product, c.quantity) for c in build.components.all()]
        assert {p.category for p, _ in parts} >= {"cpu", "motherboard", "memory", "storage", "case", "psu"}
        violations = check_compatibility(parts, rules)
        assert len(violations) == (1 if build.id in incompatible else 0), (build.id, violations)


def test_build_orders_hold_the_builds_parts(seeded_world):
    ordered = Order.objects.filter(build__isnull=False).select_related("build")
    assert ordered.exists()
    for order in ordered.prefetch_related("line_items", "build__components"):
        assert order.build.customer_id == order.customer_id
        assert order.build.status in ("ordered", "assembled")
        ordered_parts = {(li.product_id, li.quantity) for li in order.line_items.all()}
        assert ordered_parts == {(c.product_id, c.quantity) for c in order.build.components.all()}


def test_discontinued_products_appear_only_in_orders_placed_while_they_were_sold(seeded_world):
    ended = {
        p.id: p.updated_at
        for p in Product.objects.filter(lifecycle__in=[Lifecycle.DISCONTINUED, Lifecycle.END_OF_LIFE])
    }
    zone = world_zone()
    found = 0
    for line in OrderLineItem.objects.filter(product_id__in=ended).select_related("order"):
        found += 1
        assert line.order.created_at.astimezone(zone).date() <= ended[line.product_id].astimezone(zone).date(), line.id
    assert found > 0
    # A preorder is taken like a backorder: nothing ships before the release date.
    preordered = Order.objects.filter(line_items__product__lifecycle=Lifecycle.PREORDER)
    assert set(preordered.values_list("status", flat=True)) <= {"backorder"}


# --- support invariants ---------------------------------------------------------------------------------


def test_tickets_point_at_the_customers_own_orders_and_builds(seeded_world):
    for ticket in SupportTicket.objects.select_related("order", "build"):
        if ticket.order:
            assert ticket.order.customer_id == ticket.customer_id, ticket.id
            assert ticket.created_at >= ticket.order.created_at, ticket.id
        if ticket.build:
            assert ticket.build.customer_id == ticket.customer_id, ticket.id
    assert SupportTicket.objects.filter(order__isnull=False).count() > 200


def test_resolved_tickets_have_an_assignee_and_a_resolution(seeded_world):
    resolutions = Counter(Resolution.objects.values_list("ticket_id", flat=True))
    for ticket in SupportTicket.objects.all():
        if ticket.status in ("resolved", "closed"):
            assert ticket.assignee_id and ticket.resolved_at, ticket.id
            assert resolutions[ticket.id] == 1, ticket.id
        else:
            assert resolutions[ticket.id] == 0 and ticket.resolved_at is None, ticket.id
        if ticket.status == "closed":
            assert ticket.closure_reason
    for resolution in Resolution.objects.select_related("ticket"):
        assert resolution.resolved_by_id == resolution.ticket.assignee_id
        assert resolution.created_at == resolution.ticket.resolved_at


def test_refund_issued_resolutions_link_a_refund_of_the_tickets_order(seeded_world):
    issued = Resolution.objects.filter(outcome="refund_issued").select_related("ticket", "refund__payment")
    assert issued.count() > 30
    for resolution in issued:
        assert resolution.refund is not None, resolution.id
        assert resolution.refund.payment.order_id == resolution.ticket.order_id, resolution.id
        assert resolution.refund.status in MOVING_REFUNDS
        assert resolution.created_at >= resolution.refund.created_at


def test_threads_and_escalations_are_in_time_order(seeded_world):
    tickets = {t.id: t for t in SupportTicket.objects.all()}
    for message in TicketMessage.objects.all():
        ticket = tickets[message.ticket_id]
        assert message.sent_at >= ticket.created_at, message.id
        assert message.sent_at <= world_now()
        if message.author_kind == "employee":
            assert message.employee_id
    escalations = list(Escalation.objects.all())
    for escalation in escalations:
        ticket = tickets[escalation.ticket_id]
        assert escalation.created_at >= ticket.created_at
        assert (escalation.status == "resolved") == (ticket.status in ("resolved", "closed")), escalation.id
    assert any(t.status == "escalated" for t in tickets.values())
    assert all(any(e.ticket_id == t.id for e in escalations) for t in tickets.values() if t.status == "escalated")


# --- knowledge base ---------------------------------------------------------------------------------------


def test_knowledge_base_holds_the_policies_guides_manuals_and_faqs(seeded_world):
    kinds = Counter(KnowledgeBaseArticle.objects.values_list("kind", flat=True))
    assert set(kinds) == set(ArticleKind.values)
    assert kinds["policy"] >= 10 and kinds["troubleshooting"] >= 10 and kinds["manual"] >= 10
    returns = KnowledgeBaseArticle.objects.get(slug="returns-policy").body
    assert f"{RETURN_WINDOW_DAYS} days of delivery" in returns and "Shipping charges are not refunded once" in returns
    assert f"{RESTOCKING_FEE_PCT}%" in KnowledgeBaseArticle.objects.get(slug="restocking-fees").body
    loyalty = KnowledgeBaseArticle.objects.get(slug="loyalty-program").body
    assert all(f"{tier} {pct}%" in loyalty for tier, pct in LOYALTY_DISCOUNT_PCT.items())
    warranty = KnowledgeBaseArticle.objects.get(slug="warranty-policy").body
    assert "overclocking" in warranty and "liquid damage" in warranty
    for manual in KnowledgeBaseArticle.objects.filter(kind="manual").select_related("product"):
        assert manual.product and manual.product.name in manual.body
        assert manual.product_category == manual.product.category


# --- mess ---------------------------------------------------------------------------------------------------


def test_every_kind_of_mess_is_there_and_recorded(seeded_world):
    assert set(seeded_world.anomalies) == set(ANOMALY_KINDS)
    for kind, records in seeded_world.anomalies.items():
        assert records, kind
    models = {"cus": Customer, "ord": Order, "pay": Payment, "tkt": SupportTicket, "prd": Product}
    for kind, records in seeded_world.anomalies.items():
        for record in records:
            assert models[record.id.split("-")[0]].objects.filter(pk=record.id).exists(), (kind, record.id)


def test_near_duplicate_customers_are_the_same_person(seeded_world):
    for record in seeded_world.anomalies["duplicate_customer"]:
        duplicate, original = Customer.objects.get(pk=record.id), Customer.objects.get(pk=record.related[0])
        assert duplicate.last_name == original.last_name and duplicate.phone == original.phone
        assert duplicate.email != original.email
        assert duplicate.addresses[0]["line1"] == original.addresses[0]["line1"]
        assert duplicate.created_at >= original.created_at


def test_contradictions_a_careful_agent_must_notice(seeded_world):
    for record in seeded_world.anomalies["delivered_but_reported_missing"]:
        ticket = SupportTicket.objects.get(pk=record.id)
        shipment = Shipment.objects.get(pk=record.related[1])
        assert shipment.status == "delivered" and shipment.order_id == ticket.order_id
        assert "never arrived" in ticket.body and ticket.status in ("new", "open")
    for record in seeded_world.anomalies["tier_claim_mismatch"]:
        customer = Customer.objects.get(pk=record.id)
        claimed = re.search(r"(silver|gold|platinum)", customer.notes, re.IGNORECASE).group(1).lower()
        assert claimed != customer.loyalty_tier
        assert SupportTicket.objects.filter(pk__in=record.related, customer=customer).exists()
    for record in seeded_world.anomalies["warranty_term_mismatch"]:
        product = Product.objects.get(pk=record.id)
        years = int(re.search(r"(\d+)-year warranty", product.description).group(1))
        assert years * 12 != product.warranty_months
    for record in seeded_world.anomalies["duplicate_charge"]:
        assert SupportTicket.objects.filter(order_id=record.id, ticket_type="billing").exists()
    for record in seeded_world.anomalies["order_missing_shipping_data"]:
        order = Order.objects.get(pk=record.id)
        assert order.shipping_address is None and not order.carrier and not order.shipping_service
        assert order.shipments.filter(status="delivered").exists()
    for record in seeded_world.anomalies["backorder"]:
        order = Order.objects.get(pk=record.id)
        product = Product.objects.get(pk=record.related[0])
        assert order.status == "backorder" and product.stock_quantity == 0 and product.backorderable


def test_a_mess_rate_of_zero_gives_a_clean_world(seeded_world):
    manifest = world_seed(seed=7, scale=0.3, mess_rate=0, reset=True)
    # Store events rather than mess: they happen whatever the mess rate (the casebook's cases).
    natural = {
        "discontinued_in_old_order",
        "split_shipment",
        "partial_shipment",
        "lost_parcel",
        "disputed_payment",
        "unpaid_order",
    }
    assert all(not records for kind, records in manifest.anomalies.items() if kind not in natural)
    assert not Order.objects.filter(shipping_address__isnull=True).exists()


def test_manifest_round_trips_through_json(seeded_world):
    from world_app.generator import WorldManifest

    assert WorldManifest.from_dict(seeded_world.as_dict()) == seeded_world
    assert set(seeded_world.child_counts) == {entity_type_name(m) for m in WORLD_MODELS if m not in ENTITY_MODELS}


# --- the casebook: the cases a real store has, appended after the base world (world_app/generator/casebook/) --


def test_split_and_partial_shipments_name_their_lines(seeded_world):
    split = anomaly_ids(seeded_world, "split_shipment")
    partial = anomaly_ids(seeded_world, "partial_shipment")
    assert split and partial
    for order in Order.objects.filter(pk__in=split | partial).prefetch_related("shipments", "line_items"):
        parcels = list(order.shipments.all())
        assert all(p.line_items for p in parcels), order.id
        units, shipped = Counter(), Counter()
        for parcel in parcels:
            for item in parcel.line_items:
                units[item["line_item_id"]] += item["quantity"]
                shipped[item["line_item_id"]] += item["quantity"] if parcel.shipped_at else 0
        ordered = Counter({line.id: line.quantity for line in order.line_items.all()})
        if order.id in split:
            assert len(parcels) == 2 and units == ordered and all(p.shipped_at for p in parcels), order.id
        else:
            # Not fulfilled until the last parcel leaves; what is missing has no parcel or one not yet gone.
            assert order.status == "paid" and +shipped and shipped != ordered, order.id
            assert all(units[line] <= quantity for line, quantity in ordered.items()), order.id


def test_lost_parcels_disputes_and_unpaid_orders(seeded_world):
    for record in seeded_world.anomalies["lost_parcel"]:
        lost = Shipment.objects.get(pk=record.related[0])
        assert lost.order_id == record.id and lost.status == "exception"
        assert lost.events[-1]["detail"] == "carrier trace closed: parcel lost"
    for record in seeded_world.anomalies["disputed_payment"]:
        payment = Payment.objects.get(pk=record.id)
        assert payment.status == "disputed" and payment.order_id == record.related[0]
        assert "Chargeback opened" in payment.order.notes
    for record in seeded_world.anomalies["unpaid_order"]:
        order = Order.objects.get(pk=record.id)
        assert not order.payments.exclude(status="failed").exists()
        assert order.status in ("pending", "cancelled") and not order.shipments.exists()


def test_conflicting_records_and_stale_assignments(seeded_world):
    today = world_now().astimezone(world_zone()).date()
    for record in seeded_world.anomalies["ticket_names_wrong_order"]:
        ticket = SupportTicket.objects.get(pk=record.id)
        meant = Order.objects.get(pk=record.related[0])
        typed = re.search(r"typed (\S+)", record.note).group(1)
        assert ticket.order_id is None and meant.customer_id == ticket.customer_id
        assert typed != meant.id and typed in f"{ticket.subject} {ticket.body}"
    for record in seeded_world.anomalies["ticket_contradicts_order"]:
        ticket = SupportTicket.objects.get(pk=record.id)
        assert ticket.order_id == record.related[0] and ticket.status in ("new", "open", "pending_customer")
    for record in seeded_world.anomalies["stale_assignment"]:
        ticket = SupportTicket.objects.select_related("assignee").get(pk=record.id)
        assert ticket.assignee_id == record.related[0] and ticket.assignee.on_leave(today)
        assert ticket.status not in ("resolved", "closed")


def test_the_casebook_pages_and_balances_the_branches(seeded_world):
    """A business account's year of orders runs past one page; both sides of the return window and of the
    warranty exist in similar numbers (within a factor of 2.5), counted as the families choose their cases."""
    from world_app.realism import minority_branches
    from world_app.tools.params import MAX_LIMIT

    busiest = Order.objects.values("customer").annotate(n=models.Count("id")).order_by("-n").first()
    assert busiest["n"] > MAX_LIMIT
    for sides in minority_branches().values():
        assert min(sides.values()) >= 300 and max(sides.values()) <= 2.5 * min(sides.values()), sides
