"""The trainer-time API: episodes on release rows, tool calls, finish with the frozen rubric's reward, batch scoring."""

from __future__ import annotations

import json
import uuid

import pytest
from rest_framework.test import APIClient

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer
from rubrics_app.models import JudgeConfig, ModelEndpoint
from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, body, trainer_world_make
from trainer_bridge.models import ApiTokenUse
from trainer_bridge.trainer_models import TrainerEpisode
from world_app.models import Episode, Order

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

TRAINER = ("train:read", "episodes", "reward")


@pytest.fixture
def tw():
    return trainer_world_make()


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def post(client: APIClient, path: str, data) -> tuple[int, dict]:
    response = client.post(path, data=json.dumps(data), content_type="application/json")
    assert response.status_code != 500, response.content
    return response.status_code, body(response)


def open_episode(client, tw, row) -> str:
    status, data = post(client, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": row.pk})
    assert status == 201, data
    return data["episode_id"]


def tool(client, episode_id: str, name: str, arguments) -> tuple[int, dict]:
    return post(client, f"/api/v1/rollouts/episodes/{episode_id}/tools/{name}/", {"arguments": arguments})


def finish(client, episode_id: str, answer: str | None = None, **extra) -> tuple[int, dict]:
    payload = {"final_answer": answer, **extra} if answer is not None else extra
    return post(client, f"/api/v1/rollouts/episodes/{episode_id}/finish/", payload)


def solve(client, tw, episode_id: str) -> None:
    assert tool(client, episode_id, "get_order_details", {"order_id": tw.order_id})[1]["is_error"] is False
    status, data = tool(
        client, episode_id, "update_order_status", {"order_id": tw.order_id, "status": "backorder", "reason": "GPU"}
    )
    assert status == 200 and data["is_error"] is False, data


def test_open_call_finish_gives_the_frozen_rubrics_reward(tw):
    client = client_for(tw.token(*TRAINER))
    row = tw.rows("train", llm=False)[0]
    status, opened = post(client, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": row.pk})
    assert status == 201, opened
    assert opened["instruction"] == row.content["instruction"] and opened["split"] == "train"
    assert len(opened["tools"]) == 23 + 1 and opened["tools"][0]["type"] == "function"
    assert opened["snapshot_version"] == row.content["snapshot_version"] and opened["max_turns"] > 0
    episode_id = opened["episode_id"]
    link = TrainerEpisode.objects.get(pk=episode_id)
    assert link.row_id == row.pk and link.release_id == tw.release.pk and link.split == "train"

    status, called = tool(client, episode_id, "get_order_details", {"order_id": tw.order_id})
    assert status == 200 and called["is_error"] is False and called["step"]["seq"] == 1
    assert "error" not in called["result"] and tw.order_id in json.dumps(called["result"])
    solve(client, tw, episode_id)

    status, judged = finish(client, episode_id, GOOD_ANSWER)
    assert status == 200, judged
    assert judged["reward"] == 1.0 and judged["passed"] is True and judged["final"] is True and judged["note"] == ""
    assert [v["status"] for v in judged["verdicts"]] == ["met", "met", "met"]
    assert [v["kind"] for v in judged["verdicts"]] == ["tool_call", "state", "response"]
    assert Order.objects.get(pk=tw.order_id).status != "backorder"  # the live world never moved
    assert Episode.objects.get(pk=episode_id).status == "closed"

    # A retried finish (same answer) answers the same; another answer is refused; no more tool calls.
    assert finish(client, episode_id, GOOD_ANSWER) == (200, judged)
    status, refused = finish(client, episode_id, "something else")
    assert status == 409 and refused["error"]["code"] == "episode_finished"
    status, refused = tool(client, episode_id, "get_order_details", {"order_id": tw.order_id})
    assert status == 409 and refused["error"]["code"] == "episode_finished"
    detail = client.get(f"/api/v1/rollouts/episodes/{episode_id}/")
    assert detail.status_code == 200 and body(detail)["reward"] == 1.0 and body(detail)["status"] == "finished"


def test_the_tool_schemas_come_once_a_trainer_names_them_by_their_digest(tw):
    from corecraft_site.canonical import canonical_sha256

    client = client_for(tw.token(*TRAINER))
    row = tw.rows("train", llm=False)[0]
    path = "/api/v1/rollouts/episodes/"
    status, first = post(client, path, {"release": tw.release.slug, "row_id": row.pk})
    assert status == 201 and len(first["tools"]) == 23 + 1
    assert first["tools_sha256"] == canonical_sha256(first["tools"])
    status, again = post(
        client, path, {"release": tw.release.slug, "row_id": row.pk, "tools_sha256": first["tools_sha256"]}
    )
    assert status == 201 and "tools" not in again and again["tools_sha256"] == first["tools_sha256"]
    assert again["instruction"] == first["instruction"] and again["episode_id"] != first["episode_id"]
    other = "0" * 64  # schemas the server does not have: they come in full
    status, full = post(client, path, {"release": tw.release.slug, "row_id": row.pk, "tools_sha256": other})
    assert status == 201 and full["tools"] == first["tools"]
    status, refused = post(client, path, {"release": tw.release.slug, "row_id": row.pk, "tools_sha256": "abc"})
    assert status == 400 and "tools_sha256" in refused["error"]["fields"]


def test_a_lazy_agent_earns_nothing_and_fails_the_required_criterion(tw):
    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    status, judged = finish(client, episode_id, "I could not help.")
    assert status == 200
    assert judged["reward"] == 0.0 and judged["passed"] is False and judged["final"] is True
    assert [v["status"] for v in judged["verdicts"]] == ["not_met", "not_met", "not_met"]


def test_a_tool_call_reads_nothing_but_appends_its_step_and_a_stale_held_episode_is_refused(
    tw, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from trainer_bridge import trainer_services, usage

    settings.API_USAGE_FLUSH_MS = 60_000  # uses buffered, as in a server
    monkeypatch.setattr(usage, "recorder", usage.UsageRecorder(background=False))
    client = client_for(tw.token(*TRAINER))
    with django_capture_on_commit_callbacks(execute=True):  # the open's commit: the episode is held from then on
        episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    with CaptureQueriesContext(connection) as calls:
        status, data = tool(client, episode_id, "get_order_details", {"order_id": tw.order_id})
        assert status == 200 and data["is_error"] is False
        assert tool(client, episode_id, "no_such_tool", {})[1]["is_error"] is True
    # The step appends alone (the test's transaction wraps each in a savepoint; a server runs it in autocommit).
    sent = [q["sql"] for q in calls.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]
    assert len(sent) == 2 and all(sql.lstrip().startswith("WITH") for sql in sent), sent

    stale = trainer_services._open_episodes.get(uuid.UUID(episode_id))
    assert finish(client, episode_id, "Done.")[0] == 200
    trainer_services._open_episodes.put(stale.pk, stale)  # as another process that served its calls still holds it
    status, data = tool(client, episode_id, "get_order_details", {"order_id": tw.order_id})
    assert status == 409 and data["error"]["code"] == "episode_finished"


def test_an_open_reads_a_frozen_row_and_its_snapshot_once_per_process(tw, settings, monkeypatch):
    """Frozen rows and snapshots never change and are never deleted: after the first open of a row, an open only
    writes the world episode and the trainer episode, both in one statement (no transaction, no savepoint)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from trainer_bridge import usage

    settings.API_USAGE_FLUSH_MS = 60_000
    monkeypatch.setattr(usage, "recorder", usage.UsageRecorder(background=False))
    client = client_for(tw.token(*TRAINER))
    row = tw.rows("train", llm=False)[0]
    first = open_episode(client, tw, row)
    with CaptureQueriesContext(connection) as opens:
        second = open_episode(client, tw, row)
    sent = [q["sql"] for q in opens.captured_queries]
    assert len(sent) == 1, sent
    assert sent[0].startswith('WITH inserted_0 AS (INSERT INTO "world_app_episode"'), sent
    assert ') INSERT INTO "trainer_bridge_trainerepisode"' in sent[0], sent
    assert first != second
    assert TrainerEpisode.objects.get(episode_id=second).row_id == row.pk
    assert Episode.objects.get(pk=second).snapshot.version == row.content["snapshot_version"]


def test_finish_judges_the_world_it_closed_without_rebuilding_it_from_the_log(tw):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from world_app.episodes.cache import episode_cache

    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    solve(client, tw, episode_id)
    with CaptureQueriesContext(connection) as finishing:
        status, data = finish(client, episode_id, GOOD_ANSWER)
    assert status == 200 and data["reward"] == 1.0, data  # the state criteria read the world the calls left
    replays = [q["sql"] for q in finishing.captured_queries if '"world_app_episodestep"."changes"' in q["sql"]]
    assert replays == []  # the closed world was kept for the judge, not rebuilt from the log's row images
    assert uuid.UUID(episode_id) not in episode_cache  # and freed after it


def test_finish_judges_the_calls_this_process_served_as_the_log_holds_them(tw, django_capture_on_commit_callbacks):
    """The trajectory a finish judges comes from this process's record of its calls when that is the whole log; it
    equals the log's steps value for value and key order for key order. A call served elsewhere drops the record."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from rubrics_app.judgement_types import Trajectory
    from trainer_bridge import trainer_services
    from trainer_bridge.trainer_calls import calls_held

    client = client_for(tw.token(*TRAINER))
    with django_capture_on_commit_callbacks(execute=True):  # the open's commit: the episode is held from then on
        episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    solve(client, tw, episode_id)
    assert tool(client, episode_id, "get_order_details", {"order_id": "ord-nope", "zzz": 1, "a": [{"yy": 1, "b": 2}]})
    held = trainer_services._open_episodes.get(uuid.UUID(episode_id))
    with CaptureQueriesContext(connection) as finishing:
        status, judged = finish(client, episode_id, GOOD_ANSWER)
    assert status == 200 and judged["reward"] == 1.0, judged
    assert not any('FROM "world_app_episodestep"' in q["sql"] for q in finishing.captured_queries), [
        q["sql"][:300] for q in finishing.captured_queries
    ]
    closed = Episode.objects.get(pk=episode_id)
    logged = Trajectory.from_episode(episode=closed, instruction="", snapshot_version=None, final_answer="")
    kept = calls_held(held, closed)
    assert json.dumps(kept) == json.dumps(logged.tool_call_dicts()) and len(kept) == 3

    # Served in part by another process (this one never saw the second call): the log is read.
    with django_capture_on_commit_callbacks(execute=True):
        other = open_episode(client, tw, tw.rows("train", llm=False)[0])
    assert tool(client, other, "get_order_details", {"order_id": tw.order_id})[0] == 200
    trainer_services._open_episodes.get(uuid.UUID(other))._calls.pop(1)
    with CaptureQueriesContext(connection) as finishing:
        assert finish(client, other, "Done.")[0] == 200
    assert any('FROM "world_app_episodestep"' in q["sql"] for q in finishing.captured_queries)


def test_each_episode_is_private(tw):
    client = client_for(tw.token(*TRAINER))
    row = tw.rows("train", llm=False)[0]
    first, second = open_episode(client, tw, row), open_episode(client, tw, row)
    solve(client, tw, first)
    assert finish(client, second, GOOD_ANSWER)[1]["verdicts"][1]["status"] == "not_met"  # no backorder in its world
    assert finish(client, first, GOOD_ANSWER)[1]["reward"] == 1.0


def test_llm_criteria_stay_pending_without_a_judge_and_the_reward_says_it_is_partial(tw):
    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=True)[0])
    solve(client, tw, episode_id)
    status, judged = finish(client, episode_id, GOOD_ANSWER)
    assert status == 200
    assert judged["final"] is False and judged["reward"] is None and judged["pending"] == 1
    assert judged["partial_reward"] == 1.0 and judged["passed"] is True  # the llm criterion is not required
    assert "partial" in judged["note"]
    assert judged["verdicts"][3]["status"] == "pending" and "no LLM judge" in judged["verdicts"][3]["rationale"]


def test_llm_criteria_are_judged_when_a_judge_is_configured(tw):
    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=True)[0])
    solve(client, tw, episode_id)
    reply = Reply(content=json.dumps({"met": True, "rationale": "it apologises", "evidence": "Sorry for the wait"}))
    with ScriptedLLMServer([reply]) as server:
        endpoint = ModelEndpoint.objects.create(
            name="judge", base_url=server.base_url, model="scripted", max_retries=0, timeout_s=5
        )
        JudgeConfig.objects.create(name="trainer judge", endpoint=endpoint)
        status, judged = finish(client, episode_id, GOOD_ANSWER)
        prompt = json.dumps(server.requests[0])
    assert status == 200, judged
    assert judged["final"] is True and judged["reward"] == 1.0 and judged["verdicts"][3]["status"] == "met"
    assert "apologises for the delay" in prompt and "update_order_status" in prompt


