"""The dashboard reads: Work, Event and attempt series, exhausted Work, and the
WorkQuery filters they link to (``scope_ids``, ``updated_before``).

Every figure is checked against a data set built at known instants, at the bucket
boundaries too (a bucket is [low, high)), so the double and the SQL backend agree
with ``storage/meaning/series.py`` and with each other.
"""

from __future__ import annotations

from dataclasses import replace

import storage
from storage import (
    MAX_BUCKETS,
    Buckets,
    ExecutionState,
    Invalid,
    Store,
    Tx,
    WorkOrder,
    WorkQuery,
    WorkState,
    seconds,
)

from ..support import (
    CLOCK_START,
    FakeClock,
    fails,
    ids,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    raises,
    tx,
)
from ._helpers import COMPLETED, FAILED, READY, RUNNING, X_COMPLETED, X_FAILED, terminate

MINUTE = seconds(60)
# Four one-minute buckets from T0: [T0, T0+1m), ..., [T0+3m, T0+4m).
T0 = CLOCK_START + seconds(3600)
AXIS = Buckets(T0, MINUTE, 4)


def at(store: Store, when: int, fn: object) -> object:
    """Run ``fn`` in one transaction whose Guard.now is ``when``."""
    return tx(store, fn, clock=lambda: when)  # type: ignore[arg-type]


def _scopes(t: Tx) -> None:
    t.put_scope(make_scope("acme"))
    t.put_scope(make_scope("acme-eu", parent_id="acme"))
    t.put_scope(make_scope("globex"))


def _finish(
    store: Store, when: int, work_id: str, x_state: ExecutionState, state: WorkState
) -> None:
    def fn(t: Tx) -> None:
        n = len(t.executions(work_id)) + 1
        t.put_execution(make_execution(f"{work_id}-x{n}", work_id, n))
        t.claim(f"{work_id}-x{n}", "runner", t.now + seconds(30))
        terminate(t, f"{work_id}-x{n}", x_state, state)

    at(store, when, fn)


def test_work_series_counts_each_state_by_updated_bucket(store: Store, clock: FakeClock) -> None:
    """Work per state by the bucket of its update time: inclusive low edge, exclusive
    high edge, nothing outside the axis, the query's filters applied."""
    tx(store, _scopes)
    at(
        store,
        T0 - seconds(10),
        lambda t: [
            t.put_work(make_work(w, scope_id=s, kind=k))
            for w, s, k in (
                ("before", "acme", "conduit.test"),
                ("c-edge", "acme", "conduit.test"),
                ("c-mid", "acme-eu", "conduit.test"),
                ("c-late", "globex", "conduit.other"),
                ("f-one", "acme", "conduit.test"),
                ("at-end", "acme", "conduit.test"),
                ("live", "acme", "conduit.test"),
            )
        ],
    )
    _finish(store, T0 - 1, "before", X_COMPLETED, COMPLETED)  # before the axis
    _finish(store, T0, "c-edge", X_COMPLETED, COMPLETED)  # the first edge: bucket 0
    _finish(store, T0 + MINUTE + seconds(5), "c-mid", X_COMPLETED, COMPLETED)  # bucket 1
    _finish(store, T0 + 2 * MINUTE - 1, "c-late", X_COMPLETED, COMPLETED)  # bucket 1, last ns
    _finish(store, T0 + 2 * MINUTE, "f-one", X_FAILED, FAILED)  # bucket 2
    _finish(store, AXIS.end, "at-end", X_COMPLETED, COMPLETED)  # the end is exclusive
    # "live" stays ready, updated before the axis: not counted.

    def read(t: Tx) -> dict[str, object]:
        terminal = frozenset({COMPLETED, FAILED})
        return {
            "all": t.work_series(WorkQuery(), AXIS),
            "terminal": t.work_series(WorkQuery(states=terminal), AXIS),
            "acme tree": t.work_series(
                WorkQuery(states=terminal, scope_ids=frozenset({"acme", "acme-eu"})), AXIS
            ),
            "kind": t.work_series(WorkQuery(states=terminal, kind="conduit.other"), AXIS),
            "paging ignored": t.work_series(
                WorkQuery(states=terminal, order=WorkOrder.UPDATED_ASC, limit=1), AXIS
            ),
        }

    got = tx(store, read)
    zero = [0, 0, 0, 0]
    assert got["all"] == {
        "ready": zero,
        "running": zero,
        "waiting": zero,
        "completed": [1, 2, 0, 0],
        "failed": [0, 0, 1, 0],
        "cancelled": zero,
    }, "work_series counts Work per state by the bucket of its update time, [low, high)"
    assert got["terminal"] == {"completed": [1, 2, 0, 0], "failed": [0, 0, 1, 0]}, (
        "work_series reports exactly the query's states"
    )
    assert got["acme tree"] == {"completed": [1, 1, 0, 0], "failed": [0, 0, 1, 0]}, (
        "work_series applies scope_ids"
    )
    assert got["kind"] == {"completed": [0, 1, 0, 0], "failed": zero}, (
        "work_series applies the query's other filters"
    )
    assert got["paging ignored"] == got["terminal"], "work_series ignores order and limit"


