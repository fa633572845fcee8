"""query_timers and query_active_waits: the Timers and Waits pages' keyset reads, with
their counts, on every backend (``storage/meaning/pages.py``).

Timers come earliest fire time first, active Waits oldest first, ties by ID; a bound
keeps those due (created) by an instant; ``after`` and ``before`` page forwards and
backwards. A differential walk over many rows with tied times and odd IDs checks that
every page, walked end to end either way, is the full selection sorted.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from storage import (
    ActiveWaitQuery,
    Invalid,
    Store,
    Timer,
    TimerKey,
    TimerQuery,
    Tx,
    Wait,
    WaitKey,
    WaitState,
    seconds,
)

from ..support import (
    CLOCK_START,
    FakeClock,
    ids,
    make_scope,
    make_timer,
    make_work,
    raises,
    tx,
)
from ..support.runtime_pages import add_waits

T0 = CLOCK_START + seconds(60)

# IDs the storage rules accept that a careless cursor would break: a dot (the
# console's cursor separator), "/", "%", "?", "#", a space, multibyte characters.
ODD = ["a.b", "a/b", "50%", "q?x=1", "h#1", "s p", "é", "€uro", "🚀", "Z", "a", "~"]


def at(store: Store, when: int, fn: Any) -> Any:
    return tx(store, fn, clock=lambda: when)


def seed_timers(store: Store) -> None:
    """t3 and t1 fire at T0+10s (a tie: by ID), t2 at T0+5s, t4 at T0+30s; t-gone
    was armed and deleted (its tombstone row must never list)."""

    def fn(t: Tx) -> None:
        for timer_id, fire in (("t3", 10), ("t1", 10), ("t2", 5), ("t4", 30), ("t-gone", 1)):
            t.put_timer(make_timer(timer_id, T0 + seconds(fire)))
        t.delete_timer("t-gone", 1)

    at(store, T0, fn)


def seed_waits(store: Store) -> None:
    """wb and wa created at T0 (a tie), wc at T0+10s, wd at T0+20s; w-woken was
    active and is woken (it must never list)."""
    at(store, T0, lambda t: add_waits(t, ["wb", "wa", "w-woken"]))
    at(store, T0 + seconds(10), lambda t: add_waits(t, ["wc"]))
    at(store, T0 + seconds(20), lambda t: add_waits(t, ["wd"]))

    def cancel(t: Tx) -> None:
        t.put_wait(replace(t.wait("w-woken"), state=WaitState.CANCELLED))

    at(store, T0 + seconds(21), cancel)


def timers(store: Store, q: TimerQuery) -> list[str]:
    return ids(at(store, T0 + seconds(40), lambda t: t.query_timers(q)))


def waits(store: Store, q: ActiveWaitQuery) -> list[str]:
    return ids(at(store, T0 + seconds(40), lambda t: t.query_active_waits(q)))


def test_timers_come_earliest_first_and_a_bound_keeps_those_due(
    store: Store, clock: FakeClock
) -> None:
    seed_timers(store)
    t1 = TimerKey(T0 + seconds(10), "t1")
    assert {
        "all": timers(store, TimerQuery()),
        "due by T0+10s": timers(store, TimerQuery(due_by=T0 + seconds(10))),
        "due by T0+9s": timers(store, TimerQuery(due_by=T0 + seconds(9))),
        "first two": timers(store, TimerQuery(limit=2)),
        "after t1": timers(store, TimerQuery(after=t1)),
        "after t1, due by T0+10s": timers(store, TimerQuery(after=t1, due_by=T0 + seconds(10))),
        "two before t4": timers(
            store, TimerQuery(before=TimerKey(T0 + seconds(30), "t4"), limit=2)
        ),
        "before t1": timers(store, TimerQuery(before=t1)),
    } == {
        "all": ["t2", "t1", "t3", "t4"],
        "due by T0+10s": ["t2", "t1", "t3"],
        "due by T0+9s": ["t2"],
        "first two": ["t2", "t1"],
        "after t1": ["t3", "t4"],
        "after t1, due by T0+10s": ["t3"],
        "two before t4": ["t1", "t3"],
        "before t1": ["t2"],
    }
    counts = at(
        store,
        T0 + seconds(40),
        lambda t: [
            t.count_timers(TimerQuery()),
            t.count_timers(TimerQuery(due_by=T0 + seconds(10))),
            t.count_timers(TimerQuery(due_by=T0, after=t1, limit=1)),  # cursor, limit aside
        ],
    )
    assert counts == [4, 3, 0]


def test_active_waits_come_oldest_first_and_a_bound_keeps_the_older(
    store: Store, clock: FakeClock
) -> None:
    seed_waits(store)
    wa = WaitKey(T0, "wa")
    assert {
        "all": waits(store, ActiveWaitQuery()),
        "created by T0+10s": waits(store, ActiveWaitQuery(created_by=T0 + seconds(10))),
        "created by T0-1ns": waits(store, ActiveWaitQuery(created_by=T0 - 1)),
        "first three": waits(store, ActiveWaitQuery(limit=3)),
        "after wa": waits(store, ActiveWaitQuery(after=wa, limit=2)),
        "two before wd": waits(
            store, ActiveWaitQuery(before=WaitKey(T0 + seconds(20), "wd"), limit=2)
        ),
        "before wa": waits(store, ActiveWaitQuery(before=wa)),
    } == {
        "all": ["wa", "wb", "wc", "wd"],
        "created by T0+10s": ["wa", "wb", "wc"],
        "created by T0-1ns": [],
        "first three": ["wa", "wb", "wc"],
        "after wa": ["wb", "wc"],
        "two before wd": ["wb", "wc"],
        "before wa": [],
    }
    counts = at(
        store,
        T0 + seconds(40),
        lambda t: [
            t.count_active_waits(ActiveWaitQuery()),
            t.count_active_waits(ActiveWaitQuery(created_by=T0)),
            t.count_active_waits(ActiveWaitQuery(created_by=T0, before=wa, limit=1)),
        ],
    )
    assert counts == [4, 2, 2]


def test_a_read_inside_a_writing_transaction_sees_its_own_writes(
    store: Store, clock: FakeClock
) -> None:
    def fn(t: Tx) -> tuple[list[str], int, list[str], int]:
        t.put_timer(make_timer("t-new", t.now + seconds(5)))
        add_waits(t, ["w-new"])
        return (
            ids(t.query_timers(TimerQuery())),
            t.count_timers(TimerQuery()),
            ids(t.query_active_waits(ActiveWaitQuery())),
            t.count_active_waits(ActiveWaitQuery()),
        )

    assert at(store, T0, fn) == (["t-new"], 1, ["w-new"], 1)


def test_it_refuses_a_page_no_backend_could_answer_alike(store: Store, clock: FakeClock) -> None:
    key, wkey = TimerKey(T0, "t1"), WaitKey(T0, "w1")

    def fn(t: Tx) -> None:
        bad_timers: dict[str, object] = {
            "negative limit": TimerQuery(limit=-1),
            "both cursors": TimerQuery(after=key, before=key),
            "negative cursor time": TimerQuery(after=TimerKey(-1, "t1")),
            "a cursor time past 64 bits": TimerQuery(after=TimerKey(2**63, "t1")),
            "a bound past 64 bits": TimerQuery(due_by=-(2**63) - 1),
            "a cursor of the other kind": TimerQuery(after=wkey),  # type: ignore[arg-type]
            "a NUL in the cursor": TimerQuery(before=TimerKey(T0, "t\x00")),
            "a surrogate in the cursor": TimerQuery(after=TimerKey(T0, "t\ud800")),
            "a bound that is not an instant": TimerQuery(due_by="soon"),  # type: ignore[arg-type]
            "not a query at all": ActiveWaitQuery(),
        }
        for what, q in bad_timers.items():
            raises(Invalid, lambda q=q: t.query_timers(q), what)  # type: ignore[misc]
            if what not in ("a NUL in the cursor", "a surrogate in the cursor"):
                raises(Invalid, lambda q=q: t.count_timers(q), what)  # type: ignore[misc]
        bad_waits: dict[str, object] = {
            "negative limit": ActiveWaitQuery(limit=-1),
            "both cursors": ActiveWaitQuery(after=wkey, before=wkey),
            "negative cursor time": ActiveWaitQuery(before=WaitKey(-5, "w1")),
            "a bound past 64 bits": ActiveWaitQuery(created_by=2**64),
            "a cursor of the other kind": ActiveWaitQuery(after=key),  # type: ignore[arg-type]
            "a NUL in the cursor": ActiveWaitQuery(after=WaitKey(T0, "w\x00")),
            "a bound that is not an instant": ActiveWaitQuery(created_by=1.5),  # type: ignore[arg-type]
            "not a query at all": TimerQuery(),
        }
        for what, q in bad_waits.items():
            raises(Invalid, lambda q=q: t.query_active_waits(q), what)  # type: ignore[misc]

    tx(store, fn)


def _walk(read: Any, query: Any, key_of: Any, limit: int, end: Any) -> list[str]:
    """Every page of ``query`` from one end to the other, in ascending order: after
    keys from the start, or (with ``end``, a key past every row) before keys from the
    end."""
    pages: list[list[str]] = []
    backwards, cursor = end is not None, end
    while True:
        q = replace(query, limit=limit, **({"before": cursor} if backwards else {"after": cursor}))
        page = read(q)
        assert len(page) <= limit
        if not page:
            break
        pages.append(ids(page))
        cursor = key_of(page[0] if backwards else page[-1])
    if backwards:
        pages.reverse()
    return [row for page in pages for row in page]


@pytest.mark.parametrize("seed", [1, 2])
def test_pages_walked_either_way_are_the_whole_selection_sorted(
    store: Store, clock: FakeClock, seed: int
) -> None:
    """Differential: 70 Timers and 70 Waits with few distinct times (many ties), odd
    IDs, some deleted or ended; pages of several sizes, with and without a bound."""
    rng = random.Random(seed)  # noqa: S311 (test data, not secrets)
    names = [f"{rng.choice(ODD)}{n}" for n in range(70)]
    times = [T0 + seconds(rng.randrange(6)) for _ in names]

    def arm(t: Tx) -> None:
        for name, fire in zip(names, times, strict=True):
            t.put_timer(make_timer(f"t{name}", fire))
        for name in names[::7]:
            t.delete_timer(f"t{name}", 1)

    at(store, T0, arm)
    # Waits get their creation time from the transaction: one transaction per instant.
    for offset in range(6):
        group = [n for n, when in zip(names, times, strict=True) if when == T0 + seconds(offset)]
        at(store, T0 + seconds(offset), lambda t, g=group: add_waits(t, [f"w{n}" for n in g]))

    def end(t: Tx) -> None:
        for name in names[3::9]:
            t.put_wait(replace(t.wait(f"w{name}"), state=WaitState.CANCELLED))

    at(store, T0 + seconds(7), end)
    now = T0 + seconds(8)

    def every_timer(t: Tx) -> list[Timer]:
        return t.timers()

    def every_wait(t: Tx) -> list[Wait]:
        return t.active_waits()

    all_timers = at(store, now, every_timer)
    all_waits = at(store, now, every_wait)
    for bound in (None, T0 + seconds(2), T0 - 1):
        want_t = [
            t.id
            for t in sorted(all_timers, key=lambda t: (t.fire_at, t.id))
            if bound is None or t.fire_at <= bound
        ]
        want_w = [
            w.id
            for w in sorted(all_waits, key=lambda w: (w.created_at, w.id))
            if bound is None or w.created_at <= bound
        ]
        counts = at(
            store,
            now,
            lambda t, b=bound: (
                t.count_timers(TimerQuery(due_by=b)),
                t.count_active_waits(ActiveWaitQuery(created_by=b)),
            ),
        )
        assert counts == (len(want_t), len(want_w))
        for limit in (1, 7, 25):
            for backwards in (False, True):

                def read_t(q: TimerQuery) -> list[Timer]:
                    return at(store, now, lambda tx_: tx_.query_timers(q))

                def read_w(q: ActiveWaitQuery) -> list[Wait]:
                    return at(store, now, lambda tx_: tx_.query_active_waits(q))

                last_t = TimerKey(2**62, "") if backwards else None
                got_t = _walk(read_t, TimerQuery(due_by=bound), TimerQuery.key_of, limit, last_t)
                got_w = _walk(
                    read_w,
                    ActiveWaitQuery(created_by=bound),
                    ActiveWaitQuery.key_of,
                    limit,
                    WaitKey(2**62, "") if backwards else None,
                )
                assert got_t == want_t, (bound, limit, backwards)
                assert got_w == want_w, (bound, limit, backwards)
    assert len(all_timers) == 60
    assert len(all_waits) == 62


def test_a_scope_filter_keeps_the_timers_of_its_works_paged_and_counted(
    store: Store, clock: FakeClock
) -> None:
    """A Timer's Scope is its Work's ("" for Work without one and for a Timer serving
    no Work), as the dashboards' ``overdue_timers`` selects them: the page walked
    either way and the count agree with it, with and without a bound; odd Scope IDs."""
    scopes = {"a.b": "", "a.b/c?x=1": "a.b", "€ 50%": ""}

    def arm(t: Tx) -> None:
        for scope_id, parent in scopes.items():
            t.put_scope(make_scope(scope_id, parent_id=parent))
        for n, scope_id in enumerate([*scopes, "", *scopes]):
            t.put_work(make_work(f"w{n}", scope_id=scope_id))
            for k in range(3):  # ties on fire time across Scopes
                t.put_timer(make_timer(f"t{n}.{k}", T0 + seconds(k), work_id=f"w{n}"))
        t.put_timer(make_timer("t-free", T0 + seconds(1)))

    at(store, T0, arm)
    now = T0 + seconds(8)
    chosen = frozenset({"a.b", "a.b/c?x=1"})
    for bound in (None, T0 + seconds(1), T0 - 1):
        for scope_ids in (chosen, frozenset({""}), frozenset()):
            overdue = at(
                store,
                now,
                lambda t, b=bound, s=scope_ids: t.overdue_timers(
                    2**62 if b is None else b, sorted(s)
                ),
            )
            want = [t.id for t in overdue]
            q = TimerQuery(due_by=bound, scope_ids=scope_ids)
            assert at(store, now, lambda t, q=q: t.count_timers(q)) == len(want)
            for limit in (1, 4):
                for backwards in (False, True):

                    def read_t(q: TimerQuery) -> list[Timer]:
                        return at(store, now, lambda tx_: tx_.query_timers(q))

                    last = TimerKey(2**62, "") if backwards else None
                    got = _walk(read_t, q, TimerQuery.key_of, limit, last)
                    assert got == want, (bound, scope_ids, limit, backwards)
    both = TimerQuery(scope_ids=chosen)
    assert timers(store, both) == [f"t{n}.{k}" for k in range(3) for n in (0, 1, 4, 5)]
    assert timers(store, TimerQuery(scope_ids=frozenset({""}))) == [
        "t3.0",
        "t-free",
        "t3.1",
        "t3.2",
    ]


def test_a_scope_filter_must_be_a_set_of_scope_ids(store: Store) -> None:
    nul = frozenset({"a\x00b"})
    for bad in ("a.b", ["a.b"], frozenset({1}), nul):
        q = TimerQuery(scope_ids=bad)  # type: ignore[arg-type]
        raises(Invalid, lambda q=q: at(store, T0, lambda t: t.query_timers(q)), repr(bad))
        raises(Invalid, lambda q=q: at(store, T0, lambda t: t.count_timers(q)), repr(bad))
