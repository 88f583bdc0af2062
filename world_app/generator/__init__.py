"""The deterministic, seeded generator of the Corecraft Computers world."""

from world_app.generator.manifest import ANOMALY_KINDS, AnomalyRecord, WorldManifest
from world_app.generator.world import (
    DEFAULT_MESS_RATE,
    WorldExistsError,
    generate_world,
    world_delete,
    world_exists,
    world_seed,
)

__all__ = [
    "ANOMALY_KINDS",
    "DEFAULT_MESS_RATE",
    "AnomalyRecord",
    "WorldExistsError",
    "WorldManifest",
    "generate_world",
    "world_delete",
    "world_exists",
    "world_seed",
]
