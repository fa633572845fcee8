"""A partial index of the live attempts in the Executions page's order (started_at,
then ID), so its default page (the live attempts, newest first) reads the rows it
shows, newest first, where it read and sorted the JSON of every live attempt. An
index over the JSON time, as the other time indexes: existing rows need no backfill.
Additive: the schema version stays 1."""

from django.db import migrations, models

import storage.migrations._frozen_v1


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0021_event_keys"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                storage.migrations._frozen_v1.JsonNanos("started_at"),
                models.F("id"),
                condition=models.Q(("state__in", ("pending", "running", "parked"))),
                name="execution_live_started",
            ),
        ),
    ]
