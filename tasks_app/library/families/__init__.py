"""Task families: templates plus selectors over the world that instantiate grounded training tasks.

- ``FAMILIES``: every family by name (see each module's docstring for its selector and policy).
- ``family_instantiate(family, *, snapshot=None, limit=None)``: the family's instances on ``snapshot``
  (default: the latest published), each with its rubric and reference solution computed from that world.
- ``family_tasks_load(*, families=None, limit=None, status="approved", snapshot=None)``: load them as tasks
  (``Task.source_key`` "family:<name>:<entity ids>", ``Task.family`` the family name) through the task library,
  idempotently, exactly like the starter fixture files.
"""

from __future__ import annotations

from collections.abc import Iterable

from tasks_app.library.families.base import Family, FamilyInstance
from tasks_app.library.families.cancellation import OrderCancellationFamily
from tasks_app.library.families.compatibility import BuildPartSwapFamily
from tasks_app.library.families.loyalty import LoyaltyQuoteFamily
from tasks_app.library.families.paging import ProductOrderAuditFamily
from tasks_app.library.families.period_audit import PeriodOrderAuditFamily
from tasks_app.library.families.recall import RecallNoticeFamily
from tasks_app.library.families.return_lookup import ReturnLookupFamily
from tasks_app.library.families.returns import ReturnRequestFamily
from tasks_app.library.families.shipping import ShipmentStatusFamily
from tasks_app.library.families.warranty import WarrantyClaimFamily
from tasks_app.library.services.library_files import library_task_validate
from tasks_app.library.services.task_library import LoadReport, library_snapshot, library_tasks_load
from world_app.episodes import scratch_world
from world_app.snapshots import snapshot_latest

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        WarrantyClaimFamily(),
        ReturnRequestFamily(),
        BuildPartSwapFamily(),
        LoyaltyQuoteFamily(),
        ShipmentStatusFamily(),
        ProductOrderAuditFamily(),
        OrderCancellationFamily(),
        PeriodOrderAuditFamily(),
        RecallNoticeFamily(),
        ReturnLookupFamily(),
    )
}


def family_get(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"no task family {name!r}; the families: {', '.join(FAMILIES)}") from None


def family_instantiate(family: Family | str, *, snapshot=None, limit: int | None = None) -> list[FamilyInstance]:
    """Up to ``limit`` instances of ``family`` grounded in ``snapshot`` (default: the latest published one).

    Reads the snapshot's world in a scratch episode (closed afterwards; nothing is written to it).
    """
    family = family_get(family) if isinstance(family, str) else family
    snapshot = snapshot or snapshot_latest()
    with scratch_world(snapshot, label=f"family {family.name}: instantiate"):
        return list(family.instances(limit=limit))


def families_instantiate(
    names: Iterable[str] | None = None, *, snapshot=None, limit: int | None = None
) -> dict[str, list[FamilyInstance]]:
    return {name: family_instantiate(name, snapshot=snapshot, limit=limit) for name in (names or FAMILIES)}


def family_tasks_load(
    *, families: Iterable[str] | None = None, limit: int | None = None, status: str = "approved", snapshot=None
):
    """Instantiate the families and load their instances as tasks; returns the task library's LoadReport."""
    from django.core.exceptions import ValidationError

    snapshot = library_snapshot(snapshot)
    report = LoadReport()
    for name, instances in families_instantiate(families, snapshot=snapshot, limit=limit).items():
        tasks = []
        for instance in instances:
            data = instance.as_fixture()
            data["family"] = name
            try:
                tasks.append(library_task_validate(data, source_key=instance.source_key, where=instance.source_key))
            except ValidationError as exc:
                report.errors.extend(exc.messages)
        report.merge(library_tasks_load(tasks, status=status, snapshot=snapshot, what=f"family template {name}"))
    return report


__all__ = [
    "FAMILIES",
    "Family",
    "FamilyInstance",
    "families_instantiate",
    "family_get",
    "family_instantiate",
    "family_tasks_load",
]
