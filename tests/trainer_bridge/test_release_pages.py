"""Release pages: admins only; create -> preview per stratum -> freeze; detail with exports; compare."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.tasks_app.factories import author
from trainer_bridge.models import ExportJob, Release, ReleaseStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


def test_only_admins_see_release_pages(client, frozen_release):
    assert client.get(reverse("releases:list")).status_code == 302  # to the login page
    client.force_login(author())
    for url in (reverse("releases:list"), reverse("releases:detail", args=["r1"]), reverse("releases:new")):
        response = client.get(url)
        assert response.status_code == 403 and b"Only admins" in response.content


def test_list_page(admin_client, frozen_release, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        response = admin_client.get(reverse("releases:list"))
    assert response.status_code == 200
    assert b"r1" in response.content and b"Release one" in response.content


def test_bad_input_keeps_what_was_typed(admin_client):
    response = admin_client.post(
        reverse("releases:new"), {"slug": "nice-one", "name": "Nice", "seed": "7", "train": "0.7", "holdout": "0.5"}
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert 'value="nice-one"' in body and "fractions" in body
    response = admin_client.post(
        reverse("releases:new"), {"slug": "bad slug", "seed": "x", "train": "", "holdout": "1"}
    )
    assert response.status_code == 400 and not Release.objects.exists()


def test_create_preview_freeze_export_download(admin_client, make_approved, settings, tmp_path,
                                               django_assert_max_num_queries):  # fmt: skip
    settings.MEDIA_ROOT = tmp_path
    for i in range(12):
        make_approved(task_type=("reasoning", "communication")[i % 2], difficulty="medium")
    response = admin_client.post(
        reverse("releases:new"),
        {"slug": "paper", "name": "Paper split", "seed": "3", "train": "9", "holdout": "3", "task_types": ["reasoning",
         "communication"]},
    )  # fmt: skip
    assert response.status_code == 302 and response["Location"] == reverse("releases:detail", args=["paper"])
    preview = admin_client.get(response["Location"])
    body = preview.content.decode()
    assert "Preview" in body and "9 train, 3 holdout" in body and "Freeze this release" in body
    assert "reasoning" in body and "communication" in body
    admin_client.post(reverse("releases:freeze", args=["paper"]))
    release = Release.objects.get(slug="paper")
    assert release.status == ReleaseStatus.FROZEN
    with django_assert_max_num_queries(10):
        detail = admin_client.get(reverse("releases:detail", args=["paper"]))
    assert release.checksum in detail.content.decode()
    exported = admin_client.post(
        reverse("releases:export", args=["paper"]), {"split": "train", "format": "verl-parquet"}, HTTP_HX_REQUEST="true"
    )
    assert exported.status_code == 200 and b"download" in exported.content
    job = ExportJob.objects.get(release=release)
    download = admin_client.get(reverse("releases:export-download", args=[job.pk]))
    assert download.status_code == 200 and download["ETag"] == job.etag
    assert (
        admin_client.get(reverse("releases:export-download", args=[job.pk]), HTTP_IF_NONE_MATCH=job.etag).status_code
        == 304
    )
    # Once nothing runs, the polled table answers 286 (htmx stops polling).
    assert admin_client.get(reverse("releases:exports", args=["paper"])).status_code == 286


def test_preview_says_when_too_few_tasks_qualify(admin_client, make_approved, admin_user):
    from trainer_bridge.services import release_create

    make_approved()
    release_create(slug="toobig", seed=1, sizes={"train": 100, "holdout": 10}, user=admin_user)
    body = admin_client.get(reverse("releases:detail", args=["toobig"])).content.decode()
    assert "only 1 qualify" in body and "Freeze this release" not in body


def test_compare_page(admin_client, frozen_release, admin_user, make_approved):
    from trainer_bridge.services import release_create, release_freeze

    make_approved(task_type="reasoning", difficulty="easy")
    release_freeze(release=release_create(slug="r2", seed=7, sizes={"train": 16, "holdout": 5}, user=admin_user))
    response = admin_client.get(reverse("releases:compare"), {"old": "r1", "new": "r2"})
    assert response.status_code == 200
    assert "1 added, 0 removed" in response.content.decode()
    assert admin_client.get(reverse("releases:compare"), {"old": "r1", "new": "nope"}).status_code == 400


def test_draft_can_be_deleted_but_not_a_frozen_release(admin_client, frozen_release, admin_user):
    from trainer_bridge.services import release_create

    release_create(slug="scratch", seed=1, sizes={"train": 1, "holdout": 1}, user=admin_user)
    admin_client.post(reverse("releases:delete", args=["scratch"]))
    admin_client.post(reverse("releases:delete", args=["r1"]))
    assert list(Release.objects.values_list("slug", flat=True)) == ["r1"]


def test_a_draft_is_edited_until_it_is_frozen(admin_client, make_approved, admin_user):
    from trainer_bridge.services import release_create, release_update_draft

    for _ in range(4):
        make_approved(task_type="reasoning", difficulty="easy")
    release_create(slug="wrong-size", seed=1, sizes={"train": 40, "holdout": 10}, user=admin_user)
    form = admin_client.get(reverse("releases:edit", args=["wrong-size"])).content.decode()
    assert 'value="wrong-size"' in form and 'value="40"' in form  # what was saved, to change
    bad = admin_client.post(reverse("releases:edit", args=["wrong-size"]), {"slug": "wrong-size", "seed": "1",
                            "train": "0.7", "holdout": "0.5"})  # fmt: skip
    assert bad.status_code == 400 and "fractions" in bad.content.decode()
    saved = admin_client.post(
        reverse("releases:edit", args=["wrong-size"]),
        {"slug": "right-size", "name": "Right", "seed": "2", "train": "3", "holdout": "1"},
    )
    assert saved.status_code == 302 and saved["Location"] == reverse("releases:detail", args=["right-size"])
    release = Release.objects.get(slug="right-size")
    assert (release.seed, release.sizes["train"], release.name) == (2, 3, "Right")
    release_create(slug="taken", seed=1, sizes={"train": 1, "holdout": 1}, user=admin_user)
    clash = admin_client.post(reverse("releases:edit", args=["right-size"]),
                              {"slug": "taken", "seed": "2", "train": "3", "holdout": "1"})  # fmt: skip
    assert clash.status_code == 400 and "exists" in clash.content.decode()
    admin_client.post(reverse("releases:freeze", args=["right-size"]))
    frozen = admin_client.get(reverse("releases:edit", args=["right-size"]))
    assert frozen.status_code == 302  # back to its page: a frozen release is never changed
    with pytest.raises(ValidationError):
        release_update_draft(release=release, slug="right-size", seed=9, sizes={"train": 1, "holdout": 1},
                             user=admin_user)  # fmt: skip
    assert Release.objects.get(slug="right-size").seed == 2


def test_freeze_and_delete_say_what_they_will_do_before_doing_it(admin_client, make_approved, admin_user):
    from tasks_app.models import TaskCalibration
    from trainer_bridge.services import release_create

    tasks = [make_approved(task_type="reasoning", difficulty="easy") for _ in range(5)]
    TaskCalibration.objects.create(version=tasks[0].current_version, flags=["gameable"])
    release_create(slug="careful", seed=1, sizes={"train": 3, "holdout": 1}, user=admin_user)
    detail = admin_client.get(reverse("releases:detail", args=["careful"])).content.decode()
    assert "1 approved task the gate flags" in detail and reverse("releases:freeze", args=["careful"]) in detail
    confirm = admin_client.get(reverse("releases:freeze", args=["careful"])).content.decode()
    assert "3 train" in confirm and "1 holdout" in confirm and "cannot be undone" in confirm
    assert "Leaves out <strong>1</strong> approved task" in confirm
    assert Release.objects.get(slug="careful").status == ReleaseStatus.DRAFT  # asking changed nothing
    gone = admin_client.get(reverse("releases:delete", args=["careful"])).content.decode()
    assert "No task, review or calibration changes" in gone and "train 3, holdout 1" in gone
    assert Release.objects.filter(slug="careful").exists()
    admin_client.post(reverse("releases:freeze", args=["careful"]))
    assert Release.objects.get(slug="careful").status == ReleaseStatus.FROZEN
    assert admin_client.get(reverse("releases:freeze", args=["careful"])).status_code == 302
    assert admin_client.get(reverse("releases:delete", args=["careful"])).status_code == 302
