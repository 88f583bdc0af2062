"""Releases: create, preview, freeze into immutable rows with checksums, compare two releases."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tasks_app.authoring.services.tasks import task_update
from tasks_app.models import Task, TaskCalibration
from trainer_bridge.models import ReleaseRow, ReleaseStatus
from trainer_bridge.selectors import release_compare, release_row_get, release_row_payload
from trainer_bridge.services import release_create, release_freeze, release_preview, sha256_of

pytestmark = pytest.mark.django_db


def test_freeze_writes_rows_manifest_and_checksums(frozen_release):
    release = frozen_release
    assert release.status == ReleaseStatus.FROZEN and release.frozen_at
    manifest = release.manifest
    assert manifest["splits"]["train"]["count"] == 15 and manifest["splits"]["holdout"]["count"] == 5
    assert len(release.checksum) == 64
    rows = list(ReleaseRow.objects.filter(release=release))
    assert len(rows) == 20
    row = rows[0]
    assert row.content["rubric"] and row.content["instruction"]
    assert row.checksum == sha256_of(
        {"task_key": row.task_key, "version_id": row.version_id, "split": row.split, "content": row.content}
    )
    # Per-stratum counts: 4 strata of 5 tasks, so 1 or 2 holdout each (targets 1.25).
    holdout = [s for s in manifest["strata"] if s["split"] == "holdout"]
    assert len(holdout) == 4 and all(abs(s["count"] - s["target"]) <= 1 for s in holdout)
    assert manifest["snapshot_versions"] == [row.content["snapshot_version"]]
    assert release.tools and {t["function"]["name"] for t in release.tools} >= set(row.content["tools"])


def test_editing_a_task_later_changes_nothing_in_the_frozen_release(frozen_release):
    # A training row: its author may still edit the task (a held-out task needs eval:read even to be read).
    row = ReleaseRow.objects.filter(release=frozen_release, split="train").order_by("pk").first()
    before = release_row_payload(row)
    task = Task.objects.get(pk=row.task_id)
    task_update(
        task=task,
        user=task.author,
        base_revision=task.revision,
        instruction="Something else entirely, rewritten after the freeze.",
        criteria=[{"kind": "llm", "text": "A new criterion.", "category": "tone"}],
    )
    task.refresh_from_db()
    assert task.current_version_id != row.version_id
    again = release_row_payload(ReleaseRow.objects.get(pk=row.pk))
    assert again == before
    assert ReleaseRow.objects.filter(release=frozen_release).count() == 20


def test_a_frozen_release_cannot_be_frozen_again(frozen_release):
    with pytest.raises(ValidationError):
        release_freeze(release=frozen_release)


def test_same_seed_gives_the_same_split_in_two_releases(frozen_release, admin_user):
    twin = release_freeze(
        release=release_create(slug="r1-twin", seed=7, sizes={"train": 15, "holdout": 5}, user=admin_user)
    )
    assert twin.manifest["splits"] == frozen_release.manifest["splits"]
    diff = release_compare(old=frozen_release, new=twin)
    assert diff["added"] == diff["removed"] == diff["moved_split"] == diff["changed_version"] == []
    assert diff["unchanged"] == 20


def test_compare_reports_added_removed_and_new_versions(frozen_release, admin_user, make_approved):
    make_approved(task_type="reasoning", difficulty="easy")
    row = ReleaseRow.objects.filter(release=frozen_release, split="train").first()
    task = Task.objects.get(pk=row.task_id)
    task_update(task=task, user=task.author, base_revision=task.revision, title="Renamed after freeze")
    Task.objects.filter(pk=task.pk).update(status="approved")
    gone = ReleaseRow.objects.filter(release=frozen_release).exclude(task=task).first()
    Task.objects.filter(pk=gone.task_id).update(status="retired")
    new = release_freeze(release=release_create(slug="r2", seed=7, sizes={"train": 15, "holdout": 5}, user=admin_user))
    diff = release_compare(old=frozen_release, new=new)
    assert {"task_key": gone.task_key, "split": gone.split} in diff["removed"]
    assert len(diff["added"]) == 1
    assert {c["task_key"] for c in diff["changed_version"]} == {row.task_key}
    totals = {k: sum(s[k] for s in diff["strata"]) for k in ("old_train", "old_holdout", "new_train", "new_holdout")}
    assert totals == {"old_train": 15, "old_holdout": 5, "new_train": 15, "new_holdout": 5}


def test_filters_on_type_and_calibration(make_approved, admin_user):
    tasks = [make_approved(task_type="reasoning", difficulty="easy") for _ in range(6)]
    make_approved(task_type="communication", difficulty="easy")
    for i, task in enumerate(tasks):
        TaskCalibration.objects.create(
            version_id=task.current_version_id, n_rollouts=8, pass_at_1=i / 5, reward_std=0.1 * i, flags=[]
        )
    release = release_create(
        slug="calibrated",
        seed=1,
        sizes={"train": 2, "holdout": 1},
        filters={"task_types": ["reasoning"], "pass_rate_min": 0.2, "pass_rate_max": 0.8, "min_reward_variance": 0.02},
        user=admin_user,
    )
    plan = release_preview(release=release)
    # pass rates 0.0 .. 1.0; window keeps 0.2, 0.4, 0.6, 0.8; variance >= 0.02 drops std 0.1 (var 0.01).
    chosen = {c.task_id for c in plan.train + plan.holdout}
    assert chosen == {tasks[2].pk, tasks[3].pk, tasks[4].pk}


def test_near_duplicate_instructions_stay_on_one_side(make_approved, admin_user):
    base = "Hello, my order ord-230215-001 arrived with a cracked case and a bent fan; I want a refund of the case only"
    twins = [make_approved(instruction=base + suffix, task_type="reasoning", difficulty="easy") for suffix in "!?."]
    for _ in range(12):
        make_approved(task_type="reasoning", difficulty="easy")
    for seed in range(6):
        release = release_freeze(
            release=release_create(slug=f"nd-{seed}", seed=seed, sizes={"train": 12, "holdout": 3}, user=admin_user)
        )
        splits = set(ReleaseRow.objects.filter(release=release, task__in=twins).values_list("split", flat=True))
        assert len(splits) == 1


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"slug": "bad slug!", "sizes": {"train": 1, "holdout": 1}}, "slug"),
        ({"slug": "ok", "sizes": {"train": 0.7, "holdout": 0.5}}, "sizes"),
        ({"slug": "ok", "sizes": {"train": 1, "holdout": 1}, "seed": "x"}, "seed"),
        ({"slug": "ok", "sizes": {"train": 1, "holdout": 1}, "filters": {"pass_rate_min": 2}}, "filters"),
        ({"slug": "ok", "sizes": {"train": 1, "holdout": 1}, "filters": {"nope": 1}}, "filters"),
    ],
)
def test_bad_release_input_names_the_field(admin_user, fields, error):
    with pytest.raises(ValidationError) as caught:
        release_create(user=admin_user, **fields)
    assert error in caught.value.message_dict


def test_freezing_with_too_few_tasks_is_a_validation_error(make_approved, admin_user):
    make_approved()
    release = release_create(slug="big", seed=1, sizes={"train": 10, "holdout": 2}, user=admin_user)
    with pytest.raises(ValidationError) as caught:
        release_freeze(release=release)
    assert "only 1 qualify" in caught.value.message_dict["sizes"][0]


def test_release_row_get(frozen_release):
    row = ReleaseRow.objects.filter(release=frozen_release).first()
    assert release_row_get(release="r1", row_id=str(row.pk)) == row
    assert release_row_get(release="r1", row_id="abc") is None
    assert release_row_get(release="other", row_id=row.pk) is None