def test_event_series_counts_acceptance_times_by_recorded_scope(
    store: Store, clock: FakeClock
) -> None:
    """Events by the bucket of their acceptance time, any scope or those recorded in
    the given Scopes ("" = none recorded, an empty list selects nothing)."""
    tx(store, _scopes)
    plan = [
        ("e-before", T0 - 1, "acme"),
        ("e-0", T0, "acme"),
        ("e-0b", T0 + seconds(59), ""),
        ("e-2", T0 + 2 * MINUTE, "globex"),
        ("e-3", T0 + 4 * MINUTE - 1, "acme-eu"),
        ("e-end", AXIS.end, "acme"),
    ]
    for event_id, when, scope_id in plan:

        def accept(t: Tx, event_id: str = event_id, scope_id: str = scope_id) -> None:
            t.accept_event(make_event(event_id, occurred_at=T0 - seconds(600)))
            if scope_id:
                t.set_event_scope(event_id, scope_id)

        at(store, when, accept)

    def read(t: Tx) -> dict[str, list[int]]:
        return {
            "any": t.event_series(AXIS),
            "acme tree": t.event_series(AXIS, ["acme", "acme-eu"]),
            "unscoped": t.event_series(AXIS, [""]),
            "none": t.event_series(AXIS, []),
        }

    assert tx(store, read) == {
        "any": [2, 0, 1, 1],
        "acme tree": [1, 0, 0, 1],
        "unscoped": [1, 0, 0, 0],
        "none": [0, 0, 0, 0],
    }, "event_series counts Events by acceptance time (not occurred_at) and recorded Scope"


def test_attempt_series_counts_each_attempt_once_at_its_first_claim(
    store: Store, clock: FakeClock
) -> None:
    """Attempts by the bucket of their first claim: a resumed attempt is not counted
    again, one never claimed is not counted, the Scope is its Work's; and
    started_executions lists what a bucket counted, the latest first."""
    tx(store, _scopes)
    at(
        store,
        T0 - seconds(5),
        lambda t: [
            t.put_work(make_work(w, scope_id=s))
            for w, s in (("wa", "acme"), ("wb", "globex"), ("wc", ""), ("wd", "acme-eu"))
        ],
    )
    at(store, T0 - seconds(5), lambda t: t.put_execution(make_execution("xd", "wd", 1)))

    def claim(x: str, w: str) -> object:
        def fn(t: Tx) -> None:
            t.put_execution(make_execution(x, w, 1))
            t.claim(x, "runner", t.now + seconds(600))

        return fn

    at(store, T0 + seconds(1), claim("xa", "wa"))
    at(store, T0 + MINUTE, claim("xb", "wb"))
    at(store, T0 + 3 * MINUTE, claim("xc", "wc"))
    # xa parks on a Wait and is claimed again later: still its first claim's bucket.
    at(store, T0 + MINUTE + 1, lambda t: park(t, "xa", make_wait("wt", "wa", "xa")))
    at(
        store,
        T0 + 2 * MINUTE + 1,
        lambda t: t.claim("xa", "runner", t.now + seconds(600)),
    )

    def read(t: Tx) -> dict[str, object]:
        return {
            "any": t.attempt_series(AXIS),
            "acme tree": t.attempt_series(AXIS, ["acme", "acme-eu"]),
            "unscoped": t.attempt_series(AXIS, [""]),
            "started": ids(t.started_executions(T0, AXIS.end)),
            "started in acme": ids(t.started_executions(T0, AXIS.end, ["acme", "acme-eu"])),
            "latest": ids(t.started_executions(T0, AXIS.end, limit=1)),
            "bucket 1": ids(t.started_executions(*AXIS.bounds(1))),
        }

    assert tx(store, read) == {
        "any": [1, 1, 0, 1],
        "acme tree": [1, 0, 0, 0],
        "unscoped": [0, 0, 0, 1],
        "started": ["xc", "xb", "xa"],
        "started in acme": ["xa"],
        "latest": ["xc"],
        "bucket 1": ["xb"],
    }, "attempt_series counts attempts once, at the first claim, by their Work's Scope"


