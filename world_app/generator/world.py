"""Generate the whole Corecraft world into the database, deterministically from a seed.

Each section draws from its own ``random.Random`` seeded with (seed, section name), all word lists live in the
code, and time comes from the world clock: the same seed, scale, mess rate and world "now" give the same rows
and the same content checksum on every machine.
"""

from __future__ import annotations

import random
from collections import Counter

from django.db import transaction

from world_app.generator.builds import plan_builds
from world_app.generator.casebook import append_casebook
from world_app.generator.catalog import build_catalog
from world_app.generator.commerce import build_commerce
from world_app.generator.knowledge_base import build_knowledge_base
from world_app.generator.loyalty_review import record_loyalty_review
from world_app.generator.manifest import WorldManifest
from world_app.generator.mess import MessPlan
from world_app.generator.people import build_people
from world_app.generator.sink import RowSink
from world_app.generator.support import build_support
from world_app.generator.timeline import Timeline
from world_app.models import ENTITY_MODELS, WORLD_MODELS, Customer
from world_app.selectors import entity_type_name

DEFAULT_MESS_RATE = 0.03
MAX_SCALE = 1000.0
MAX_MESS_RATE = 0.5


class WorldExistsError(RuntimeError):
    """The database already holds a world; generating over it would mix two worlds."""


def world_exists(*, using: str = "default") -> bool:
    return Customer._base_manager.using(using).exists()


def world_delete(*, using: str = "default") -> dict[str, int]:
    """Delete every row of every world table (nothing else); returns the rows deleted per table."""
    deleted = {}
    with transaction.atomic(using=using):
        # Children first; raw deletes skip the collector, which would crawl a world of any size.
        for model in reversed(WORLD_MODELS):
            deleted[model._meta.db_table] = model._base_manager.using(using).all()._raw_delete(using)
    return deleted


def _check_arguments(*, scale: float, mess_rate: float) -> None:
    if not 0 < scale <= MAX_SCALE:
        raise ValueError(f"scale must be in (0, {MAX_SCALE:g}]")
    if not 0 <= mess_rate <= MAX_MESS_RATE:
        raise ValueError(f"the mess rate must be between 0 and {MAX_MESS_RATE:g}")


def world_seed(
    *, seed: int, scale: float = 1.0, mess_rate: float = DEFAULT_MESS_RATE, reset: bool = False, using: str = "default"
) -> WorldManifest:
    """Generate the world, first deleting the existing one when ``reset``; all or nothing."""
    _check_arguments(scale=scale, mess_rate=mess_rate)
    with transaction.atomic(using=using):
        if reset:
            world_delete(using=using)
        return generate_world(seed=seed, scale=scale, mess_rate=mess_rate, using=using)


def generate_world(
    *, seed: int, scale: float = 1.0, mess_rate: float = DEFAULT_MESS_RATE, using: str = "default"
) -> WorldManifest:
    """Write a world into an empty database and describe it. Raises ``WorldExistsError`` if one is there."""
    _check_arguments(scale=scale, mess_rate=mess_rate)
    timeline = Timeline.current()
    mess = MessPlan(seed=seed, rate=mess_rate, scale=scale)
    sink = RowSink(using=using)

    def rng(section: str) -> random.Random:
        return random.Random(f"corecraft:{seed}:{section}")

    with transaction.atomic(using=using):
        if world_exists(using=using):
            raise WorldExistsError("the database already holds a world")
        catalog = build_catalog(rng=rng("catalog"), scale=scale, timeline=timeline, sink=sink, mess=mess)
        people = build_people(rng=rng("people"), scale=scale, timeline=timeline, sink=sink, mess=mess)
        builds = plan_builds(rng=rng("builds"), scale=scale, timeline=timeline, catalog=catalog, people=people)
        commerce = build_commerce(
            rng=rng("commerce"),
            scale=scale,
            timeline=timeline,
            catalog=catalog,
            people=people,
            builds=builds,
            mess=mess,
            sink=sink,
        )
        line_counts = Counter(line.product.id for order in commerce.orders for line in order.lines)
        kb = build_knowledge_base(
            timeline=timeline, products=catalog.products, line_counts=line_counts, scale=scale, sink=sink
        )
        support = build_support(
            rng=rng("support"),
            scale=scale,
            timeline=timeline,
            people=people,
            commerce=commerce,
            builds=builds,
            kb=kb,
            rule_names={rule.id: rule.name for rule in catalog.rules},
            mess=mess,
            sink=sink,
        )
        casebook = append_casebook(
            rng_for=lambda part: rng(f"casebook:{part}"),
            scale=scale,
            timeline=timeline,
            catalog=catalog,
            people=people,
            commerce=commerce,
            support=support,
            kb=kb,
            mess=mess,
            sink=sink,
        )
        sink.flush()
        record_loyalty_review(rng=rng("loyalty"), timeline=timeline, using=using)
    return WorldManifest(
        seed=seed,
        scale=scale,
        mess_rate=mess_rate,
        world_now=timeline.now.isoformat(),
        counts={entity_type_name(model): sink.counts[model] for model in ENTITY_MODELS},
        child_counts={
            entity_type_name(model): sink.counts[model] for model in WORLD_MODELS if model not in ENTITY_MODELS
        },
        anomalies=mess.sorted_anomalies(),
        scenarios={**commerce.scenarios, **support.scenarios, **casebook},
    )
