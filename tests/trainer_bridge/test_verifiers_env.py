"""The verifiers environment (environments/corecraft_env) run by verifiers' own ``vf-eval`` against a live server.

``vf-eval`` (verifiers 0.3.1, in .venv-verifiers: it pins mcp<2, the project uses 2.x) loads ``corecraft-env``,
reads a frozen release's rows through the API, and runs one rollout per row against the scripted model server
(``corecraft_site.llm.scripted_server``): a full solution, an answer with no tool call and a half solution. Each
rollout's reward must equal the trainer API's for the same trajectory, replayed in a fresh episode.

Runs where ``make verifiers-smoke`` built .venv-verifiers; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from corecraft_site.llm.scripted_server import Reply, ScriptedLLMServer, ScriptedToolCall
from tests.processes import ROOT, web_server
from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from trainer_bridge.trainer_models import TrainerEpisode, TrainerEpisodeStatus
from world_app.models import EpisodeStep

VF_EVAL = ROOT / ".venv-verifiers" / "bin" / "vf-eval"

pytestmark = [
    pytest.mark.skipif(not VF_EVAL.exists(), reason="no .venv-verifiers: `make verifiers-smoke` builds it"),
    pytest.mark.django_db(transaction=True, databases=["default", "episode"]),
    pytest.mark.slow,
    pytest.mark.usefixtures("fresh_episode_state"),
]


def scripts(order_id: str) -> list[Reply]:
    look = ScriptedToolCall("get_order_details", {"order_id": order_id})
    act = ScriptedToolCall("update_order_status", {"order_id": order_id, "status": "backorder", "reason": "GPU"})
    return [
        # Row 1: looks the order up, backorders it, says so.
        Reply(tool_calls=[look]),
        Reply(tool_calls=[act]),
        Reply(content=GOOD_ANSWER),
        # Row 2: answers without a tool call.
        Reply(content="I am sure your order is fine."),
        # Row 3: looks it up and stops there.
        Reply(tool_calls=[look]),
        Reply(content="Your order is being processed."),
    ]


def api_replay(secret: str, release: str, episode: TrainerEpisode) -> dict:
    """The same trajectory (logged calls, final answer) in a fresh episode through the trainer API."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def post(path: str, data: dict) -> dict:
        response = client.post(path, data=json.dumps(data), content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return json.loads(response.content)

    opened = post("/api/v1/rollouts/episodes/", {"release": release, "row_id": episode.row_id})
    for step in EpisodeStep.objects.filter(episode_id=episode.episode_id).order_by("seq"):
        post(f"/api/v1/rollouts/episodes/{opened['episode_id']}/tools/{step.name}/", {"arguments": step.arguments})
    return post(f"/api/v1/rollouts/episodes/{opened['episode_id']}/finish/", {"final_answer": episode.final_answer})


def test_vf_eval_runs_release_rows_and_pays_the_trainer_apis_rewards(tmp_path: Path):
    tw = trainer_world_make("vf-env")
    secret = tw.token("train:read", "episodes", "reward")
    slug = tw.release.slug
    with web_server() as api, ScriptedLLMServer(scripts(tw.order_id)) as llm:
        env = {
            **os.environ,
            "CORECRAFT_API_URL": api,
            "CORECRAFT_API_TOKEN": secret,
            "SCRIPTED_API_KEY": "not-used",
            "CORECRAFT_RUBRIC_DROPOUT": "",
        }
        command = [
            str(VF_EVAL),
            "corecraft-env",
            "-a",
            json.dumps({"release": slug, "num_examples": 3}),
            "-m",
            "scripted",
            "-b",
            llm.base_url,
            "-k",
            "SCRIPTED_API_KEY",
            "-n",
            "3",
            "-r",
            "1",
            "-c",
            "1",
            "-s",
            "-o",
            str(tmp_path),
            "-d",
            "--state-columns",
            "corecraft_outcome",
        ]
        run = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)  # noqa: S603
        print(run.stdout[-6000:], run.stderr[-6000:])
        assert run.returncode == 0, run.stderr[-4000:]

    [results_file] = list(tmp_path.rglob("results.jsonl"))
    results = [json.loads(line) for line in results_file.read_text().splitlines() if line.strip()]
    assert len(results) == 3
    rewards = []
    for result in results:
        outcome = result["corecraft_outcome"]
        episode = TrainerEpisode.objects.get(pk=outcome["episode_id"])
        assert episode.status == TrainerEpisodeStatus.FINISHED
        api = api_replay(secret, slug, episode)
        assert outcome["trajectory_hash"] == api["trajectory_hash"]
        assert outcome["partial_reward"] == api["partial_reward"] and outcome["passed"] == api["passed"]
        expected = api["reward"] if api["reward"] is not None else api["partial_reward"]
        assert result["reward"] == pytest.approx(expected)
        rewards.append(result["reward"])
    assert len(set(rewards)) == 3, rewards  # a full, a lazy and a half solution are paid apart
    print(json.dumps({"verifiers_rewards": rewards}))
