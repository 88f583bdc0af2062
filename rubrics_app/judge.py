"""The LLM judge: llm criteria decided by a model, with votes, retries and the verdict cache (see judgement.py).

An llm criterion goes to the judge configuration's endpoint with a versioned prompt showing the task, the
criterion and the trajectory, asking for JSON ``{met, rationale, evidence}``. Invalid output (not JSON, keys
missing, wrong types) is sent back to the model with the problem, up to ``max_retries`` times; then the sample
is a judge *error*: never counted as met or unmet, the reward is not final and the error is counted. With n
samples the strict majority decides (a tie is not met) and ``agreement`` is the share agreeing with it.

Every decided verdict is cached in a ``Verdict`` row keyed by (trajectory hash, criterion content hash, judge
config; null for programmatic), so judging the same trajectory again asks no model. Error rows are recorded
too, but a later judgement retries them rather than serving them from the cache. A cached llm verdict made
under an older configuration (its samples carry the config hash) is judged again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from corecraft_site.canonical import canonical_sha256
from corecraft_site.llm import ChatClient, EndpointError
from corecraft_site.llm.sampling import sampling_kwargs
from rubrics_app.endpoints import endpoint_client, frozen_fields_check, registry_admin_check
from rubrics_app.models import JudgeConfig, Verdict, VerdictStatus
from rubrics_app.programmatic import MET, NOT_MET
from world_app.contract import CONVERSATION_TOOLS, LIMIT_KEYS

JUDGE_PROMPT_V1 = """\
You are a strict, fair grader of transcripts of a customer-support agent working for Corecraft Computers, \
a PC hardware retailer. The agent received a task, called tools against the store's systems and wrote a final \
answer. You decide whether ONE criterion of the grading rubric is met.

Judge only what the transcript shows: the tool calls, their results and the final answer. Do not assume \
actions that were not taken or facts that were not stated. If the evidence is missing or ambiguous, the \
criterion is not met.

Reply with ONLY a JSON object, no prose around it, exactly these keys:
{"met": true or false, "rationale": "one to three sentences why", "evidence": "a short quote or the tool call \
that decides it"}"""

JUDGE_USER_V1 = """\
## Task given to the agent
{instruction}

## Criterion to decide
{criterion}

## Trajectory
{trajectory}

## The agent's final answer
{final_answer}

Is the criterion met? Answer with the JSON object only."""

# The prompt is part of every cached verdict's key (through the config hash): a new wording is a new version.
JUDGE_PROMPTS: dict[str, tuple[str, str]] = {"v1": (JUDGE_PROMPT_V1, JUDGE_USER_V1)}
JUDGE_PROMPT_VERSION = "v1"

ARGUMENT_CHARS = 600
RESULT_CHARS = 1500
TRAJECTORY_CHARS = 24000
FINAL_ANSWER_CHARS = 8000
RAW_OUTPUT_CHARS = 500


class JudgeOutputInvalid(ValueError):
    """The judge's reply is not a usable verdict; the message says why (and is shown to the model on retry)."""


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters cut]"


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def trajectory_render(tool_calls: Sequence[dict], *, limit: int = TRAJECTORY_CHARS) -> str:
    """The tool calls as the judge reads them: one block per call with its (clipped) arguments and result; a
    question to the user (``ask_user``) reads as a turn of the conversation, the question and the reply.

    Past ``limit`` characters the calls in the middle are left out (first and last ones kept), and it says so.
    """
    if not tool_calls:
        return "(no tool calls)"
    blocks = []
    for index, call in enumerate(tool_calls, start=1):
        marker = " ERROR" if call.get("is_error") else ""
        arguments, result = call.get("arguments"), call.get("result")
        if call.get("name") in CONVERSATION_TOOLS and not marker and isinstance(result, dict) and "reply" in result:
            # A turn of the conversation: the agent's question and the user's reply, as the judge would read a chat.
            question = arguments.get("message", "") if isinstance(arguments, dict) else _compact(arguments)
            blocks.append(
                f"[{index}] the agent asked the user ({call['name']}): {_clip(str(question), ARGUMENT_CHARS)}\n"
                f"  -> the user replied: {_clip(str(result['reply']), RESULT_CHARS)}"
            )
            continue
        blocks.append(
            f"[{index}] {call.get('name', '?')}({_clip(_compact(call.get('arguments') or {}), ARGUMENT_CHARS)})\n"
            f"  ->{marker} {_clip(_compact(call.get('result')), RESULT_CHARS)}"
        )
    if sum(len(b) + 1 for b in blocks) <= limit:
        return "\n".join(blocks)
    head: list[str] = []
    tail: list[str] = []
    used = 0
    left, right = 0, len(blocks) - 1
    while left <= right:
        block = blocks[left] if len(head) <= len(tail) else blocks[right]
        if used + len(block) + 1 > limit - 80:
            break
        used += len(block) + 1
        if len(head) <= len(tail):
            head.append(block)
            left += 1
        else:
            tail.insert(0, block)
            right -= 1
    omitted = len(blocks) - len(head) - len(tail)
    return "\n".join([*head, f"… {omitted} tool call(s) left out here to keep the transcript short …", *tail])


