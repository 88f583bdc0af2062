"""Small edges of the site that must not leak: the 404 page, export job ids, the manifest a trainer reads."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory
from trainer_bridge.models import ExportJob

pytestmark = pytest.mark.django_db


def test_the_404_page_never_lists_the_urlconf_even_under_debug(client, settings):
    settings.DEBUG = True
    client.force_login(UserFactory())
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "There is nothing at this address" in body
    assert "URLconf" not in body and "tasks/&lt;int:task_id&gt;" not in body and "api/v1" not in body


def test_export_job_ids_are_not_sequential(frozen_release, admin_user):
    from trainer_bridge.export_jobs import export_request

    jobs = [
        export_request(release=frozen_release, split="train", format=fmt, user=admin_user, inline=True)
        for fmt in ("jsonl", "verl-parquet", "hf")
    ]
    ids = [job.pk for job in jobs]
    assert len(set(ids)) == 3 and all(job_id > 2**20 for job_id in ids)
    assert sorted(ids) != list(range(min(ids), min(ids) + 3))
    assert ExportJob.objects.filter(pk__in=ids).count() == 3


def test_a_training_token_reads_no_figure_that_reveals_the_holdout(frozen_release, token_client):
    manifest = token_client("train:read").get(f"/api/v1/releases/{frozen_release.slug}/").json()
    assert set(manifest["splits"]) == {"train"}
    assert manifest["strata"] and all(
        set(s) == {"task_type", "difficulty", "split", "count"} for s in manifest["strata"]
    )
    assert all(s["split"] == "train" for s in manifest["strata"])
    both = token_client("train:read", "eval:read").get(f"/api/v1/releases/{frozen_release.slug}/").json()
    assert all("target" in s for s in both["strata"])
