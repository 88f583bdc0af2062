"""What a reference changes, as the ``state`` criteria that hold a solution to it: ``allowed_changes`` (the
``only_changes`` rules: these rows and fields, this many created) and ``needed_changes`` (the ``makes_changes``
rules: the decided values each created or updated row ends with), with their texts; and ``reference_trace``, the
results and the diff of a reference's calls in a scratch episode world."""

from __future__ import annotations

from collections import Counter

from world_app.episodes import episode_world_diff
from world_app.episodes.world_db import PENDING_CHANGES_SQL
from world_app.models import world_models_by_name
from world_app.routers import EPISODE_ALIAS
from world_app.tools.registry import invoke_tool


def allowed_changes(diff: dict) -> list[dict]:
    """The ``only_changes`` rules that allow exactly the changes of ``diff`` (created counts per table)."""
    rules: list[dict] = []
    for model, count in sorted(Counter(e["model"] for e in diff.get("created", [])).items()):
        rules.append({"entity_type": model, "created": count})
    for entry in diff.get("updated", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "fields": sorted(entry.get("fields", {}))})
    for entry in diff.get("deleted", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "deleted": True})
    return rules


def only_changes_text(rules: list[dict]) -> str:
    if not rules:
        return "No other changes: the task only needs an answer, so nothing in the world changes"
    parts = []
    for rule in rules:
        if rule.get("created"):
            parts.append(f"{rule['created']} new {rule['entity_type']}")
        elif rule.get("deleted"):
            parts.append(f"{rule['entity_type']} {rule['id']} deleted")
        else:
            parts.append(f"{rule['entity_type']} {rule['id']} ({', '.join(rule['fields'])})")
    return "No other changes: only " + "; ".join(parts)


def _decided_columns(model_name: str) -> set[str]:
    """The columns whose value is the agent's decision (references, choices, flags, amounts, lists), not free
    text or a time stamp the tools set."""
    from django.db import models

    model = world_models_by_name()[model_name]
    out = set()
    for f in model._meta.concrete_fields:
        if f.primary_key or isinstance(f, models.DateField | models.TextField):
            continue
        if isinstance(f, models.CharField) and not f.choices and not f.is_relation:
            continue
        out.add(f.attname)
    return out


def needed_changes(diff: dict) -> list[dict]:
    """The ``makes_changes`` rules of ``diff``: each created row (with its decided values) and each updated row
    with the decided values it ends with (time stamps are no evidence that the agent made a change)."""
    rules: list[dict] = []
    for entry in diff.get("created", []):
        decided = _decided_columns(entry["model"])
        values = {k: v for k, v in sorted(entry.get("row", {}).items()) if k in decided and v not in (None, "")}
        rules.append({"entity_type": entry["model"], "created": 1, **({"values": values} if values else {})})
    for entry in diff.get("updated", []):
        changed = sorted(entry.get("fields", {}))
        fields = [f for f in changed if f not in ("updated_at", "created_at")] or changed
        decided = _decided_columns(entry["model"])
        values = {f: entry["fields"][f].get("after") for f in fields if f in decided}
        rule = {"entity_type": entry["model"], "id": entry["pk"], "fields": fields}
        rules.append({**rule, "values": values} if values else rule)
    for entry in diff.get("deleted", []):
        rules.append({"entity_type": entry["model"], "id": entry["pk"], "deleted": True})
    return rules


def needed_text(rules: list[dict]) -> str:
    parts = []
    for rule in rules:
        values = ", ".join(f"{k.removesuffix('_id')} {v}" for k, v in (rule.get("values") or {}).items())
        if rule.get("created"):
            parts.append(f"a new {rule['entity_type']}" + (f" ({values})" if values else ""))
        elif rule.get("deleted"):
            parts.append(f"{rule['entity_type']} {rule['id']} deleted")
        else:
            parts.append(f"{rule['entity_type']} {rule['id']} " + (f"set to {values}" if values else "updated"))
    return "The task's changes are made: " + "; ".join(parts)


def reference_trace(calls: list[dict]) -> tuple[list, dict]:
    """Inside ``episode_world()``: the results and the diff of ``calls`` made in order (rolled back after)."""
    from django.db import connections, transaction

    with transaction.atomic(using=EPISODE_ALIAS):
        results = [invoke_tool(c["tool"], c.get("arguments") or {}) for c in calls]
        written = connections[EPISODE_ALIAS].connection.execute(PENDING_CHANGES_SQL).fetchone()
        diff = episode_world_diff() if written else {"created": [], "updated": [], "deleted": []}
        transaction.set_rollback(True, using=EPISODE_ALIAS)
    return results, diff
