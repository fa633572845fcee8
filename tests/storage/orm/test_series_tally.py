"""The series tally on the database (``storage.orm.series_tally``): after random
operations on the real backend, its rows are the count from scratch over the stored
records and its series those of the reference double; migration 0014's backfill
writes what the rebuild writes; and the whole days of a bucket are read from the tally
rows, not counted from the records (a corrupted row shows in the series: the negative
control)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import (
    Buckets,
    Event,
    Execution,
    ExecutionState,
    Guard,
    Outcome,
    OutcomeKind,
    Scope,
    StorageError,
    Store,
    Tx,
    Work,
    WorkQuery,
    WorkState,
)
from storage.meaning import series_tally
from storage.meaning.series_tally import DAY
from storage.memory import MemoryStore
from storage.orm import OrmStore
from storage.orm import series_tally as series_sql
from storage.orm.dialect import dialect

from ..support import FakeClock
from ..support.series_tally import (
    AXES,
    DAY0,
    HOUR,
    SCOPE_LISTS,
    WORK_QUERIES,
    _history,
    counted,
    stored_rows,
)

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

SCOPES = ["", "acme", "globex"]
STATES = [WorkState.RUNNING, WorkState.READY, WorkState.COMPLETED, WorkState.CANCELLED]

operation = st.tuples(
    st.sampled_from(["work", "event", "scope", "attempt", "claim", "fail", "move"]),
    st.integers(0, 7),  # which Work or Event
    st.integers(0, 3),  # which Scope or state
    st.integers(0, 40),  # hours before it (several operations on one day, and gaps)
)


def _apply(t: Tx, op: tuple[str, int, int, int], n: int) -> None:
    """One operation, skipped when the rules refuse it (no effect: the contract)."""
    what, i, j, _ = op
    works = t.works()
    work = works[i % len(works)] if works else None
    try:
        if what == "work":
            t.put_work(Work(id=f"w{n}", kind="test.kind", scope_id=SCOPES[j % 3]))
        elif what == "event":
            t.accept_event(Event(f"e{n}", "test", f"d{n}", "test.seen"))
        elif what == "scope":
            events = t.events()
            if events and SCOPES[j % 3]:
                t.set_event_scope(events[i % len(events)].id, SCOPES[j % 3])
        elif work is not None:
            latest = max(t.executions(work.id), key=lambda x: x.attempt, default=None)
            if what == "attempt":
                number = latest.attempt + 1 if latest else 1
                attempt = Execution(id=f"{work.id}-x{number}", work_id=work.id, attempt=number)
                t.put_execution(attempt)
            elif what == "claim" and latest is not None:
                t.claim(latest.id, "runner", t.now + HOUR)
            elif what == "fail" and latest is not None:
                failed = Outcome(OutcomeKind.FAILED, "boom")
                t.put_execution(replace(latest, state=ExecutionState.FAILED, outcome=failed))
                t.put_work(replace(t.work(work.id), state=WorkState.READY))
            elif what == "move":
                t.put_work(replace(work, state=STATES[j % 4]))
    except StorageError:
        pass


def _scopes(t: Tx) -> None:
    for s in SCOPES[1:]:
        t.put_scope(Scope(id=s))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(operation, min_size=1, max_size=30))
def test_after_random_operations_the_rows_are_the_count_and_the_series_the_doubles(
    ops: list[tuple[str, int, int, int]],
) -> None:
    call_command("flush", "--noinput", verbosity=0)
    clock = FakeClock(DAY0 - 2 * HOUR)
    orm, memory = OrmStore(clock=clock), MemoryStore(clock=clock)
    stores: list[Store] = [orm, memory]
    try:
        for store in stores:
            store.transact(Guard(), _scopes)
        for n, op in enumerate(ops):
            clock.advance(ns=op[3] * HOUR + 1)
            for store in stores:
                store.transact(Guard(), lambda t, op=op, n=n: _apply(t, op, n))
        for store in stores:
            assert stored_rows(store) == store.view(counted)

        def figures(t: Tx) -> list[Any]:
            out: list[Any] = []
            for axis in AXES.values():
                out += [t.event_series(axis, s) for s in SCOPE_LISTS]
                out += [t.attempt_series(axis, s) for s in SCOPE_LISTS]
                out += [t.work_series(q, axis) for q in WORK_QUERIES]
            return out

        assert orm.view(figures) == memory.view(figures)
    finally:
        orm.close()


def _rows() -> dict[series_tally.SeriesKey, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT series, scope_id, state, day, n FROM conduit_series_tally")
        return {(s, scope, st, int(d)): int(n) for s, scope, st, d, n in cursor if n}


def test_the_migrations_backfill_writes_what_the_rebuild_writes() -> None:
    """On a store whose tally is missing (written by format-6 code, or cloned in plain
    SQL), 0014's backfill and ``rebuild`` both write the count from scratch."""
    import importlib

    migration = importlib.import_module("storage.migrations.0014_series_tally")
    store = OrmStore(clock=FakeClock())
    _history(store)
    expected = store.view(counted)
    assert expected == _rows()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM conduit_series_tally")
        cursor.execute(migration.backfill_sql(connection.vendor))
    assert _rows() == expected
    with connection.cursor() as cursor:
        cursor.execute("UPDATE conduit_series_tally SET n = n + 5")  # rebuilt from scratch
        series_sql.rebuild(cursor, dialect(connection))
    assert _rows() == expected
    store.close()


