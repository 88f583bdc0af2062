# ruff: noqa: E501 - the matrix is a table, one route a line
"""Who gets what from every URL and API route: each principal x each route, the answer written out by hand.

Principals: ``anon`` (nobody), ``norole`` (logged in, staff, no role), ``author`` (wrote the draft and the held-out
task), ``reviewer``, ``admin`` (sessions), and a bearer token of each scope (``train``, ``eval``, ``episodes``,
``reward``, all made by the admin). Each cell is one request made in a savepoint that is rolled back, so no
cell sees what another did. A route that is not in ``MATRIX`` fails the test: a new page or endpoint must say
who may use it.

Reading a row: ``302`` to the login page, ``403`` refused, ``404`` not there for this principal (an episode or
split it may not see is not told apart from a missing one), ``405`` wrong method, ``400`` reached the input
check (the empty request is not valid), ``200``/``201``/``204`` served.
"""

from __future__ import annotations

import os

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER
from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.models import Task, TaskStatus
from tests.tasks_app.factories import task_make, user_in
from tests.trainer_bridge.trainer_fixtures import trainer_world_make
from trainer_bridge.export_jobs import export_request
from trainer_bridge.services import api_token_create
from trainer_bridge.trainer_services import trainer_episode_open

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

PRINCIPALS = ("anon", "norole", "author", "reviewer", "admin", "train", "eval", "episodes", "reward")
SESSIONS = {"norole": None, "author": AUTHOR, "reviewer": REVIEWER, "admin": ADMIN}
TOKENS = {"train": "train:read", "eval": "eval:read", "episodes": "episodes", "reward": "reward"}
MISSING = 987654

