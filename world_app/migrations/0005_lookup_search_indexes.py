"""Full-text indexes for the look-ups of the live world (world_app/selectors_lookup.py), on Postgres only.

The same models build the SQLite snapshots and episodes, which never search this way, so the indexes are made
only where the database is Postgres. Each expression is exactly the one the selector's ``*_document()`` builds
(tests/tasks_app/test_world_lookup.py checks the planner uses them).
"""

from django.db import migrations

INDEXES = {
    "world_lookup_customer_fts": (
        "world_app_customer",
        "to_tsvector('simple'::regconfig, COALESCE(first_name, '') || ' ' || COALESCE(last_name, '') || ' ' || "
        "COALESCE(translate(email, '@._+-/', '      '), '') || ' ' || "
        "COALESCE(regexp_replace(phone, E'\\\\D', '', 'g'), '') || ' ' || "
        "COALESCE(right(regexp_replace(phone, E'\\\\D', '', 'g'), 4), ''))",
    ),
    "world_lookup_product_fts": (
        "world_app_product",
        "(setweight(to_tsvector('simple'::regconfig, COALESCE(name, '') || ' ' || COALESCE(brand, '')), 'A') || "
        "setweight(to_tsvector('simple'::regconfig, COALESCE(translate(sku, '@._+-/', '      '), '') || ' ' || "
        "COALESCE(category, '')), 'B'))",
    ),
    "world_lookup_ticket_fts": (
        "world_app_supportticket",
        "(setweight(to_tsvector('simple'::regconfig, COALESCE(subject, '')), 'A') || "
        "setweight(to_tsvector('simple'::regconfig, COALESCE(body, '')), 'B'))",
    ),
    "world_lookup_article_fts": (
        "world_app_knowledgebasearticle",
        "(setweight(to_tsvector('simple'::regconfig, COALESCE(title, '') || ' ' || "
        "COALESCE(translate(slug, '@._+-/', '      '), '')), 'A') || "
        "setweight(to_tsvector('simple'::regconfig, COALESCE(body, '')), 'B'))",
    ),
}
# A remembered date matches an order's placing or its expected delivery; both sides of the OR need an index.
PLAIN = {"world_lookup_order_delivery": ("world_app_order", "estimated_delivery")}


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, (table, expression) in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (({expression}))")
    for name, (table, column) in PLAIN.items():
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})")


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in [*INDEXES, *PLAIN]:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("world_app", "0004_episode_owner")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
