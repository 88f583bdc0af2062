"""Schemathesis over the export API's own OpenAPI operations: no generated request gets a 5xx.

Requests carry a train:read token or a train:read + eval:read one; half of those naming a release name the real
frozen one, and those naming an export job name a real job, so the generated queries reach the real code paths.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error

from trainer_bridge.export_jobs import export_request
from trainer_bridge.services import api_token_create

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

MAX_EXAMPLES = 20
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)


def test_no_generated_request_gets_a_server_error(frozen_release, admin_user, wsgi_app, settings_media):
    tokens = [
        api_token_create(name="fuzz train", scopes=["train:read"], created_by=admin_user).secret,
        api_token_create(name="fuzz all", scopes=["train:read", "eval:read"], created_by=admin_user).secret,
    ]
    job = export_request(release=frozen_release, split="train", format="jsonl")
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    schema = schema.include(path_regex=r"^/api/v1/(releases|exports)/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 9
    calls: dict[int, int] = {}
    for operation in operations:
        for mode in MODES:

            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(
                case=operation.as_strategy(generation_mode=mode),
                real=st.booleans(),
                secret=st.sampled_from(tokens),
            )
            def exercise(case, real, secret):
                params = case.path_parameters or {}
                if real and "slug" in params:
                    params["slug"] = frozen_release.slug
                if real and "job_id" in params:
                    params["job_id"] = job.pk
                if real and "format" in params:
                    params["format"] = "jsonl"
                if real and "sha256" in params:
                    params["sha256"] = frozen_release.manifest["tools_sha256"]
                response = case.call_and_validate(
                    headers={"Authorization": f"Bearer {secret}"}, checks=[not_a_server_error]
                )
                calls[response.status_code] = calls.get(response.status_code, 0) + 1

            try:
                exercise()
            except Unsatisfiable:
                assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label

    assert sum(calls.values()) >= len(operations) * 10
    assert not [status for status in calls if status >= 500], calls
    assert calls.get(200, 0) > 0 and calls.get(404, 0) > 0


@pytest.fixture
def settings_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path
