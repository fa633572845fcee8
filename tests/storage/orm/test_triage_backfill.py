"""Migration 0007's backfill: rows written before the triage marks existed (columns
and JSON at their defaults) get the marks the rules would have kept, equal to their
recomputation from the attempts and Timers."""

from __future__ import annotations

import importlib
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
