"""The release builder leaves out the tasks the gate flags, unless told to keep them."""

from __future__ import annotations

from tasks_app.models import TaskCalibration
from tests.tasks_app.factories import gate_stored
from trainer_bridge.release_candidates import candidates_select
from trainer_bridge.splits import filters_parse


def chosen(filters: dict) -> set[int]:
    return {c.task_id for c in candidates_select(filters_parse(filters))}


def test_flagged_tasks_are_left_out_unless_include_flagged(make_approved):
    clean, refused, passed, over_specified = make_approved(), make_approved(), make_approved(), make_approved()
    gate_stored(refused.current_version, passes=False)  # approved over a refused gate by an admin
    gate_stored(passed.current_version, passes=True)
    TaskCalibration.objects.create(version=over_specified.current_version, flags=["over_specified"])

    default = chosen({})
    assert {clean.pk, passed.pk} <= default
    assert refused.pk not in default and over_specified.pk not in default
    assert {clean.pk, refused.pk, passed.pk, over_specified.pk} <= chosen({"include_flagged": True})
