"""The data bench/pages.py measures over: its users (40 authors, 10 reviewers, a lead who also administers) and
``count`` tasks of 1-3 versions with 4 criteria each (one per kind), reviews and comments, bulk-inserted.

Imported by bench/pages.py after it has set Django up against its own database.
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER
from rubrics_app.criteria import criterion_content_hash
from tasks_app.models import Comment, Criterion, Review, Task, TaskStatus, TaskType, TaskVersion
from world_app.generator import world_exists, world_seed
from world_app.models import WorldSnapshot
from world_app.snapshots import snapshot_publish

USER_PREFIX = "bench-pages-"
User = get_user_model()

CRITERIA = [
    {"kind": "llm", "text": "The reply apologises for the delay and stays polite.", "category": "tone", "spec": {}},
    {
        "kind": "state",
        "text": "The order is cancelled.",
        "category": "correctness",
        "spec": {
            "entity_type": "order",
            "filters": [{"field": "id", "op": "eq", "value": "ord-00001"}],
            "field": "status",
            "op": "eq",
            "value": "cancelled",
        },
    },
    {
        "kind": "tool_call",
        "text": "Looks the order up before answering.",
        "category": "completeness",
        "spec": {"tool": "get_order_details", "arguments": {"order_id": {"op": "eq", "value": "ord-00001"}}},
    },
    {
        "kind": "response",
        "text": "States the order total.",
        "category": "correctness",
        "spec": {"op": "number", "value": 549.98, "tolerance": 0.01},
    },
]
INSTRUCTION = (
    "Hi, I ordered a graphics card two weeks ago (order {order}) and it still hasn't shipped. Can you tell me "
    "what is going on, what I paid in total, and cancel it if it can't ship this week? Thanks, {name}"
)


# --- data ---------------------------------------------------------------------------------------------------------


def bench_users() -> dict[str, list]:
    groups = {name: Group.objects.get(name=name) for name in (AUTHOR, REVIEWER, ADMIN)}

    def make(name: str, *roles: str):
        user, _ = User.objects.get_or_create(username=f"{USER_PREFIX}{name}")
        user.groups.add(*(groups[r] for r in roles))
        return user

    return {
        "authors": [make(f"author{i:02d}", AUTHOR) for i in range(40)],
        "reviewers": [make(f"reviewer{i:02d}", REVIEWER) for i in range(10)],
        "lead": [make("lead", REVIEWER, ADMIN)],
    }


def bench_tasks_create(count: int, users: dict[str, list], snapshot: WorldSnapshot) -> None:
    """``count`` tasks with 1-3 versions of 4 criteria each, reviews and comments, by bulk inserts."""
    rng = random.Random(7)
    now = timezone.now()
    authors, reviewers = users["authors"], users["reviewers"]
    statuses = (
        [TaskStatus.IN_REVIEW] * 30
        + [TaskStatus.DRAFT] * 30
        + [TaskStatus.CHANGES_REQUESTED] * 15
        + [TaskStatus.APPROVED] * 20
        + [TaskStatus.RETIRED] * 5
    )
    types = TaskType.values
    difficulties = ["easy", "medium", "hard", "expert"]
    tasks = []
    for index in range(count):
        status = rng.choice(statuses)
        created = now - timedelta(days=rng.uniform(1, 120))
        claimed = status == TaskStatus.IN_REVIEW and rng.random() < 0.2
        tasks.append(
            Task(
                title=f"Bench task {index:05d}: order question #{rng.randrange(10**6)}",
                task_type=rng.choice(types),
                difficulty=rng.choice(difficulties),
                family=rng.choice(["returns", "warranty", "compatibility", "shipping", "billing"]),
                tags=["bench", rng.choice(["orders", "refunds", "builds"])],
                status=status,
                author=rng.choice(authors),
                revision=1,
                claimed_by=rng.choice(reviewers) if claimed else None,
                claim_expires_at=now + timedelta(minutes=20) if claimed else None,
                submitted_at=created + timedelta(hours=1) if status != TaskStatus.DRAFT else None,
            )
        )
    with transaction.atomic():
        Task.objects.bulk_create(tasks, batch_size=2000)
        Task.objects.filter(pk__in=[t.pk for t in tasks]).update(created_at=now - timedelta(days=60))
        versions = []
        for task in tasks:
            for number in range(1, rng.choice([1, 2, 2, 3]) + 1):
                body = INSTRUCTION.format(order=f"ord-{rng.randrange(1, 800):05d}", name=f"customer {number}")
                versions.append(
                    TaskVersion(
                        task=task,
                        number=number,
                        title=task.title,
                        task_type=task.task_type,
                        difficulty=task.difficulty,
                        family=task.family,
                        tags=task.tags,
                        instruction=body,
                        snapshot=snapshot,
                        reviewer_notes="The total includes shipping.",
                        reference_solution={
                            "calls": [{"tool": "get_order_details", "arguments": {"order_id": "ord-00001"}}],
                            "final_answer": "Your order total was $549.98.",
                        },
                        created_by=task.author,
                        content_hash=hashlib.sha256(f"{task.pk}:{number}:{body}".encode()).hexdigest(),
                    )
                )
        TaskVersion.objects.bulk_create(versions, batch_size=2000)
        keys = {}
        criteria = []
        for version in versions:
            for position, spec in enumerate(CRITERIA):
                key = keys.setdefault((version.task_id, position), uuid.uuid4())
                criteria.append(
                    Criterion(
                        version=version,
                        key=key,
                        position=position,
                        weight=1.0,
                        required=position == 3,
                        content_hash=criterion_content_hash(weight=1.0, required=position == 3, **spec),
                        **spec,
                    )
                )
        Criterion.objects.bulk_create(criteria, batch_size=5000)
        with connection.cursor() as cursor:
            cursor.execute(
                """UPDATE tasks_app_task t SET current_version_id = v.id
                   FROM (SELECT DISTINCT ON (task_id) id, task_id FROM tasks_app_taskversion
                         WHERE task_id = ANY(%s) ORDER BY task_id, number DESC) v
                   WHERE v.task_id = t.id""",
                [[t.pk for t in tasks]],
            )
        latest = {v.task_id: v for v in versions}  # in number order: the last one wins
        reviews, comments = [], []
        decided = {
            TaskStatus.CHANGES_REQUESTED: "request_changes",
            TaskStatus.APPROVED: "approve",
            TaskStatus.RETIRED: "reject",
        }
        for task in tasks:
            version = latest[task.pk]
            if task.status in decided or (task.status == TaskStatus.IN_REVIEW and version.number > 1):
                reviewer = rng.choice(reviewers)
                reviews.append(
                    Review(
                        task=task,
                        version=version,
                        reviewer=reviewer,
                        decision=decided.get(task.status, "request_changes"),
                        comment="Please name the order in the instruction and check the total.",
                    )
                )
                for n in range(rng.randrange(0, 4)):
                    comments.append(
                        Comment(
                            task=task,
                            version=version,
                            author=reviewer,
                            criterion_key=keys[(task.pk, n % 4)] if n % 2 else None,
                            body=f"Remark {n}: the weight of this check looks too low.",
                            resolved=rng.random() < 0.3,
                        )
                    )
        Review.objects.bulk_create(reviews, batch_size=2000)
        Comment.objects.bulk_create(comments, batch_size=2000)
    print(
        f"created {len(tasks):,} tasks, {len(versions):,} versions, {len(criteria):,} criteria, "
        f"{len(reviews):,} reviews, {len(comments):,} comments",
        flush=True,
    )


def ensure_data(count: int, *, world_scale: float, reset: bool) -> tuple[dict[str, list], WorldSnapshot]:
    """The bench database migrated, its world seeded and published, and ``count`` bench tasks (re-made on
    ``reset`` or when their number differs); returns the bench users and the snapshot."""
    print(f"database {connection.settings_dict['NAME']}: migrating", flush=True)
    call_command("migrate", verbosity=0, interactive=False)
    if not world_exists():
        print(f"seeding the world (seed 7, scale {world_scale:g})", flush=True)
        world_seed(seed=7, scale=world_scale)
    snapshot = WorldSnapshot.objects.defer("image").order_by("-version").first()
    if snapshot is None:
        snapshot = snapshot_publish(note="bench/pages.py")
    users = bench_users()
    mine = Task.objects.filter(author__username__startswith=USER_PREFIX)
    have = mine.count()
    if reset or have != count:
        if have:
            print(f"deleting {have:,} bench tasks", flush=True)
            with transaction.atomic():
                Comment.objects.filter(task__in=mine).delete()
                Review.objects.filter(task__in=mine).delete()
                mine.update(current_version=None)
                mine.delete()
        started = time.perf_counter()
        bench_tasks_create(count, users, snapshot)
        print(f"bulk insert took {time.perf_counter() - started:.1f} s", flush=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return users, snapshot