# route name -> [(method, path, "answers in PRINCIPALS order")]. Paths name the objects of ``matrix_world``.
# fmt: off
MATRIX: dict[str, list[tuple[str, str, str]]] = {
    "home": [("GET", "/", "302 200 200 200 200 302 302 302 302")],
    "healthz": [("GET", "/healthz", "200 200 200 200 200 200 200 200 200")],
    "login": [("GET", "/accounts/login/", "200 200 200 200 200 200 200 200 200")],
    "logout": [("POST", "/accounts/logout/", "302 302 302 302 302 302 302 302 302")],
    "world:tools": [("GET", "/world/tools/", "302 200 200 200 200 302 302 302 302")],
    "world:lookup": [("GET", "/world/lookup/?kind=customer&q=a", "302 403 200 200 200 302 302 302 302")],
    "world:entity": [("GET", "/world/entity/customer/{customer}/", "302 403 200 200 200 302 302 302 302")],
    "tasks:list": [("GET", "/tasks/", "302 200 200 200 200 302 302 302 302")],
    "tasks:create": [("GET", "/tasks/new/", "302 403 200 403 200 302 302 302 302")],
    "tasks:criterion_validate": [("POST", "/tasks/criteria/validate/", "302 403 400 403 400 302 302 302 302")],
    "tasks:detail": [
        ("GET", "/tasks/{held}/", "302 403 403 403 200 302 302 302 302"),
        ("GET", "/tasks/{draft}/", "302 403 200 403 200 302 302 302 302"),
        ("GET", "/tasks/{review}/", "302 403 403 200 200 302 302 302 302"),
    ],
    "tasks:edit": [
        ("GET", "/tasks/{held}/edit/", "302 403 403 403 200 302 302 302 302"),
        ("GET", "/tasks/{draft}/edit/", "302 403 200 403 200 302 302 302 302"),
    ],
    "tasks:submit": [("POST", "/tasks/{draft}/submit/", "302 403 302 403 302 302 302 302 302")],
    "tasks:retire": [("POST", "/tasks/{draft}/retire/", "302 403 403 403 302 302 302 302 302")],
    "tasks:diff": [("GET", "/tasks/{held}/diff/1/1/", "302 403 403 403 200 302 302 302 302")],
    "tasks:playground": [
        ("GET", "/tasks/{held}/playground/", "302 403 403 403 200 302 302 302 302"),
        ("GET", "/tasks/{draft}/playground/", "302 403 200 403 200 302 302 302 302"),
    ],
    "tasks:playground_form": [("GET", "/tasks/{held}/playground/form/", "302 403 403 403 200 302 302 302 302")],
    "tasks:playground_call": [("POST", "/tasks/{held}/playground/call/", "302 403 403 403 200 302 302 302 302")],
    "tasks:playground_record": [("POST", "/tasks/{held}/playground/record/", "302 403 403 403 302 302 302 302 302")],
    "tasks:playground_draft": [("POST", "/tasks/{held}/playground/draft/", "302 403 403 403 302 302 302 302 302")],
    "tasks:playground_reset": [("POST", "/tasks/{held}/playground/reset/", "302 403 403 403 302 302 302 302 302")],
    "tasks:playground_run": [("POST", "/tasks/{held}/playground/run/", "302 403 403 403 302 302 302 302 302")],
    "review:queue": [("GET", "/review/", "302 403 403 200 200 302 302 302 302")],
    "review:mine": [("GET", "/review/mine/", "302 200 200 200 200 302 302 302 302")],
    "review:next": [("GET", "/review/next/?after={review}", "302 403 403 302 302 302 302 302 302")],
    "review:claim_next": [("POST", "/review/claim-next/", "302 403 403 302 302 302 302 302 302")],
    "review:bulk": [("POST", "/review/bulk/", "302 403 403 302 302 302 302 302 302")],
    # A save without a name is refused with the queue and a field error (400); deleting a filter not yours, 404.
    "review:filter_save": [("POST", "/review/filters/", "302 403 403 400 400 302 302 302 302")],
    "review:filter_delete": [("POST", "/review/filters/{missing}/delete/", "302 403 403 404 404 302 302 302 302")],
    "review:task": [
        ("GET", "/review/tasks/{held}/", "302 403 403 403 200 302 302 302 302"),
        ("GET", "/review/tasks/{review}/", "302 403 403 200 200 302 302 302 302"),
    ],
    "review:claim": [("POST", "/review/tasks/{review}/claim/", "302 403 403 302 302 302 302 302 302")],
    "review:release": [("POST", "/review/tasks/{review}/release/", "302 302 302 302 302 302 302 302 302")],
    "review:decide": [("POST", "/review/tasks/{review}/decide/", "302 403 403 400 400 302 302 302 302")],
    "review:gate": [("POST", "/review/tasks/{review}/gate/", "302 403 403 302 302 302 302 302 302")],
    "review:second_review": [("POST", "/review/tasks/{review}/second-review/", "302 403 403 302 302 302 302 302 302")],
    "review:comment": [("POST", "/review/tasks/{held}/comments/", "302 403 403 403 302 302 302 302 302")],
    "review:diff": [("GET", "/review/tasks/{held}/diff/1/1/", "302 403 403 403 200 302 302 302 302")],
    "review:comment_resolve": [("POST", "/review/comments/{missing}/resolve/", "302 404 404 404 404 302 302 302 302")],
    "calibration:runs": [("GET", "/calibration/", "302 403 200 200 200 302 302 302 302")],
    "calibration:run_create": [("GET", "/calibration/runs/new/", "302 403 403 200 200 302 302 302 302")],
    "calibration:run": [("GET", "/calibration/runs/{missing}/", "302 403 404 404 404 302 302 302 302")],
    "calibration:run_progress": [("GET", "/calibration/runs/{missing}/progress/", "302 403 404 404 404 302 302 302 302")],
    "calibration:run_cancel": [("POST", "/calibration/runs/{missing}/cancel/", "302 403 403 404 404 302 302 302 302")],
    "calibration:run_resume": [("POST", "/calibration/runs/{missing}/resume/", "302 403 403 404 404 302 302 302 302")],
    "calibration:endpoints": [("GET", "/calibration/endpoints/", "302 403 200 200 200 302 302 302 302")],
    "calibration:endpoint_create": [("GET", "/calibration/endpoints/new/", "302 403 403 403 200 302 302 302 302")],
    "calibration:endpoint_edit": [("GET", "/calibration/endpoints/{endpoint}/edit/", "302 403 403 403 200 302 302 302 302")],
    "calibration:endpoint_test": [("POST", "/calibration/endpoints/{missing}/test/", "302 403 403 403 404 302 302 302 302")],
    "calibration:judge_create": [("GET", "/calibration/judges/new/", "302 403 403 403 200 302 302 302 302")],
    "calibration:judge_edit": [("GET", "/calibration/judges/{judge}/edit/", "302 403 403 403 200 302 302 302 302")],
    "calibration:task": [("GET", "/calibration/tasks/{held}/", "302 403 403 403 200 302 302 302 302")],
    "calibration:rollout": [("GET", "/calibration/rollouts/{missing}/", "302 403 404 404 404 302 302 302 302")],
    "calibration:labels": [("GET", "/calibration/labels/", "302 403 403 200 200 302 302 302 302")],
    "calibration:label": [("POST", "/calibration/labels/{missing}/", "302 403 403 404 404 302 302 302 302")],
    "calibration:agreement": [("GET", "/calibration/agreement/", "302 403 200 200 200 302 302 302 302")],
    "dashboard": [("GET", "/dashboard/", "302 403 403 403 200 302 302 302 302")],
    "releases:list": [("GET", "/releases/", "302 403 403 403 200 302 302 302 302")],
    "releases:new": [("GET", "/releases/new/", "302 403 403 403 200 302 302 302 302")],
    "releases:compare": [("GET", "/releases/compare/", "302 403 403 403 200 302 302 302 302")],
    "releases:export-download": [("GET", "/releases/exports/{job}/download/", "302 403 403 403 200 302 302 302 302")],
    "releases:detail": [("GET", "/releases/{release}/", "302 403 403 403 200 302 302 302 302")],
    "releases:edit": [
        ("GET", "/releases/{release}/edit/", "302 403 403 403 302 302 302 302 302"),
        ("POST", "/releases/{release}/edit/", "302 403 403 403 302 302 302 302 302"),
    ],
    "releases:freeze": [
        ("GET", "/releases/{release}/freeze/", "302 403 403 403 302 302 302 302 302"),
        ("POST", "/releases/{release}/freeze/", "302 403 403 403 302 302 302 302 302"),
    ],
    "releases:delete": [
        ("GET", "/releases/{release}/delete/", "302 403 403 403 302 302 302 302 302"),
        ("POST", "/releases/{release}/delete/", "302 403 403 403 302 302 302 302 302"),
    ],
    "releases:exports": [("GET", "/releases/{release}/exports/", "302 403 403 403 286 302 302 302 302")],
    "releases:export": [("POST", "/releases/{release}/exports/new/", "302 403 403 403 302 302 302 302 302")],
    "api:snapshot-list": [("GET", "/api/v1/snapshots/", "401 200 200 200 200 200 200 200 200")],
    "api:snapshot-detail": [("GET", "/api/v1/snapshots/{version}/", "401 200 200 200 200 200 200 200 200")],
    "api:episode-list": [("POST", "/api/v1/episodes/", "401 403 201 201 201 403 403 201 403")],
    "api:episode-detail": [("GET", "/api/v1/episodes/{episode}/", "401 403 404 404 200 403 403 200 403")],
    "api:episode-steps": [("GET", "/api/v1/episodes/{episode}/steps/", "401 403 404 404 200 403 403 200 403")],
    "api:episode-diff": [("GET", "/api/v1/episodes/{episode}/diff/", "401 403 404 404 200 403 403 200 403")],
    "api:episode-state-checksum": [("GET", "/api/v1/episodes/{episode}/state-checksum/", "401 403 404 404 200 403 403 200 403")],
    "api:episode-close": [("POST", "/api/v1/episodes/{episode}/close/", "401 403 404 404 200 403 403 200 403")],
    "api:episode-tool-call": [("POST", "/api/v1/episodes/{episode}/tools/get_order_details/", "401 403 404 404 200 403 403 200 403")],
    "api:tool-list": [("GET", "/api/v1/tools/", "401 200 200 200 200 200 200 200 200")],
    "api:tool-detail": [("GET", "/api/v1/tools/get_order_details/", "401 200 200 200 200 200 200 200 200")],
    "trainer_api:release-list": [("GET", "/api/v1/releases/", "401 403 403 403 200 200 200 403 403")],
    "trainer_api:release-detail": [("GET", "/api/v1/releases/{release}/", "401 403 403 403 200 200 200 403 403")],
    "trainer_api:release-rows": [
        ("GET", "/api/v1/releases/{release}/rows/", "401 403 403 403 200 200 403 403 403"),
        ("GET", "/api/v1/releases/{release}/rows/?split=holdout", "401 403 403 403 200 403 200 403 403"),
    ],
    "trainer_api:release-rows-jsonl": [("GET", "/api/v1/releases/{release}/rows.jsonl", "401 403 403 403 200 200 403 403 403")],
    "trainer_api:release-tools": [("GET", "/api/v1/releases/{release}/tools/{tools}", "401 403 403 403 200 200 200 403 403")],
    "trainer_api:release-export": [("GET", "/api/v1/releases/{release}/exports/jsonl", "401 403 403 403 200 200 403 403 403")],
    "trainer_api:export-job": [("GET", "/api/v1/exports/{job}/", "401 403 403 403 200 200 404 403 403")],
    "trainer_api:export-download": [("GET", "/api/v1/exports/{job}/download/", "401 403 403 403 200 200 404 403 403")],
    "trainer_api:export-tools": [("GET", "/api/v1/exports/{job}/tools/", "401 403 403 403 200 200 404 403 403")],
    "trainer_rollouts_api:episode-open": [("POST", "/api/v1/rollouts/episodes/", "401 403 400 400 400 403 403 400 403")],
    "trainer_rollouts_api:episode-detail": [("GET", "/api/v1/rollouts/episodes/{episode}/", "401 403 404 404 200 403 403 404 404")],
    "trainer_rollouts_api:episode-tool-call": [("POST", "/api/v1/rollouts/episodes/{episode}/tools/get_order_details/", "401 403 404 404 200 403 403 404 403")],
    "trainer_rollouts_api:episode-finish": [("POST", "/api/v1/rollouts/episodes/{episode}/finish/", "401 403 404 404 400 403 403 404 404")],
    "trainer_rollouts_api:rewards-batch": [("POST", "/api/v1/rewards/batch/", "401 403 400 400 400 403 403 400 400")],
    "api-schema": [("GET", "/api/schema/", "200 200 200 200 200 200 200 200 200")],
    "api-docs": [("GET", "/api/docs/", "200 200 200 200 200 200 200 200 200")],
}
# fmt: on