def test_exhausted_work_has_had_an_attempt_and_nothing_will_run_it(
    store: Store, clock: FakeClock
) -> None:
    """Exhausted: ready, at least one attempt, no live attempt, no Timer. Listed in
    the query's order and limit, counted under its filters."""
    tx(store, _scopes)
    names = ("fresh", "ex-1", "ex-2", "retrying", "queued", "running", "done", "ex-globex")
    tx(
        store,
        lambda t: [
            t.put_work(make_work(w, scope_id="globex" if w == "ex-globex" else "acme"))
            for w in names
        ],
    )
    for work_id in ("ex-1", "ex-2", "retrying", "queued", "ex-globex"):
        clock.advance(1)
        _finish(store, clock(), work_id, X_FAILED, READY)
    tx(store, lambda t: t.put_timer(make_timer("retry", t.now + seconds(60), work_id="retrying")))
    tx(store, lambda t: t.put_execution(make_execution("queued-x2", "queued", 2)))

    def run(t: Tx) -> None:
        t.put_execution(make_execution("running-x1", "running", 1))
        t.claim("running-x1", "runner", t.now + seconds(60))

    tx(store, run)
    _finish(store, clock.advance(1), "done", X_COMPLETED, COMPLETED)

    def read(t: Tx) -> dict[str, object]:
        oldest = WorkQuery(order=WorkOrder.UPDATED_ASC)
        acme = WorkQuery(scope_ids=frozenset({"acme"}), order=WorkOrder.UPDATED_ASC)
        return {
            "all": ids(t.exhausted_works(oldest)),
            "count": t.count_exhausted(WorkQuery(limit=1)),
            "first": ids(t.exhausted_works(replace(oldest, limit=1))),
            "newest": ids(t.exhausted_works(WorkQuery(order=WorkOrder.UPDATED_DESC))),
            "acme": ids(t.exhausted_works(acme)),
            "acme count": t.count_exhausted(acme),
            "not ready": t.count_exhausted(WorkQuery(states=frozenset({RUNNING}))),
        }

    assert tx(store, read) == {
        "all": ["ex-1", "ex-2", "ex-globex"],
        "count": 3,
        "first": ["ex-1"],
        "newest": ["ex-globex", "ex-2", "ex-1"],
        "acme": ["ex-1", "ex-2"],
        "acme count": 2,
        "not ready": 0,
    }, "exhausted = ready with an attempt, none live, no Timer (fresh, queued, retrying are not)"


def test_work_query_selects_any_of_scopes_and_updated_before(
    store: Store, clock: FakeClock
) -> None:
    """``scope_ids`` (any of, ANDed with ``scope_id``) and ``updated_before``
    (exclusive) filter query_works, count_works and work_facets alike."""
    tx(store, _scopes)
    for n, (work_id, scope_id) in enumerate(
        (("wa", "acme"), ("wb", "acme-eu"), ("wc", "globex"), ("wd", "")), start=1
    ):
        at(store, T0 + n, lambda t, w=work_id, s=scope_id: t.put_work(make_work(w, scope_id=s)))

    def read(t: Tx) -> dict[str, object]:
        tree = frozenset({"acme", "acme-eu"})
        return {
            "tree": ids(t.query_works(WorkQuery(scope_ids=tree, order=WorkOrder.CREATED_ASC))),
            "tree count": t.count_works(WorkQuery(scope_ids=tree)),
            "tree facets": dict(t.work_facets(WorkQuery(scope_ids=tree)).scope),
            "and scope_id": ids(t.query_works(WorkQuery(scope_ids=tree, scope_id="acme"))),
            "none": ids(t.query_works(WorkQuery(scope_ids=frozenset({""})))),
            "before": ids(
                t.query_works(WorkQuery(updated_before=T0 + 3, order=WorkOrder.CREATED_ASC))
            ),
            "window": ids(
                t.query_works(
                    WorkQuery(
                        updated_since=T0 + 2, updated_before=T0 + 4, order=WorkOrder.CREATED_ASC
                    )
                )
            ),
            "window count": t.count_works(WorkQuery(updated_since=T0 + 2, updated_before=T0 + 4)),
        }

    assert tx(store, read) == {
        "tree": ["wa", "wb"],
        "tree count": 2,
        "tree facets": {"acme": 1, "acme-eu": 1},
        "and scope_id": ["wa"],
        "none": ["wd"],
        "before": ["wa", "wb"],
        "window": ["wb", "wc"],
        "window count": 2,
    }, "scope_ids selects any of the Scopes, updated_before is exclusive"


