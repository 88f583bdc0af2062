"""The rulebook: every rule runs through its tools in a scratch episode of the seed-7 world, the generated
data holds it, and ``manage.py world_rules --check --json`` prints ``"contradictions": 0``."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from world_app.models import Customer, Refund, WarrantyClaim
from world_app.rulebook import rules_check_snapshot
from world_app.snapshots import snapshot_publish
from world_app.store_rules import RULES

pytestmark = pytest.mark.django_db(databases=["default", "episode"])


@pytest.fixture
def snapshot(seeded_world):
    return snapshot_publish(note="rules")


def test_world_rules_check_lists_every_rule_and_finds_no_contradiction(snapshot):
    out = StringIO()
    call_command("world_rules", "--check", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["contradictions"] == 0, [c for r in result["rules"] for c in r["contradictions"]]
    assert [r["id"] for r in result["rules"]] == [r.id for r in RULES]
    for rule in result["rules"]:
        assert rule["tools"] and rule["kb_articles"], rule["id"]
        assert all(a["id"] and a["id"].startswith("kb-") for a in rule["kb_articles"]), rule["id"]
        assert rule["cases"], rule["id"]  # at least one scenario case ran
        assert rule["held_by"] in {"tool", "agent"}
    by_id = {r["id"]: r for r in result["rules"]}
    assert len(by_id["shipping-refund"]["cases"]) >= 4  # shipped, the arithmetic, never shipped, duplicate charge
    assert by_id["restocking-fee"]["kb_articles"][0] == {"slug": "restocking-fees", "id": "kb-0002"}


def test_the_check_writes_nothing(snapshot):
    before = (Refund.objects.count(), WarrantyClaim.objects.count())
    result = rules_check_snapshot(snapshot=snapshot)
    assert result["contradictions"] == 0
    assert (Refund.objects.count(), WarrantyClaim.objects.count()) == before


def test_a_broken_world_is_a_contradiction_and_a_non_zero_exit(snapshot):
    # A tier the spend does not earn, with no recorded exception: the data check finds it.
    customer = Customer.objects.filter(loyalty_tier="none", notes="", orders__isnull=True).order_by("id").first()
    Customer.objects.filter(pk=customer.pk).update(loyalty_tier="platinum")
    broken = snapshot_publish(note="broken tier")
    result = rules_check_snapshot(snapshot=broken, rule_ids=["loyalty-tier"])
    messages = [c["message"] for r in result["rules"] for c in r["contradictions"]]
    assert result["contradictions"] == 1 and messages[0].startswith(f"{customer.id}: platinum, but $0 earns none")
    with pytest.raises(SystemExit) as exit_:
        call_command("world_rules", "--check", "--rule", "loyalty-tier", stdout=StringIO())
    assert exit_.value.code == 1


def test_listing_without_check_needs_no_snapshot():
    out = StringIO()
    call_command("world_rules", "--json", stdout=out)
    listed = json.loads(out.getvalue())
    assert listed["rule_count"] == len(RULES)
    assert {"id", "statement", "held_by", "tools", "kb"} <= set(listed["rules"][0])
