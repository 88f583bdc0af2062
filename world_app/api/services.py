"""Writes behind the API that the episode engine does not already offer as one call."""

from __future__ import annotations

from typing import Any

from world_app.models import EpisodeStep
from world_app.tools.steps import call_tool_step


def episode_tool_call(*, episode_id: Any, name: str, arguments: dict) -> EpisodeStep:
    """Run tool ``name`` in the episode and log it; returns the logged step (its seq, result and timing).

    Like ``call_tool``, which answers with the result only: the API also reports the step's number and duration.
    """
    return call_tool_step(episode_id, name, arguments)
