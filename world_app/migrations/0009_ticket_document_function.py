"""The tickets' full-text document as a function the planner knows is costly, on Postgres only.

At scale 10 (5,000 tickets) a common word ("refund") matches about 8% of the tickets, and the planner, which
costs ``to_tsvector`` like any cheap function, read every ticket and built each one's document from its subject and
body (60 ms a word) instead of reading the GIN index. ``world_ticket_document(subject, body)`` is that same
document (subject weighted A, body B) as a PL/pgSQL function (never inlined) declared COST 10000, so a plan that
evaluates it per row is priced as what it is and the index on it is read; the selector calls the function
(world_app/selectors_lookup.py ``ticket_document``). The SQLite snapshots never search this way.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION world_ticket_document(subject text, body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 10000 AS $$
BEGIN
    RETURN setweight(to_tsvector('simple'::regconfig, COALESCE(subject, '')), 'A')
        || setweight(to_tsvector('simple'::regconfig, COALESCE(body, '')), 'B');
END
$$
"""
OLD_INDEX = (
    "CREATE INDEX IF NOT EXISTS world_lookup_ticket_fts ON world_app_supportticket USING gin (("
    "setweight(to_tsvector('simple'::regconfig, COALESCE(subject, '')), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, COALESCE(body, '')), 'B')))"
)
NEW_INDEX = (
    "CREATE INDEX IF NOT EXISTS world_lookup_ticket_fts ON world_app_supportticket "
    "USING gin (world_ticket_document(subject, body))"
)


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION)
    schema_editor.execute("DROP INDEX IF EXISTS world_lookup_ticket_fts")
    schema_editor.execute(NEW_INDEX)


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS world_lookup_ticket_fts")
    schema_editor.execute("DROP FUNCTION IF EXISTS world_ticket_document(text, text)")
    schema_editor.execute(OLD_INDEX)


class Migration(migrations.Migration):
    dependencies = [("world_app", "0008_episode_simulated_user")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
