"""Migration 0007's backfill: rows written before the triage marks existed (columns
and JSON at their defaults) get the marks the rules would have kept, equal to their
recomputation from the attempts and Timers."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace

import pytest
from django.apps import apps
from django.db import connection

from storage import (
    ExecutionState,
    Guard,
    Outcome,
    OutcomeKind,
    Tx,
    Work,
    WorkOrder,
    WorkQuery,
    WorkState,
    codec,
    seconds,
)
from storage.meaning.series import select_exhausted
from storage.meaning.triage import failure_key
from storage.models import WorkRow
from storage.orm import OrmStore

from ..support import make_execution, make_timer, make_work

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

backfill = importlib.import_module("storage.migrations.0008_triage_marks").backfill


def _attempt(t: Tx, work_id: str, message: str | None, state: WorkState) -> None:
    """The Work's first attempt, completed (``message`` None) or failed with it."""
    x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1))
    x = t.claim(x.id, "runner", t.now + seconds(30))
    if message is None:
        ended = replace(x, state=ExecutionState.COMPLETED, outcome=Outcome(OutcomeKind.COMPLETED))
    else:
        ended = replace(
            x, state=ExecutionState.FAILED, outcome=Outcome(OutcomeKind.FAILED, message)
        )
    t.put_execution(ended)
    t.put_work(replace(t.work(work_id), state=state))


def test_the_backfill_sets_the_marks_the_rules_keep() -> None:
    store = OrmStore()

    def seed(t: Tx) -> None:
        for w in ("ex", "backoff", "dead", "done", "fresh"):
            t.put_work(make_work(w))
        _attempt(t, "ex", "disk 91% full on /dev/sda1", WorkState.READY)
        _attempt(t, "backoff", "disk 12% full", WorkState.READY)
        t.put_timer(make_timer("retry", t.now + seconds(60), work_id="backoff"))
        _attempt(t, "dead", "", WorkState.FAILED)
        _attempt(t, "done", None, WorkState.COMPLETED)

    store.transact(Guard(), seed)
    kept = store.view(lambda t: {w.id: (w.exhausted, w.error_group) for w in t.works()})
    # As an older binary left them: no marks in the columns or the JSON.
    for row in WorkRow.objects.all():
        bare = replace(codec.decode(Work, row.data), exhausted=False, error_group="")
        WorkRow.objects.filter(id=row.id).update(
            exhausted=False, error_group="", data=codec.encode(bare)
        )
    assert store.view(lambda t: {w.id for w in t.works() if w.exhausted or w.error_group}) == set()

    with connection.schema_editor() as editor:
        backfill(apps, editor)

    def check(t: Tx) -> dict[str, object]:
        latest = {x.work_id: x for x in sorted(t.executions(), key=lambda x: x.attempt)}
        recomputed = select_exhausted(
            WorkQuery(order=WorkOrder.CREATED_ASC), t.works(), t.executions(), t.timers()
        )
        return {
            "marks": {w.id: (w.exhausted, w.error_group) for w in t.works()},
            "exhausted": [w.id for w in recomputed],
            "groups": {w.id: failure_key(latest.get(w.id)) for w in t.works()},
            "column": t.count_works(WorkQuery(exhausted=True)),
        }

    out = store.view(check)
    assert out["marks"] == kept
    assert kept == {
        "ex": (True, "disk <n>% full on <id>"),
        "backoff": (False, "disk <n>% full"),
        "dead": (False, "(no message)"),
        "done": (False, ""),
        "fresh": (False, ""),
    }
    assert out["exhausted"] == ["ex"]
    assert out["groups"] == {w: g for w, (_, g) in kept.items()}
    assert out["column"] == 1


