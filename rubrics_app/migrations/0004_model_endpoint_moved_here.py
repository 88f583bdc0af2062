"""ModelEndpoint moves here from tasks_app (a judge configuration names one; the schema points one way: tasks_app
references rubrics_app). The Criterion rows move up to tasks_app (see tasks_app 0014). No row moves: state only."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _content_type_move(apps, schema_editor, source: str, target: str) -> None:
    """Keep the model's content type (and so its permissions, group grants and admin log) under its new app."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=target, model="modelendpoint").exists():
        ContentType.objects.filter(app_label=source, model="modelendpoint").update(app_label=target)


def forwards(apps, schema_editor) -> None:
    _content_type_move(apps, schema_editor, "tasks_app", "rubrics_app")


def backwards(apps, schema_editor) -> None:
    _content_type_move(apps, schema_editor, "rubrics_app", "tasks_app")



class Migration(migrations.Migration):

    dependencies = [
        ('tasks_app', '0012_rubric_gate_key'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('rubrics_app', '0003_verdict_judge_version'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The table stays where it is (its name kept in Meta.db_table): only Django's idea of its app changes.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='ModelEndpoint',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100, unique=True)),
                        ('base_url', models.URLField(help_text='OpenAI-compatible base URL, e.g. http://host:8000/v1', max_length=500)),
                        ('model', models.CharField(help_text='Model id sent with every request.', max_length=200)),
                        ('api_key_env', models.CharField(blank=True, help_text='NAME of the environment variable holding the API key (never the key itself).', max_length=100)),
                        ('sampling', models.JSONField(blank=True, default=dict, help_text='temperature, top_p, max_tokens, seed… sent with every request.')),
                        ('timeout_s', models.FloatField(default=60.0)),
                        ('max_retries', models.PositiveIntegerField(default=4)),
                        ('is_active', models.BooleanField(db_index=True, default=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('last_checked_at', models.DateTimeField(blank=True, null=True)),
                        ('last_check', models.JSONField(blank=True, default=dict, help_text='Outcome of the last test connection.')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'tasks_app_modelendpoint',
                        'ordering': ['name'],
                    },
                ),
                migrations.AlterField(
                    model_name='judgeconfig',
                    name='endpoint',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='judge_configs', to='rubrics_app.modelendpoint'),
                ),
                migrations.DeleteModel(
                    name='Criterion',
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
