"""The record-version log (issue 32, ``storage.versions``): each writing transaction
appends the state before of every record it changed. A new table, empty: additive,
the schema version stays 1. Its horizon (from which version the log is whole) is
0024's."""

from django.db import migrations, models

import storage.migrations._frozen_v1


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0001_squashed_0022_execution_live_started"),
    ]

    operations = [
        migrations.CreateModel(
            name="VersionRow",
            fields=[
                ("position", models.BigIntegerField(primary_key=True, serialize=False)),
                ("at_ns", models.BigIntegerField()),
                ("kind", models.CharField(max_length=16)),
                ("record_id", storage.migrations._frozen_v1.BinaryCharField(max_length=255)),
                ("key", storage.migrations._frozen_v1.BinaryCharField(max_length=1024)),
                ("event_seq", models.BigIntegerField()),
                ("execution_id", models.CharField(max_length=255)),
                ("work_id", storage.migrations._frozen_v1.BinaryCharField(max_length=255)),
                ("data", models.TextField(null=True)),
                ("value", models.BinaryField(null=True)),
            ],
            options={
                "db_table": "conduit_record_version",
                "indexes": [
                    models.Index(
                        fields=["kind", "record_id", "key", "position"], name="version_record"
                    ),
                    models.Index(fields=["at_ns", "position"], name="version_at"),
                    models.Index(
                        fields=["work_id", "position"],
                        name="version_work",
                        condition=models.Q(("work_id", ""), _negated=True),
                    ),
                ],
            },
        ),
    ]
