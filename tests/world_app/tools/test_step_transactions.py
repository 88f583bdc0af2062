"""A write tool's savepoint and a step's transaction on the episode's raw sqlite3 connection (issue 18) undo and
keep exactly what Django's atomic blocks would: a raise, a call that marked the transaction for rollback, a
failed step."""

from __future__ import annotations

import pytest
from django.db import connections, transaction

from world_app.episodes import episode_create, episode_step, episode_world
from world_app.models import EpisodeStep, Order
from world_app.routers import EPISODE_ALIAS
from world_app.snapshots import snapshot_publish
from world_app.tools.params import ToolParams
from world_app.tools.registry import Tool, execute_tool
from world_app.tools.results import ErrorCode, ToolError

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]


@pytest.fixture
def published(shop):
    shop.snapshot = snapshot_publish(note="step transactions")
    return shop


def _write_tool(fn) -> Tool:
    return Tool(name="test_write", group="write", description="A test tool.", params=ToolParams, fn=fn)


def _rename(order_id: str, note: str) -> None:
    Order.objects.filter(pk=order_id).update(notes=note)


def _notes(episode, order_id: str) -> str:
    with episode_world(episode):
        return Order.objects.get(pk=order_id).notes


def test_a_refused_write_tool_leaves_nothing_and_the_step_goes_on(published):
    episode = episode_create(label="refused")
    order_id = published.transit.id
    before = _notes(episode, order_id)

    def refuses(_params):
        _rename(order_id, "written, then refused")
        raise ToolError(ErrorCode.POLICY_VIOLATION, "no")

    def step() -> dict:
        result = execute_tool(_write_tool(refuses), ToolParams())
        _rename(order_id, "written after the refusal")  # the step's transaction is still usable
        return result

    logged = episode_step(episode=episode, name="test_write", arguments={}, fn=step)
    assert logged.result["error"]["code"] == "policy_violation"
    assert [change["row"]["notes"] for change in logged.changes] == ["written after the refusal"]
    assert _notes(episode, order_id) == "written after the refusal" != before


def test_a_call_that_marked_the_transaction_for_rollback_is_undone_and_the_mark_cleared(published):
    episode = episode_create(label="marked")
    order_id = published.transit.id
    before = _notes(episode, order_id)

    def marks(_params):
        _rename(order_id, "written, then marked")
        connections[EPISODE_ALIAS].needs_rollback = True  # what a caught error in mark_for_rollback_on_error does
        return {"done": True}

    logged = episode_step(
        episode=episode, name="test_write", arguments={}, fn=lambda: execute_tool(_write_tool(marks), ToolParams())
    )
    assert logged.result == {"done": True}
    assert logged.changes == []
    assert _notes(episode, order_id) == before


def test_a_step_that_raises_writes_nothing_and_logs_nothing(published):
    episode = episode_create(label="raises")
    order_id = published.transit.id
    before = _notes(episode, order_id)

    def fails() -> dict:
        _rename(order_id, "never kept")
        raise RuntimeError("boom")

    wrapper = connections[EPISODE_ALIAS]
    state = (wrapper.connection, wrapper.in_atomic_block, wrapper.autocommit, wrapper.needs_rollback)
    with pytest.raises(RuntimeError):
        episode_step(episode=episode, name="test_write", arguments={}, fn=fails)
    assert _notes(episode, order_id) == before
    logged = episode_step(episode=episode, name="noop", arguments={}, fn=dict)
    assert logged.seq == 1
    assert not EpisodeStep.objects.filter(episode=episode, name="test_write").exists()
    # The ORM's episode connection is given back as the step found it.
    assert (wrapper.connection, wrapper.in_atomic_block, wrapper.autocommit, wrapper.needs_rollback) == state


def test_on_commit_callbacks_on_the_episode_run_after_a_step_commits_and_never_after_a_failed_one(published):
    episode = episode_create(label="on commit")
    ran = []

    def commits() -> dict:
        transaction.on_commit(lambda: ran.append("committed"), using=EPISODE_ALIAS)
        assert ran == []
        return {}

    def fails() -> dict:
        transaction.on_commit(lambda: ran.append("rolled back"), using=EPISODE_ALIAS)
        raise RuntimeError("boom")

    episode_step(episode=episode, name="commits", arguments={}, fn=commits)
    with pytest.raises(RuntimeError):
        episode_step(episode=episode, name="fails", arguments={}, fn=fails)
    assert ran == ["committed"]
