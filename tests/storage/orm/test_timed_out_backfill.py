"""Migration 0020's backfill (issue 34): Work a format-7 process left in no group
after its Wait timed out gets the group the rules keep now ("timed out waiting for
<event types>"), its record's JSON included, and the tally's error-group rows are the
full count again; run twice it writes the same; unapplied, those groups are cleared
and nothing else changes. On both engines."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.apps import apps
from django.db import connection

from storage import ExecutionState, Guard, Tx, WaitState, Work, WorkState, codec, seconds
from storage.meaning import tally
from storage.models import WorkRow
from storage.orm import OrmStore
from storage.orm import tally as tally_sql
from storage.orm.dialect import dialect

from ..contract._helpers import terminate
from ..support import make_execution, make_timer, make_wait, make_work, park
from ..support.work_tally import stored_tally

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

migration = importlib.import_module("storage.migrations.0020_timed_out_groups")
# 0026 came later: the exhausted Work's own tally rows, recounted in full as it runs,
# removed when it is unapplied (before 0020 is: unapplied in reverse order).
exhausted_rows = importlib.import_module("storage.migrations.0026_work_tally_exhausted")
REPLIED = "timed out waiting for zendesk.ticket.replied"


def _park(t: Tx, work_id: str, types: tuple[str, ...], *, timeout: bool = True) -> None:
    """``work_id``'s first attempt ends waiting on a Wait for ``types``."""
    x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1))
    t.claim(x.id, "runner", t.now + seconds(30))
    timer_id = ""
    if timeout:
        timer = make_timer(f"{work_id}-t", t.now, work_id=work_id, purpose="timeout")
        timer_id = t.put_timer(timer).id
    wait = make_wait(f"{work_id}-wt", work_id, x.id, types=types, timeout_timer_id=timer_id)
    park(t, x.id, wait, terminal=True)


def _time_out(t: Tx, work_id: str) -> None:
    for timer in t.timers():
        if timer.work_id == work_id:
            t.fire_timer(timer.id, timer.revision)
    t.put_wait(replace(t.wait(f"{work_id}-wt"), state=WaitState.CANCELLED))
    t.put_work(replace(t.work(work_id), state=WorkState.READY))


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore()

    def seed(t: Tx) -> None:
        for n in range(6):
            t.put_work(make_work(f"w{n}", kind="support.ticket" if n < 4 else "billing.charge"))
        _park(t, "w0", ("zendesk.ticket.replied",))
        _park(t, "w1", ("zendesk.ticket.replied",))
        _park(t, "w2", ("zendesk.ticket.replied",))  # still waiting: no group
        _park(t, "w3", ("zendesk.ticket.replied",), timeout=False)  # cancelled, no timeout
        x = t.put_execution(make_execution("w4-x1", "w4", 1))
        t.claim(x.id, "runner", t.now + seconds(30))
        terminate(t, x.id, ExecutionState.FAILED, WorkState.READY)

    def time_out(t: Tx) -> None:
        _time_out(t, "w0")
        _time_out(t, "w1")
        t.put_wait(replace(t.wait("w3-wt"), state=WaitState.CANCELLED))
        t.put_work(replace(t.work("w3"), state=WorkState.READY))

    opened.transact(Guard(), seed)
    opened.transact(Guard(), time_out)
    yield opened
    opened.close()


def _marks(store: OrmStore) -> dict[str, tuple[bool, str]]:
    return store.view(lambda t: {w.id: (w.exhausted, w.error_group) for w in t.works()})


def _as_format_7_left_them() -> None:
    """The timed-out groups gone from the columns and the JSON, the tally counted so."""
    for row in WorkRow.objects.filter(error_group=REPLIED):
        bare = replace(codec.decode(Work, row.data), error_group="")
        WorkRow.objects.filter(id=row.id).update(error_group="", data=codec.encode(bare))
    with connection.cursor() as cursor:
        tally_sql.rebuild(cursor, dialect(connection).true)


def test_the_backfill_groups_timed_out_work_as_the_rules_do(store: OrmStore) -> None:
    kept, kept_tally = _marks(store), stored_tally()
    assert kept == {
        "w0": (True, REPLIED),
        "w1": (True, REPLIED),
        "w2": (False, ""),
        "w3": (True, ""),
        "w4": (True, "(no message)"),
        "w5": (False, ""),
    }
    kept_data = dict(WorkRow.objects.values_list("id", "data"))
    _as_format_7_left_them()
    assert _marks(store)["w0"] == (True, "")
    for _ in range(2):  # once as the migration runs, once more: the same
        with connection.schema_editor() as editor:
            migration.backfill(apps, editor)
            exhausted_rows.backfill(apps, editor)
        assert _marks(store) == kept
        assert stored_tally() == kept_tally == tally.count(store.view(lambda t: t.works()))
        assert dict(WorkRow.objects.values_list("id", "data")) == kept_data


def test_unapplied_it_clears_only_the_timed_out_groups(store: OrmStore) -> None:
    kept = _marks(store)
    with connection.schema_editor() as editor:
        exhausted_rows.remove(apps, editor)
        migration.clear(apps, editor)
    assert _marks(store) == {**kept, "w0": (True, ""), "w1": (True, "")}
    counted = tally.count(store.view(lambda t: t.works()))
    assert stored_tally() == {
        k: n for k, n in counted.items() if k[3] not in tally.EXHAUSTED_DIMENSIONS
    }