def judge_messages(
    *,
    instruction: str,
    criterion_text: str,
    tool_calls: Sequence[dict],
    final_answer: str,
    prompt_version: str = JUDGE_PROMPT_VERSION,
) -> list[dict]:
    """The chat messages asking the judge about one criterion."""
    if prompt_version not in JUDGE_PROMPTS:
        raise ValueError(f"unknown judge prompt version {prompt_version!r}; one of {sorted(JUDGE_PROMPTS)}")
    system, user = JUDGE_PROMPTS[prompt_version]
    return [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": user.format(
                instruction=instruction.strip(),
                criterion=criterion_text.strip(),
                trajectory=trajectory_render(tool_calls),
                final_answer=_clip((final_answer or "").strip(), FINAL_ANSWER_CHARS) or "(no final answer)",
            ),
        },
    ]


def judge_output_parse(text: str | None) -> dict:
    """``{met, rationale, evidence}`` from the judge's reply (code fences and prose around one object allowed).

    Raises :class:`JudgeOutputInvalid` when it is not JSON, keys are missing or a value has the wrong type.
    """
    if not text or not text.strip():
        raise JudgeOutputInvalid("the reply was empty")
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise JudgeOutputInvalid("the reply is not a JSON object") from None
        try:
            data = json.loads(body[start : end + 1])
        except ValueError:
            raise JudgeOutputInvalid("the reply is not valid JSON") from None
    if not isinstance(data, dict):
        raise JudgeOutputInvalid("the reply is JSON but not an object")
    missing = [key for key in ("met", "rationale", "evidence") if key not in data]
    if missing:
        raise JudgeOutputInvalid(f"the object lacks {', '.join(missing)}")
    if not isinstance(data["met"], bool):
        raise JudgeOutputInvalid('"met" must be true or false')
    for key in ("rationale", "evidence"):
        if not isinstance(data[key], str):
            raise JudgeOutputInvalid(f'"{key}" must be a string')
    return {"met": data["met"], "rationale": data["rationale"], "evidence": data["evidence"]}


def majority(samples: Sequence[dict]) -> tuple[bool, float]:
    """(met, agreement) of decided samples: met needs a strict majority; agreement = share agreeing with it."""
    if not samples:
        raise ValueError("no samples to vote on")
    yes = sum(1 for s in samples if s["met"])
    met = yes * 2 > len(samples)
    return met, (yes if met else len(samples) - yes) / len(samples)


def judge_config_hash(judge_config: JudgeConfig) -> str:
    """sha256 of what can change a verdict: the endpoint's model and sampling, samples, temperature, prompt."""
    endpoint = judge_config.endpoint
    prompt = JUDGE_PROMPTS.get(judge_config.prompt_version)
    payload = {
        # The base URL is left out: moving the same model to another host changes no verdict.
        "model": endpoint.model,
        "sampling": endpoint.sampling or {},
        "samples": judge_config.samples,
        "temperature": judge_config.temperature,
        "prompt_version": judge_config.prompt_version,
        "prompt": list(prompt) if prompt else None,
    }
    return canonical_sha256(payload)


def _sampling(judge_config: JudgeConfig, sample: int) -> dict:
    # The endpoint's sampling as the rollouts send it (agent limits dropped, server extras in extra_body).
    sampling = sampling_kwargs(judge_config.endpoint.sampling or {}, drop=(*LIMIT_KEYS, "tools"))
    sampling["temperature"] = judge_config.temperature
    if isinstance(sampling.get("seed"), int):
        sampling["seed"] += sample  # distinct samples, still reproducible
    return sampling


def _judge_sample(
    client: ChatClient, messages: list[dict], *, judge_config: JudgeConfig, sample: int, config_hash: str
) -> dict:
    """One sample: asked, and asked again with the problem while the output is invalid (max_retries times)."""
    conversation = list(messages)
    problem = ""
    raw = None
    for attempt in range(1, judge_config.max_retries + 2):
        try:
            completion = client.complete(messages=conversation, **_sampling(judge_config, sample))
        except EndpointError as error:
            return {"error": f"endpoint failed: {error}", "attempts": attempt, "config_hash": config_hash}
        raw = completion.content
        try:
            parsed = judge_output_parse(raw)
        except JudgeOutputInvalid as invalid:
            problem = str(invalid)
            conversation = [
                *conversation,
                {"role": "assistant", "content": raw or ""},
                {
                    "role": "user",
                    "content": f"That reply was not usable: {problem}. Reply with only the JSON "
                    'object {"met": true|false, "rationale": "...", "evidence": "..."}.',
                },
            ]
            continue
        return {**parsed, "attempts": attempt, "config_hash": config_hash}
    return {
        "error": f"invalid judge output after {judge_config.max_retries + 1} attempt(s): {problem}",
        "raw": _clip(raw or "", RAW_OUTPUT_CHARS),
        "attempts": judge_config.max_retries + 1,
        "config_hash": config_hash,
    }


