"""The real verl (0.9): its own AgentLoopWorker drives CorecraftAgentLoop for a GRPO group against a live server.

No GPU and no model weights: verl's worker gets a stand-in token server (an ``LLMServerClient`` whose ``generate``
answers scripted token ids) and a tokenizer trained here; everything else is verl's own code (its config, the
registry, the tool loading, the padding and batching of ``_postprocess``) and ours, over HTTP to a live server.

Runs where verl is installed (``make verl-smoke`` builds .venv-verl and runs this file); skipped otherwise.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

verl_agent_loop = pytest.importorskip("verl.experimental.agent_loop.agent_loop", reason="verl is not installed")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import numpy as np  # noqa: E402 (after the skips: these come with verl)
from hydra import compose, initialize_config_dir  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.workers.rollout.llm_server import LLMServerClient  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from tests.processes import web_server  # noqa: E402
from tests.trainer_bridge.trainer_fixtures import GOOD_ANSWER, trainer_world_make  # noqa: E402
from trainer_bridge import verl_agent  # noqa: E402
from trainer_bridge.client import CorecraftClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "trainer_bridge" / "configs"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
# A Qwen-style chat template with tools (Hermes tool calls), small enough to read.
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n<tools>\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}{%- if m.role == 'system' %}"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROMPT_LENGTH = 12288  # verl_grpo.yaml's, which fits the compact rendering of the tools
RESPONSE_LENGTH = 4096


def tiny_model_dir(path: Path, texts: list[str]) -> Path:
    """A byte-level BPE tokenizer trained on ``texts`` and a model config, saved as a Hugging Face model folder
    (verl reads the tokenizer and the config; nothing here loads weights)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=12000, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>", bos_token=None, unk_token=None
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        architectures=["Qwen2ForCausalLM"],
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ).save_pretrained(path)
    return path


class ScriptedTokenServer(LLMServerClient):
    """verl's LLM client with the model replaced by scripts: a rollout (request id = its episode) takes the next
    script of the pool its first prompt picks (``pick(prompt_text)``), and each turn answers the script's next text
    as token ids, as a vLLM server would. Rollouts run concurrently, so ``label_of`` records who got which."""

    def __init__(self, config, tokenizer, pools: dict[str, list[tuple[str, list[str]]]], pick):
        super().__init__(config, load_balancer_handle=None)
        self.tokenizer = tokenizer
        self._pools = {name: list(scripts) for name, scripts in pools.items()}
        self._pick = pick
        self._turns: dict[str, list[str]] = {}
        self.label_of: dict[str, str] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        if request_id not in self._turns:
            pool = self._pools[self._pick(self.tokenizer.decode(prompt_ids))]
            self.label_of[request_id], script = pool.pop(0)
            self._turns[request_id] = list(script)
        text = self._turns[request_id].pop(0)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        assert self.tokenizer.decode(ids, skip_special_tokens=False) == text
        return TokenOutput(token_ids=ids, stop_reason="completed")


def verl_config(model_dir: Path, group: int):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(
            config_name="verl_grpo",
            overrides=[
                f"actor_rollout_ref.model.path={model_dir}",
                f"actor_rollout_ref.rollout.n={group}",
                f"actor_rollout_ref.rollout.prompt_length={PROMPT_LENGTH}",
                f"actor_rollout_ref.rollout.response_length={RESPONSE_LENGTH}",
                f"data.max_prompt_length={PROMPT_LENGTH}",
                f"actor_rollout_ref.rollout.multi_turn.tool_config_path={CONFIGS / 'verl_tool_config.yaml'}",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={CONFIGS / 'verl_agent_loop.yaml'}",
                "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=5",
            ],
        )


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call><|im_end|>"


def test_the_shipped_config_loads_our_reward_function_by_package():
    from verl.trainer.ppo.reward import get_custom_reward_fn

    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        config = compose(config_name="verl_grpo")
    assert config.reward.custom_reward_function.path == "pkg://trainer_bridge.verl_agent"
    reward_fn = get_custom_reward_fn(config)
    assert reward_fn.args[0] is verl_agent.compute_score  # functools.partial(_call_with_kwargs, fn, kwargs)
    assert config.data.max_prompt_length == config.actor_rollout_ref.rollout.prompt_length == PROMPT_LENGTH


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, databases=["default", "episode"])
@pytest.mark.usefixtures("fresh_episode_state")
def test_verls_agent_loop_worker_runs_a_grpo_group_against_a_live_server(tmp_path, monkeypatch):
    tw = trainer_world_make(slug="live-verl")
    with web_server() as url:
        run_groups(tw, CorecraftClient(url, token=tw.token("train:read", "episodes", "reward"), retries=0), tmp_path,
                   monkeypatch)  # fmt: skip


