"""The rulebook, checked: ``manage.py world_rules --check [--json] [--rule ID ...]``.

Lists every rule of ``world_app.store_rules.RULES`` with the tools that implement it and the knowledge-base
articles that state it; with ``--check`` runs each rule's scenarios through those tools in a scratch episode
of the latest snapshot and checks the generated data, exiting 1 when any contradiction is found.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from world_app.episodes.errors import SnapshotNotPublished
from world_app.rulebook import rules_check_snapshot
from world_app.snapshots import snapshot_latest
from world_app.store_rules import RULES


class Command(BaseCommand):
    help = "List the world's rules; with --check, run them through the tools and the generated data."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--check", action="store_true", help="Run the scenarios and the data checks.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--rule", action="append", default=[], help="Only this rule (repeatable).")

    def handle(self, *args, **options) -> None:
        unknown = sorted(set(options["rule"]) - {r.id for r in RULES})
        if unknown:
            raise CommandError(f"no rule {', '.join(unknown)}; the rules: {', '.join(r.id for r in RULES)}")
        if not options["check"]:
            listed = [
                {"id": r.id, "statement": r.statement, "held_by": r.holder, "tools": list(r.tools), "kb": list(r.kb)}
                for r in RULES
                if not options["rule"] or r.id in options["rule"]
            ]
            self._print({"rules": listed, "rule_count": len(listed)}, as_json=options["json"])
            return
        try:
            snapshot = snapshot_latest()
        except SnapshotNotPublished as exc:
            raise CommandError(f"{exc}; publish the world first (manage.py publish_world)") from exc
        result = rules_check_snapshot(snapshot=snapshot, rule_ids=options["rule"] or None)
        self._print(result, as_json=options["json"])
        if result["contradictions"]:
            raise SystemExit(1)

    def _print(self, result: dict, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(result, indent=2))
            return
        for rule in result["rules"]:
            found = rule.get("contradictions")
            mark = "" if found is None else (" ok" if not found else f" {len(found)} CONTRADICTION(S)")
            self.stdout.write(f"{rule['id']} [{rule['held_by']}]{mark}: {rule['statement']}")
            self.stdout.write(f"    tools: {', '.join(rule['tools'])}")
            kb = rule.get("kb_articles") or [{"slug": s, "id": None} for s in rule.get("kb", [])]
            self.stdout.write("    kb: " + ", ".join(f"{a['slug']} ({a['id']})" if a["id"] else a["slug"] for a in kb))
            for finding in found or []:
                self.stdout.write(f"    - [{finding['check']}] {finding['case']}: {finding['message']}")
        if "contradictions" in result:
            self.stdout.write(f"contradictions: {result['contradictions']}")
