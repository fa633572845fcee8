"""The workflow tally (``storage.routed.tally``): the count of workflows per (deployment,
status, kind, terminal reason), kept by the routed rules beside the workflow rows,
backfilled here by one full count of those rows. Additive (a new table): the routed
schema stamp and ``conduit_meta.schema_version`` stay as they are. Code from before
this migration does not keep the tally: a database it writes workflows to after
migrating needs the count again (``storage.routed.rows_orm.rebuild_workflow_tally``),
as a bulk load in plain SQL does."""

from typing import Any

from django.db import migrations, models

# The full count of ``rebuild_workflow_tally`` as of this migration, spelled out so
# that a later change to the tally's shape cannot change what this step wrote.
_BACKFILL = """
INSERT INTO conduit_routed_workflow_tally (parent, status, kind, reason, n)
SELECT parent, status, kind, reason, COUNT(*) FROM conduit_routed_workflow
    GROUP BY parent, status, kind, reason
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_BACKFILL)


class Migration(migrations.Migration):
    # 0014 and 0015 are being written beside this one; the dependency is re-pointed at
    # the latest of them when the branches meet.
    dependencies = [
        ("storage", "0015_work_tally_margins"),
    ]

    operations = [
        migrations.CreateModel(
            name="RoutedWorkflowTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
                ("kind", models.CharField(max_length=64)),
                ("reason", models.CharField(max_length=64)),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_routed_workflow_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("parent", "status", "kind", "reason"),
                        name="rt_workflow_tally_key",
                    )
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
    ]
