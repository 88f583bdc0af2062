"""Training-time reward options on the trainer API: rubric dropout on finish and batch, recorded with the reward."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from trainer_bridge.client import reward_options_from_env
from trainer_bridge.trainer_models import TrainerEpisode

pytestmark = [pytest.mark.django_db(databases=["default", "episode"]), pytest.mark.usefixtures("fresh_episode_state")]

TRAINER = ("train:read", "episodes", "reward")


def _post(client: APIClient, path: str, data: dict) -> tuple[int, dict]:
    response = client.post(path, data=json.dumps(data), content_type="application/json")
    assert response.status_code != 500, response.content
    return response.status_code, json.loads(response.content)


@pytest.fixture
def setup():
    tw = trainer_world_make("options-r1")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tw.token(*TRAINER)}")
    row = tw.rows("train", llm=True)[0]

    def open_episode() -> str:
        status, opened = _post(api, "/api/v1/rollouts/episodes/", {"release": tw.release.slug, "row_id": row.pk})
        assert status == 201
        return opened["episode_id"]

    return tw, api, row, open_episode


def test_dropout_is_off_by_default_and_every_criterion_judged(setup):
    _tw, api, row, open_episode = setup
    status, body = _post(api, f"/api/v1/rollouts/episodes/{open_episode()}/finish/", {"final_answer": GOOD_ANSWER})
    assert status == 200 and body["reward_options"] == {}
    assert len(body["verdicts"]) == len(row.content["rubric"])


def test_finish_with_dropout_judges_a_seeded_subset_and_records_it(setup):
    _tw, api, row, open_episode = setup
    keys = [c["key"] for c in row.content["rubric"]]
    required = {c["key"] for c in row.content["rubric"] if c.get("required")}
    seen = set()
    for seed in range(12):
        episode_id = open_episode()
        options = {"rubric_dropout": 0.6, "seed": seed}
        status, body = _post(
            api,
            f"/api/v1/rollouts/episodes/{episode_id}/finish/",
            {"final_answer": GOOD_ANSWER, "reward_options": options},
        )
        assert status == 200, body
        applied = body["reward_options"]["dropout"]
        assert applied["rate"] == 0.6 and applied["seed"] == seed
        assert [v["key"] for v in body["verdicts"]] == applied["kept"]
        assert required <= set(applied["kept"]) and sorted(applied["kept"] + applied["dropped"]) == sorted(keys)
        seen.add(tuple(applied["kept"]))
        stored = TrainerEpisode.objects.get(pk=episode_id)
        assert stored.reward_options == body["reward_options"]
    assert len(seen) > 1  # the seed matters


def test_batch_options_apply_to_every_item_and_an_item_may_override(setup):
    _tw, api, _row, open_episode = setup
    first, second = open_episode(), open_episode()
    status, body = _post(
        api,
        "/api/v1/rewards/batch/",
        {
            "reward_options": {"rubric_dropout": 0.5, "seed": 11},
            "items": [
                {"episode_id": first, "final_answer": GOOD_ANSWER},
                {"episode_id": second, "final_answer": GOOD_ANSWER, "reward_options": {"rubric_dropout": 0}},
            ],
        },
    )
    assert status == 200 and body["scored"] == 2
    assert body["results"][0]["reward_options"]["dropout"]["seed"] == 11
    assert body["results"][1]["reward_options"] == {}


def test_bad_options_are_field_errors_not_500(setup):
    _tw, api, _row, open_episode = setup
    status, body = _post(
        api,
        f"/api/v1/rollouts/episodes/{open_episode()}/finish/",
        {"final_answer": "x", "reward_options": {"rubric_dropout": 2}},
    )
    assert status == 400 and "reward_options" in json.dumps(body)
    status, body = _post(
        api,
        "/api/v1/rewards/batch/",
        {"items": [{"episode_id": open_episode(), "final_answer": "x", "reward_options": {"seed": -1}}]},
    )
    assert status == 200 and body["results"][0]["ok"] is False and body["results"][0]["error"]["code"] == "invalid"


def test_the_client_reads_its_options_from_the_environment(monkeypatch):
    monkeypatch.delenv("CORECRAFT_RUBRIC_DROPOUT", raising=False)
    assert reward_options_from_env() == {}
    monkeypatch.setenv("CORECRAFT_RUBRIC_DROPOUT", "0.25")
    monkeypatch.setenv("CORECRAFT_DROPOUT_SEED", "9")
    assert reward_options_from_env() == {"rubric_dropout": 0.25, "seed": 9}
    monkeypatch.setenv("CORECRAFT_RUBRIC_DROPOUT", "lots")
    with pytest.raises(ValueError, match="CORECRAFT_RUBRIC_DROPOUT"):
        reward_options_from_env()


class _Recorder:
    """A stand-in client that records the keyword arguments the adapters send."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def batch_rewards(self, items, **kwargs):
        self.calls.append(("batch_rewards", kwargs))
        return []

    def finish(self, episode_id, **kwargs):
        self.calls.append(("finish", kwargs))
        raise RuntimeError("recorded")


def test_the_adapters_pass_the_options_through_and_send_none_unless_set():
    from trainer_bridge.trl_env import make_corecraft_reward
    from trainer_bridge.verl_agent import EpisodeDriver

    options = {"rubric_dropout": 0.3, "seed": 5}
    recorder = _Recorder()
    make_corecraft_reward(recorder, reward_options=options)([], [], environments=[])
    make_corecraft_reward(recorder)([], [], environments=[])
    assert recorder.calls == [("batch_rewards", {"reward_options": options}), ("batch_rewards", {})]

    driver = EpisodeDriver(client=recorder, release="r", row_id=1, reward_options=options)
    driver.episode = type("Opened", (), {"episode_id": "e"})()
    with pytest.raises(RuntimeError, match="recorded"):
        driver.finish("answer")
    assert recorder.calls[-1] == ("finish", {"final_answer": "answer", "messages": None, "reward_options": options})
