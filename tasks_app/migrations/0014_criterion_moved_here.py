"""Criterion moves here from rubrics_app (a criterion is a row of a task version); rollouts and calibration items now
name rubrics_app's ModelEndpoint. No row moves: state only."""

import django.core.validators
import django.db.models.deletion
import uuid
from django.db import migrations, models


def _content_type_move(apps, schema_editor, source: str, target: str) -> None:
    """Keep the model's content type (and so its permissions, group grants and admin log) under its new app."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=target, model="criterion").exists():
        ContentType.objects.filter(app_label=source, model="criterion").update(app_label=target)


def forwards(apps, schema_editor) -> None:
    _content_type_move(apps, schema_editor, "rubrics_app", "tasks_app")


def backwards(apps, schema_editor) -> None:
    _content_type_move(apps, schema_editor, "tasks_app", "rubrics_app")



class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('rubrics_app', '0004_model_endpoint_moved_here'),
        ('tasks_app', '0013_task_version_simulated_user'),
    ]

    operations = [
        # The table stays where it is (its name kept in Meta.db_table): only Django's idea of its app changes.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='calibrationitem',
                    name='endpoint',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='calibration_items', to='rubrics_app.modelendpoint'),
                ),
                migrations.AlterField(
                    model_name='rollout',
                    name='endpoint',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='rollouts', to='rubrics_app.modelendpoint'),
                ),
                migrations.CreateModel(
                    name='Criterion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key', models.UUIDField(db_index=True, default=uuid.uuid4)),
                        ('position', models.PositiveIntegerField()),
                        ('kind', models.CharField(choices=[('llm', 'LLM judge'), ('state', 'Final world state'), ('tool_call', 'Tool call'), ('response', 'Final response')], max_length=16)),
                        ('text', models.TextField(help_text='What is checked, in plain language.')),
                        ('spec', models.JSONField(blank=True, default=dict)),
                        ('weight', models.FloatField(default=1.0, validators=[django.core.validators.MinValueValidator(0.0)])),
                        ('category', models.CharField(choices=[('completeness', 'Completeness'), ('correctness', 'Correctness'), ('constraint', 'Constraint'), ('format', 'Format'), ('tone', 'Tone')], max_length=16)),
                        ('required', models.BooleanField(default=False)),
                        ('content_hash', models.CharField(editable=False, max_length=64)),
                        ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='criteria', to='tasks_app.taskversion')),
                    ],
                    options={
                        'verbose_name_plural': 'criteria',
                        'db_table': 'rubrics_app_criterion',
                        'ordering': ['version', 'position'],
                    },
                ),
                migrations.DeleteModel(
                    name='ModelEndpoint',
                ),
                migrations.AddConstraint(
                    model_name='criterion',
                    constraint=models.UniqueConstraint(fields=('version', 'position'), name='criterion_unique_position'),
                ),
                migrations.AddConstraint(
                    model_name='criterion',
                    constraint=models.UniqueConstraint(fields=('version', 'key'), name='criterion_unique_key'),
                ),
                migrations.AddConstraint(
                    model_name='criterion',
                    constraint=models.CheckConstraint(condition=models.Q(('weight__gt', 0)), name='criterion_weight_positive'),
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
