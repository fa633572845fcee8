"""A partial index of the attempts with no executor recorded: the startup backfill of
executors reads its candidates from it, where it decoded every attempt (2.5 million at
a realistic million Work: minutes and gigabytes before a runtime could start).
Additive: the schema version stays 1."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0017_wait_active_created"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                condition=models.Q(("executor", "")),
                fields=["id"],
                name="execution_no_executor",
            ),
        ),
    ]
