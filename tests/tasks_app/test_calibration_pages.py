"""Calibration pages: they render with bounded queries, the progress partial stops polling, roles, form errors."""

from __future__ import annotations

import pytest
from django.urls import reverse

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer
from rubrics_app.models import JudgeConfig, ModelEndpoint, Verdict, VerdictLabel
from tasks_app.calibration.metrics import task_calibration_update
from tasks_app.calibration.services.calibration import calibration_run_create
from tasks_app.models import CalibrationItem, CalibrationRun, Rollout, Task, TaskStatus
from tests.factories import small_world
from tests.tasks_app.factories import admin, author, reviewer, task_make, user_in
from world_app.episodes import episode_close, episode_create
from world_app.snapshots import snapshot_publish
from world_app.tools.steps import call_tool

pytestmark = pytest.mark.django_db


def approved_task(**kwargs) -> Task:
    task = task_make(**kwargs)
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.APPROVED)
    task.refresh_from_db()
    return task


def verdicts_for(version, *, llm_met: bool | None, response_met: bool) -> list[dict]:
    rows = []
    for criterion in version.criteria.order_by("position"):
        met = llm_met if criterion.kind == "llm" else response_met
        status = "pending" if met is None else ("met" if met else "not_met")
        rows.append(
            {
                "key": str(criterion.key),
                "kind": criterion.kind,
                "content_hash": criterion.content_hash,
                "status": status,
                "met": met,
                "rationale": f"because {status}",
                "evidence": "quote",
                "weight": criterion.weight,
                "required": criterion.required,
            }
        )
    return rows


@pytest.fixture
def endpoint():
    return ModelEndpoint.objects.create(name="local", base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)


@pytest.fixture
def judge(endpoint):
    return JudgeConfig.objects.create(name="judge-1", endpoint=endpoint)


def finished_run(*, tasks: int, samples: int, judge_config, user) -> CalibrationRun:
    """A finished run over ``tasks`` approved tasks: a failing reference rollout each and ``samples`` model rollouts
    (every other one passing), judged, with the task calibrations computed."""
    versions = [approved_task(title=f"Task {i}").current_version for i in range(tasks)]
    policies = [{"policy": "reference", "endpoint": None}, {"policy": "model", "endpoint": judge_config.endpoint_id}]
    run = calibration_run_create(
        name=f"run of {tasks}",
        versions=versions,
        samples=samples,
        judge_config=judge_config,
        policies=policies,
        user=user,
    )
    for index, item in enumerate(run.items.select_related("version", "endpoint").order_by("pk")):
        passed = item.policy == "model" and index % 2 == 0
        rollout = Rollout.objects.create(
            version=item.version,
            policy=item.policy,
            endpoint=item.endpoint,
            sample=item.sample,
            status="finished",
            policy_label="reference" if item.policy == "reference" else "model:local",
            run=run,
            item=item,
            verdicts=verdicts_for(item.version, llm_met=passed, response_met=passed),
            reward=1.0 if passed else 0.0,
            passed=passed,
            final_answer="The total was $549.98.",
            trajectory_hash=f"{run.pk}-{index}",
        )
        CalibrationItem.objects.filter(pk=item.pk).update(status="done", rollout=rollout)
    CalibrationRun.objects.filter(pk=run.pk).update(status="finished")
    run.refresh_from_db()
    task_calibration_update(run=run)
    return run


