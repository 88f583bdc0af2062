"""The tool calls a process served in a trainer episode it opened, kept as the episode's log will read them.

A finish judges the episode's trajectory: every call with its arguments and result. The process that opened the
episode and served all its calls already holds them (the JSON text each step's log row is written from), so the
judge takes them from here instead of reading every step's result back from Postgres; whenever the record may not
be the whole log (another process served a call, a call failed, deferred steps were lost, the close failed) it is
dropped (``_calls = None``) and the judge reads the log as before. ``calls_held`` checks it against the closed
episode's log head: the same number of steps, seqs 1..n, the last one the head step.
"""

from __future__ import annotations

import json
from typing import Any

from trainer_bridge.trainer_models import TrainerEpisode
from world_app.models import Episode, EpisodeStep


def call_record(trainer_episode: TrainerEpisode, step: EpisodeStep) -> None:
    """Keep the step as its log row will read (its JSON text, made once for the log when it was deferred)."""
    calls = getattr(trainer_episode, "_calls", None)
    if calls is None:
        return
    texts = getattr(step, "_log_json", None) or (_json_text(step.arguments), _json_text(step.result))
    calls[step.seq] = (step.pk, step.name, texts[0], texts[1], step.is_error)


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def calls_held(trainer_episode: TrainerEpisode, closed: Episode) -> list[dict] | None:
    """The episode's calls as its log holds them, from this process's record, when the record is the whole log: it
    opened the episode, served every call (seqs 1..n of the closed log, the last its head step) and lost none;
    None otherwise (the judge then reads the log). Spares a finish the read of every step's result."""
    calls = getattr(trainer_episode, "_calls", None)
    count = closed.step_count
    if calls is None or len(calls) != count or any(seq not in calls for seq in range(1, count + 1)):
        return None
    if count and calls[count][0] != closed.head_step_id:
        return None
    return [
        {"name": name, "arguments": _as_stored(arguments), "result": _as_stored(result), "is_error": is_error}
        for _pk, name, arguments, result, is_error in (calls[seq] for seq in range(1, count + 1))
    ]


def _jsonb_key(pair: tuple[str, Any]) -> tuple[int, bytes]:
    encoded = pair[0].encode()
    return len(encoded), encoded


def _as_stored(text: str | None) -> Any:
    """The value as a ``jsonb`` column gives it back: objects with their keys in jsonb's order (shorter keys first,
    then by bytes), so the judge (an LLM judge's prompt included) reads exactly what it would read from the log."""
    if text is None:
        return None
    return json.loads(text, object_pairs_hook=lambda pairs: dict(sorted(pairs, key=_jsonb_key)))