def test_dashboard_reads_refuse_bad_axes_and_work_in_a_view(store: Store, clock: FakeClock) -> None:
    """A series needs 1..MAX_BUCKETS buckets of positive width from a nonnegative
    start, and a sequence of Scope IDs (Invalid otherwise); every dashboard read is a
    read, so it answers inside a View the same as inside a transaction."""
    for bad, what in (
        (Buckets(T0, 0, 4), "a zero bucket width"),
        (Buckets(T0, MINUTE, 0), "no buckets"),
        (Buckets(T0, MINUTE, MAX_BUCKETS + 1), "too many buckets"),
        (Buckets(-1, MINUTE, 4), "a negative start"),
    ):
        fails(store, Invalid, lambda t, b=bad: t.work_series(WorkQuery(), b), f"{what}: Work")
        fails(store, Invalid, lambda t, b=bad: t.event_series(b), f"{what}: Events")
        fails(store, Invalid, lambda t, b=bad: t.attempt_series(b), f"{what}: attempts")

    def strings(t: Tx) -> None:
        raises(Invalid, lambda: t.event_series(AXIS, "acme"), "event_series scope_ids string")
        raises(Invalid, lambda: t.attempt_series(AXIS, "acme"), "attempt_series scope_ids string")
        raises(
            Invalid,
            lambda: t.query_works(WorkQuery(scope_ids="acme")),  # type: ignore[arg-type]
            "WorkQuery.scope_ids string",
        )
        raises(Invalid, lambda: t.exhausted_works(WorkQuery(limit=-1)), "negative limit")
        raises(Invalid, lambda: t.started_executions(T0, T0 - 1), "a range ending first")
        raises(Invalid, lambda: t.started_executions(T0, T0, limit=-1), "a negative limit")

    tx(store, strings)
    tx(store, _scopes)
    at(store, T0 + 1, lambda t: t.put_work(make_work("w1", scope_id="acme")))
    at(store, T0 + 2, lambda t: t.accept_event(make_event("e1")))
    _finish(store, T0 + 3, "w1", X_FAILED, READY)

    def everything(t: Tx) -> object:
        return (
            t.work_series(WorkQuery(), AXIS),
            t.event_series(AXIS),
            t.attempt_series(AXIS, ["acme"]),
            ids(t.exhausted_works(WorkQuery())),
            t.count_exhausted(WorkQuery()),
            ids(t.started_executions(T0, AXIS.end, ["acme"])),
        )

    in_tx = tx(store, everything)
    assert in_tx[3] == ["w1"], "the data set has one exhausted Work"
    assert in_tx[1] == [1, 0, 0, 0], "the data set has one Event in the first bucket"
    assert storage.view(store, None, everything) == in_tx, "the dashboard reads differ in a View"


def test_find_events_selects_an_acceptance_window(store: Store, clock: FakeClock) -> None:
    """find_events' received_since (inclusive) and received_before (exclusive) select
    by acceptance time, with every other filter and both orders: the Events behind an
    event_series bucket."""
    tx(store, _scopes)
    for event_id, when in (("e1", T0 - 1), ("e2", T0), ("e3", T0 + 30), ("e4", T0 + MINUTE)):

        def accept(t: Tx, event_id: str = event_id) -> None:
            t.accept_event(make_event(event_id, occurred_at=T0 - seconds(600)))
            if event_id != "e3":
                t.set_event_scope(event_id, "acme")

        at(store, when, accept)

    def read(t: Tx) -> dict[str, list[str]]:
        bucket = {"received_since": T0, "received_before": T0 + MINUTE}
        return {
            "bucket": ids(t.find_events(**bucket)),
            "newest first": ids(t.find_events(newest_first=True, **bucket)),
            "acme": ids(t.find_events(scope_ids=["acme"], **bucket)),
            "limit": ids(t.find_events(limit=1, newest_first=True, **bucket)),
            "since only": ids(t.find_events(received_since=T0 + 30)),
            "before only": ids(t.find_events(received_before=T0)),
            "counted": [str(n) for n in t.event_series(Buckets(T0, MINUTE, 1))],
        }

    assert tx(store, read) == {
        "bucket": ["e2", "e3"],
        "newest first": ["e3", "e2"],
        "acme": ["e2"],
        "limit": ["e3"],
        "since only": ["e3", "e4"],
        "before only": ["e1"],
        "counted": ["2"],
    }, "find_events selects acceptance times in [received_since, received_before)"
