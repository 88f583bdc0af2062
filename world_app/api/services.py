"""Writes behind the API that the episode engine does not already offer as one call."""

from __future__ import annotations

from typing import Any

from world_app.episodes import episode_step
from world_app.models import EpisodeStep
from world_app.tools import invoke_tool


def episode_tool_call(*, episode_id: Any, name: str, arguments: dict) -> EpisodeStep:
    """Run tool ``name`` in the episode and log it; returns the logged step (its seq, result and timing).

    Like ``call_tool``, which answers with the result only: the API also reports the step's number and duration.
    """
    return episode_step(episode=episode_id, name=name, arguments=arguments, fn=lambda: invoke_tool(name, arguments))
