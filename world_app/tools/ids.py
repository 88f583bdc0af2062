"""Ids for rows the tools create: readable, with the model's prefix, and the same on every replay.

A random id would make the same call in the same state answer differently; ``<prefix>-w00001`` numbers the
rows tools wrote ("w" keeps them apart from the generator's ids and from the admin's random hex ones), one
past the highest number already taken.
"""

from __future__ import annotations

import re
from functools import cache

from world_app.models.base import WorldEntity
from world_app.tools.baked import BakedQuery

WIDTH = 5  # digits of a tool-made id's number; wider once 99,999 are taken
# An entity id in text: every world id (the generator's "ord-000123-001", a tool's "rfd-w00001") has this shape.
ENTITY_ID = re.compile(r"\b[a-z]{2,3}-w?\d[\d-]*\b")


def _number(entity_id: str | None, prefix: str) -> int | None:
    """The number of a tool-made id, or None for anything else."""
    if entity_id is None or not entity_id.startswith(prefix):
        return None
    digits = entity_id[len(prefix) :]
    return int(digits) if digits.isdigit() and digits.isascii() else None


@cache
def _highest_in_range(model: type[WorldEntity]) -> BakedQuery:
    # Every write tool asks: baked, the look-up costs what SQLite takes to walk the index, not a compile.
    return BakedQuery(model, lambda low, high: model._base_manager.filter(id__gte=low, id__lt=high).order_by("-id")[:1])


def new_ids(model: type[WorldEntity], count: int = 1) -> list[str]:
    prefix = f"{model.ID_PREFIX}-w"
    # A range on the primary key's index ("abc-w" <= id < "abc-x"); LIKE 'abc-w%' would scan the table on SQLite.
    low, high = prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
    highest = next((row.id for row in _highest_in_range(model)(low, high)), None)
    number = 0 if highest is None else _number(highest, prefix)
    if number is None or number >= 10**WIDTH - 1:
        tool_made = model._base_manager.filter(id__gte=low, id__lt=high)
        # Text order stops being number order past 99999 ("w100000" < "w99999"), or an id in the range is not a
        # tool's: read the range (only tool-made rows) and take the highest number.
        numbers = (_number(i, prefix) for i in tool_made.values_list("id", flat=True))
        number = max((n for n in numbers if n is not None), default=0)
    return [f"{prefix}{n:0{WIDTH}d}" for n in range(number + 1, number + 1 + count)]


def new_id(model: type[WorldEntity]) -> str:
    return new_ids(model, 1)[0]
