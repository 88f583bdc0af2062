"""``finish`` against a tool call made at the same moment, from two threads: the call is judged or refused."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from trainer_bridge.services import api_token_create
from trainer_bridge.trainer_models import TrainerEpisode
from trainer_bridge.trainer_services import (
    EpisodeFinished,
    trainer_episode_finish,
    trainer_episode_open,
    trainer_episode_tool_call,
)
from world_app.episodes import EpisodeClosed
from world_app.models import EpisodeStep

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.usefixtures("fresh_episode_state"),
]

TRIALS = 12


def _race(trainer_episode: TrainerEpisode, order_id: str) -> dict:
    barrier = threading.Barrier(2)
    outcome: dict = {}

    def write() -> None:
        try:
            barrier.wait()
            step = trainer_episode_tool_call(
                trainer_episode=trainer_episode,
                name="update_order_status",
                arguments={"order_id": order_id, "status": "backorder", "reason": "GPU"},
            )
            outcome["write"] = "error" if step.is_error else "logged"
        except (EpisodeClosed, EpisodeFinished):
            outcome["write"] = "refused"
        except Exception as exc:  # noqa: BLE001 - anything else is what the test reports
            outcome["write"] = f"raised {exc!r}"
        finally:
            connections.close_all()

    def finish() -> None:
        try:
            barrier.wait()
            trainer_episode_finish(trainer_episode=trainer_episode, final_answer=GOOD_ANSWER)
            outcome["finish"] = "ok"
        except Exception as exc:  # noqa: BLE001
            outcome["finish"] = f"raised {exc!r}"
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write), threading.Thread(target=finish)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcome


def test_a_tool_call_racing_finish_is_either_judged_or_refused():
    tw = trainer_world_make(slug="race")
    row = tw.rows("train", llm=False)[0]
    token = api_token_create(name="race", scopes=["train:read", "episodes"], created_by=tw.admin).token
    outcomes = []
    for _ in range(TRIALS):
        opened = trainer_episode_open(row=row, token=token, credential=token.episode_credential)
        trainer_episode_tool_call(trainer_episode=opened, name="get_order_details", arguments={"order_id": tw.order_id})
        outcome = _race(opened, tw.order_id)
        assert outcome["finish"] == "ok", outcome
        assert outcome["write"] in ("logged", "refused"), outcome
        finished = TrainerEpisode.objects.get(pk=opened.pk)
        logged = EpisodeStep.objects.filter(
            episode_id=opened.episode_id, name="update_order_status", is_error=False
        ).exists()
        backordered = next(v for v in finished.verdicts if v["kind"] == "state")["status"] == "met"
        # What the log holds is what was paid for: a logged write was judged, a refused one left no trace.
        assert logged == (outcome["write"] == "logged")
        assert backordered == logged, (outcome, finished.verdicts)
        assert finished.reward == (1.0 if logged else 0.5)
        outcomes.append(outcome["write"])
    assert set(outcomes) <= {"logged", "refused"}