def test_the_whole_days_of_a_bucket_come_from_the_tally_rows() -> None:
    """The negative control: a tally row made wrong behind the rules' back shows in
    every bucket holding its day, store-wide or per Scope, and in no bucket without a
    whole day (those are counted from the records)."""
    store = OrmStore(clock=FakeClock())
    _history(store)
    day1 = series_tally.day(DAY0)  # e1 and e2 (Scope "" then acme), wa-x1's claim
    days = AXES["whole days"]
    hours = Buckets(DAY0, 6 * HOUR, 4)
    before = store.view(
        lambda t: (t.event_series(days), t.event_series(hours), t.attempt_series(days, [""]))
    )
    assert before[0][1] == 2
    assert before[1][0] == 2
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conduit_series_tally SET n = n + 100 WHERE day = %s AND series IN"
            " ('event*', 'work*') AND scope_id = ''",
            [day1],
        )
    events, by_hour, attempts = store.view(
        lambda t: (t.event_series(days), t.event_series(hours), t.attempt_series(days, [""]))
    )
    assert events == [n + 100 if i == 1 else n for i, n in enumerate(before[0])]
    assert by_hour == before[1], "a bucket without a whole day reads the records"
    assert attempts == before[2]
    work = store.view(lambda t: t.work_series(WorkQuery(states=frozenset({WorkState.READY})), days))
    # "ready" on DAY0: wg, wn created then moved on later; their 0 rows now read 100.
    assert work["ready"][1] == 100
    # A Scope's own rows are read for a Scope list, the store-wide ones for None.
    assert store.view(lambda t: t.event_series(days, ["acme"]))[1] == 1
    # A bucket over the whole history holds day 1 whole: it follows too; a filter the
    # tally does not key (kind) counts the records.
    history = AXES["whole history"]
    assert store.view(lambda t: t.event_series(history)) == [5 + 100]
    kinded = WorkQuery(states=frozenset({WorkState.READY}), kind="conduit.test")
    assert store.view(lambda t: t.work_series(kinded, days))["ready"][1] == 0
    store.close()


def test_a_day_boundary_splits_a_bucket_exactly() -> None:
    """``split``: the edges and the whole days partition [low, high)."""
    for low, high in [
        (DAY0, DAY0 + DAY),
        (DAY0 - 1, DAY0 + DAY + 1),
        (DAY0 + 1, DAY0 + DAY - 1),
        (DAY0 + HOUR, DAY0 + 3 * DAY),
        (0, 3 * DAY),
    ]:
        edges, whole = series_tally.split(low, high)
        spans = [*edges, *([(whole[0] * DAY, whole[1] * DAY)] if whole else [])]
        assert sum(b - a for a, b in spans) == high - low
        assert all(a < b for a, b in spans)
        assert whole is None or (whole[0] * DAY >= low and whole[1] * DAY <= high)
    assert series_tally.split(DAY0 + 1, DAY0 + DAY - 1) == ([(DAY0 + 1, DAY0 + DAY - 1)], None)


def test_the_days_statement_sums_what_the_meaning_sums_over_the_rows() -> None:
    """Per bucket, the whole days' sum of ``days_statement`` is ``days_sum`` of the
    bucket's whole days (``split``) over the stored rows; per cut day, its rows' sum."""
    store = OrmStore(clock=FakeClock())
    _history(store)
    stored = _rows()
    states = ["", *(s.value for s in WorkState)]
    for axis in [*AXES.values(), Buckets(DAY0 + 7, 3 * DAY - 11, 3)]:
        chosen = series_sql.plan(axis)
        for name in series_tally.SERIES:
            for scopes in SCOPE_LISTS:
                statement = series_sql.days_statement(axis, chosen, name, scopes, states)
                got: dict[tuple[int, str, int], int] = {}
                if statement is not None:
                    with connection.cursor() as cursor:
                        cursor.execute(*statement)
                        got = {(int(k), s, int(i)): int(n) for k, s, i, n in cursor.fetchall()}
                for state in states:
                    for i, whole in enumerate(chosen.whole):
                        expected = (
                            series_tally.days_sum(stored, name, scopes, state, whole)
                            if whole
                            else 0
                        )
                        assert got.get((0, state, i), 0) == expected, (axis, name, scopes, state, i)
                    for _, _, day, _ in chosen.cuts.values():
                        expected = series_tally.days_sum(
                            stored, name, scopes, state, (day, day + 1)
                        )
                        assert got.get((1, state, day), 0) == expected, (axis, name, scopes, day)
    store.close()
