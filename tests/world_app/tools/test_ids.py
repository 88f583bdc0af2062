"""Ids of rows the tools create: one past the highest tool-made number, found on the primary key's index."""

import pytest
from django.db import connections

from tests.factories import CustomerFactory
from world_app.episodes import episode_create, episode_world
from world_app.models import Build
from world_app.snapshots import snapshot_publish
from world_app.tools.ids import new_id, new_ids

pytestmark = pytest.mark.django_db(databases=["default", "episode"])


def builds(customer, *ids):
    for build_id in ids:
        Build.objects.create(id=build_id, customer=customer, name=build_id)


def test_ids_count_on_from_the_highest_tool_made_one():
    customer = CustomerFactory()
    assert new_ids(Build, 3) == ["bld-w00001", "bld-w00002", "bld-w00003"]
    # Generated, admin-made (random hex) and other prefixes' ids are none of the tools' business.
    builds(customer, "bld-00042", "bld-9f3a01bc", "bl-w00077", "bld-x00099")
    assert new_id(Build) == "bld-w00001"
    builds(customer, "bld-w00001", "bld-w00007")
    assert new_ids(Build, 2) == ["bld-w00008", "bld-w00009"]


def test_past_99999_and_past_odd_ids_the_range_is_read_in_full():
    customer = CustomerFactory()
    builds(customer, "bld-w99998", "bld-w99999")
    assert new_id(Build) == "bld-w100000"
    builds(customer, "bld-w100000")  # sorts below "bld-w99999" as text
    assert new_ids(Build, 2) == ["bld-w100001", "bld-w100002"]
    builds(customer, "bld-wzz")  # in the range, not a number: the highest number still counts
    assert new_id(Build) == "bld-w100001"


@pytest.mark.usefixtures("fresh_episode_state")
def test_in_an_episode_the_look_up_walks_the_primary_key_not_the_table():
    customer = CustomerFactory()
    builds(customer, "bld-00001", "bld-w00003")
    snapshot_publish(note="ids")
    episode = episode_create(label="ids")
    seen = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with episode_world(episode), connections["episode"].execute_wrapper(record):
        assert new_id(Build) == "bld-w00004"
        [sql] = seen
        plan = (
            connections["episode"]
            .connection.execute("EXPLAIN QUERY PLAN " + sql.replace("%s", "?"), ("bld-w", "bld-x"))
            .fetchall()
        )
    details = " ".join(row[-1] for row in plan)
    assert "SEARCH" in details and "SCAN" not in details, details
