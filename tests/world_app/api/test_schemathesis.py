"""Schemathesis against the episode API's own OpenAPI document, through the Django WSGI app: no input makes a 5xx.

Each operation gets generated requests that follow the schema (positive) and requests that break it (negative),
authenticated with a token; half of the requests that name an episode name a real one (open, or closed), so the
tool calls reach the tools with generated arguments.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error

from tests.factories import UserFactory
from trainer_bridge.services import api_token_create
from world_app.episodes import episode_close, episode_create
from world_app.models import EpisodeStep

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.slow]

MAX_EXAMPLES = 25
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)


def _episode_api_schema(app):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app)
    return schema.include(path_regex=r"^/api/v1/(snapshots|episodes|tools)/")


def test_no_generated_request_gets_a_server_error(snapshot, wsgi_app):
    issued = api_token_create(name="fuzzer", scopes=["episodes"], created_by=UserFactory(username="fuzzer"))
    headers = {"Authorization": f"Bearer {issued.secret}"}
    owned = {"owner_id": issued.token.created_by_id, "credential": issued.token.credential_key}
    schema = _episode_api_schema(wsgi_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 11
    calls = {"total": 0, "by_status": {}}
    unbreakable = []

    for operation in operations:
        for mode in MODES:
            open_episode = episode_create(snapshot=snapshot, label="schemathesis", **owned)
            closed_episode = episode_close(episode_create(snapshot=snapshot, label="schemathesis closed", **owned))
            real_ids = st.sampled_from([None, str(open_episode.pk), str(closed_episode.pk)])

            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode), episode_id=real_ids)
            def exercise(case, episode_id):
                if episode_id and "episode_id" in (case.path_parameters or {}):
                    case.path_parameters["episode_id"] = episode_id
                response = case.call_and_validate(headers=headers, checks=[not_a_server_error])
                calls["total"] += 1
                calls["by_status"][response.status_code] = calls["by_status"].get(response.status_code, 0) + 1

            try:
                exercise()
            except Unsatisfiable:
                # An operation with no input to break (GET /api/v1/snapshots/) has no negative cases.
                assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
                unbreakable.append(operation.label)

    assert calls["total"] >= len(operations) * len(MODES) * 5
    assert not [status for status in calls["by_status"] if status >= 500], calls
    assert len(unbreakable) <= 2, unbreakable
    # The generated tool calls really reached tools in real episodes.
    assert EpisodeStep.objects.filter(episode__label="schemathesis").exists()
