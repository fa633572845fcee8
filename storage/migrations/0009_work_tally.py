"""The Work tally (``storage.meaning.tally``): facet counts the rules keep in the
write transaction, backfilled here by one full count of the Work rows. Additive (a
new table), so ``conduit_meta.schema_version`` stays 1. Code from before this
migration does not keep the tally: a database it writes to after migrating needs the
rebuild again (``storage.orm.tally.rebuild``), as a bulk load in plain SQL does."""

from typing import Any

from django.db import migrations, models

# The full count of ``storage.orm.tally.rebuild`` as of this migration, spelled out so
# that a later change to the tally's shape cannot change what this step wrote.
_BACKFILL = """
INSERT INTO conduit_work_tally (dimension, state, scope_id, kind, value, n)
SELECT '', state, scope_id, kind, '', COUNT(*) FROM conduit_work
    GROUP BY state, scope_id, kind
UNION ALL SELECT 'source', state, scope_id, kind, source, COUNT(*) FROM conduit_work
    GROUP BY state, scope_id, kind, source
UNION ALL SELECT 'executor', state, scope_id, kind, latest_executor, COUNT(*) FROM conduit_work
    GROUP BY state, scope_id, kind, latest_executor
UNION ALL SELECT 'error_group', state, scope_id, kind, error_group, COUNT(*) FROM conduit_work
    GROUP BY state, scope_id, kind, error_group
UNION ALL SELECT 'exhausted', state, scope_id, kind, '', COUNT(*) FROM conduit_work
    WHERE exhausted = %s GROUP BY state, scope_id, kind
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_BACKFILL, [True])


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0008_triage_marks"),
    ]

    operations = [
        migrations.CreateModel(
            name="WorkTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("dimension", models.CharField(max_length=16)),
                ("state", models.CharField(max_length=16)),
                ("scope_id", models.CharField(max_length=255)),
                ("kind", models.CharField(max_length=200)),
                ("value", models.CharField(max_length=255)),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_work_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("dimension", "state", "scope_id", "kind", "value"),
                        name="work_tally_key",
                    )
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
    ]
