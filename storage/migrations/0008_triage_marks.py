"""The triage marks (``Work.exhausted``, ``Work.error_group``, record format 5) as
indexed columns, backfilled from the attempts and Timers already stored: the rules
keep them from then on, at every commit (``storage.tx.base``)."""

import json
from dataclasses import replace
from typing import Any

from django.db import migrations, models
from django.db.models import Exists, OuterRef, Subquery

from storage import codec
from storage.meaning.triage import NO_MESSAGE, error_key
from storage.records import Work
from storage.tables import live_values

_BATCH = 1000


def _failure_key(data: str) -> str:
    """``triage.failure_key`` of a failed attempt from its stored JSON."""
    outcome = json.loads(data).get("outcome") or {}
    return error_key(outcome.get("message") or "") or NO_MESSAGE


def backfill(apps: Any, schema_editor: Any) -> None:
    db = schema_editor.connection.alias
    work_rows = apps.get_model("storage", "WorkRow").objects.using(db)
    attempts = apps.get_model("storage", "ExecutionRow").objects.using(db)
    timers = apps.get_model("storage", "TimerRow").objects.using(db)
    latest = attempts.filter(work_id=OuterRef("work_id")).order_by("-attempt").values("attempt")
    failed = attempts.filter(state="failed", attempt=Subquery(latest[:1]))
    marks: dict[str, dict[str, Any]] = {
        work_id: {"error_group": _failure_key(data)}
        for work_id, data in failed.values_list("work_id", "data").iterator()
    }
    per_work = attempts.filter(work_id=OuterRef("id"))
    live = per_work.filter(state__in=live_values("execution"))
    exhausted = (
        work_rows.filter(state="ready")
        .filter(Exists(per_work))
        .exclude(Exists(live))
        .exclude(Exists(timers.filter(work_id=OuterRef("id"), live=True)))
    )
    for work_id in exhausted.values_list("id", flat=True).iterator():
        marks.setdefault(work_id, {})["exhausted"] = True
    ids = sorted(marks)
    for start in range(0, len(ids), _BATCH):
        rows = list(work_rows.filter(id__in=ids[start : start + _BATCH]))
        for row in rows:
            mark = marks[row.id]
            row.exhausted = mark.get("exhausted", False)
            row.error_group = mark.get("error_group", "")
            record = codec.decode(Work, row.data)
            row.data = codec.encode(
                replace(record, exhausted=row.exhausted, error_group=row.error_group)
            )
        work_rows.bulk_update(rows, ["exhausted", "error_group", "data"])


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0007_routed_artifacts_progress"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="workrow",
            name="work_facets",
        ),
        migrations.AddField(
            model_name="workrow",
            name="error_group",
            field=models.CharField(default="", max_length=255),
        ),
        migrations.AddField(
            model_name="workrow",
            name="exhausted",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.AddIndex(
            model_name="workrow",
            index=models.Index(
                fields=[
                    "state",
                    "kind",
                    "source",
                    "scope_id",
                    "latest_executor",
                    "exhausted",
                    "error_group",
                ],
                name="work_facets_triage",
            ),
        ),
        migrations.AddIndex(
            model_name="workrow",
            index=models.Index(
                condition=models.Q(("exhausted", True)),
                fields=["created_ns", "id"],
                name="work_exhausted_created",
            ),
        ),
        migrations.AddIndex(
            model_name="workrow",
            index=models.Index(
                condition=models.Q(("exhausted", True)),
                fields=["updated_ns", "id"],
                name="work_exhausted_updated",
            ),
        ),
        migrations.AddIndex(
            model_name="workrow",
            index=models.Index(
                condition=models.Q(("error_group", ""), _negated=True),
                fields=["error_group", "created_ns", "id"],
                name="work_group_created",
            ),
        ),
        migrations.AddIndex(
            model_name="workrow",
            index=models.Index(
                condition=models.Q(("error_group", ""), _negated=True),
                fields=["error_group", "kind", "state", "exhausted", "updated_ns"],
                name="work_error_groups",
            ),
        ),
    ]