# --- permissions -------------------------------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_login(client):
    response = client.get(reverse("calibration:runs"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    ("role", "url_name", "status"),
    [
        (None, "calibration:runs", 403),
        ("author", "calibration:runs", 200),
        ("author", "calibration:run_create", 403),
        ("reviewer", "calibration:run_create", 200),
        ("author", "calibration:endpoint_create", 403),
        ("reviewer", "calibration:endpoint_create", 403),
        ("admin", "calibration:endpoint_create", 200),
        ("reviewer", "calibration:judge_create", 403),
        ("admin", "calibration:judge_create", 200),
        ("author", "calibration:labels", 403),
        ("reviewer", "calibration:labels", 200),
        ("author", "calibration:agreement", 200),
        ("author", "calibration:endpoints", 200),
    ],
)
def test_who_sees_what(client, role, url_name, status):
    client.force_login(user_in(role))
    response = client.get(reverse(url_name))
    assert response.status_code == status
    if status == 403:
        assert b"Not allowed" in response.content


def test_only_admins_test_a_connection_and_edit_endpoints(client, endpoint):
    client.force_login(reviewer())
    assert client.post(reverse("calibration:endpoint_test", args=[endpoint.pk])).status_code == 403
    assert client.post(reverse("calibration:endpoint_edit", args=[endpoint.pk]), {"name": "x"}).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.last_checked_at is None and endpoint.name == "local"


# --- endpoints and judge configurations ---------------------------------------------------------------------------


def endpoint_post(**overrides) -> dict:
    return {
        "name": "vllm-qwen",
        "base_url": "http://gpu1:8000/v1",
        "model": "qwen2.5-7b",
        "api_key_env": "QWEN_KEY",
        "sampling": '{"temperature": 0.2, "max_tokens": 512}',
        "timeout_s": "30",
        "max_retries": "3",
        "is_active": "on",
        **overrides,
    }


def test_admin_creates_an_endpoint_with_a_key_variable_name(client):
    user = admin()
    client.force_login(user)
    response = client.post(reverse("calibration:endpoint_create"), endpoint_post())
    assert response.status_code == 302
    created = ModelEndpoint.objects.get(name="vllm-qwen")
    assert created.api_key_env == "QWEN_KEY" and created.sampling == {"temperature": 0.2, "max_tokens": 512}
    assert created.created_by == user
    page = client.get(reverse("calibration:endpoints"))
    assert b"QWEN_KEY" in page.content and b"never checked" in page.content


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("api_key_env", "sk-live-abc123", "not a key"),
        ("sampling", "{temperature: hot}", "Not JSON"),
        ("sampling", '{"temperature": 5}', "temperature must be between"),
        ("sampling", '{"max_tokens": "many"}', "max_tokens must be a whole number"),
        ("base_url", "not a url", "Enter a valid http(s) URL"),
        ("timeout_s", "-3", "greater than or equal"),
    ],
)
def test_bad_endpoint_input_shows_form_errors_and_keeps_what_was_typed(client, field, value, message):
    client.force_login(admin())
    response = client.post(reverse("calibration:endpoint_create"), endpoint_post(**{field: value}))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert b"qwen2.5-7b" in response.content  # what was typed stays
    assert not ModelEndpoint.objects.filter(name="vllm-qwen").exists()


def test_duplicate_endpoint_name_is_a_form_error(client, endpoint):
    client.force_login(admin())
    response = client.post(reverse("calibration:endpoint_create"), endpoint_post(name="local"))
    assert response.status_code == 400 and b"Another endpoint has this name" in response.content


def test_test_connection_stores_the_outcome(client):
    client.force_login(admin())
    with ScriptedLLMServer([Reply(content="ready")]) as server:
        endpoint = ModelEndpoint.objects.create(name="scripted", base_url=server.base_url, model="scripted")
        response = client.post(reverse("calibration:endpoint_test", args=[endpoint.pk]), HTTP_HX_REQUEST="true")
        assert len(server.requests) == 1 and server.requests[0]["messages"][0]["role"] == "user"
    assert response.status_code == 200 and b"OK" in response.content
    endpoint.refresh_from_db()
    assert endpoint.last_check["ok"] is True and endpoint.last_checked_at is not None


