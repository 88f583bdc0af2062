"""Batched writes of generated rows, so a world of any scale streams into the database."""

from __future__ import annotations

from django.db import models

from world_app.models import WORLD_MODELS


class RowSink:
    """Buffers unsaved rows per model and writes each buffer with ``bulk_create`` once it is full.

    Rows may arrive in any order across models: the generator runs in one transaction and foreign keys are
    checked at commit (Django creates them DEFERRABLE INITIALLY DEFERRED).
    """

    def __init__(self, *, using: str = "default", batch_size: int = 2000) -> None:
        self.using = using
        self.batch_size = batch_size
        self._buffers: dict[type[models.Model], list[models.Model]] = {model: [] for model in WORLD_MODELS}
        self.counts: dict[type[models.Model], int] = {model: 0 for model in WORLD_MODELS}

    def add(self, row: models.Model) -> None:
        buffer = self._buffers[type(row)]
        buffer.append(row)
        if len(buffer) >= self.batch_size:
            self._flush(type(row))

    def flush(self) -> None:
        for model in WORLD_MODELS:
            self._flush(model)

    def _flush(self, model: type[models.Model]) -> None:
        buffer = self._buffers[model]
        if not buffer:
            return
        model._base_manager.using(self.using).bulk_create(buffer, batch_size=self.batch_size)
        self.counts[model] += len(buffer)
        buffer.clear()