def test_scopes_a_training_token_never_reaches_the_holdout(tw):
    holdout = tw.rows("holdout")[0]
    train = tw.rows("train", llm=False)[0]
    trainer = client_for(tw.token(*TRAINER))
    status, refused = post(trainer, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": holdout.pk})
    assert status == 404 and refused["error"]["code"] == "row_not_found"
    # Exactly what a row that does not exist answers: nothing confirms the holdout row is there.
    missing = post(trainer, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": 10**9})
    assert missing == (404, refused)

    evaluator = client_for(tw.token("eval:read", "episodes", "reward"))
    held_out = open_episode(evaluator, tw, holdout)
    # The training token cannot drive or score the evaluation episode either.
    assert tool(trainer, held_out, "get_order_details", {"order_id": tw.order_id})[0] == 404
    assert finish(trainer, held_out, "x")[0] == 404
    # An eval:read-only token does not open train rows (train:read is the train split's scope).
    assert post(evaluator, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": train.pk})[0] == 404

    no_episodes = client_for(tw.token("train:read", "reward"))
    assert post(no_episodes, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": train.pk})[0] == 403
    mine = open_episode(trainer, tw, train)
    assert tool(no_episodes, mine, "get_order_details", {"order_id": tw.order_id})[0] == 403
    reward_only = client_for(tw.token("train:read", "reward"))
    assert finish(reward_only, mine, GOOD_ANSWER)[0] == 200  # reward scores trajectories

    from tests.tasks_app.factories import admin

    stranger = client_for(tw.token(*TRAINER, user=admin(username="someone-else")))
    assert tool(stranger, mine, "get_order_details", {"order_id": tw.order_id})[0] == 404
    assert APIClient().post("/api/v1/rollouts/episodes/", {}, format="json").status_code == 401
    assert ApiTokenUse.objects.filter(status=404).exists()  # refusals are logged uses too


def test_batch_scores_a_group_with_errors_per_item(tw):
    client = client_for(tw.token(*TRAINER))
    row = tw.rows("train", llm=False)[0]
    group = [open_episode(client, tw, row) for _ in range(3)]
    solve(client, tw, group[0])
    done = group[2]
    assert finish(client, done, "first answer")[0] == 200
    items = [
        {"episode_id": group[0], "final_answer": GOOD_ANSWER},
        {"episode_id": group[1], "final_answer": "nothing done"},
        {"episode_id": "not-a-uuid", "final_answer": "x"},
        {"episode_id": str(uuid.uuid4()), "final_answer": "x"},
        "junk",
        {"episode_id": done, "final_answer": "another answer"},
        {"final_answer": 12},
    ]
    status, data = post(client, "/api/v1/rewards/batch/", {"items": items})
    assert status == 200, data
    results = data["results"]
    assert [r["index"] for r in results] == list(range(7))
    assert [r["ok"] for r in results] == [True, True, False, False, False, False, False]
    assert results[0]["reward"] == 1.0 and results[0]["passed"] is True and len(results[0]["verdicts"]) == 3
    assert results[1]["reward"] == 0.0 and results[1]["passed"] is False
    assert results[2]["error"]["code"] == "invalid" and "episode_id" in results[2]["error"]["fields"]
    assert results[3]["error"]["code"] == "episode_not_found"
    assert results[4]["error"]["code"] == "invalid"
    assert results[5]["error"]["code"] == "episode_finished"
    assert set(results[6]["error"]["fields"]) == {"episode_id"}
    assert data["scored"] == 2 and data["failed"] == 5
    # The scored ones are stored (a retry returns them), the refused one kept its first answer.
    assert TrainerEpisode.objects.get(pk=group[0]).reward == 1.0
    assert TrainerEpisode.objects.get(pk=done).final_answer == "first answer"


@pytest.mark.parametrize(
    ("path", "payload", "expected"),
    [
        ("/api/v1/rewards/batch/", {"items": "nope"}, 400),
        ("/api/v1/rewards/batch/", {"items": []}, 400),
        ("/api/v1/rewards/batch/", [1, 2], 400),
        ("/api/v1/rewards/batch/", {"items": [{}] * 513}, 400),
        ("/api/v1/rollouts/episodes/", {"release": "no such", "row_id": 1}, 400),
        ("/api/v1/rollouts/episodes/", {"release": "trainer-r1", "row_id": "abc"}, 400),
        ("/api/v1/rollouts/episodes/", {"release": "trainer-r1", "row_id": 10**30}, 400),
        ("/api/v1/rollouts/episodes/", {"release": "trainer-r1", "row_id": -1}, 400),
        ("/api/v1/rollouts/episodes/", {"release": "other", "row_id": 1}, 404),
        ("/api/v1/rollouts/episodes/", "just text", 400),
        ("/api/v1/rollouts/episodes/not-a-uuid/finish/", {"final_answer": "x"}, 404),
        (f"/api/v1/rollouts/episodes/{uuid.uuid4()}/tools/get_order_details/", {"arguments": {}}, 404),
        (f"/api/v1/rollouts/episodes/{uuid.uuid4()}/", None, 405),
    ],
)
def test_junk_input_is_a_400_or_404_in_the_error_shape_never_a_500(tw, path, payload, expected):
    client = client_for(tw.token(*TRAINER))
    status, data = post(client, path, payload)
    assert status == expected, data
    assert set(data["error"]) == {"code", "message", "fields"}
    if status == 400:
        assert data["error"]["code"] in ("invalid", "parse_error")


def test_junk_tool_calls_are_the_tools_error_results(tw):
    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    status, data = tool(client, episode_id, "no_such_tool", {})
    assert status == 200 and data["is_error"] is True and data["result"]["error"]["code"] == "unknown_tool"
    status, data = tool(client, episode_id, "get_order_details", ["not", "an", "object"])
    assert status == 200 and data["is_error"] is True and data["result"]["error"]["code"] == "invalid_arguments"
    status, data = tool(client, episode_id, "get_order_details", {"order_id": "bad\u0000id"})
    assert status == 200 and data["is_error"] is True
    status, data = post(client, f"/api/v1/rollouts/episodes/{episode_id}/tools/get_order_details/", "text")
    assert status == 400 and "body" in data["error"]["fields"]
    response = client.post(
        f"/api/v1/rollouts/episodes/{episode_id}/tools/get_order_details/",
        data="[" * 100_000,
        content_type="application/json",
    )
    assert response.status_code == 400
    status, data = finish(client, episode_id, "x" * 100_001)
    assert status == 400 and "final_answer" in data["error"]["fields"]
    assert [s["seq"] for s in TrainerEpisode.objects.get(pk=episode_id).episode.steps.values("seq")] == [1, 2, 3]


def test_the_openapi_document_describes_the_trainer_api():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]
    for path in (
        "/api/v1/rollouts/episodes/",
        "/api/v1/rollouts/episodes/{episode_id}/tools/{name}/",
        "/api/v1/rollouts/episodes/{episode_id}/finish/",
        "/api/v1/rewards/batch/",
    ):
        assert "post" in paths[path], path
    finish_op = paths["/api/v1/rollouts/episodes/{episode_id}/finish/"]["post"]
    assert {"200", "400", "404", "409"} <= set(finish_op["responses"])


@pytest.fixture
def wsgi_in_test_transaction():
    """The WSGI app, keeping the test's connection across requests (as Django's test client does)."""
    from django.core.signals import request_finished, request_started
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_in_the_trainer_api(tw, wsgi_in_test_transaction):
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable
    from schemathesis.checks import not_a_server_error

    from trainer_bridge.models import ApiToken
    from trainer_bridge.trainer_services import trainer_episode_finish, trainer_episode_open

    # Episodes are made by the services here: Django's test client would reconnect the signal the fixture removed.
    row = tw.rows("train", llm=False)[0]
    secret = tw.token(*TRAINER)
    from trainer_bridge.auth import secret_digest

    token = ApiToken.objects.get(secret_sha256=secret_digest(secret))
    headers = {"Authorization": f"Bearer {secret}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_in_test_transaction)
    schema = schema.include(path_regex=r"^/api/v1/(rollouts|rewards)/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 5
    statuses: dict[int, int] = {}
    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            open_id = str(trainer_episode_open(row=row, token=token, credential=token.episode_credential).episode_id)
            finished = trainer_episode_finish(
                trainer_episode=trainer_episode_open(row=row, token=token, credential=token.episode_credential),
                final_answer="x",
            )
            real_ids = st.sampled_from([None, open_id, str(finished.episode_id)])

            @settings(
                max_examples=15,
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
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

            try:
                exercise()
            except Unsatisfiable:
                assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
    assert not [status for status in statuses if status >= 500], statuses
    assert 200 in statuses and 400 in statuses, statuses


@pytest.mark.parametrize(
    "payload",
    [
        {"final_answer": "a\u0000b"},
        {"final_answer": "\ud800"},
        {"final_answer": "ok", "messages": [{"role": "user", "content": "a\u0000b"}]},
        {"final_answer": "ok", "messages": [{"role": "user", "content": "\udfff"}]},
        {"final_answer": "ok", "messages": [{"a\u0000": 1}]},
    ],
)
def test_text_postgres_cannot_store_is_a_400_in_finish_and_an_item_error_in_batch(tw, payload):
    client = client_for(tw.token(*TRAINER))
    episode_id = open_episode(client, tw, tw.rows("train", llm=False)[0])
    status, data = finish(client, episode_id, **payload)
    assert status == 400 and data["error"]["code"] == "invalid", data
    status, data = post(client, "/api/v1/rewards/batch/", {"items": [{"episode_id": episode_id, **payload}]})
    assert status == 200 and data["results"][0]["error"]["code"] == "invalid"
    assert finish(client, episode_id, "fine")[0] == 200  # the episode is still open and scoreable


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
def test_in_autocommit_open_and_finish_are_single_unhurried_statements(settings):
    """As a server runs them (no transaction around the request): the open is one statement; the finish writes the
    deferred steps and closes in one pipeline of the step writer, then stores the judgement in one statement
    (besides the judgement's reads); none waits for the WAL flush, and the setting lasts only for the statement's
    own transaction."""
    from django.db import connections

    from tests.world_app.test_episodes import statements_run
    from trainer_bridge.authentication import token_for_secret
    from trainer_bridge.trainer_services import trainer_episode_finish, trainer_episode_open, trainer_episode_tool_call
    from world_app.episodes.step_log import step_writer

    tw = trainer_world_make(slug="autocommit")
    row = tw.rows("train", llm=False)[0]
    token = token_for_secret(tw.token(*TRAINER))
    credential = token.episode_credential
    trainer_episode_open(row=row, token=token, credential=credential)  # the first reads the snapshot and its image
    with statements_run() as opening:
        opened = trainer_episode_open(row=row, token=token, credential=credential)
    assert len(opening) == 1 and "synchronous_commit" in opening[0], opening
    for name, arguments in (
        ("get_order_details", {"order_id": tw.order_id}),
        ("update_order_status", {"order_id": tw.order_id, "status": "backorder", "reason": "GPU"}),
    ):
        assert trainer_episode_tool_call(trainer_episode=opened, name=name, arguments=arguments).is_error is False
    sent_by_writer = step_writer.statements
    with statements_run() as finishing:
        finished = trainer_episode_finish(trainer_episode=opened, final_answer=GOOD_ANSWER)
    # The deferred steps' write, the close and the lease's release: one pipeline on the step writer's connection.
    assert step_writer.statements - sent_by_writer == 3
    # On Django's connection, the judgement's reads and new verdicts aside: the judgement stored, one statement.
    writes = [s for s in finishing if s.lstrip().startswith(("WITH", "UPDATE")) and "rubrics_app_verdict" not in s]
    assert len(writes) == 1 and "trainer_bridge_trainerepisode" in writes[0], writes
    assert "synchronous_commit" in writes[0], writes
    assert not any("world_app_episode" in sql and "UPDATE" in sql for sql in finishing), finishing
    assert not any("FOR UPDATE" in sql or "pg_advisory_xact_lock_shared(%s" in sql for sql in finishing), finishing
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)
    assert finished.reward == 1.0 and finished.status == "finished"
    stored = TrainerEpisode.objects.get(pk=opened.pk)
    assert (stored.status, stored.reward, stored.final_answer) == ("finished", 1.0, GOOD_ANSWER)
    assert Episode.objects.get(pk=opened.pk).status == "closed"
    assert Episode.objects.get(pk=opened.pk).step_count == 2
