"""The rulebook's check: each rule's scenarios (``SCENARIOS``) and data check (``DATA_CHECKS``) run, the tools and
knowledge-base articles it names looked up, and every failed expectation reported as a contradiction.
"""

from __future__ import annotations

from collections.abc import Callable

from world_app.episodes import scratch_world
from world_app.models import KnowledgeBaseArticle
from world_app.rulebook.data_checks import (
    WorldFacts,
    _data_approval_limit,
    _data_cancellation,
    _data_ceiling,
    _data_disputed_payment,
    _data_full_refund_status,
    _data_loyalty_tier,
    _data_one_coupon,
    _data_policy_exception_decider,
    _data_price_match,
    _data_restocking_fee,
    _data_return_window,
    _data_same_customer,
    _data_warranty_coverage,
    _data_warranty_remedy,
)
from world_app.rulebook.probes import MAX_LISTED, Finding, Probe
from world_app.rulebook.scenarios_accounts import (
    _scenario_approval_limit,
    _scenario_cancellation,
    _scenario_loyalty_tier,
    _scenario_one_coupon,
    _scenario_policy_exception_decider,
    _scenario_same_customer,
    _scenario_warranty_claim_day,
    _scenario_warranty_coverage,
    _scenario_warranty_remedy,
)
from world_app.rulebook.scenarios_returns import (
    _scenario_disputed_payment,
    _scenario_full_refund_status,
    _scenario_price_match,
    _scenario_restocking_fee,
    _scenario_restocking_fee_kept,
    _scenario_return_window,
    _scenario_return_window_basis,
    _scenario_shipping_refund,
)
from world_app.snapshots import snapshot_latest
from world_app.store_rules import RULES
from world_app.tools.registry import get_tool

SCENARIOS: dict[str, Callable[[Probe], None]] = {
    "return-window": _scenario_return_window,
    "restocking-fee": _scenario_restocking_fee,
    "restocking-fee-kept": _scenario_restocking_fee_kept,
    "shipping-refund": _scenario_shipping_refund,
    "full-refund-status": _scenario_full_refund_status,
    "price-match": _scenario_price_match,
    "approval-limit": _scenario_approval_limit,
    "policy-exception-decider": _scenario_policy_exception_decider,
    "warranty-coverage": _scenario_warranty_coverage,
    "return-window-basis": _scenario_return_window_basis,
    "disputed-payment": _scenario_disputed_payment,
    "warranty-claim-day": _scenario_warranty_claim_day,
    "warranty-remedy": _scenario_warranty_remedy,
    "loyalty-tier": _scenario_loyalty_tier,
    "same-customer": _scenario_same_customer,
    "cancellation": _scenario_cancellation,
    "one-coupon": _scenario_one_coupon,
}


DATA_CHECKS: dict[str, Callable[[WorldFacts], list[str]]] = {
    "return-window": _data_return_window,
    "restocking-fee": _data_restocking_fee,
    "restocking-fee-kept": _data_ceiling,
    "shipping-refund": _data_ceiling,
    "full-refund-status": _data_full_refund_status,
    "price-match": _data_price_match,
    "approval-limit": _data_approval_limit,
    "policy-exception-decider": _data_policy_exception_decider,
    "warranty-coverage": _data_warranty_coverage,
    "warranty-remedy": _data_warranty_remedy,
    "loyalty-tier": _data_loyalty_tier,
    "disputed-payment": _data_disputed_payment,
    "same-customer": _data_same_customer,
    "cancellation": _data_cancellation,
    "one-coupon": _data_one_coupon,
}


# --- the check -------------------------------------------------------------------------------------------------------


def rules_check(*, rule_ids: list[str] | None = None) -> dict:
    """Run every rule's scenarios and data check in the current world (call it inside ``episode_world``)."""
    rules = [r for r in RULES if not rule_ids or r.id in rule_ids]
    facts = WorldFacts.read()
    articles = dict(KnowledgeBaseArticle.objects.values_list("slug", "id"))
    report = []
    findings: list[Finding] = []
    for rule in rules:
        probe = Probe(rule)
        scenario = SCENARIOS.get(rule.id)
        if scenario is None:
            probe.findings.append(Finding(rule.id, "scenario", "-", "the rule has no scenario"))
        else:
            scenario(probe)
        for name in rule.tools:
            if get_tool(name) is None:
                probe.findings.append(Finding(rule.id, "tools", name, f"no tool named {name}"))
            elif name not in probe.tools_used:
                probe.findings.append(Finding(rule.id, "tools", name, f"the scenarios never run {name}"))
        for slug in rule.kb:
            if slug not in articles:
                probe.findings.append(Finding(rule.id, "kb", slug, f"no knowledge-base article {slug}"))
        violations = DATA_CHECKS[rule.id](facts) if rule.id in DATA_CHECKS else []
        for message in violations[:MAX_LISTED]:
            probe.findings.append(Finding(rule.id, "data", "generated world", message))
        if len(violations) > MAX_LISTED:
            probe.findings.append(
                Finding(rule.id, "data", "generated world", f"... and {len(violations) - MAX_LISTED} more")
            )
        findings += probe.findings
        report.append(
            {
                "id": rule.id,
                "statement": rule.statement,
                "held_by": rule.holder,
                "tools": list(rule.tools),
                "kb_articles": [{"slug": slug, "id": articles.get(slug)} for slug in rule.kb],
                "cases": probe.cases,
                "data_violations": len(violations),
                "contradictions": [f.as_dict() for f in probe.findings],
            }
        )
    contradictions = sum(len(r["contradictions"]) for r in report)
    return {"rules": report, "rule_count": len(report), "contradictions": contradictions}


def rules_check_snapshot(*, snapshot=None, rule_ids: list[str] | None = None) -> dict:
    """``rules_check`` in a scratch episode of ``snapshot`` (default: the latest published), closed afterwards."""
    snapshot = snapshot or snapshot_latest()
    with scratch_world(snapshot, label="world_rules --check"):
        result = rules_check(rule_ids=rule_ids)
    return {"snapshot": snapshot.version, **result}
