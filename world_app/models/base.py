from __future__ import annotations

import secrets
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models

from world_app.clock import world_now


def money_field(**kwargs) -> models.DecimalField:
    """Money in dollars with cents; never negative."""
    kwargs.setdefault("max_digits", 12)
    kwargs.setdefault("decimal_places", 2)
    kwargs.setdefault("validators", [MinValueValidator(Decimal("0.00"))])
    return models.DecimalField(**kwargs)


class WorldEntity(models.Model):
    """A row of the Corecraft world.

    Primary keys are readable strings ("ord-250812-017", "cus-00042") because tasks and agents name
    entities by them, and because a seeded world must get the same ids on every machine. Rows an expert adds
    in the admin get a random id with the model's prefix.
    """

    ID_PREFIX = "ent"

    id = models.CharField(primary_key=True, max_length=40, editable=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.id

    def save(self, *args, **kwargs) -> None:
        if not self.id:
            self.id = f"{self.ID_PREFIX}-{secrets.token_hex(4)}"
        super().save(*args, **kwargs)


class Timestamped(models.Model):
    # Not auto_now: world times come from the world clock so a seeded world is the same on every run.
    created_at = models.DateTimeField(default=world_now, db_index=True)
    updated_at = models.DateTimeField(default=world_now)

    class Meta:
        abstract = True
