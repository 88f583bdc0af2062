"""Ids for rows the tools create: readable, with the model's prefix, and the same on every replay.

A random id would make the same call in the same state answer differently; ``<prefix>-w00001`` counts the
rows tools wrote before it ("w" keeps them apart from the generator's ids).
"""

from __future__ import annotations

from world_app.models.base import WorldEntity


def new_ids(model: type[WorldEntity], count: int = 1) -> list[str]:
    prefix = f"{model.ID_PREFIX}-w"
    taken = set(model.objects.filter(id__startswith=prefix).values_list("id", flat=True))
    ids: list[str] = []
    number = len(taken) + 1
    while len(ids) < count:
        candidate = f"{prefix}{number:05d}"
        if candidate not in taken:
            ids.append(candidate)
        number += 1
    return ids


def new_id(model: type[WorldEntity]) -> str:
    return new_ids(model, 1)[0]
