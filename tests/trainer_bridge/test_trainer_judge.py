"""The trainer's judge configuration, read at most every JUDGE_CONFIG_CACHE_S by a process: a change made here is
seen at once, one made by another process (no signal) within the interval."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rubrics_app.models import JudgeConfig, ModelEndpoint
from trainer_bridge import trainer_judge
from trainer_bridge.trainer_judge import judge_config_for_trainer

pytestmark = pytest.mark.django_db


def test_the_judge_is_read_once_per_interval_and_a_change_here_is_seen_at_once(monkeypatch):
    assert judge_config_for_trainer() is None
    endpoint = ModelEndpoint.objects.create(name="judge", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=5)
    first = JudgeConfig.objects.create(name="first judge", endpoint=endpoint)  # saved here: seen at once
    assert judge_config_for_trainer() == first
    with CaptureQueriesContext(connection) as reads:
        assert judge_config_for_trainer() == first
    assert reads.captured_queries == []

    # Another process deactivates it (no signal in this process): still the held one until the interval ends.
    JudgeConfig.objects.filter(pk=first.pk).update(is_active=False)
    assert judge_config_for_trainer() == first
    clock = [trainer_judge.monotonic() + trainer_judge.JUDGE_CONFIG_CACHE_S + 0.1]
    monkeypatch.setattr(trainer_judge, "monotonic", lambda: clock[0])
    assert judge_config_for_trainer() is None

    second = JudgeConfig.objects.create(name="second judge", endpoint=endpoint)
    assert judge_config_for_trainer() == second
    second.delete()
    assert judge_config_for_trainer() is None
