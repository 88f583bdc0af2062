"""The calibrated difficulty named apart from the author's expected one, with its provenance.

``difficulty_label`` becomes ``calibrated_difficulty`` (data kept); a row made without model rollouts (reference
or perturbed runs only) becomes ``not_calibrated``: those runs say nothing about how hard a task is for a model.
"""

from django.db import migrations, models


def _not_calibrated_without_models(apps, schema_editor):
    TaskCalibration = apps.get_model("tasks_app", "TaskCalibration")
    for row in TaskCalibration.objects.only("pk", "per_policy", "calibrated_difficulty").iterator():
        policies = {entry.get("policy") for entry in (row.per_policy or {}).values() if isinstance(entry, dict)}
        if "model" not in policies or not row.calibrated_difficulty:
            TaskCalibration.objects.filter(pk=row.pk).update(calibrated_difficulty="not_calibrated")


class Migration(migrations.Migration):
    dependencies = [("tasks_app", "0006_rollout_contract_version")]

    operations = [
        migrations.RenameField("taskcalibration", "difficulty_label", "calibrated_difficulty"),
        migrations.AlterField(
            model_name="taskcalibration",
            name="calibrated_difficulty",
            field=models.CharField(
                choices=[
                    ("easy", "Easy"),
                    ("medium", "Medium"),
                    ("hard", "Hard"),
                    ("unsolved", "Unsolved"),
                    ("not_calibrated", "Not calibrated"),
                ],
                db_index=True,
                default="not_calibrated",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="taskcalibration",
            name="difficulty_provenance",
            field=models.JSONField(
                blank=True, default=dict, help_text="{policies, model_rollouts, contract_versions, judge_config}"
            ),
        ),
        migrations.RunPython(_not_calibrated_without_models, migrations.RunPython.noop),
    ]
