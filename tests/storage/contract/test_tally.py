"""The Work tally (``storage.meaning.tally``): the facets and counts of a selection by
states, Scope and kind come from counts the rules keep in the write transaction. On
every backend they equal the full count over the stored Work (``select_facets``), after
every kind of Work write (creation, state changes, an executor given, claims, the
triage marks settled at commit), inside the writing transaction as well, and a rolled
back transaction leaves them as they were."""

from __future__ import annotations

from dataclasses import replace

from storage import Store, Tx, WorkQuery, WorkState, seconds, select_facets, select_works
from storage.meaning import tally

from ..support import Crash, crashes, make_execution, make_scope, make_timer, make_work, tx
from ._helpers import CANCELLED, COMPLETED, FAILED, READY, RUNNING, X_FAILED, terminate

LIVE = frozenset({READY, RUNNING, WorkState.WAITING})
# Selections the tally answers: every combination of its three keys.
ANSWERED = [
    WorkQuery(),
    WorkQuery(states=LIVE),
    WorkQuery(states=frozenset({READY})),
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
        assert t.work_facets(query) == select_facets(query, works), query
        assert t.count_works(query) == len(select_works(query, works)), query


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

    def run_and_fail(t: Tx) -> None:
        # An executor given (latest_executor), a claim (running), a failure back to
        # ready: the Work is exhausted with an error group, settled at commit.
        x = t.put_execution(make_execution("a1-x1", "a1", 1))
        x = t.claim(x.id, "runner", t.now + seconds(30))
        terminate(t, x.id, X_FAILED, READY)

    tx(store, run_and_fail)
    store.view(_agree)
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
