"""The error group of a timed-out Wait (record format 8, issue 34, migration 0020): Work whose latest
attempt ended ``waiting`` and whose Wait on that attempt was cancelled with a timeout
Timer set belongs to "timed out waiting for <event types>" (``storage.meaning.triage.
failure_key``); before, it belonged to no group and the Errors page did not add up to
the exhausted tile. Backfilled here from the attempts and Waits already stored, with
the error-group rows of the Work tally counted again. Data only, so
``conduit_meta.schema_version`` stays 1. Unapplied, those groups are cleared again.

Frozen: the key, the record's JSON text and the tally's error-group rows are spelled
out here as of this migration, so a later change to the code cannot change what this
step wrote."""

import json
from typing import Any

from django.db import migrations
from django.db.models import OuterRef, Subquery

_BATCH = 1000
_MAX_ERROR_KEY = 200  # triage.MAX_ERROR_KEY

# The error-group rows of ``storage.orm.tally.rebuild`` (per combination and margin),
# as 0009 and 0015 wrote them.
_DELETE_TALLY = (
    "DELETE FROM conduit_work_tally WHERE dimension IN ('error_group', 'all:error_group')"
)
_COUNT_TALLY = """
INSERT INTO conduit_work_tally (dimension, state, scope_id, kind, value, n)
SELECT 'error_group', state, scope_id, kind, error_group, COUNT(*) FROM conduit_work
    GROUP BY state, scope_id, kind, error_group
UNION ALL SELECT 'all:error_group', state, '', '', error_group, COUNT(*) FROM conduit_work
    GROUP BY state, error_group
"""


def _timed_out_key(types: list[str]) -> str:
    """``triage.timed_out_key`` as of this migration."""
    awaited = " or ".join(types) if types else "an event"
    return f"timed out waiting for {awaited}"[:_MAX_ERROR_KEY].rstrip()


def _timed_out(apps: Any, db: str) -> dict[str, str]:
    """Work ID -> its group, for every Work whose latest attempt ended waiting and whose
    Wait on it was cancelled with a timeout Timer set."""
    attempts = apps.get_model("storage", "ExecutionRow").objects.using(db)
    waits = apps.get_model("storage", "WaitRow").objects.using(db)
    latest = attempts.filter(work_id=OuterRef("work_id")).order_by("-attempt").values("attempt")
    ended = attempts.filter(state="waiting", attempt=Subquery(latest[:1]))
    execution_ids = list(ended.values_list("id", flat=True).iterator())
    groups: dict[str, str] = {}
    for start in range(0, len(execution_ids), _BATCH):
        chosen = waits.filter(execution_id__in=execution_ids[start : start + _BATCH])
        for work_id, data in chosen.filter(state="cancelled").values_list("work_id", "data"):
            wait = json.loads(data)
            if wait.get("timeout_timer_id"):
                groups.setdefault(work_id, _timed_out_key(list(wait.get("types") or ())))
    return groups


def _mark(apps: Any, schema_editor: Any, *, clear: bool) -> None:
    db = schema_editor.connection.alias
    work_rows = apps.get_model("storage", "WorkRow").objects.using(db)
    groups = _timed_out(apps, db)
    ids = sorted(groups)
    changed = 0
    for start in range(0, len(ids), _BATCH):
        rows = list(work_rows.filter(id__in=ids[start : start + _BATCH]))
        for row in rows:
            group = "" if clear else groups[row.id]
            if clear and row.error_group != groups[row.id]:
                continue  # a group some later attempt gave is not this step's to clear
            record = json.loads(row.data)
            record["error_group"] = group
            row.error_group = group
            # ``storage.codec.encode``'s text: compact, keys sorted, ASCII escapes.
            row.data = json.dumps(record, separators=(",", ":"), sort_keys=True)
        changed += len(rows)
        work_rows.bulk_update(rows, ["error_group", "data"])
    if changed:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(_DELETE_TALLY)
            cursor.execute(_COUNT_TALLY)


def backfill(apps: Any, schema_editor: Any) -> None:
    _mark(apps, schema_editor, clear=False)


def clear(apps: Any, schema_editor: Any) -> None:
    _mark(apps, schema_editor, clear=True)


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0019_event_actor"),
    ]

    operations = [
        migrations.RunPython(backfill, clear, elidable=False),
    ]
