"""Factories for tasks, versions and criteria, and users in each role."""

from __future__ import annotations

import hashlib
from datetime import datetime

import factory
from django.contrib.auth.models import Group

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER
from tests.factories import UserFactory
from world_app.models import WorldSnapshot

LLM_CRITERION = {"kind": "llm", "text": "The reply is polite and apologises for the delay.", "category": "tone"}
RESPONSE_CRITERION = {
    "kind": "response",
    "text": "States the order total.",
    "category": "correctness",
    "required": True,
    "weight": 2,
    "spec": {"op": "number", "value": 549.98, "tolerance": 0.01},
}


def user_in(role: str | None, **kwargs):
    """A user in ``role`` (None: no role at all)."""
    user = UserFactory(**kwargs)
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    return user


def author(**kwargs):
    return user_in(AUTHOR, **kwargs)


def reviewer(**kwargs):
    return user_in(REVIEWER, **kwargs)


def admin(**kwargs):
    return user_in(ADMIN, **kwargs)


class WorldSnapshotFactory(factory.django.DjangoModelFactory):
    """A snapshot row for tests that never open an episode on it (its image is not a real world)."""

    class Meta:
        model = WorldSnapshot

    version = factory.Sequence(lambda n: 9000 + n)
    note = "test snapshot"
    image = b"not a world"
    image_sha256 = hashlib.sha256(b"not a world").hexdigest()
    image_bytes = 11
    content_checksum = "0" * 64
    schema_fingerprint = "0" * 64
    world_now = datetime.fromisoformat("2025-09-15T14:00:00-05:00")


def task_fields(**overrides) -> dict:
    fields = {
        "title": "Where is my order?",
        "task_type": "information_retrieval",
        "difficulty": "easy",
        "instruction": "Hi, my order ord-f00001 hasn't arrived. What did I pay in total?",
        "family": "order-status",
        "tags": ["orders"],
        "reviewer_notes": "The total includes shipping.",
        "criteria": [LLM_CRITERION, RESPONSE_CRITERION],
    }
    fields.update(overrides)
    return fields


def task_make(*, user=None, snapshot=None, **overrides):
    """A draft task made through ``task_create`` (so it is valid the way the app makes them)."""
    from tasks_app.authoring.services.tasks import task_create

    return task_create(user=user or author(), snapshot=snapshot or WorldSnapshotFactory(), **task_fields(**overrides))


def gate_stored(version, *, passes: bool = True):
    """Store the gate's result for ``version`` as if the red team had run
    (``tasks_app.calibration.services.gates``): tests of the review workflow that are not about the gate arrange a
    passing one; gate tests compute the real one."""
    from tasks_app.calibration.services.gates import rubric_gate_store

    findings = {
        "reference_passes": True,
        "gameable": []
        if passes
        else [{"policy": "dump", "why": "passes: no required criterion fails it", "criteria": ["Mentions the order"]}],
        "over_specified": [],
        "policies": [],
    }
    return rubric_gate_store(version=version, findings=findings, source="test arrangement")


def task_in_review(*, gate_passes: bool | None = True, **kwargs):
    """A task submitted for review; its version's gate stored as passing (``gate_passes=False``: refused;
    ``None``: not computed)."""
    from tasks_app.authoring.services.tasks import task_submit_for_review

    task = task_make(**kwargs)
    task = task_submit_for_review(task=task, user=task.author)
    if gate_passes is not None:
        gate_stored(task.current_version, passes=gate_passes)
    return task
