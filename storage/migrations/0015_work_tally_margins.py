"""The Work tally's margins (``storage.meaning.tally``): rows keyed by state and value
only, beside the per-combination rows in ``conduit_work_tally``, so the facets of a
selection by states alone read states x values rows, not states x Scopes x kinds x
values. Backfilled here by one full count of the Work rows. Data only (the table and
its key are 0009's), so ``conduit_meta.schema_version`` stays 1. Code from before
this migration does not keep the margins: a database it writes to after migrating
needs the rebuild (``storage.orm.tally.rebuild``), as a bulk load in plain SQL does.
Unapplied, the margins are deleted and the per-combination rows are left as they are.

Depends on 0013 here; integrated after 0014 (the series tally), it depends on that."""

from typing import Any

from django.db import migrations

# The margins of ``storage.orm.tally.rebuild`` as of this migration, spelled out so
# that a later change to the tally's shape cannot change what this step wrote. Any
# margin row already there (none should be) is replaced, never added to.
_DELETE = """
DELETE FROM conduit_work_tally WHERE dimension IN (
    'all:', 'all:kind', 'all:scope', 'all:source', 'all:executor', 'all:error_group',
    'all:exhausted'
)
"""
_BACKFILL = """
INSERT INTO conduit_work_tally (dimension, state, scope_id, kind, value, n)
SELECT 'all:', state, '', '', '', COUNT(*) FROM conduit_work
    GROUP BY state
UNION ALL SELECT 'all:kind', state, '', '', kind, COUNT(*) FROM conduit_work
    GROUP BY state, kind
UNION ALL SELECT 'all:scope', state, '', '', scope_id, COUNT(*) FROM conduit_work
    GROUP BY state, scope_id
UNION ALL SELECT 'all:source', state, '', '', source, COUNT(*) FROM conduit_work
    GROUP BY state, source
UNION ALL SELECT 'all:executor', state, '', '', latest_executor, COUNT(*) FROM conduit_work
    GROUP BY state, latest_executor
UNION ALL SELECT 'all:error_group', state, '', '', error_group, COUNT(*) FROM conduit_work
    GROUP BY state, error_group
UNION ALL SELECT 'all:exhausted', state, '', '', '', COUNT(*) FROM conduit_work
    WHERE exhausted = %s GROUP BY state
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_DELETE)
        cursor.execute(_BACKFILL, [True])


def remove(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_DELETE)


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0014_series_tally"),
    ]

    operations = [
        migrations.RunPython(backfill, remove, elidable=False),
    ]
