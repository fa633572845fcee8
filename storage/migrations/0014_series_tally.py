"""The series tally (``storage.meaning.series_tally``): per-day counts of Events,
first claims and Work per state, per Scope and store-wide, that the rules keep in the
write transaction, backfilled here by one full count of the rows. Additive (a new
table), so ``conduit_meta.schema_version`` stays 1. Code from before this migration
does not keep the tally; record format 7 stops it writing once this code has opened
the store, and a database it wrote to after migrating needs the rebuild again
(``storage.orm.series_tally.rebuild``), as a bulk load in plain SQL does."""

from typing import Any

from django.db import migrations, models

# The full count of ``storage.orm.series_tally.rebuild`` as of this migration, spelled
# out per engine (the JSON time expressions are the dialects' ``json_nanos``) so that
# a later change to the tally's shape cannot change what this step wrote. A day is
# 86,400,000,000,000 ns; times are nonnegative, so integer division is the floor.
_BACKFILL = """
INSERT INTO conduit_series_tally (series, scope_id, state, day, n)
SELECT 'event', scope_id, '', {received} / 86400000000000, COUNT(*) FROM conduit_event
    GROUP BY scope_id, {received} / 86400000000000
UNION ALL SELECT 'event*', '', '', {received} / 86400000000000, COUNT(*) FROM conduit_event
    GROUP BY {received} / 86400000000000
UNION ALL SELECT 'attempt', scope_id, '', {started} / 86400000000000, COUNT(*)
    FROM conduit_execution WHERE {started} > 0
    GROUP BY scope_id, {started} / 86400000000000
UNION ALL SELECT 'attempt*', '', '', {started} / 86400000000000, COUNT(*)
    FROM conduit_execution WHERE {started} > 0
    GROUP BY {started} / 86400000000000
UNION ALL SELECT 'work', scope_id, state, updated_ns / 86400000000000, COUNT(*)
    FROM conduit_work GROUP BY scope_id, state, updated_ns / 86400000000000
UNION ALL SELECT 'work*', '', state, updated_ns / 86400000000000, COUNT(*)
    FROM conduit_work GROUP BY state, updated_ns / 86400000000000
"""

_TIMES = {
    "sqlite": {
        "received": "json_extract(data, '$.received_at')",
        "started": "json_extract(data, '$.started_at')",
    },
    "postgresql": {
        "received": "((data)::jsonb ->> 'received_at')::bigint",
        "started": "((data)::jsonb ->> 'started_at')::bigint",
    },
}


def backfill_sql(vendor: str) -> str:
    """The backfill's statement on ``vendor`` (the tests compare it with the rebuild)."""
    return _BACKFILL.format(**_TIMES[vendor])


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(backfill_sql(schema_editor.connection.vendor))


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0013_execution_running"),
    ]

    operations = [
        migrations.CreateModel(
            name="SeriesTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("series", models.CharField(max_length=16)),
                ("scope_id", models.CharField(max_length=255)),
                ("state", models.CharField(max_length=16)),
                ("day", models.BigIntegerField()),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_series_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("series", "scope_id", "state", "day"), name="series_tally_key"
                    )
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
    ]