def judge_config_prepare(judge_config: JudgeConfig) -> str:
    """The config's current hash, stored on it when it changed (an edited endpoint changes it too)."""
    current = judge_config_hash(judge_config)
    if judge_config.config_hash != current:
        JudgeConfig.objects.filter(pk=judge_config.pk).update(config_hash=current)
        judge_config.config_hash = current
    return current


def judge_llm_criterion(
    *,
    judge_config: JudgeConfig,
    criterion,
    instruction: str,
    tool_calls: Sequence[dict],
    final_answer: str,
    trajectory_hash: str,
    client: ChatClient | None = None,
) -> Verdict:
    """Judge one llm criterion on one trajectory (n samples, majority vote) and store the verdict row.

    Serves the cached row when one decided under the same configuration exists: no model call then.
    """
    config_hash = judge_config_prepare(judge_config)
    cached = Verdict.objects.filter(
        trajectory_hash=trajectory_hash, criterion_hash=criterion.content_hash, judge_config=judge_config
    ).first()
    if cached is not None and _fresh(cached, config_hash):
        return cached
    client = client or endpoint_client(judge_config.endpoint)
    messages = judge_messages(
        instruction=instruction,
        criterion_text=criterion.text,
        tool_calls=tool_calls,
        final_answer=final_answer,
        prompt_version=judge_config.prompt_version,
    )
    samples = [
        _judge_sample(client, messages, judge_config=judge_config, sample=i, config_hash=config_hash)
        for i in range(judge_config.samples)
    ]
    failed = [s for s in samples if "error" in s]
    if failed:
        fields = {
            "met": None,
            "status": VerdictStatus.ERROR,
            "rationale": f"judge error on {len(failed)} of {len(samples)} sample(s): {failed[0]['error']}",
            "evidence": "",
            "agreement": None,
        }
    else:
        met, agreement = majority(samples)
        chosen = next(s for s in samples if s["met"] == met) if any(s["met"] == met for s in samples) else samples[0]
        rationale = chosen["rationale"]
        if not met and agreement == 0.5:
            rationale = f"samples split evenly; a tie is not met. {rationale}"
        fields = {
            "met": met,
            "status": VerdictStatus.MET if met else VerdictStatus.NOT_MET,
            "rationale": rationale,
            "evidence": chosen["evidence"],
            "agreement": agreement,
        }
    return _verdict_store(
        trajectory_hash=trajectory_hash,
        criterion=criterion,
        judge_config=judge_config,
        fields={**fields, "samples": samples},
    )


def _fresh(verdict: Verdict, config_hash: str) -> bool:
    if verdict.status == VerdictStatus.ERROR:
        return False
    return bool(verdict.samples) and all(s.get("config_hash") == config_hash for s in verdict.samples)


def _verdict_store(*, trajectory_hash: str, criterion, judge_config: JudgeConfig | None, fields: dict) -> Verdict:
    key = {"trajectory_hash": trajectory_hash, "criterion_hash": criterion.content_hash, "judge_config": judge_config}
    try:
        with transaction.atomic():
            verdict, _ = Verdict.objects.update_or_create(**key, defaults={"criterion_key": criterion.key, **fields})
    except IntegrityError:
        # Another worker stored the same verdict meanwhile; its row is as good as ours.
        verdict = Verdict.objects.get(**key)
    return verdict


# --- judge configurations (admins only) -------------------------------------------------------------------------

# Fields of a judge configuration that change what a verdict says; frozen once it has verdicts.
JUDGE_VERDICT_FIELDS = ("endpoint", "samples", "temperature", "prompt_version")


@transaction.atomic
def judge_config_save(*, user, fields: dict, judge_config: JudgeConfig | None = None) -> JudgeConfig:
    """Create or update a ``JudgeConfig`` (its config hash computed); admins only.

    Once it has verdicts, what changes a verdict (endpoint, samples, temperature, prompt) is frozen.
    """
    registry_admin_check(user)
    if fields.get("prompt_version", JUDGE_PROMPT_VERSION) not in JUDGE_PROMPTS:
        raise ValidationError({"prompt_version": f"one of {', '.join(sorted(JUDGE_PROMPTS))}"})
    has_verdicts = judge_config is not None and judge_config.pk is not None and judge_config.verdicts.exists()
    frozen_fields_check(judge_config, fields, JUDGE_VERDICT_FIELDS, has_verdicts=has_verdicts, what="This judge")
    judge_config = judge_config or JudgeConfig()
    for name, value in fields.items():
        setattr(judge_config, name, value)
    judge_config.config_hash = judge_config_hash(judge_config)
    judge_config.full_clean()
    judge_config.save()
    return judge_config


__all__ = [
    "JUDGE_PROMPT_VERSION",
    "MET",
    "NOT_MET",
    "JudgeOutputInvalid",
    "judge_config_hash",
    "judge_config_save",
    "judge_llm_criterion",
    "judge_messages",
    "judge_output_parse",
    "majority",
    "trajectory_render",
]
