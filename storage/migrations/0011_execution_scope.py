"""An attempt's Scope as a column of its row (its Work's, fixed at the Work's
creation; written at the attempt's INSERT from then on), backfilled here from the
Work rows, with the indexes the dashboards select a Scope's attempts by: its attempts
by start time, its live ones. Additive (a column with a database default), so
``conduit_meta.schema_version`` stays 1; code from before this migration inserts
attempts with the default "" and its dashboards never read the column."""

from typing import Any

from django.db import migrations, models

import storage.migrations._frozen_v1

# One statement on both engines: the Scope of each attempt's Work, before the
# indexes on the column exist (they are built once, from the filled column).
_BACKFILL = """
UPDATE conduit_execution SET scope_id = COALESCE(
    (SELECT w.scope_id FROM conduit_work w WHERE w.id = conduit_execution.work_id), '')
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_BACKFILL)


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0010_routed_workflow_facets"),
    ]

    operations = [
        migrations.AddField(
            model_name="executionrow",
            name="scope_id",
            field=models.CharField(db_default="", max_length=255),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                models.F("scope_id"),
                storage.migrations._frozen_v1.JsonNanos("started_at"),
                name="execution_scope_started",
            ),
        ),
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                condition=models.Q(("state__in", ("pending", "running", "parked"))),
                fields=["scope_id", "state"],
                name="execution_scope_live",
            ),
        ),
    ]
