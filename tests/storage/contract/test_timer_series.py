"""timer_series and TimerQuery.kinds: the Timers-ahead strip's counts per bucket of
fire time, and the kind filter of the Timers pages, on every backend
(``storage/meaning/pages.py``).

A Timer's Scope and kind are its Work's ("" for a Timer serving no Work). The counts
are checked against a recount of the seeded Timers made here, not against another
read of the store, over axes whose buckets split ties, start before the first Timer
and end between two, with every filter the console sends.
"""

from __future__ import annotations

import itertools

import pytest

from storage import Buckets, Invalid, Store, TimerQuery, Tx, seconds

from ..support import CLOCK_START, make_scope, make_timer, make_work, raises, tx

T0 = CLOCK_START + seconds(60)

# (Work ID, Scope, kind); "" Work: a Timer serving no Work.
WORKS = [
    ("w.a", "acme", "billing.charge"),
    ("w.b", "acme/eu", "billing.charge"),
    ("w.c", "acme/eu", "mail.send"),
    ("w.d", "€ 50%", "mail.send"),
    ("w.e", "", "billing.charge"),
]
# (Timer ID, seconds after T0, Work ID): ties at 10 s across Scopes and kinds, odd IDs.
TIMERS = [
    ("t1", 0, "w.a"),
    ("t/2", 10, "w.b"),
    ("t?3", 10, "w.c"),
    ("t 4", 10, ""),
    ("t5", 59, "w.d"),
    ("t6", 60, "w.e"),
    ("t7", 61, "w.a"),
    ("t8", 300, "w.c"),
    ("t9", 3_599, "w.b"),
]
DELETED = ("t-gone", 10, "w.a")  # armed then deleted: its tombstone row never counts


def seed(store: Store) -> None:
    def fn(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        t.put_scope(make_scope("acme/eu", parent_id="acme"))
        t.put_scope(make_scope("€ 50%"))
        for work_id, scope_id, kind in WORKS:
            t.put_work(make_work(work_id, scope_id=scope_id, kind=kind))
        for timer_id, after, work_id in [*TIMERS, DELETED]:
            t.put_timer(make_timer(timer_id, T0 + seconds(after), work_id=work_id))
        t.delete_timer(DELETED[0], 1)

    tx(store, fn, clock=lambda: T0)


def recount(
    axis: Buckets,
    due_by: int | None,
    scope_ids: frozenset[str] | None,
    kinds: frozenset[str] | None,
) -> list[int]:
    work = {w: (scope, kind) for w, scope, kind in WORKS}
    counts = [0] * axis.count
    for _, after, work_id in TIMERS:
        fire = T0 + seconds(after)
        scope, kind = work.get(work_id, ("", ""))
        i = axis.index(fire)
        if i is None or (due_by is not None and fire > due_by):
            continue
        if (scope_ids is None or scope in scope_ids) and (kinds is None or kind in kinds):
            counts[i] += 1
    return counts


AXES = [
    Buckets(T0, seconds(300), 12),  # the hour ahead, 5-minute buckets
    Buckets(T0 - seconds(7), seconds(10), 8),  # splits the 10 s tie's neighbours
    Buckets(T0 + 1, seconds(60), 1),  # one bucket, starting just after a Timer
    Buckets(T0 + seconds(10), 1, 3),  # 1 ns buckets: the tie alone in the first
]
SCOPES = [None, frozenset({"acme", "acme/eu"}), frozenset({""}), frozenset()]
KINDS = [None, frozenset({"mail.send"}), frozenset({"billing.charge", ""}), frozenset()]


def test_each_bucket_counts_the_timers_firing_in_it(store: Store) -> None:
    seed(store)
    for axis, scope_ids, kinds, due_by in itertools.product(
        AXES, SCOPES, KINDS, (None, T0 + seconds(60))
    ):
        q = TimerQuery(due_by=due_by, scope_ids=scope_ids, kinds=kinds)
        got = tx(store, lambda t, a=axis, q=q: t.timer_series(a, q))
        assert got == recount(axis, due_by, scope_ids, kinds), (axis, q)


def test_the_buckets_sum_to_the_count_and_the_kind_filter_pages_alike(store: Store) -> None:
    """Over an axis holding every Timer, the buckets sum to ``count_timers``; the kind
    filter selects the same Timers in the page as in the count."""
    seed(store)
    everything = Buckets(T0 - seconds(1), seconds(1000), 4)
    for scope_ids, kinds in itertools.product(SCOPES, KINDS):
        q = TimerQuery(scope_ids=scope_ids, kinds=kinds)
        series = tx(store, lambda t, q=q: t.timer_series(everything, q))
        count = tx(store, lambda t, q=q: t.count_timers(q))
        page = tx(store, lambda t, q=q: [x.id for x in t.query_timers(q)])
        assert sum(series) == count == len(page), q
    mail = TimerQuery(kinds=frozenset({"mail.send"}))
    assert tx(store, lambda t: [x.id for x in t.query_timers(mail)]) == ["t?3", "t5", "t8"]
    unowned = TimerQuery(kinds=frozenset({""}))
    assert tx(store, lambda t: [x.id for x in t.query_timers(unowned)]) == ["t 4"]


@pytest.mark.parametrize(
    "axis",
    [Buckets(T0, 0, 3), Buckets(T0, seconds(1), 0), Buckets(-1, seconds(1), 3)],
)
def test_it_refuses_an_axis_no_backend_could_count_alike(store: Store, axis: Buckets) -> None:
    raises(Invalid, lambda: tx(store, lambda t: t.timer_series(axis, TimerQuery())), repr(axis))


def test_a_kind_filter_must_be_a_set_of_kinds(store: Store) -> None:
    axis = Buckets(T0, seconds(60), 2)
    for bad in ("mail.send", ["mail.send"], frozenset({1}), frozenset({"a\x00b"})):
        q = TimerQuery(kinds=bad)  # type: ignore[arg-type]
        raises(Invalid, lambda q=q: tx(store, lambda t: t.query_timers(q)), repr(bad))
        raises(Invalid, lambda q=q: tx(store, lambda t: t.count_timers(q)), repr(bad))
        raises(Invalid, lambda q=q: tx(store, lambda t: t.timer_series(axis, q)), repr(bad))