def _backfill_before_freeze(apps_: object, schema_editor: object) -> None:
    """Migration 0008's backfill as it shipped, through the live codec, triage rules
    and records (what the frozen migration must keep doing: issue 30)."""
    from django.db.models import Exists, OuterRef, Subquery

    from storage.meaning.triage import NO_MESSAGE, error_key
    from storage.tables import live_values

    def failure(data: str) -> str:
        outcome = json.loads(data).get("outcome") or {}
        return error_key(outcome.get("message") or "") or NO_MESSAGE

    db = schema_editor.connection.alias  # type: ignore[attr-defined]
    work_rows = apps_.get_model("storage", "WorkRow").objects.using(db)  # type: ignore[attr-defined]
    attempts = apps_.get_model("storage", "ExecutionRow").objects.using(db)  # type: ignore[attr-defined]
    timers = apps_.get_model("storage", "TimerRow").objects.using(db)  # type: ignore[attr-defined]
    latest = attempts.filter(work_id=OuterRef("work_id")).order_by("-attempt").values("attempt")
    failed = attempts.filter(state="failed", attempt=Subquery(latest[:1]))
    marks = {w: {"error_group": failure(d)} for w, d in failed.values_list("work_id", "data")}
    per_work = attempts.filter(work_id=OuterRef("id"))
    live = per_work.filter(state__in=live_values("execution"))
    exhausted = (
        work_rows.filter(state="ready")
        .filter(Exists(per_work))
        .exclude(Exists(live))
        .exclude(Exists(timers.filter(work_id=OuterRef("id"), live=True)))
    )
    for work_id in exhausted.values_list("id", flat=True):
        marks.setdefault(work_id, {})["exhausted"] = True
    rows = list(work_rows.filter(id__in=sorted(marks)))
    for row in rows:
        row.exhausted = marks[row.id].get("exhausted", False)
        row.error_group = marks[row.id].get("error_group", "")
        record = codec.decode(Work, row.data)
        row.data = codec.encode(
            replace(record, exhausted=row.exhausted, error_group=row.error_group)
        )
    work_rows.bulk_update(rows, ["exhausted", "error_group", "data"])


MESSAGES = [
    "disk 91% full on /dev/sda1",
    "checksum 9ab3c7 mismatch",
    "order 8812 declined (req 3f9a0c1e)",
    "timeout after 30s talking to 10.0.0.1:5432",
    "job 5f0c8a2e-1b2c-4d5e-8f90-0123456789ab lost its lease",
    "Zahlung für Kunde 42 abgelehnt",
    "  spaces\tand\nnewlines 7  ",
    "x" * 300 + " 1",
    "",
    "payload schema v2.order.paid refused: field 'amount' missing",
]


def _realistic_store(store: OrmStore) -> None:
    """Work in every position the marks care about: exhausted with and without a
    message, in backoff (a Timer), failed for good, completed, never attempted,
    running, retried after a failure, with unicode and over-long messages."""

    def seed(t: Tx) -> None:
        for i in range(120):
            work_id = f"w{i:03d}/ü" if i % 17 == 0 else f"w{i:03d}"
            t.put_work(make_work(work_id, kind=("pay.charge", "pay.refund", "ship.label")[i % 3]))
            shape = i % 6
            message = MESSAGES[i % len(MESSAGES)]
            if shape == 0:
                _attempt(t, work_id, message, WorkState.READY)
            elif shape == 1:
                _attempt(t, work_id, message, WorkState.READY)
                t.put_timer(make_timer(f"{work_id}-t", t.now + seconds(60), work_id=work_id))
            elif shape == 2:
                _attempt(t, work_id, message, WorkState.FAILED)
            elif shape == 3:
                _attempt(t, work_id, None, WorkState.COMPLETED)
            elif shape == 4:
                x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1))
                t.claim(x.id, "runner", t.now + seconds(30))
            # shape 5: never attempted

    store.transact(Guard(), seed)


def _strip_marks() -> dict[str, str]:
    """Every Work row as a binary before record format 5 left it; their texts."""
    bare_rows = {}
    for row in WorkRow.objects.all():
        record = codec.decode(Work, row.data)
        text = codec.encode(replace(record, exhausted=False, error_group=""))
        bare = json.loads(text)
        del bare["exhausted"], bare["error_group"]  # fields format 4 did not have
        bare_rows[row.id] = json.dumps(bare, separators=(",", ":"), sort_keys=True)
    for work_id, text in bare_rows.items():
        WorkRow.objects.filter(id=work_id).update(exhausted=False, error_group="", data=text)
    return bare_rows


def _result() -> dict[str, tuple[bool, str, Work]]:
    return {
        row.id: (row.exhausted, row.error_group, codec.decode(Work, row.data))
        for row in WorkRow.objects.all()
    }


def test_the_frozen_backfill_does_what_the_live_code_did() -> None:
    store = OrmStore()
    _realistic_store(store)
    kept = _result()
    bare = _strip_marks()

    with connection.schema_editor() as editor:
        _backfill_before_freeze(apps, editor)
    before = _result()
    for work_id, text in bare.items():
        WorkRow.objects.filter(id=work_id).update(exhausted=False, error_group="", data=text)
    with connection.schema_editor() as editor:
        backfill(apps, editor)
    after = _result()

    assert after == before
    # and both are what the rules keep on a live store
    assert after == kept
    assert sum(1 for e, _, _ in after.values() if e) == 20
    assert len({g for _, g, _ in after.values() if g}) >= 6
