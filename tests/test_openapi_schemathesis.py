"""Schemathesis over the whole OpenAPI document (every operation of every API), bounded: no input is a 5xx.

One token holds every scope; path parameters that name a release, an episode or an export job name real ones
half the time, so the generated requests reach the code behind the look-ups. The per-API schemathesis tests
(world, export, trainer) go deeper; this one makes sure no operation is left out, a new one included.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error

from tests.trainer_bridge.trainer_fixtures import trainer_world_make
from trainer_bridge.export_jobs import export_request
from trainer_bridge.services import api_token_create
from trainer_bridge.trainer_services import trainer_episode_open

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.slow]

MAX_EXAMPLES = 6
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)


def test_no_operation_of_the_whole_api_answers_a_server_error(wsgi_app):
    tw = trainer_world_make(slug="fuzz")
    issued = api_token_create(name="fuzz all", scopes=["train:read", "eval:read", "episodes", "reward"],
                              created_by=tw.admin)  # fmt: skip
    token = issued.token
    row = tw.rows("train")[0]
    job = export_request(release=tw.release, split="train", format="jsonl", user=tw.admin, inline=True)
    headers = {"Authorization": f"Bearer {issued.secret}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 23, [op.label for op in operations]  # world 11, export 7, trainer 5
    calls = {"total": 0, "by_status": {}}
    unbreakable = []
    for operation in operations:
        for mode in MODES:
            opened = trainer_episode_open(row=row, token=token, credential=token.episode_credential)
            real = {
                "slug": st.sampled_from([None, tw.release.slug]),
                "episode_id": st.sampled_from([None, str(opened.episode_id)]),
                "job_id": st.sampled_from([None, job.pk]),
            }

            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode), **real)
            def exercise(case, slug, episode_id, job_id):
                chosen = {"slug": slug, "episode_id": episode_id, "job_id": job_id}
                for name, value in chosen.items():
                    if value is not None and name in (case.path_parameters or {}):
                        case.path_parameters[name] = value
                response = case.call_and_validate(headers=headers, checks=[not_a_server_error])
                calls["total"] += 1
                calls["by_status"][response.status_code] = calls["by_status"].get(response.status_code, 0) + 1

            try:
                exercise()
            except Unsatisfiable:
                assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
                unbreakable.append(operation.label)
    assert not [status for status in calls["by_status"] if status >= 500], calls
    assert calls["total"] >= len(operations) * 3
    print(f"whole-API schemathesis: {len(operations)} operations, {calls}")
