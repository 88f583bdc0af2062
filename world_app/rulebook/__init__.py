"""The executable rulebook: every rule of ``world_app.store_rules.RULES`` run through the tools that implement it,
and the generated world checked against it.

For each rule, ``rules_check`` runs scenarios in a scratch episode of a snapshot (each in a savepoint rolled
back, so nothing is ever written): the allowed case must succeed and the forbidden one must be refused (rules
the tools hold) or, for rules the agent holds, succeed with the fact that makes it wrong in the result and the
mistake in the world state, where a rubric sees it. A scenario that finds no entity to run on is a finding
too. Then the snapshot's rows are checked against the rule, and the knowledge-base articles that state it
must exist. Every finding is a contradiction; ``manage.py world_rules --check`` exits non-zero on any.
"""

from __future__ import annotations

from world_app.rulebook.check import DATA_CHECKS, SCENARIOS, rules_check, rules_check_snapshot
from world_app.rulebook.data_checks import WorldFacts
from world_app.rulebook.probes import Finding, Probe

__all__ = ["DATA_CHECKS", "SCENARIOS", "Finding", "Probe", "WorldFacts", "rules_check", "rules_check_snapshot"]
