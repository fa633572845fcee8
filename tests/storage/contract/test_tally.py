"""The Work tally (``storage.meaning.tally``): the facets and counts of a selection by
states, Scope and kind come from counts the rules keep in the write transaction. On
every backend they equal the full count over the stored Work (``select_facets``), after
every kind of Work write (creation, state changes, an executor given, claims, the
triage marks settled at commit), inside the writing transaction as well, and a rolled
back transaction leaves them as they were. The stored rows, per-combination and margins
(keyed by state and value alone, which answer the selections by states only), equal
their full count. A selection bounded by ``until`` alone, which the ORM answers from
the tally less the Work updated since the bound, and the other time bounds, agree with
``select_facets`` too, a Work updated at or after the bound leaving the selection."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from django.db import connections

from storage import (
    Nanos,
    Store,
    Tx,
    Work,
    WorkQuery,
    WorkState,
    seconds,
    select_facets,
    select_works,
)
from storage.meaning import tally
from storage.memory import MemoryStore

from ..support import (
    KIND,
    Crash,
    FakeClock,
    crashes,
    make_execution,
    make_scope,
    make_timer,
    make_work,
    tx,
)
from ._helpers import CANCELLED, COMPLETED, FAILED, READY, RUNNING, X_FAILED, terminate

LIVE = frozenset({READY, RUNNING, WorkState.WAITING})
# Selections by states alone: answered from the margins.
BY_STATES = [
    WorkQuery(),
    WorkQuery(states=LIVE),
    *(WorkQuery(states=frozenset({s})) for s in WorkState),
    WorkQuery(states=frozenset({FAILED, CANCELLED, COMPLETED})),
]
# Selections the tally answers: every combination of its three keys.
ANSWERED = [
    *BY_STATES,
    WorkQuery(scope_id="acme"),
    WorkQuery(scope_ids=frozenset({"acme", ""})),
    WorkQuery(scope_id="acme", scope_ids=frozenset({"globex"})),  # disjoint: none
    WorkQuery(kind="test.other"),
    WorkQuery(states=frozenset({FAILED, READY}), scope_ids=frozenset({"acme"}), kind="test.work"),
]


def _agree(t: Tx) -> None:
    works = t.works()
    for query in ANSWERED:
        assert tally.answers(query), query
        assert tally.reads_margins(query) == (query in BY_STATES), query
        assert t.work_facets(query) == select_facets(query, works), query
        assert t.count_works(query) == len(select_works(query, works)), query
        assert t.count_exhausted(query) == sum(w.exhausted for w in select_works(query, works))
    _agree_bounded(t, works)


def _agree_bounded(t: Tx, works: list[Work]) -> None:
    """The selections above bounded in time, at every update instant of the Work and
    past both ends (beyond the 64 bits a stored time has, too): ``until`` alone
    (``tally.complements``), ``since`` alone, both."""
    times = sorted({w.updated_at for w in works})
    bounds: list[Nanos] = [*times, times[0] - 1, times[-1] + 1] if times else [1]
    bounds += [-(2**64), 2**64]
    for query in ANSWERED:
        for bound in bounds:
            bounded = [
                replace(query, updated_before=bound),
                replace(query, updated_since=bound),
                replace(query, updated_since=times[0] if times else 0, updated_before=bound),
            ]
            assert tally.complements(bounded[0]), bounded[0]
            for q in bounded:
                assert t.work_facets(q) == select_facets(q, works), q
                assert t.count_works(q) == len(select_works(q, works)), q
                exhausted = sum(w.exhausted for w in select_works(q, works))
                assert t.count_exhausted(q) == exhausted, q


def _stored_tally(store: Store) -> dict[tally.TallyKey, int]:
    """The committed tally rows of ``store`` (zero rows aside)."""
    if isinstance(store, MemoryStore):
        rows = list(store._state.tally.items())
    else:
        with connections["default"].cursor() as cursor:
            cursor.execute(
                "SELECT state, scope_id, kind, dimension, value, n FROM conduit_work_tally"
            )
            rows = [(tuple(row[:5]), row[5]) for row in cursor.fetchall()]
    return {key: int(n) for key, n in rows if n}


def _margins_of(works: list[Work]) -> dict[tally.TallyKey, int]:
    """The margins counted from the Work, independently of ``tally.keys``."""
    counted: Counter[tally.TallyKey] = Counter()
    for w in works:
        s = w.state.value
        counted[(s, "", "", "all:", "")] += 1
        counted[(s, "", "", "all:kind", w.kind)] += 1
        counted[(s, "", "", "all:scope", w.scope_id)] += 1
        counted[(s, "", "", "all:source", w.source)] += 1
        counted[(s, "", "", "all:executor", w.latest_executor)] += 1
        counted[(s, "", "", "all:error_group", w.error_group)] += 1
        counted[(s, "", "", "all:exhausted", "")] += w.exhausted
    return {key: n for key, n in counted.items() if n}


def _counted(store: Store) -> None:
    """The stored tally is the full count of the stored Work, margins included."""
    works = store.view(lambda t: t.works())
    stored = _stored_tally(store)
    assert stored == tally.count(works)
    margins = {key: n for key, n in stored.items() if key[3].startswith(tally.MARGIN)}
    assert margins == _margins_of(works)


def _seed(t: Tx) -> None:
    t.put_scope(make_scope("acme"))
    t.put_scope(make_scope("globex"))
    t.put_work(make_work("a1", scope_id="acme"))
    t.put_work(make_work("a2", scope_id="acme", kind="test.other"))
    t.put_work(make_work("g1", scope_id="globex"))
    t.put_work(make_work("n1"))


def test_the_tally_answers_what_a_full_count_would_after_every_kind_of_write(
    store: Store,
) -> None:
    tx(store, _seed)
    store.view(_agree)
    _counted(store)

    def run_and_fail(t: Tx) -> None:
        # An executor given (latest_executor), a claim (running), a failure back to
        # ready: the Work is exhausted with an error group, settled at commit.
        x = t.put_execution(make_execution("a1-x1", "a1", 1))
        x = t.claim(x.id, "runner", t.now + seconds(30))
        terminate(t, x.id, X_FAILED, READY)

    tx(store, run_and_fail)
    store.view(_agree)
    _counted(store)
    exhausted = store.view(lambda t: t.work_facets(WorkQuery(scope_id="acme")))
    assert exhausted.exhausted == 1
    assert sum(n for g, n in exhausted.error_group.items() if g) == 1

    def back_off(t: Tx) -> None:
        # A Timer for it: no longer exhausted; others end.
        t.put_timer(make_timer("retry", t.now + seconds(60), work_id="a1"))
        t.put_work(replace(t.work("g1"), state=CANCELLED))
        t.put_work(replace(t.work("n1"), state=FAILED))

    tx(store, back_off)
    store.view(_agree)
    _counted(store)
    assert store.view(lambda t: t.work_facets(WorkQuery()).exhausted) == 0


def test_a_read_inside_the_writing_transaction_counts_its_own_writes(store: Store) -> None:
    tx(store, _seed)

    def write_then_read(t: Tx) -> None:
        t.put_work(make_work("a3", scope_id="acme"))
        t.put_work(replace(t.work("a2"), state=RUNNING))
        _agree(t)
        t.put_work(replace(t.work("a2"), state=COMPLETED))
        _agree(t)

    tx(store, write_then_read)
    store.view(_agree)
    _counted(store)


def test_a_rolled_back_transaction_leaves_the_tally_as_it_was(store: Store) -> None:
    tx(store, _seed)
    before = store.view(lambda t: [t.work_facets(q) for q in ANSWERED])

    def write_then_crash(t: Tx) -> None:
        t.put_work(make_work("a3", scope_id="acme"))
        t.put_work(replace(t.work("a1"), state=CANCELLED))
        t.work_facets(WorkQuery())  # the changes reached the backend, then roll back
        raise Crash

    crashes(store, write_then_crash, "a crashed write")
    assert store.view(lambda t: [t.work_facets(q) for q in ANSWERED]) == before
    store.view(_agree)
    _counted(store)


def test_selections_beyond_state_scope_and_kind_are_counted_from_the_work(
    store: Store,
) -> None:
    tx(store, _seed)
    assert not tally.answers(WorkQuery(parent_id="a1"))
    assert not tally.answers(WorkQuery(exhausted=True))
    assert not tally.answers(WorkQuery(updated_since=0))
    by_source = WorkQuery(sources=frozenset({"test.other"}))

    def check(t: Tx) -> None:
        assert t.work_facets(by_source) == select_facets(by_source, t.works())
        assert t.work_facets(by_source).kind == {"test.other": 1}

    store.view(check)


def test_a_selection_bounded_in_time_agrees_with_a_full_count_as_work_moves_past_the_bound(
    store: Store, clock: FakeClock
) -> None:
    tx(store, _seed)
    t0 = store.view(lambda t: t.now)
    t1 = clock.advance(5)

    def touch(t: Tx) -> None:
        # a1 stays ready but is updated at t1: it leaves every ``until`` t1 selection
        # while the tally, which has no time, still counts it as ready.
        t.put_work(t.work("a1"))
        t.put_work(replace(t.work("g1"), state=RUNNING))
        t.put_work(make_work("a3", scope_id="acme"))

    tx(store, touch)
    store.view(_agree)
    _counted(store)
    ready_until_t1 = WorkQuery(states=frozenset({READY}), updated_before=t1)

    def check(t: Tx) -> None:
        assert tally.complements(ready_until_t1)
        assert t.count_works(ready_until_t1) == 2  # a2 and n1, created at t0
        assert t.work_facets(ready_until_t1).kind == {"test.other": 1, KIND: 1}
        assert t.count_works(replace(ready_until_t1, updated_before=t0)) == 0

    store.view(check)
    clock.advance(5)

    def fail_and_read(t: Tx) -> None:
        # Inside the writing transaction: the tally settled first, the rows updated
        # since the bound read with this transaction's writes.
        x = t.put_execution(make_execution("a3-x1", "a3", 1))
        x = t.claim(x.id, "runner", t.now + seconds(30))
        terminate(t, x.id, X_FAILED, READY)
        t.put_work(replace(t.work("n1"), state=CANCELLED))
        _agree(t)
        # Ready before now: a1 (t1) and a2 (t0); a3, ready again now, only from now + 1.
        assert t.count_works(replace(ready_until_t1, updated_before=t.now)) == 2
        assert t.count_works(replace(ready_until_t1, updated_before=t.now + 1)) == 3

    tx(store, fail_and_read)
    store.view(_agree)
    _counted(store)
    # a3's marks, settled at commit: exhausted, counted only once the bound passes it.
    now = store.view(lambda t: t.now)
    assert store.view(lambda t: t.count_exhausted(replace(ready_until_t1, updated_before=now))) == 0
    until_next = replace(ready_until_t1, updated_before=now + 1)
    assert store.view(lambda t: t.count_exhausted(until_next)) == 1
    assert store.view(lambda t: t.work_facets(until_next).exhausted) == 1
