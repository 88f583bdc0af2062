"""Reads of the task library: how many tasks of each type, status, difficulty, family and source there are."""

from __future__ import annotations

from django.db.models import Case, CharField, Count, Value, When

from tasks_app.models import Task


def task_library_stats() -> dict:
    """Counts of tasks per type, status, difficulty, family and source (``starter``, ``family``, ``studio``), with
    the per-type counts of the approved starter library (the library's floor: >= 30/30/30/40)."""
    source = Case(
        When(source_key__startswith="starter:", then=Value("starter")),
        When(source_key__startswith="family:", then=Value("family")),
        default=Value("studio"),
        output_field=CharField(),
    )
    rows = list(
        Task.objects.annotate(source=source)
        .values("task_type", "status", "difficulty", "family", "source")
        .annotate(n=Count("id"))
        .order_by()
    )

    def count_by(*names: str, where=None) -> dict:
        counts: dict[str, int] = {}
        for row in rows:
            if where and not where(row):
                continue
            key = "/".join(str(row[n]) for n in names)
            counts[key] = counts.get(key, 0) + row["n"]
        return dict(sorted(counts.items()))

    return {
        "total": sum(row["n"] for row in rows),
        "by_type": count_by("task_type"),
        "by_status": count_by("status"),
        "by_difficulty": count_by("difficulty"),
        "by_family": count_by("family"),
        "by_source": count_by("source"),
        "by_type_and_status": count_by("task_type", "status"),
        "starter_by_type": count_by("task_type", where=lambda r: r["source"] == "starter"),
        "starter_by_family": count_by("family", where=lambda r: r["source"] == "starter"),
        "family_instances_by_family": count_by("family", where=lambda r: r["source"] == "family"),
    }
