"""Reward options a client sends with every finish and batch, from the job's environment. Standard library only."""

from __future__ import annotations

import os
from typing import Any


def reward_options_from_env() -> dict:
    """Reward options from ``CORECRAFT_RUBRIC_DROPOUT`` (a share, 0 = off) and ``CORECRAFT_DROPOUT_SEED``.

    So a verl or TRL worker that builds its client from the environment passes the job's options through."""
    raw = os.environ.get("CORECRAFT_RUBRIC_DROPOUT", "").strip()
    if not raw:
        return {}
    try:
        rate = float(raw)
    except ValueError:
        raise ValueError(f"CORECRAFT_RUBRIC_DROPOUT must be a number in [0, 0.95], not {raw!r}") from None
    if not 0.0 <= rate <= 0.95:
        raise ValueError(f"CORECRAFT_RUBRIC_DROPOUT must be in [0, 0.95], not {rate}")
    if rate == 0:
        return {}
    options: dict[str, Any] = {"rubric_dropout": rate}
    seed = os.environ.get("CORECRAFT_DROPOUT_SEED", "").strip()
    if seed:
        if not seed.isdigit():
            raise ValueError(f"CORECRAFT_DROPOUT_SEED must be a non-negative integer, not {seed!r}")
        options["seed"] = int(seed)
    return options
