"""A partial index of the active Waits in the Waits page's order (creation time from
the record's JSON, then ID), so a page and its ``older`` bound cost the rows shown
rather than every active Wait. Additive: the schema version stays 1, and nothing is
backfilled (the JSON already holds the time)."""

from django.db import migrations, models

import storage.migrations._frozen_v1


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0016_routed_workflow_tally"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="waitrow",
            index=models.Index(
                storage.migrations._frozen_v1.JsonNanos("created_at"),
                models.F("id"),
                condition=models.Q(("state", "active")),
                name="wait_active_created",
            ),
        ),
    ]
