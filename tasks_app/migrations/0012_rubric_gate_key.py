from django.db import migrations, models


class Migration(migrations.Migration):
    """The stored gate is keyed by everything it depends on (task content, snapshot, the gate's code), not only the
    criteria: a result computed under other code is stale."""

    dependencies = [
        ("tasks_app", "0011_red_team_gate"),
    ]

    operations = [
        migrations.RenameField(model_name="rubricgate", old_name="criteria_hash", new_name="gate_key"),
        migrations.AlterField(
            model_name="rubricgate",
            name="gate_key",
            field=models.CharField(
                help_text="sha256 of what the result was computed for: the version's instruction, criteria and "
                "reference solution, the snapshot and the gate's code (tasks_app.services.gates.gate_key); another "
                "key = stale",
                max_length=64,
            ),
        ),
    ]
