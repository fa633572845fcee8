"""The exhausted Work's own rows in the Work tally (``storage.meaning.tally``): per
(state, Scope, kind), the exhausted Work by source, executor and error group, so the
exhausted list's facets are read from the tally, not counted over every exhausted
Work. Backfilled here by one count of the exhausted Work rows. Data only (the table
and its key are 0009's), so ``conduit_meta.schema_version`` stays 1. Code from before
this migration (record format 10) does not keep these rows: it stops writing once
format-11 code has opened the store (``RecordsNewer``); a database it wrote to after
migrating needs the rebuild (``storage.orm.tally.rebuild``), as a bulk load in plain
SQL does. Unapplied, the rows are deleted and the rest of the tally is left as it is."""

from typing import Any

from django.db import migrations

# The rows of ``storage.orm.tally.rebuild`` as of this migration, spelled out so that a
# later change to the tally's shape cannot change what this step wrote. Any such row
# already there (none should be) is replaced, never added to.
_DELETE = """
DELETE FROM conduit_work_tally WHERE dimension IN ('x:source', 'x:executor', 'x:error_group')
"""
_BACKFILL = """
INSERT INTO conduit_work_tally (dimension, state, scope_id, kind, value, n)
SELECT 'x:source', state, scope_id, kind, source, COUNT(*) FROM conduit_work
    WHERE exhausted = %s GROUP BY state, scope_id, kind, source
UNION ALL SELECT 'x:executor', state, scope_id, kind, latest_executor, COUNT(*)
    FROM conduit_work WHERE exhausted = %s GROUP BY state, scope_id, kind, latest_executor
UNION ALL SELECT 'x:error_group', state, scope_id, kind, error_group, COUNT(*)
    FROM conduit_work WHERE exhausted = %s GROUP BY state, scope_id, kind, error_group
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_DELETE)
        cursor.execute(_BACKFILL, [True, True, True])


def remove(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_DELETE)


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0025_kv_namespace_binary"),
    ]

    operations = [
        migrations.RunPython(backfill, remove, elidable=False),
    ]
