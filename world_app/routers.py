"""Routes world models to the active episode's private database.

Inside ``episode_context`` (see ``world_app.episodes``) every query on a world model goes to the
``episode`` alias, whose connection is that episode's in-memory SQLite world; outside it, to the live world
in Postgres. Tools therefore write plain ORM code and can never touch the live world by mistake.
"""

from __future__ import annotations

from contextvars import ContextVar
from functools import cache

EPISODE_ALIAS = "episode"
# True while the current thread/task works inside an episode.
in_episode: ContextVar[bool] = ContextVar("in_episode", default=False)


@cache
def _world_models() -> frozenset:
    from world_app.models import WORLD_MODELS

    return frozenset(WORLD_MODELS)


def _is_world_model(model) -> bool:
    return model in _world_models()


class EpisodeRouter:
    def db_for_read(self, model, **hints):
        if in_episode.get() and _is_world_model(model):
            return EPISODE_ALIAS
        return None

    db_for_write = db_for_read

    def allow_relation(self, obj1, obj2, **hints):
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        # The episode alias gets its schema from the snapshot image, never from migrations.
        return db != EPISODE_ALIAS