def run_groups(tw, client: CorecraftClient, tmp_path: Path, monkeypatch) -> None:
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, _agent_loop_registry

    rows = tw.rows("train", llm=False)  # rows judged without an llm criterion: their rewards are final at once
    order = tw.order_id
    look_up = call("get_order_details", order_id=order)
    backorder = call("update_order_status", order_id=order, status="backorder")
    solved = [look_up, backorder, GOOD_ANSWER + "<|im_end|>"]
    group = [
        ("solved", solved),  # looks up, backorders, says so: every criterion
        ("claims", [look_up, GOOD_ANSWER + "<|im_end|>"]),  # says so without doing it: the state criterion fails
        ("skips", ["No idea, sorry.<|im_end|>"]),  # skips the required lookup: 0
        ("solved", solved),
    ]
    other_row = [("solved", solved), ("skips", ["Nothing to do.<|im_end|>"])]
    expected = {"solved": (1.0, 2), "skips": (0.0, 0)}

    # The tokenizer learns the text it will see (the schemas as the template writes them), so its prompts are
    # about as long as a real BPE tokenizer's: ~10.5k tokens for the 23 schemas with Qwen3's.
    tools = [json.dumps(tool, ensure_ascii=False) for tool in tw.release.tools]
    texts = tools + [json.dumps(row.content) for row in rows] + [t for _, script in group + other_row for t in script]
    model_dir = tiny_model_dir(tmp_path / "tiny", texts * 3)
    config = verl_config(model_dir, group=len(group))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    brief = "You are Corecraft support. Be brief. "
    server = ScriptedTokenServer(
        config, tokenizer, {"a": group, "b": other_row}, pick=lambda prompt: "b" if brief in prompt else "a"
    )
    loop_class = verl_agent.CorecraftAgentLoop
    monkeypatch.setattr(loop_class, "client", client)
    worker = AgentLoopWorker(config, llm_client=server)
    # verl's registry points at an importable class (fix (a): a <locals> target failed rollouts 1-3 of a group).
    assert _agent_loop_registry["corecraft_agent"]["_target_"] == "trainer_bridge.verl_agent.CorecraftAgentLoop"
    assert len(worker.tools) == 23 + 1  # 23 world tools + ask_user

    # One batch: a GRPO group of 4 rollouts of a row, and a group of 2 whose prompt is longer (a system message
    # of its own): prompts of different lengths in one batch.
    first = second = rows[0]
    prompts = [[{"role": "user", "content": first.content["instruction"]}]] * len(group) + [
        [
            {"role": "system", "content": brief * 20},
            {"role": "user", "content": second.content["instruction"]},
        ]
    ] * len(other_row)
    infos = [{"release": tw.release.slug, "row_id": first.pk}] * len(group) + [
        {"release": tw.release.slug, "row_id": second.pk}
    ] * len(other_row)
    size = len(prompts)
    batch = DataProto.from_dict(
        non_tensors={
            "raw_prompt": np.array(prompts, dtype=object),
            "extra_info": np.array(infos, dtype=object),
            "agent_name": np.array(["corecraft_agent"] * size, dtype=object),
            "index": np.array([0] * len(group) + [1] * len(other_row)),  # the GRPO groups
        }
    )
    output = asyncio.run(worker.generate_sequences(batch))

    assert tuple(output.batch["prompts"].shape) == (size, PROMPT_LENGTH)
    assert tuple(output.batch["responses"].shape) == (size, RESPONSE_LENGTH)
    prompt_tokens = output.batch["attention_mask"][:, :PROMPT_LENGTH].sum(dim=1).tolist()
    assert len(set(prompt_tokens[: len(group)])) == 1 and prompt_tokens[-1] > prompt_tokens[0]
    rewards = output.batch["rm_scores"].sum(dim=1).tolist()
    episodes = list(output.non_tensor_batch["corecraft_episode_id"])
    assert len(set(episodes)) == size  # one episode per rollout
    # The rewards are the trainer API's for the same episodes, and they differ within the group.
    api_rewards = [client.episode(str(e)).value(on_pending="partial") for e in episodes]
    assert rewards == pytest.approx(api_rewards)
    labels = [server.label_of[str(e)] for e in episodes]
    assert sorted(labels[: len(group)]) == ["claims", "skips", "solved", "solved"]
    tool_calls = list(output.non_tensor_batch["corecraft_tool_calls"])
    for label, reward, calls in zip(labels, rewards, tool_calls, strict=True):
        if label == "claims":
            assert 0.0 < reward < 1.0 and calls == 1
        else:
            assert (reward, calls) == expected[label], label
    assert max(rewards[: len(group)]) - min(rewards[: len(group)]) == 1.0  # a reward spread in the group
    # Tool responses are in a solved rollout's response, but masked out of the loss.
    i = labels.index("solved")
    generated = output.batch["responses"][i][output.batch["response_mask"][i].bool()].tolist()
    whole = output.batch["responses"][i][output.batch["attention_mask"][i, PROMPT_LENGTH:].bool()].tolist()
    assert "<tool_response>" in tokenizer.decode(whole) and "<tool_response>" not in tokenizer.decode(generated)
    print(
        "VERL_GROUP "
        + json.dumps(
            {
                "rollouts": len(group),
                "labels": labels[: len(group)],
                "rewards": rewards[: len(group)],
                "tool_calls": [int(c) for c in tool_calls[: len(group)]],
                "prompt_tokens": prompt_tokens,
            }
        )
    )
