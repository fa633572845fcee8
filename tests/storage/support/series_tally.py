"""The history the series-tally cases build and the queries they ask: the contract
cases (contract/test_series_tally.py) and the ORM plans (orm/test_series_tally.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from storage import Buckets, Store, Tx, WorkQuery, seconds
from storage.meaning import series_tally
from storage.meaning.series_tally import DAY
from storage.memory import MemoryStore
from tests.storage.contract._helpers import (
    CANCELLED,
    COMPLETED,
    FAILED,
    READY,
    RUNNING,
    X_FAILED,
    terminate,
)
from tests.storage.support import (
    CLOCK_START,
    make_event,
    make_execution,
    make_scope,
    tx,
)
from tests.storage.support import make_work as work

HOUR = seconds(3600)


# The first UTC midnight after the clock's start: day boundaries are DAY0 + k * DAY.
DAY0 = (CLOCK_START // DAY + 1) * DAY


AXES = {
    # Whole days only: every bucket's count comes from the tally.
    "whole days": Buckets(DAY0 - DAY, DAY, 9),
    # Two days and four hours: a partial day at both ends around whole days.
    "partial edges": Buckets(DAY0 + 2 * HOUR, 2 * DAY + 4 * HOUR, 4),
    # Six hours: no bucket holds a whole day (the 24 h / 7 d dashboards).
    "no whole day": Buckets(DAY0 + HOUR, 6 * HOUR, 24),
    # One bucket over the whole history, edges inside the first and last days.
    "whole history": Buckets(DAY0 - 5 * HOUR, 9 * DAY, 1),
    # A day and a half: buckets with a whole day beside buckets without one.
    "day and a half": Buckets(DAY0 - 7 * HOUR, DAY + 12 * HOUR, 5),
    # Boundaries late in their day (the part after them is the shorter), one at the
    # very instant of a write (DAY0 + 2 days 23 h).
    "late boundaries": Buckets(DAY0 + 20 * HOUR, 2 * DAY + 3 * HOUR, 3),
}


SCOPE_LISTS: list[Sequence[str] | None] = [
    None,
    [],
    [""],
    ["acme"],
    ["acme", "acme-eu"],
    ["acme", "globex", ""],
]


WORK_QUERIES = [
    WorkQuery(),
    WorkQuery(states=frozenset({RUNNING, COMPLETED})),
    WorkQuery(scope_id="acme"),
    WorkQuery(scope_ids=frozenset({"acme", "acme-eu"})),
    WorkQuery(scope_ids=frozenset({"", "globex"}), states=frozenset({READY, CANCELLED})),
    WorkQuery(scope_id="acme", scope_ids=frozenset({"globex"})),  # disjoint: none
    WorkQuery(kind="test.other"),  # not a key of the tally: counted from the rows
]


def at(store: Store, when: int, fn: Callable[[Tx], Any]) -> Any:
    """Run ``fn`` in one transaction whose Guard.now is ``when``."""
    return tx(store, fn, clock=lambda: when)


def stored_rows(store: Store) -> dict[series_tally.SeriesKey, int]:
    """The store's series tally rows (zero rows aside)."""
    if isinstance(store, MemoryStore):
        rows = store._state.series.items()
    else:
        from django.db import connections

        with connections[store.using].cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT series, scope_id, state, day, n FROM conduit_series_tally")
            rows = [((s, scope, state, int(d)), int(n)) for s, scope, state, d, n in cursor]
    return {key: n for key, n in rows if n}


def counted(t: Tx) -> dict[series_tally.SeriesKey, int]:
    works = t.works()
    scope_of = {w.id: w.scope_id for w in works}
    return series_tally.count(works, t.events(), t.executions(), scope_of)


def _history(store: Store) -> None:
    """Events, attempts and Work changes spread over six days."""
    at(
        store,
        DAY0 - 3 * HOUR,
        lambda t: [
            t.put_scope(make_scope("acme")),
            t.put_scope(make_scope("acme-eu", parent_id="acme")),
            t.put_scope(make_scope("globex")),
            t.put_work(work("wa", scope_id="acme")),
            t.put_work(work("we", scope_id="acme-eu", kind="test.other")),
            t.accept_event(make_event("e0")),
        ],
    )
    at(
        store,
        DAY0 + HOUR,
        lambda t: [
            t.put_work(work("wg", scope_id="globex")),
            t.put_work(work("wn")),
            t.accept_event(make_event("e1", work_id="wa")),
            t.accept_event(make_event("e2")),
            t.put_execution(make_execution("wa-x1", "wa", 1)),
            t.put_execution(make_execution("wg-x1", "wg", 1)),  # never claimed
            # Claimed with a lease that lapses before the next day's claim.
            t.claim("wa-x1", "runner-a", t.now + HOUR),
        ],
    )
    at(
        store,
        DAY0 + DAY + 5 * HOUR,
        lambda t: [
            t.accept_event(make_event("e3", work_id="wn")),
            # Claimed again: its first claim's day stays its started_at.
            t.claim("wa-x1", "runner-b", t.now + HOUR),
            t.put_execution(make_execution("wn-x1", "wn", 1)),
            t.claim("wn-x1", "runner-a", t.now + HOUR),
        ],
    )
    at(
        store,
        DAY0 + 2 * DAY + 23 * HOUR,
        lambda t: [
            terminate(t, "wn-x1", X_FAILED, READY),
            t.put_work(replace(t.work("wa"), state=COMPLETED)),
            # Scopes given later: their Events move from "no Scope" to the Scope.
            t.set_event_scope("e1", "acme"),
            t.set_event_scope("e0", "acme-eu"),
        ],
    )
    at(
        store,
        DAY0 + 4 * DAY,
        lambda t: [
            t.put_execution(make_execution("wn-x2", "wn", 2)),
            t.claim("wn-x2", "runner-a", t.now + HOUR),
            t.put_work(replace(t.work("wg"), state=CANCELLED)),
            t.put_work(replace(t.work("we"), state=FAILED)),
            t.accept_event(make_event("e4")),
        ],
    )
    at(store, DAY0 + 5 * DAY + 7 * HOUR, lambda t: t.set_event_scope("e3", "globex"))