def test_a_failing_connection_is_shown_not_raised(client):
    client.force_login(admin())
    endpoint = ModelEndpoint.objects.create(name="down", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    response = client.post(reverse("calibration:endpoint_test", args=[endpoint.pk]), follow=True)
    assert response.status_code == 200 and b"down failed" in response.content
    endpoint.refresh_from_db()
    assert endpoint.last_check["ok"] is False


def test_judge_config_create_and_frozen_once_it_has_verdicts(client, endpoint):
    client.force_login(admin())
    post = {
        "name": "strict",
        "endpoint": endpoint.pk,
        "samples": "3",
        "temperature": "0.5",
        "prompt_version": "v1",
        "max_retries": "2",
        "is_active": "on",
    }
    assert client.post(reverse("calibration:judge_create"), post).status_code == 302
    judge = JudgeConfig.objects.get(name="strict")
    assert judge.samples == 3 and len(judge.config_hash) == 64
    Verdict.objects.create(
        trajectory_hash="t",
        criterion_key="00000000-0000-0000-0000-000000000001",
        criterion_hash="h",
        judge_config=judge,
        met=True,
        status="met",
    )
    response = client.post(reverse("calibration:judge_edit", args=[judge.pk]), {**post, "samples": "5"})
    assert response.status_code == 400 and b"already has verdicts" in response.content
    # Renaming is fine.
    assert (
        client.post(reverse("calibration:judge_edit", args=[judge.pk]), {**post, "name": "strict-3"}).status_code == 302
    )
    judge.refresh_from_db()
    assert (judge.name, judge.samples) == ("strict-3", 3)


def test_judge_config_bad_input(client, endpoint):
    client.force_login(admin())
    response = client.post(
        reverse("calibration:judge_create"),
        {
            "name": "x",
            "endpoint": endpoint.pk,
            "samples": "0",
            "temperature": "9",
            "prompt_version": "v9",
            "max_retries": "1",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "greater than or equal to 1" in body and "less than or equal to 2" in body
    assert "Select a valid choice" in body


# --- runs -----------------------------------------------------------------------------------------------------------


def test_run_form_creates_a_planned_run_and_goes_to_it(client, endpoint):
    client.force_login(reviewer())
    tasks = [approved_task(title=f"T{i}") for i in range(2)]
    task_make(title="a draft, not offered")
    form = client.get(reverse("calibration:run_create"))
    assert b"T0" in form.content and b"a draft, not offered" not in form.content
    response = client.post(
        reverse("calibration:run_create"),
        {
            "name": "nightly",
            "selection": "tasks",
            "tasks": [t.pk for t in tasks],
            "reference": "on",
            "samples": "3",
            "endpoints": [endpoint.pk],
        },
    )
    assert response.status_code == 302
    run = CalibrationRun.objects.get(name="nightly")
    assert response["Location"] == reverse("calibration:run", args=[run.pk])
    assert run.status == "running" and run.items.count() == 2 * (1 + 3)  # reference once, the model 3 times


def test_run_form_by_filter_takes_every_matching_approved_task(client, endpoint):
    client.force_login(admin())
    approved_task(title="A", task_type="reasoning")
    approved_task(title="B", task_type="communication")
    response = client.post(
        reverse("calibration:run_create"),
        {
            "name": "by filter",
            "selection": "filter",
            "task_type": "reasoning",
            "endpoints": [endpoint.pk],
            "samples": "2",
        },
    )
    assert response.status_code == 302
    run = CalibrationRun.objects.get(name="by filter")
    assert set(run.items.values_list("version__task__title", flat=True)) == {"A"}
    assert run.policies == [{"policy": "model", "endpoint": endpoint.pk}]


@pytest.mark.parametrize(
    ("post", "message"),
    [
        ({"name": "x", "selection": "tasks", "reference": "on", "samples": "1"}, "Tick at least one task"),
        (
            {"name": "x", "selection": "filter", "family": "nothing-like-this", "reference": "on", "samples": "1"},
            "No approved task matches",
        ),
        ({"name": "x", "selection": "filter", "samples": "1"}, "Choose at least one policy"),
        ({"name": "x", "selection": "filter", "reference": "on", "samples": "0"}, "greater than or equal to 1"),
        ({"name": "", "selection": "filter", "reference": "on", "samples": "1"}, "This field is required"),
    ],
)
def test_run_form_errors_keep_what_was_typed(client, post, message):
    client.force_login(reviewer())
    approved_task(title="only one")
    response = client.post(reverse("calibration:run_create"), post)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not CalibrationRun.objects.exists()


def test_runs_list_and_run_page_with_bounded_queries(client, judge, django_assert_max_num_queries):
    user = reviewer()
    client.force_login(user)
    run = finished_run(tasks=2, samples=2, judge_config=judge, user=user)
    with django_assert_max_num_queries(10):
        page = client.get(reverse("calibration:runs"))
    assert page.status_code == 200 and run.name.encode() in page.content and b"<svg" in page.content
    with django_assert_max_num_queries(14):
        detail = client.get(reverse("calibration:run", args=[run.pk]))
    body = detail.content.decode()
    assert detail.status_code == 200
    assert "Task 0" in body and "Task 1" in body and "Reward distribution per task" in body
    assert "Pass rate per policy" in body and "Difficulty of these tasks" in body
    assert 'hx-trigger="every 2s"' not in body  # a finished run does not poll
    assert "fails" in body and '50% <span class="muted">of 2</span>' in body  # the reference, the model

    # Ten times the tasks: the same number of queries.
    bigger = finished_run(tasks=6, samples=3, judge_config=judge, user=user)
    with django_assert_max_num_queries(14):
        assert client.get(reverse("calibration:run", args=[bigger.pk])).status_code == 200
    with django_assert_max_num_queries(10):
        assert client.get(reverse("calibration:runs")).status_code == 200


def test_progress_partial_polls_while_running_and_answers_286_when_done(client, judge):
    user = reviewer()
    client.force_login(user)
    run = calibration_run_create(
        name="live",
        versions=[approved_task().current_version],
        samples=4,
        policies=[{"policy": "model", "endpoint": judge.endpoint_id}],
        judge_config=judge,
        user=user,
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status="running")
    first, *_ = run.items.order_by("pk")
    CalibrationItem.objects.filter(pk=first.pk).update(status="done")
    url = reverse("calibration:run_progress", args=[run.pk])
    running = client.get(url, HTTP_HX_REQUEST="true")
    assert running.status_code == 200
    body = running.content.decode()
    assert 'hx-trigger="every 2s"' in body and "25%" in body and "<html" not in body
    run.items.update(status="done")
    CalibrationRun.objects.filter(pk=run.pk).update(status="finished")
    done = client.get(url, HTTP_HX_REQUEST="true")
    assert done.status_code == 286 and "100%" in done.content.decode()
    assert 'hx-trigger="every 2s"' not in done.content.decode() and done["HX-Refresh"] == "true"


def test_cancel_and_resume_buttons(client, judge):
    user = reviewer()
    client.force_login(user)
    run = calibration_run_create(
        name="stop me",
        versions=[approved_task().current_version],
        samples=2,
        policies=[{"policy": "reference", "endpoint": None}],
        judge_config=judge,
        user=user,
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status="running")
    page = client.get(reverse("calibration:run", args=[run.pk])).content.decode()
    assert "Cancel run" in page and 'hx-trigger="every 2s"' in page
    client.post(reverse("calibration:run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "cancelled" and set(run.items.values_list("status", flat=True)) == {"cancelled"}
    assert "Resume run" in client.get(reverse("calibration:run", args=[run.pk])).content.decode()
    client.post(reverse("calibration:run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "running" and set(run.items.values_list("status", flat=True)) == {"queued"}
    client.force_login(author())
    assert client.post(reverse("calibration:run_cancel", args=[run.pk])).status_code == 403


def test_cancelling_a_finished_run_is_a_message_not_a_500(client, judge):
    user = reviewer()
    client.force_login(user)
    run = finished_run(tasks=1, samples=1, judge_config=judge, user=user)
    response = client.post(reverse("calibration:run_cancel", args=[run.pk]), follow=True)
    assert response.status_code == 200 and b"already finished" in response.content


# --- task calibration and trajectory pages ------------------------------------------------------------------------


def test_task_calibration_page_shows_the_figures_with_bounded_queries(client, judge, django_assert_max_num_queries):
    user = reviewer()
    client.force_login(user)
    run = finished_run(tasks=1, samples=4, judge_config=judge, user=user)
    task = run.items.first().version.task
    with django_assert_max_num_queries(12):
        response = client.get(reverse("calibration:task", args=[task.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "pass@1" in body and "pass^k" in body and "Reference fails" in body
    assert "unsolved" in body or "medium" in body or "hard" in body or "easy" in body
    assert "States the order total." in body  # a criterion with its pass rate
    assert "50%" in body and body.count('href="/calibration/rollouts/') == 5
    assert "<svg" in body and "Reward distribution per policy" in body


@pytest.mark.django_db(databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_rollout_page_shows_policy_calls_verdicts_and_state_diff(client, judge, django_assert_max_num_queries):
    rows = small_world()
    snapshot = snapshot_publish(note="trajectory page")
    task = approved_task(snapshot=snapshot)
    version = task.current_version
    episode = episode_create(snapshot=snapshot, label="page test")
    arguments = {"order_id": rows["order"].pk, "status": "backorder", "reason": "GPU out of stock"}
    result = call_tool(episode, "update_order_status", arguments)
    episode_close(episode)
    rollout = Rollout.objects.create(
        version=version,
        policy="model",
        policy_label="model:local",
        endpoint=judge.endpoint,
        episode=episode,
        status="finished",
        tool_calls=[
            {
                "turn": 1,
                "name": "update_order_status",
                "arguments": arguments,
                "result": result,
                "is_error": False,
                "latency_ms": 3.2,
            }
        ],
        messages=[
            {"role": "system", "content": "You are support."},
            {"role": "user", "content": version.instruction},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "update_order_status", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "{}"},
            {"role": "assistant", "content": "Sorry, it is backordered."},
        ],
        final_answer="Sorry, it is backordered.",
        verdicts=verdicts_for(version, llm_met=True, response_met=False),
        reward=1 / 3,
        passed=False,
    )
    client.force_login(author())
    with django_assert_max_num_queries(10):
        response = client.get(reverse("calibration:rollout", args=[rollout.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "model:local" in body and "update_order_status" in body and "GPU out of stock" in body
    assert "backorder" in body and "updated" in body  # the state diff row of the order
    assert "because met" in body and "because not_met" in body  # each verdict's rationale
    assert "0.33" in body and "fail" in body
    assert reverse("calibration:task", args=[task.pk]) in body


def test_rollout_page_without_an_episode(client):
    task = approved_task()
    rollout = Rollout.objects.create(
        version=task.current_version,
        policy="reference",
        policy_label="reference",
        status="failed",
        failure_reason="endpoint_error: 500",
    )
    client.force_login(author())
    body = client.get(reverse("calibration:rollout", args=[rollout.pk])).content.decode()
    assert "No episode" in body and "endpoint_error: 500" in body and "Not judged yet" in body


# --- labels and agreement -------------------------------------------------------------------------------------------


def labelled_world(judge, *, n: int) -> list[Verdict]:
    task = approved_task()
    llm = task.current_version.criteria.get(kind="llm")
    verdicts = []
    for i in range(n):
        Rollout.objects.create(
            version=task.current_version,
            policy="reference",
            policy_label="reference",
            status="finished",
            trajectory_hash=f"traj-{i}",
            final_answer=f"answer {i}",
        )
        verdicts.append(
            Verdict.objects.create(
                trajectory_hash=f"traj-{i}",
                criterion_key=llm.key,
                criterion_hash=llm.content_hash,
                judge_config=judge,
                met=i % 2 == 0,
                status="met" if i % 2 == 0 else "not_met",
                rationale=f"reason {i}",
                evidence="e",
            )
        )
    return verdicts


def test_labels_page_and_labelling_by_htmx(client, judge, django_assert_max_num_queries):
    verdicts = labelled_world(judge, n=12)
    user = reviewer()
    client.force_login(user)
    with django_assert_max_num_queries(11):
        page = client.get(reverse("calibration:labels"))
    body = page.content.decode()
    assert page.status_code == 200 and body.count("Save label") == 10 and "12 verdicts left" in body
    target = verdicts[0]
    url = reverse("calibration:label", args=[target.pk])
    missing = client.post(url, {f"v{target.pk}-note": "kept text"}, HTTP_HX_REQUEST="true")
    assert (
        missing.status_code == 400 and b"This field is required" in missing.content and b"kept text" in missing.content
    )
    saved = client.post(
        url, {f"v{target.pk}-agrees": "no", f"v{target.pk}-note": "it was rude"}, HTTP_HX_REQUEST="true"
    )
    assert saved.status_code == 200 and b"You disagree" in saved.content
    label = VerdictLabel.objects.get(verdict=target, labeller=user)
    assert (label.agrees, label.note) == (False, "it was rude")
    assert "11 verdicts left" in client.get(reverse("calibration:labels")).content.decode()


def test_labelling_a_judge_error_is_refused_with_a_message(client, judge):
    [verdict] = labelled_world(judge, n=1)
    Verdict.objects.filter(pk=verdict.pk).update(status="error", met=None)
    client.force_login(reviewer())
    response = client.post(reverse("calibration:label", args=[verdict.pk]), {f"v{verdict.pk}-agrees": "yes"})
    assert response.status_code == 400 and b"judge error has no verdict" in response.content
    assert not VerdictLabel.objects.exists()


def test_agreement_page_flags_a_criterion(client, judge, django_assert_max_num_queries):
    verdicts = labelled_world(judge, n=6)
    human = reviewer()
    for i, verdict in enumerate(verdicts):
        VerdictLabel.objects.create(verdict=verdict, labeller=human, agrees=i < 3)
    client.force_login(author())
    with django_assert_max_num_queries(8):
        response = client.get(reverse("calibration:agreement"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "Flagged for rewriting (1)" in body and "judge-1" in body and "0.50" in body


def test_an_endpoint_judging_with_verdicts_keeps_its_model(client, judge):
    Verdict.objects.create(
        trajectory_hash="t",
        criterion_key="00000000-0000-0000-0000-000000000002",
        criterion_hash="h",
        judge_config=judge,
        met=True,
        status="met",
    )
    client.force_login(admin())
    url = reverse("calibration:endpoint_edit", args=[judge.endpoint_id])
    form = client.get(url)
    assert form.status_code == 200 and b'value="local"' in form.content
    post = endpoint_post(name="local", model="another-model", base_url="http://vllm:8000/v1")
    response = client.post(url, post)
    assert response.status_code == 400 and b"already has verdicts" in response.content
    # Moving the same model to another host is fine (a single-label host name is a valid base URL here).
    assert client.post(url, {**post, "model": "m", "sampling": ""}).status_code == 302
    judge.endpoint.refresh_from_db()
    assert (judge.endpoint.base_url, judge.endpoint.model) == ("http://vllm:8000/v1", "m")


def test_labelling_without_htmx_redirects_or_shows_the_page_with_errors(client, judge):
    [verdict] = labelled_world(judge, n=1)
    client.force_login(reviewer())
    url = reverse("calibration:label", args=[verdict.pk])
    bad = client.post(url, {f"v{verdict.pk}-note": "typed"})
    assert bad.status_code == 400 and b"<html" in bad.content and b"typed" in bad.content
    good = client.post(url, {f"v{verdict.pk}-agrees": "yes"})
    assert good.status_code == 302 and VerdictLabel.objects.get().agrees is True
