"""The Work tally's committed rows, read in SQL (for the backfill and rebuild tests)."""

from __future__ import annotations

from django.db import connection

from storage.meaning import tally


def stored_tally() -> dict[tally.TallyKey, int]:
    """Every nonzero row of ``conduit_work_tally`` on the default connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, scope_id, kind, dimension, value, n FROM conduit_work_tally")
        rows = cursor.fetchall()
    return {(s, scope, kind, d, v): int(n) for s, scope, kind, d, v, n in rows if n}
