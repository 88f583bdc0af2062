"""A tool call as a step of an episode: ``call_tool_step`` runs the tool inside the episode's world and appends the
call to its log (the engine's ``episode_step``); ``call_tool`` returns just the result. What a step stores is
checked first (``storable``): a name, argument or result Postgres cannot keep is refused as the tool's error, not
a 500.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from django.core.serializers.json import DjangoJSONEncoder

from world_app.conversation import simulated_user_bound
from world_app.tools.registry import invoke_tool, is_conversation_tool
from world_app.tools.results import ErrorCode, error_result

if TYPE_CHECKING:
    from world_app.models import EpisodeStep

# What Postgres cannot keep in the episode log: NUL in text, and UTF-16 surrogates (never valid alone in UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# How json.dumps (ensure_ascii) writes them: a cheap first look before walking the arguments.
_UNSTORABLE_ESCAPED = re.compile(r"\\u(0000|d[89a-f])")
STEP_NAME_MAX = 100  # EpisodeStep.name


def _storable_text(text: str) -> str:
    return repr(text) if _UNSTORABLE.search(text) else text


def storable(value: Any) -> Any:
    """``value`` with every string Postgres JSON cannot store replaced by its ``repr``.

    A list or dict is first looked at as JSON (one C call and a search): with no escape of a NUL or a surrogate in
    it, it is returned as it is, without the walk (a rollout's messages and tool calls: 1.9 -> 0.8 ms). Text past
    the BMP (an emoji) is escaped as a surrogate pair, so it is walked, as before."""
    if isinstance(value, dict | list):
        try:
            if not _UNSTORABLE_ESCAPED.search(json.dumps(value)):
                return value
        except (TypeError, ValueError):
            pass  # not JSON as it is: walk it
        return _storable_walk(value)
    return _storable_walk(value)


def _storable_walk(value: Any) -> Any:
    if isinstance(value, str):
        return _storable_text(value)
    if isinstance(value, dict):
        return {_storable_text(key): _storable_walk(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable_walk(item) for item in value]
    return value


def unstorable_field(value: Any, path: str = "") -> str | None:
    """The path (``parts[0].name``) of the first string in ``value`` Postgres JSON cannot store, or None."""
    if isinstance(value, str):
        return (path or "arguments") if _UNSTORABLE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{_storable_text(key)}" if path else _storable_text(key)
            found = here if _UNSTORABLE.search(key) else unstorable_field(item, here)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_field(item, f"{path}[{index}]" if path else f"arguments[{index}]")
            if found:
                return found
    return None


def call_tool_step(episode, name: str, arguments: Any) -> EpisodeStep:
    """Run tool ``name`` inside ``episode`` (its private world) and append the call to the episode's log.

    Returns the logged step: its ``result`` (an error result included), ``seq`` and ``duration_ms``. Raises
    ``EpisodeClosed`` for a closed episode: that is the caller's mistake, not the agent's.
    """
    from world_app.episodes import episode_step

    logged_name = _storable_text(name)[:STEP_NAME_MAX] if isinstance(name, str) else repr(name)[:STEP_NAME_MAX]
    try:
        # Python callers may pass Decimals or dates: the log stores what the tool saw, as JSON.
        text = json.dumps(arguments if arguments is not None else {}, cls=DjangoJSONEncoder)
        logged = json.loads(text)
    except (TypeError, ValueError):
        refusal = error_result(ErrorCode.INVALID_ARGUMENTS, "arguments must be JSON values", field="arguments")
        unreadable = {"unreadable": _storable_text(repr(arguments))}
        return episode_step(episode=episode, name=logged_name, arguments=unreadable, fn=lambda: refusal)
    bad_field = unstorable_field(logged) if _UNSTORABLE_ESCAPED.search(text) else None
    if bad_field is not None:
        reason = "text may not contain NUL (\\u0000) characters or unpaired surrogates"
        refusal = error_result(
            ErrorCode.INVALID_ARGUMENTS,
            f"invalid arguments for {logged_name}: {bad_field}: {reason}",
            field=bad_field,
            details=[{"field": bad_field, "reason": reason}],
        )
        return episode_step(episode=episode, name=logged_name, arguments=storable(logged), fn=lambda: refusal)
    if is_conversation_tool(name):
        spec = episode_simulated_user(episode)

        def converse() -> dict:
            with simulated_user_bound(spec):
                return invoke_tool(name, logged)

        return episode_step(episode=episode, name=logged_name, arguments=logged, fn=converse)
    return episode_step(episode=episode, name=logged_name, arguments=logged, fn=lambda: invoke_tool(name, logged))


def episode_simulated_user(episode) -> dict:
    """The simulated user spec an episode (an ``Episode`` or its id) was opened with (``{}``: no one)."""
    from world_app.models import Episode

    if isinstance(episode, Episode):
        return episode.simulated_user or {}
    found = Episode.objects.filter(pk=episode).values_list("simulated_user", flat=True).first()
    return found or {}


def call_tool(episode, name: str, arguments: Any) -> dict:
    """Run tool ``name`` inside ``episode`` (its private world) and append the call to the episode's log.

    Returns the tool's result, an error result included. Raises ``EpisodeClosed`` for a closed episode: that
    is the caller's mistake, not the agent's.
    """
    return call_tool_step(episode, name, arguments).result