def _routes() -> set[str]:
    """Every named route outside the Django admin (whose pages are opened by model permissions)."""
    names: set[str] = set()

    def walk(patterns, namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if entry.app_name == "admin":
                    continue
                walk(entry.url_patterns, entry.namespace or namespace)
            elif isinstance(entry, URLPattern) and entry.name:
                names.add(f"{namespace}:{entry.name}" if namespace else entry.name)

    walk(get_resolver().url_patterns, "")
    return names


def test_every_route_is_in_the_matrix():
    assert _routes() - set(MATRIX) == set(), "add the new routes to MATRIX with the answer of each principal"
    assert set(MATRIX) - _routes() == set(), "MATRIX names routes that no longer exist"


@pytest.fixture
def matrix_world(seeded_world, settings, tmp_path) -> dict:
    settings.MEDIA_ROOT = str(tmp_path)
    world = trainer_world_make(slug="matrix")
    # Staff, every one of them, as `make demo` makes its users: staff status alone must open nothing.
    users = {name: user_in(role, username=f"matrix-{name}", is_staff=True) for name, role in SESSIONS.items()}
    tokens = {
        name: api_token_create(name=f"matrix {name}", scopes=[scope], created_by=world.admin)
        for name, scope in TOKENS.items()
    }
    holdout_row = world.rows("holdout")[0]
    train_row = world.rows("train")[0]
    held_task = holdout_row.task
    Task.objects.filter(pk=held_task.pk).update(author=users["author"])
    snapshot = held_task.current_version.snapshot
    draft = task_make(user=users["author"], snapshot=snapshot, title="Matrix draft")
    other_author = user_in(AUTHOR, username="matrix-other-author")
    in_review = task_make(user=other_author, snapshot=snapshot, title="Matrix in review")
    Task.objects.filter(pk=in_review.pk).update(status=TaskStatus.IN_REVIEW)
    episode_token = tokens["episodes"].token
    trainer_episode = trainer_episode_open(
        row=train_row, token=episode_token, credential=episode_token.episode_credential
    )
    endpoint = ModelEndpoint.objects.create(name="matrix", base_url="http://127.0.0.1:9/v1", model="m")
    judge = JudgeConfig.objects.create(name="matrix judge", endpoint=endpoint, config_hash="x" * 64)
    job = export_request(release=world.release, split="train", format="jsonl", user=world.admin, inline=True)
    ids = {
        "held": held_task.pk,
        "draft": draft.pk,
        "review": in_review.pk,
        "release": world.release.slug,
        "episode": trainer_episode.episode_id,
        "train_row": train_row.pk,
        "holdout_row": holdout_row.pk,
        "endpoint": endpoint.pk,
        "judge": judge.pk,
        "job": job.pk,
        "tools": world.release.manifest["tools_sha256"],
        "version": world.release.rows.first().content["snapshot_version"],
        "missing": MISSING,
        "customer": world.world["customer"].pk,
    }
    return {"users": users, "tokens": tokens, "ids": ids}


def _client(world: dict, principal: str) -> Client:
    if principal in world["users"]:
        client = Client()
        client.force_login(world["users"][principal])
        return client
    if principal in world["tokens"]:
        return Client(headers={"Authorization": f"Bearer {world['tokens'][principal].secret}"})
    return Client()


def _answer(client: Client, method: str, path: str) -> int:
    with transaction.atomic():
        if method == "GET":
            response = client.get(path)
        else:
            response = client.generic(method, path, data=b"{}", content_type="application/json")
        transaction.set_rollback(True)
    return response.status_code


def test_each_principal_gets_the_answer_written_for_it(matrix_world):
    wrong, seen = [], []
    for route, cases in sorted(MATRIX.items()):
        for method, template, expected in cases:
            # Fresh clients each time: a cell (logout) may end its session.
            clients = {principal: _client(matrix_world, principal) for principal in PRINCIPALS}
            path = template.format(**matrix_world["ids"])
            got = " ".join(str(_answer(clients[p], method, path)) for p in PRINCIPALS)
            seen.append(f'    "{route}": [("{method}", "{template}", "{got}")],')
            if got != expected:
                wrong.append(f"{method} {path}: expected {expected}, got {got}")
    if os.environ.get("ROLE_MATRIX_PRINT"):
        with open(os.environ["ROLE_MATRIX_PRINT"], "w") as out:
            out.write("\n".join(seen))
    assert wrong == []


# The Django admin: authors edit the live world there, and nothing else; reviewers read it; admins everything.
# fmt: off
ADMIN_PAGES: list[tuple[str, str]] = [
    ("/admin/",                                   "302 200 200 200 200 302 302 302 302"),
    ("/admin/world_app/customer/",                "302 403 200 200 200 302 302 302 302"),
    ("/admin/world_app/customer/add/",            "302 403 200 403 200 302 302 302 302"),
    ("/admin/world_app/episode/",                 "302 403 403 403 200 302 302 302 302"),
    ("/admin/tasks_app/task/",                    "302 403 403 403 200 302 302 302 302"),
    ("/admin/tasks_app/criterion/",               "302 403 403 403 200 302 302 302 302"),
    ("/admin/rubrics_app/judgeconfig/add/",       "302 403 403 403 200 302 302 302 302"),
    ("/admin/rubrics_app/modelendpoint/add/",     "302 403 403 403 200 302 302 302 302"),
    ("/admin/trainer_bridge/apitoken/",           "302 403 403 403 200 302 302 302 302"),
    ("/admin/trainer_bridge/releaserow/",         "302 403 403 403 200 302 302 302 302"),
]
# fmt: on


def test_the_admin_opens_to_each_role_only_what_is_written(matrix_world):
    wrong = []
    for path, expected in ADMIN_PAGES:
        clients = {principal: _client(matrix_world, principal) for principal in PRINCIPALS}
        got = " ".join(str(_answer(clients[p], "GET", path)) for p in PRINCIPALS)
        if got != expected:
            wrong.append(f"{path}: expected {expected}, got {got}")
    assert wrong == []
