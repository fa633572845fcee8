"""The series tally (``storage.meaning.series_tally``): the dashboards' series over
buckets holding whole days take those days from per-day counts the rules keep in the
write transaction. On every backend the series equal their meaning over the stored
records (``storage.meaning.series``) for buckets of whole days, buckets with a partial
day at either end, buckets holding no whole day, per Scope list, "" and None; after
Events accepted on several days and given a Scope later, attempts claimed on several
days and claimed again, Work moving between states across days; inside the writing
transaction; and a rolled-back transaction leaves them as they were. The stored tally
rows equal their count from scratch (``series_tally.count``) throughout.
"""

from __future__ import annotations

from dataclasses import replace

from storage import Store, Tx, WorkQuery
from storage.meaning import series
from storage.meaning.series_tally import DAY

from ..support import Crash, crashes, make_event, make_execution
from ..support import make_work as work
from ..support.series_tally import (
    AXES,
    DAY0,
    HOUR,
    SCOPE_LISTS,
    WORK_QUERIES,
    _history,
    at,
    counted,
    stored_rows,
)
from ._helpers import CANCELLED, COMPLETED


def agree(t: Tx) -> None:
    """Every series, on every axis and selection, equals its meaning over the records."""
    works, events, attempts = t.works(), t.events(), t.executions()
    scope_of = {w.id: w.scope_id for w in works}
    for name, axis in AXES.items():
        for scopes in SCOPE_LISTS:
            assert t.event_series(axis, scopes) == series.event_series(axis, scopes, events), (
                name,
                scopes,
            )
            expected = series.attempt_series(axis, scopes, attempts, scope_of)
            assert t.attempt_series(axis, scopes) == expected, (name, scopes)
        for query in WORK_QUERIES:
            assert t.work_series(query, axis) == series.work_series(query, axis, works), (
                name,
                query,
            )


def test_the_series_equal_their_meaning_on_every_axis_after_a_history_of_days(
    store: Store,
) -> None:
    _history(store)
    store.view(agree)
    assert stored_rows(store) == store.view(counted)


def test_the_history_fills_whole_days_partial_edges_and_every_scope(store: Store) -> None:
    """What the other cases rely on: the history's figures are not all zero where the
    tally answers (whole days inside buckets, several Scopes, several states)."""
    _history(store)
    days = AXES["whole days"]
    assert store.view(lambda t: t.event_series(days)) == [1, 2, 1, 0, 0, 1, 0, 0, 0]
    assert store.view(lambda t: t.event_series(days, ["acme"])) == [0, 1, 0, 0, 0, 0, 0, 0, 0]
    # wa-x1 on day 1 (claimed again on day 2), wn-x1 day 2, wn-x2 day 5; wg-x1 never.
    assert store.view(lambda t: t.attempt_series(days)) == [0, 1, 1, 0, 0, 1, 0, 0, 0]
    history = AXES["whole history"]
    assert store.view(lambda t: t.event_series(history, [""])) == [2]
    assert store.view(lambda t: t.work_series(WorkQuery(), history)) == {
        "ready": [0],
        "running": [1],
        "waiting": [0],
        "completed": [1],
        "failed": [1],
        "cancelled": [1],
    }


def test_a_read_inside_the_writing_transaction_counts_its_own_writes(store: Store) -> None:
    _history(store)

    def write_then_read(t: Tx) -> None:
        t.accept_event(make_event("e9", work_id="wg"))
        t.put_work(work("wz", scope_id="acme"))
        t.put_execution(make_execution("wz-x1", "wz", 1))
        t.claim("wz-x1", "runner-a", t.now + HOUR)
        agree(t)
        t.set_event_scope("e9", "globex")
        t.put_work(replace(t.work("wz"), state=COMPLETED))
        agree(t)

    at(store, DAY0 + 3 * DAY + 2 * HOUR, write_then_read)
    store.view(agree)
    assert stored_rows(store) == store.view(counted)


def test_a_rolled_back_transaction_leaves_the_series_as_they_were(store: Store) -> None:
    _history(store)
    before = store.view(
        lambda t: (
            [t.event_series(a, s) for a in AXES.values() for s in SCOPE_LISTS]
            + [t.work_series(WorkQuery(), a) for a in AXES.values()]
        )
    )
    rows = stored_rows(store)

    def write_then_crash(t: Tx) -> None:
        t.accept_event(make_event("e9"))
        t.set_event_scope("e2", "globex")
        t.put_work(replace(t.work("wn"), state=CANCELLED))
        t.event_series(AXES["whole days"])  # the changes reached the backend
        raise Crash

    crashes(store, write_then_crash, "a crashed write")
    after = store.view(
        lambda t: (
            [t.event_series(a, s) for a in AXES.values() for s in SCOPE_LISTS]
            + [t.work_series(WorkQuery(), a) for a in AXES.values()]
        )
    )
    assert after == before
    assert stored_rows(store) == rows == store.view(counted)
