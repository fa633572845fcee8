"""The triage marks (``Work.exhausted``, ``Work.error_group``, record format 5) as
indexed columns, backfilled from the attempts and Timers already stored: the rules
keep them from then on, at every commit (``storage.tx.base``)."""

import json
import re
from typing import Any

from django.db import migrations, models
from django.db.models import Exists, OuterRef, Subquery

_BATCH = 1000

# Frozen (issue 30): what this backfill took from storage as it stood at record format
# 5 (storage.meaning.triage.error_key and NO_MESSAGE, storage.tables.live_values of
# "execution", storage.codec's Work encoding), copied here so that a later change to
# that code cannot change what this migration does to a database that meets it late.
_MAX_ERROR_KEY = 200
_NO_MESSAGE = "(no message)"
_LIVE_EXECUTION_STATES = ("pending", "running", "parked")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_TOKEN = re.compile(r"[\w.:/-]*\d[\w.:/-]*")
_NUMBER = re.compile(r"[+-]?[\d.,:]+")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{6,}")
_SPACE = re.compile(r"\s+")


def _placeholder(match: re.Match[str]) -> str:
    token = match.group(0)
    core = token.rstrip(".:/-")
    tail = token[len(core) :]
    if _NUMBER.fullmatch(core):
        return "<n>" + tail
    if _HEX.fullmatch(core):
        return "<hex>" + tail
    return "<id>" + tail


def _error_key(message: str) -> str:
    """The error group of a failure message: "" for none (blank text)."""
    text = _UUID.sub("<uuid>", message)
    text = _TOKEN.sub(_placeholder, text)
    text = _SPACE.sub(" ", text).strip()
    return text[:_MAX_ERROR_KEY].rstrip()


def _failure_key(data: str) -> str:
    """``triage.failure_key`` of a failed attempt from its stored JSON."""
    outcome = json.loads(data).get("outcome") or {}
    return _error_key(outcome.get("message") or "") or _NO_MESSAGE


def _marked(data: str, exhausted: bool, error_group: str) -> str:
    """A Work record's stored JSON with its two marks set, in the codec's spelling
    (compact, keys sorted, ASCII escapes); every other field as it was stored."""
    record = json.loads(data)
    record["exhausted"] = exhausted
    record["error_group"] = error_group
    return json.dumps(record, separators=(",", ":"), sort_keys=True)


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
    live = per_work.filter(state__in=_LIVE_EXECUTION_STATES)
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
            row.data = _marked(row.data, row.exhausted, row.error_group)
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
