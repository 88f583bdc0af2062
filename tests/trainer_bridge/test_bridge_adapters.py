"""The TRL and verl adapters' own logic, without torch, TRL or verl; the shipped config files; import hygiene."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make
from trainer_bridge import trl_env, verl_agent
from trainer_bridge.client import BatchResult, CorecraftClient, EpisodeOpened, Reward, ToolOutcome
from trainer_bridge.configs import build
from world_app.contract import compact_tools

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "trainer_bridge" / "configs"


# --- a client double: the HTTP boundary only (the real API is exercised in test_bridge_client.py) --------------


def reward_of(episode_id: str, value: float | None, *, final: bool = True) -> Reward:
    return Reward(episode_id, value if final else None, value, (value or 0) >= 1, final, "" if final else "partial",
                  [])  # fmt: skip


@dataclass
class FakeClient:
    rewards: dict = field(default_factory=dict)  # final answer -> reward value
    opened: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    finished: list = field(default_factory=list)
    final: bool = True

    def create_episode(self, *, release, row_id):
        episode = EpisodeOpened(f"ep-{len(self.opened)}", release, int(row_id), "train", 1, "Do it.", [], 5)
        self.opened.append(episode)
        return episode

    def call_tool(self, episode_id, name, arguments):
        self.calls.append((episode_id, name, arguments))
        return ToolOutcome({"ok": name, "args": arguments}, name == "bad_tool", len(self.calls), name, 1.0)

    def finish(self, episode_id, *, final_answer, messages=None):
        self.finished.append((episode_id, final_answer, messages))
        return reward_of(episode_id, self.rewards.get(final_answer, 0.0), final=self.final)

    def episode(self, episode_id):
        done = [f for f in self.finished if f[0] == episode_id]
        if done:
            return reward_of(episode_id, self.rewards.get(done[-1][1], 0.0))
        return Reward(episode_id, None, None, None, False, "", [], status="open")

    def batch_rewards(self, items):
        results = []
        for index, item in enumerate(items):
            if item["episode_id"] == "broken":
                results.append(BatchResult(index, "broken", False, None, RuntimeError("nope")))
                continue
            self.finished.append((item["episode_id"], item["final_answer"], item.get("messages")))
            value = self.rewards.get(item["final_answer"], 0.0)
            results.append(BatchResult(index, item["episode_id"], True, reward_of(item["episode_id"], value,
                                                                                 final=self.final), None))  # fmt: skip
        return results


# --- import hygiene and shipped files ---------------------------------------------------------------------------


def test_the_client_modules_import_without_django():
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('django', 'rest_framework', 'torch', 'trl', 'verl', 'transformers'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import trainer_bridge.client, trainer_bridge.trl_env, trainer_bridge.verl_agent\n"
        "assert len([m for m in dir(trainer_bridge.trl_env.CorecraftEnv) if not m.startswith('_')]) >= 23\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-c", blocker], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_shipped_tool_files_match_the_registry():
    assert (CONFIGS / "tool_schemas.json").read_text() == build.tool_schemas_text(), (
        "run python -m trainer_bridge.configs.build"
    )
    assert (CONFIGS / "verl_tool_config.yaml").read_text() == build.verl_tool_config_text()
    config = yaml.safe_load((CONFIGS / "verl_tool_config.yaml").read_text())
    assert len(config["tools"]) == 23 + 1  # 23 world tools + ask_user
    assert {t["class_name"] for t in config["tools"]} == {"trainer_bridge.verl_agent.CorecraftTool"}
    assert config["tools"][0]["tool_schema"] == trl_env.bundled_tool_schemas()[0]


def test_the_grpo_configs_follow_the_paper():
    trl = yaml.safe_load((CONFIGS / "trl_grpo.yaml").read_text())["grpo"]
    assert trl["num_generations"] == 8 and trl["epsilon"] == 0.2 and trl["epsilon_high"] == 0.28
    assert trl["num_train_epochs"] == 1 and trl["beta"] == 0.0
    verl = yaml.safe_load((CONFIGS / "verl_grpo.yaml").read_text())
    assert verl["algorithm"]["adv_estimator"] == "grpo" and verl["actor_rollout_ref"]["rollout"]["n"] == 8
    actor = verl["actor_rollout_ref"]["actor"]
    assert actor["clip_ratio_low"] == 0.2 and actor["clip_ratio_high"] == 0.28 and actor["use_kl_loss"] is False
    assert verl["trainer"]["total_epochs"] == 1 and verl["trainer"]["critic_warmup"] == 0
    rollout = verl["actor_rollout_ref"]["rollout"]
    for path in (rollout["multi_turn"]["tool_config_path"], rollout["agent"]["agent_loop_config_path"]):
        assert (ROOT / path).exists(), path
    loops = yaml.safe_load((CONFIGS / "verl_agent_loop.yaml").read_text())
    assert loops == [{"name": "corecraft_agent", "_target_": "trainer_bridge.verl_agent.CorecraftAgentLoop"}]
    reward_fn = verl["reward"]["custom_reward_function"]
    assert reward_fn == {"path": "pkg://trainer_bridge.verl_agent", "name": "compute_score"}
    assert callable(verl_agent.compute_score)
    # Lengths that fit the 23 tool schemas in the rendering the config names (~4 characters a BPE token).
    tools = json.loads(build.tool_schemas_text())
    if verl["corecraft"]["tool_format"] == "compact":
        tools = compact_tools(tools)
    schema_tokens = len(json.dumps(tools)) / 4
    assert verl["data"]["max_prompt_length"] == rollout["prompt_length"] >= schema_tokens + 2048


def test_the_trl_config_builds_a_grpo_config_when_trl_is_installed(tmp_path):
    pytest.importorskip("trl")
    from trl import GRPOConfig

    args = yaml.safe_load((CONFIGS / "trl_grpo.yaml").read_text())["grpo"]
    args.update(bf16=False, gradient_checkpointing=False, output_dir=str(tmp_path))
    config = GRPOConfig(**args)
    assert (config.num_generations, config.epsilon, config.epsilon_high, config.num_train_epochs) == (8, 0.2, 0.28, 1)


# --- TRL ------------------------------------------------------------------------------------------------------


def env_class(client, **kwargs):
    return trl_env.corecraft_env_class(client=client, **kwargs)


def test_the_environment_exposes_the_23_tools_as_typed_documented_methods():
    cls = trl_env.CorecraftEnv
    tools = [n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")]
    tools = [n for n in tools if n not in ("reset", "get_reward")]
    assert sorted(tools) == sorted(s["function"]["name"] for s in trl_env.bundled_tool_schemas())
    assert not hasattr(cls, "get_reward")  # the reward comes from corecraft_reward with the final answer
    method = cls.update_order_status
    signature = inspect.signature(method)
    assert signature.parameters["order_id"].default is inspect.Parameter.empty  # required
    assert signature.parameters["reason"].default is None  # optional: the server's default applies
    assert "Args:" in method.__doc__ and "order_id:" in method.__doc__ and "(choices:" in method.__doc__
    submit = trl_env.CorecraftSubmitEnv
    assert callable(submit.get_reward) and callable(submit.submit_answer)


def test_transformers_reads_a_schema_from_every_tool_method():
    utils = pytest.importorskip("transformers.utils")
    env = env_class(FakeClient())()
    for schema in trl_env.bundled_tool_schemas():
        name = schema["function"]["name"]
        generated = utils.get_json_schema(getattr(env, name))["function"]
        assert generated["name"] == name
        wanted = schema["function"]["parameters"]
        assert set(generated["parameters"]["properties"]) == set(wanted["properties"])
        assert set(generated["parameters"].get("required", [])) == set(wanted.get("required", []))


def test_reset_opens_an_episode_and_tools_run_in_it():
    client = FakeClient()
    env = env_class(client)()
    with pytest.raises(RuntimeError, match="reset"):
        env.get_order_details(order_id="ord-1")
    with pytest.raises(ValueError, match="release"):
        env.reset(prompt=[{"role": "user", "content": "hi"}])
    assert env.reset(release="r1", row_id="7", prompt="...") is None
    assert client.opened[0].row_id == 7 and env.episode_id == "ep-0"
    text = env.get_order_details(order_id="ord-1")
    assert json.loads(text) == {"ok": "get_order_details", "args": {"order_id": "ord-1"}}
    env.search_orders(customer_id="cus-1", status=None)  # None: left out, the server's default applies
    assert client.calls[-1] == ("ep-0", "search_orders", {"customer_id": "cus-1"})
    assert env.tool_calls == 2
    env.reset(release="r1", row_id=8)
    assert env.episode_id == "ep-1" and env.tool_calls == 0 and env.reward is None
    instruction_env = env_class(client, observation="instruction")()
    assert instruction_env.reset(release="r1", row_id=1) == "Do it."


def test_corecraft_reward_scores_a_group_in_one_batch_with_the_final_assistant_message():
    client = FakeClient(rewards={"done it": 1.0, "half": 0.5})
    envs = [env_class(client)() for _ in range(3)]
    for env in envs:
        env.reset(release="r1", row_id=1)
    completions = [
        [{"role": "assistant", "content": "", "tool_calls": [{"type": "function"}]},
         {"role": "tool", "name": "x", "content": "{}"}, {"role": "assistant", "content": "done it"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "ha"}, {"type": "text", "text": "lf"}]}],
        [{"role": "assistant", "content": "nothing"}],
    ]  # fmt: skip
    prompts = [[{"role": "user", "content": "Do it."}]] * 3
    reward = trl_env.make_corecraft_reward(client)
    assert reward(prompts, completions, environments=envs, release=["r1"] * 3, row_id=[1] * 3) == [1.0, 0.5, 0.0]
    assert [f[1] for f in client.finished] == ["done it", "half", "nothing"]
    assert client.finished[0][2][0] == {"role": "user", "content": "Do it."} and len(client.finished[0][2]) == 4
    assert envs[0].reward == 1.0 and envs[0].outcome.final
    with pytest.raises(RuntimeError, match="finished"):
        envs[0].get_order_details(order_id="o")


def test_corecraft_reward_without_environments_opens_an_episode_per_completion():
    client = FakeClient(rewards={"yes": 1.0})
    rewards = trl_env.make_corecraft_reward(client)(["p", "p"], ["yes", "no"], release=["r1", "r1"], row_id=[3, 4])
    assert rewards == [1.0, 0.0] and [e.row_id for e in client.opened] == [3, 4]


def test_partial_rewards_follow_on_pending_and_failed_items_score_none():
    client = FakeClient(rewards={"a": 0.5}, final=False)
    envs = [env_class(client)() for _ in range(2)]
    for env in envs:
        env.reset(release="r1", row_id=1)
    envs[1]._episode = EpisodeOpened("broken", "r1", 1, "train", 1, "", [], 5)
    partial = trl_env.make_corecraft_reward(client)(["p", "p"], ["a", "a"], environments=envs)
    assert partial == [0.5, None]
    strict = trl_env.make_corecraft_reward(client, on_pending="none")(["p"], ["a"], release=["r1"], row_id=[1])
    assert strict == [None]


def test_the_submit_environment_owns_its_reward():
    client = FakeClient(rewards={"the answer": 1.0})
    env = env_class(client, submit_answer=True, name="Submit")()
    env.reset(release="r1", row_id=2)
    assert env.submit_answer(answer="the answer") == "Answer received."
    with pytest.raises(ValueError, match="already"):
        env.submit_answer(answer="again")
    assert env.get_reward() == 1.0 and env.get_reward() == 1.0 and len(client.finished) == 1


def test_completion_final_answer():
    assert trl_env.completion_final_answer("plain") == "plain"
    assert trl_env.completion_final_answer([{"role": "assistant", "content": None}]) == ""
    assert trl_env.completion_final_answer([]) == ""


# --- verl -----------------------------------------------------------------------------------------------------


def test_tool_calls_and_final_answers_are_read_from_model_text():
    text = ('<think>hmm</think>Let me look. <tool_call>{"name": "get_order_details", "arguments": {"order_id": "o1"}}'
            '</tool_call><tool_call>{"name": "x", "arguments": "{\\"a\\": 1}"}</tool_call><tool_call>nope</tool_call>'
            '<tool_call>[1]</tool_call>')  # fmt: skip
    calls = verl_agent.parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls[:2]] == [("get_order_details", {"order_id": "o1"}), ("x", {"a": 1})]
    assert "not valid JSON" in calls[2].error and "name" in calls[3].error
    decoded = ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<tool_call>{}</tool_call><|im_end|>\n"
               "<|im_start|>tool\n<tool_response>{}</tool_response><|im_end|>\n<|im_start|>assistant\n"
               "<think>ok</think>It is on backorder.<|im_end|><|endoftext|>")  # fmt: skip
    assert verl_agent.final_answer_from_text(decoded) == "It is on backorder."
    assert verl_agent.final_answer_from_text("  plain answer ") == "plain answer"


def test_compute_score_reads_back_the_loops_reward_or_scores_the_answer():
    client = FakeClient(rewards={"It is on backorder.": 1.0})
    fresh = verl_agent.compute_score("corecraft", "<|im_start|>assistant\nIt is on backorder.<|im_end|>", None,
                                     {"release": "r1", "row_id": 4}, client=client)  # fmt: skip
    assert fresh == {"score": 1.0, "passed": 1.0, "reward_final": 1.0} and client.opened[0].row_id == 4
    client.finish("ep-9", final_answer="It is on backorder.")
    again = verl_agent.compute_score("corecraft", "other text", None, {"corecraft_episode_id": "ep-9"}, client=client)
    assert again["score"] == 1.0 and len(client.finished) == 2  # read back, not finished again
    open_one = verl_agent.compute_score("corecraft", "meh", None, {"corecraft_episode_id": "ep-5"}, client=client)
    assert open_one["score"] == 0.0 and client.finished[-1] == ("ep-5", "meh", None)
    with pytest.raises(ValueError, match="release"):
        verl_agent.compute_score("corecraft", "x", None, {}, client=client)


def test_the_episode_driver_keeps_state_in_one_episode():
    client = FakeClient(rewards={"fine": 1.0})
    driver = verl_agent.EpisodeDriver(client, release="r1", row_id=3)
    with pytest.raises(RuntimeError):
        driver.call(verl_agent.ParsedCall("t", {}))
    driver.open()
    driver.call(verl_agent.ParsedCall("get_order_details", {"order_id": "o"}))
    text = driver.call(verl_agent.ParsedCall("", {}, "the tool call is not valid JSON"))
    assert json.loads(text)["error"]["code"] == "malformed_tool_call"
    driver.call(verl_agent.ParsedCall("bad_tool", {}))
    assert driver.tool_calls == 3 and driver.tool_errors == 2 and len(client.calls) == 2
    assert {c[0] for c in client.calls} == {"ep-0"}
    driver.finish("fine")
    assert driver.reward_value() == 1.0


class CharTokenizer:
    """One token per character; the chat template writes Qwen-style turns."""

    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=False, tools=None, **kwargs):
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        if add_generation_prompt:
            text += "<|im_start|>assistant\n"
        return [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i) for i in ids)


def fake_verl(monkeypatch):
    registry: dict = {}

    class AgentLoopBase:
        def __init__(self, trainer_config, server_manager, tokenizer, processor, **kwargs):
            self.config = trainer_config.config
            self.server_manager = server_manager
            self.tokenizer = tokenizer
            self.loop = asyncio.get_running_loop()

    class AgentLoopOutput:
        def __init__(self, **fields):
            self.__dict__.update(fields)

    def register(name):
        def decorate(cls):
            registry[name] = {"_target_": f"{cls.__module__}.{cls.__qualname__}"}
            return cls

        return decorate

    module = types.ModuleType("verl.experimental.agent_loop.agent_loop")
    module.AgentLoopBase, module.AgentLoopOutput, module.register = AgentLoopBase, AgentLoopOutput, register
    for name in ("verl", "verl.experimental", "verl.experimental.agent_loop"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "verl.experimental.agent_loop.agent_loop", module)
    monkeypatch.setattr(verl_agent, "_built", {})
    return registry


def test_the_agent_loop_runs_every_turn_in_one_episode_and_returns_its_reward(monkeypatch):
    registry = fake_verl(monkeypatch)
    loop_class = verl_agent.CorecraftAgentLoop
    # An importable target (not a <locals> one), the same the agent-loop config names.
    assert registry["corecraft_agent"] == {"_target_": "trainer_bridge.verl_agent.CorecraftAgentLoop"}
    client = FakeClient(rewards={"It is on backorder.": 1.0})
    monkeypatch.setattr(loop_class, "client", client)
    turns = iter([
        '<tool_call>{"name": "get_order_details", "arguments": {"order_id": "o1"}}</tool_call><|im_end|>',
        '<tool_call>{"name": "update_order_status", "arguments": {"order_id": "o1", "status": "backorder"}}'
        "</tool_call><|im_end|>",
        "It is on backorder.<|im_end|>",
    ])  # fmt: skip

    class Server:
        async def generate(self, *, request_id, prompt_ids, sampling_params):
            return [ord(c) for c in next(turns)]

    rollout = types.SimpleNamespace(response_length=100_000, multi_turn=types.SimpleNamespace(max_assistant_turns=5))
    config = types.SimpleNamespace(actor_rollout_ref=types.SimpleNamespace(rollout=rollout))

    async def go():
        agent = loop_class(types.SimpleNamespace(config=config), Server(), CharTokenizer(), None)
        return await agent.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "Backorder o1"}],
                               extra_info={"release": "r1", "row_id": 5})  # fmt: skip

    output = asyncio.run(go())
    assert [c[1] for c in client.calls] == ["get_order_details", "update_order_status"]
    assert {c[0] for c in client.calls} == {"ep-0"} and client.opened[0].row_id == 5
    assert client.finished[0][1] == "It is on backorder." and output.reward_score == 1.0
    assert output.extra_fields["corecraft_episode_id"] == "ep-0" and output.extra_fields["corecraft_tool_calls"] == 2
    response = "".join(chr(i) for i in output.response_ids)
    assert response.endswith("It is on backorder.<|im_end|>") and "<|im_start|>tool" in response
    assert len(output.response_mask) == len(output.response_ids)
    generated = "".join(chr(i) for i, m in zip(output.response_ids, output.response_mask, strict=True) if m)
    assert "<|im_start|>tool" not in generated and generated.endswith("It is on backorder.<|im_end|>")
    assert "".join(chr(i) for i in output.prompt_ids).endswith("<|im_start|>assistant\n")


# --- the TRL adapters against the real API ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_the_trl_environment_and_reward_against_a_live_server(live_server):
    tw = trainer_world_make(slug="live-trl")
    client = CorecraftClient(live_server.url, token=tw.token("train:read", "episodes", "reward"), retries=0)
    env_cls = trl_env.corecraft_env_class(tw.release.tools, client=client)
    row = tw.rows("train", llm=False)[0]
    envs = [env_cls(), env_cls()]
    for env in envs:
        env.reset(release=tw.release.slug, row_id=row.pk, prompt=[{"role": "user", "content": "x"}])
    assert "error" not in json.loads(envs[0].get_order_details(order_id=tw.order_id))
    refused = json.loads(envs[0].update_order_status(order_id="ord-nope", status="backorder"))
    assert refused["error"]["code"]  # a refusal is the tool's result, for the model to read
    envs[0].update_order_status(order_id=tw.order_id, status="backorder")
    completions = [[{"role": "assistant", "content": GOOD_ANSWER}], [{"role": "assistant", "content": "no idea"}]]
    rewards = trl_env.make_corecraft_reward(client)([[{"role": "user", "content": "x"}]] * 2, completions,
                                                    environments=envs)  # fmt: skip
    assert rewards == [1.0, 0.0]
    assert envs[0].outcome.passed is True and envs[1].outcome.passed is False


def test_token_ids_from_what_apply_chat_template_returns():
    from collections import UserDict

    # transformers 5 returns a BatchEncoding (a UserDict): iterating it gives its keys, not ids.
    batch_encoding = UserDict({"input_ids": [5, 6, 7], "attention_mask": [1, 1, 1]})
    assert list(batch_encoding) == ["input_ids", "attention_mask"]
    assert verl_agent.token_ids(batch_encoding) == [5, 6, 7]
    assert verl_agent.token_ids(UserDict({"input_ids": [[5, 6]]})) == [5, 6]
    assert verl_agent.token_ids([1, 2]) == verl_agent.token_ids([[1, 2]]) == [1, 2]
    with pytest.raises(ValueError, match="batch of 2"):
        verl_agent.token_ids([[1], [2]])
    with pytest.raises(TypeError):
        verl_agent.token_ids(["input_ids", "attention_mask"])


def test_a_prompt_over_prompt_length_fails_its_rollout_by_name(monkeypatch):
    fake_verl(monkeypatch)
    loop_class = verl_agent.CorecraftAgentLoop
    monkeypatch.setattr(loop_class, "client", FakeClient())
    rollout = types.SimpleNamespace(response_length=100, prompt_length=10, multi_turn=None)
    config = types.SimpleNamespace(actor_rollout_ref=types.SimpleNamespace(rollout=rollout))

    class Server:
        async def generate(self, **kwargs):
            raise AssertionError("never asked: the prompt does not fit")

    async def go():
        agent = loop_class(types.SimpleNamespace(config=config), Server(), CharTokenizer(), None)
        await agent.run({}, raw_prompt=[{"role": "user", "content": "a long instruction"}],
                        extra_info={"release": "r1", "row_id": 5})  # fmt: skip

    with pytest.raises(verl_agent.PromptTooLong, match=r"actor_rollout_ref\.rollout\.prompt_length=10"):
        asyncio.run(go())
