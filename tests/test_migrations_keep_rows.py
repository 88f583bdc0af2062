"""A database migrated at the commit before the rooms were straightened keeps every row.

ModelEndpoint moved from tasks_app to rubrics_app and Criterion from rubrics_app to tasks_app (rubrics_app 0004,
tasks_app 0014: state only, the tables keep their names). This test takes the test database back to the previous
commit's leaves, writes rows through that commit's (historical) models, migrates forward again and counts every
table: nothing lost, nothing duplicated, and the content types (with their permissions) follow the models.
"""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from rubrics_app.models import JudgeConfig, ModelEndpoint
from tasks_app.models import Criterion
from tests.tasks_app.factories import admin, task_make

# The leaves of the two apps at the previous commit.
PREVIOUS_LEAVES = [("rubrics_app", "0003_verdict_judge_version"), ("tasks_app", "0013_task_version_simulated_user")]
MOVES = {"rubrics_app": "0004_model_endpoint_moved_here", "tasks_app": "0014_criterion_moved_here"}


def _table_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in connection.introspection.table_names(cursor):
            if table == "django_migrations":
                continue
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            counts[table] = cursor.fetchone()[0]
    return counts


@pytest.mark.django_db(transaction=True)
def test_migrating_a_database_of_the_previous_commit_keeps_every_row():
    user = admin()
    endpoint = ModelEndpoint.objects.create(name="vllm", base_url="http://gpu1:8000/v1", model="qwen", created_by=user)
    JudgeConfig.objects.create(name="judge", endpoint=endpoint)
    task = task_make(user=user)
    version_id = task.current_version_id
    assert Criterion.objects.filter(version_id=version_id).count() == 2
    before = _table_counts()

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(PREVIOUS_LEAVES)
    # Going back unapplies the two moves and, besides them, only migrations added after them.
    backwards = {(m.app_label, m.name) for m, going_back in plan if going_back}
    assert set(MOVES.items()) <= backwards
    assert all(app in MOVES and name > MOVES[app] for app, name in backwards - set(MOVES.items()))
    executor.migrate(PREVIOUS_LEAVES)
    back = _table_counts()
    # Every table of the previous commit keeps its rows; only tables made later (empty here) are gone meanwhile.
    assert back == {t: n for t, n in before.items() if t in back}
    assert all(before[t] == 0 for t in set(before) - set(back))

    # At the previous commit: the endpoint is tasks_app's, the criteria are rubrics_app's; write more rows there.
    old = executor.loader.project_state(PREVIOUS_LEAVES).apps
    OldEndpoint = old.get_model("tasks_app", "ModelEndpoint")
    OldCriterion = old.get_model("rubrics_app", "Criterion")
    assert OldEndpoint.objects.get(name="vllm").model == "qwen"
    assert OldCriterion.objects.filter(version_id=version_id).count() == 2
    OldEndpoint.objects.create(name="openai", base_url="https://api.openai.com/v1", model="gpt")
    OldCriterion.objects.create(
        version_id=version_id, position=99, kind="llm", text="Polite", category="tone", content_hash="0" * 64
    )
    old_content_types = set(ContentType.objects.values_list("pk", "app_label", "model"))

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    after = _table_counts()
    assert after["tasks_app_modelendpoint"] == before["tasks_app_modelendpoint"] + 1
    assert after["rubrics_app_criterion"] == before["rubrics_app_criterion"] + 1
    unchanged = {t: n for t, n in after.items() if t not in ("tasks_app_modelendpoint", "rubrics_app_criterion")}
    assert unchanged == {t: n for t, n in before.items() if t in unchanged} and set(after) == set(before)
    # Today's models read every row, the old ones and the new.
    assert set(ModelEndpoint.objects.values_list("name", flat=True)) == {"vllm", "openai"}
    assert Criterion.objects.filter(version_id=version_id).count() == 3
    assert JudgeConfig.objects.get(name="judge").endpoint.name == "vllm"
    # The content types moved with the models (same rows, so permissions and group grants are kept).
    moved = {(pk, label, model) for pk, label, model in old_content_types if model in ("modelendpoint", "criterion")}
    assert {model: label for _, label, model in moved} == {"modelendpoint": "tasks_app", "criterion": "rubrics_app"}
    now = {model: (pk, label) for pk, label, model in ContentType.objects.values_list("pk", "app_label", "model")}
    assert {now["modelendpoint"], now["criterion"]} == {
        (pk, {"modelendpoint": "rubrics_app", "criterion": "tasks_app"}[model]) for pk, _, model in moved
    }
    assert ContentType.objects.count() == len(old_content_types)
    ContentType.objects.clear_cache()
