"""``Tx.work_mark``: what changes whenever anything of a Work's page changes (its
record, attempts, Waits, Timers, timeline Events, first children), read from indexes
alone, so a live Work page can poll it instead of rebuilding while the runtime commits
elsewhere (issue 35). The promise is one-way: a different page means a different mark.
The property at the end checks it over random programs of every kind of change, each
Work's page read in full beside its mark after every transaction."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from storage import Invalid, Store, Tx, WorkOrder, WorkQuery, WorkState, view

from ..support import (
    FakeClock,
    fails,
    lease_of,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    payload,
    tx,
)

HOUR = 3600 * 10**9
CHILDREN = 2  # a small cap, so a child past it is tried too


def page(t: Tx, work_id: str) -> tuple[Any, ...]:
    """Everything the Work's page reads about it (``console.works.reads``)."""
    children = t.query_works(
        WorkQuery(parent_id=work_id, order=WorkOrder.CREATED_ASC, limit=CHILDREN + 1)
    )
    return (
        t.work(work_id),
        sorted(t.executions(work_id), key=lambda x: x.attempt),
        t.waits(work_id),
        sorted(t.timers(work_id), key=lambda x: x.id),
        t.work_events(work_id),
        children,
    )


def mark(store: Store, work_id: str = "w1") -> Any:
    return view(store, None, lambda t: t.work_mark(work_id, CHILDREN))


def setup(t: Tx) -> None:
    """w1 with a running attempt, a Timer, an Event and a child; w2 with a Timer; two
    Events no route has taken."""
    t.put_scope(make_scope("s1"))
    t.put_work(make_work("w1"))
    t.put_work(make_work("w2"))
    t.put_work(make_work("c1", parent_id="w1"))
    t.put_execution(make_execution("x1", "w1"))
    t.claim("x1", "runner", t.now + HOUR)
    t.put_timer(make_timer("t1", t.now + HOUR, work_id="w1"))
    t.put_timer(make_timer("t2", t.now + HOUR, work_id="w2"))
    for event in (make_event("e1", work_id="w1"), make_event("e2"), make_event("e3")):
        t.accept_event(event)


def _later(t: Tx, timer_id: str, **changes: Any) -> None:
    timer = t.timer(timer_id)
    t.put_timer(replace(timer, fire_at=timer.fire_at + 1, **changes))


CHANGED: dict[str, Callable[[Tx], object]] = {
    "the Work rewritten": lambda t: t.put_work(replace(t.work("w1"), context=payload(b'{"n": 2}'))),
    "its attempt's lease renewed": lambda t: t.renew(
        lease_of(t.execution("x1")), t.execution("x1").lease_expires_at + 1
    ),
    "its attempt parked on a Wait": lambda t: park(t, "x1", make_wait("wt1", "w1", "x1")),
    "its Timer rescheduled": lambda t: _later(t, "t1"),
    "its Timer deleted": lambda t: t.delete_timer("t1", t.timer("t1").revision),
    "its Timer moved away": lambda t: _later(t, "t1", work_id="w2"),
    "another Work's Timer moved to it": lambda t: _later(t, "t2", work_id="w1"),
    "an Event of it accepted": lambda t: t.accept_event(make_event("e4", work_id="w1")),
    "an Event routed to it": lambda t: t.mark_routed("e2", "w1", "routed"),
    "its Event routed elsewhere": lambda t: t.mark_routed("e1", "w2", "routed"),
    "its Event given a Scope": lambda t: t.set_event_scope("e1", "s1"),
    "a child created": lambda t: t.put_work(make_work("c2", parent_id="w1")),
    "a child changed": lambda t: t.put_work(replace(t.work("c1"), context=payload())),
}

UNCHANGED: dict[str, Callable[[Tx], object]] = {
    "another Work rewritten": lambda t: t.put_work(replace(t.work("w2"), context=payload())),
    "another Work's Timer rescheduled": lambda t: _later(t, "t2"),
    "an Event of another Work": lambda t: t.accept_event(make_event("e5", work_id="w2")),
    "an Event routed elsewhere": lambda t: t.mark_routed("e3", "w2", "routed"),
    "a Timer armed for another Work": lambda t: t.put_timer(
        make_timer("t3", t.now + HOUR, work_id="w2")
    ),
    "a KV entry": lambda t: t.kv_put("ns", "k", b"v"),
    "a Scope": lambda t: t.put_scope(make_scope("s2")),
    "a child past the ones covered": lambda t: [
        t.put_work(make_work(f"c{n}", parent_id="w1")) for n in (7, 8)
    ],
}


@pytest.mark.parametrize("change", list(CHANGED))
def test_each_change_the_page_shows_changes_the_mark(store: Store, change: str) -> None:
    tx(store, setup)
    before, shown = mark(store), view(store, None, lambda t: page(t, "w1"))

    tx(store, CHANGED[change])

    assert view(store, None, lambda t: page(t, "w1")) != shown  # the page did change
    assert mark(store) != before


@pytest.mark.parametrize("change", list(UNCHANGED))
def test_a_change_elsewhere_leaves_the_mark(store: Store, change: str) -> None:
    tx(store, setup)
    if change == "a child past the ones covered":
        # The cap's children and the one more that says there are more.
        tx(store, lambda t: [t.put_work(make_work(f"c{n}", parent_id="w1")) for n in (5, 6)])
    before = mark(store)

    tx(store, UNCHANGED[change])

    assert mark(store) == before


def test_the_mark_counts_what_it_covers(store: Store) -> None:
    tx(store, setup)
    tx(store, lambda t: [t.put_work(make_work(f"c{n}", parent_id="w1")) for n in (2, 3)])
    tx(store, lambda t: t.mark_routed("e2", "w1", "routed"))

    found = mark(store)

    assert (found.timers, found.events, found.routed_events, found.scoped_events) == (1, 2, 1, 0)
    assert found.active_waits == 0
    assert found.newest_event == view(store, None, lambda t: t.event("e2").sequence)
    assert [id for id, _ in found.children] == ["c1", "c2", "c3"]  # the cap and one more
    assert all(position > 0 for _, position in found.children)
    assert found.position > 0
    assert view(store, None, lambda t: t.work_mark("w1")).children == ()


def test_bad_arguments_are_invalid(store: Store) -> None:
    for children in (-1, 1001, True, "3"):
        fails(store, Invalid, lambda t, c=children: t.work_mark("w1", c), f"children={children!r}")
    fails(store, Invalid, lambda t: t.work_mark(""), "an empty Work ID")


# -- the property over random programs ---------------------------------------------

OPS = (*CHANGED, *UNCHANGED)
_serial = itertools.count()


def _fresh(t: Tx, op: str, n: int) -> None:
    """``op`` where it can apply once more: fresh IDs for what it creates, and
    skipped when the setup's record it needs is gone or already set."""
    if op in ("an Event of it accepted", "an Event of another Work"):
        t.accept_event(make_event(f"e-{n}", work_id="w1" if "of it" in op else "w2"))
    elif op == "a Scope":
        t.put_scope(make_scope(f"s-{n}"))
    elif op in ("a child created", "a child past the ones covered"):
        t.put_work(make_work(f"c-{n}", parent_id="w1"))
    elif op in ("an Event routed to it", "its Event routed elsewhere", "an Event routed elsewhere"):
        event = {"an Event routed to it": "e2", "its Event routed elsewhere": "e1"}.get(op, "e3")
        if t.event(event).route is None:
            (CHANGED | UNCHANGED)[op](t)
    elif op == "its Event given a Scope":
        if not t.event("e1").scope_id:
            CHANGED[op](t)
    elif op == "its attempt parked on a Wait":
        if not t.waits("w1"):
            CHANGED[op](t)
    elif op in ("its Timer rescheduled", "its Timer deleted", "its Timer moved away"):
        if t.timers("w1") and any(x.id == "t1" for x in t.timers("w1")):
            CHANGED[op](t)
    elif op == "a Timer armed for another Work":
        t.put_timer(make_timer(f"t-{n}", t.now + HOUR, work_id="w2"))
    elif op == "another Work's Timer moved to it":
        if t.timers("w2"):
            _later(t, t.timers("w2")[0].id, work_id="w1")
    elif op == "another Work's Timer rescheduled":
        if any(x.id == "t2" for x in t.timers("w2")):
            UNCHANGED[op](t)
    elif op == "its attempt's lease renewed":
        if t.execution("x1").owner:
            CHANGED[op](t)
    else:
        (CHANGED | UNCHANGED)[op](t)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.lists(st.lists(st.sampled_from(OPS), min_size=1, max_size=3), max_size=8))
@example(program=[["a child created"], ["a child created"], ["a child changed"]])
@example(program=[["its Timer moved away", "another Work's Timer moved to it"]])
# A Timer arriving is no row under the Work it arrives at: only the count shows it.
@example(program=[["a Timer armed for another Work"], ["another Work's Timer moved to it"]])
def test_a_different_page_always_has_a_different_mark(
    store: Store, clock: FakeClock, program: list[list[str]]
) -> None:
    """After every transaction of a random program, w1's page differs from the one
    read before it only if its mark does too. The examples share the store, so each
    starts where the last one left off (the setup runs once) and names what it creates
    afresh; an operation whose record is gone or already set is skipped."""
    play(store, clock, program, lambda t: (page(t, "w1"), t.work_mark("w1", CHILDREN)))


def play(
    store: Store,
    clock: FakeClock,
    program: list[list[str]],
    read: Callable[[Tx], tuple[Any, Any]],
) -> None:
    """Run ``program`` a transaction per step list (after the setup, once per store)
    and check after each that where ``read``'s shown part (first) changed, its mark
    (second) changed too."""
    if not view(store, None, lambda t: bool(t.works_of(["w1"]))):
        tx(store, setup)
    for steps in program:
        before = view(store, None, read)
        clock.advance(1)

        def run(t: Tx, steps: list[str] = steps) -> None:
            for op in steps:
                _fresh(t, op, next(_serial))

        tx(store, run)
        after = view(store, None, read)
        if after[0] != before[0]:
            assert after[1] != before[1], steps


# -- a page of Work: works_mark -----------------------------------------------------

PAGES = {
    "oldest first": WorkQuery(order=WorkOrder.CREATED_ASC, limit=2),
    # Two states: read as one index range per state, merged (storage/orm/keyset.py).
    "ready or running, least recently changed": WorkQuery(
        states=frozenset({WorkState.READY, WorkState.RUNNING}),
        order=WorkOrder.UPDATED_ASC,
        limit=2,
    ),
}


def listed(t: Tx, query: WorkQuery) -> tuple[Any, ...]:
    """What a list shows of a page: its Work, and each one's attempts, Waits, Timers."""
    works = t.query_works(query)
    return tuple(
        (w, t.executions(w.id), t.waits(w.id), sorted(t.timers(w.id), key=lambda x: x.id))
        for w in works
    )


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("change", list(CHANGED))
def test_a_change_to_a_listed_work_changes_the_page_mark(
    store: Store, page: str, change: str
) -> None:
    """w1 is on both pages (oldest; ready, then running once claimed): every change
    to it or its records that the list shows changes the mark."""
    query = PAGES[page]
    tx(store, setup)
    before = view(store, None, lambda t: (listed(t, query), t.works_mark(query)))
    assert "w1" in before[1].ids

    tx(store, CHANGED[change])

    after = view(store, None, lambda t: (listed(t, query), t.works_mark(query)))
    if after[0] != before[0]:
        assert after[1] != before[1]


def test_a_work_past_the_page_leaves_its_mark(store: Store) -> None:
    query = PAGES["oldest first"]
    tx(store, setup)
    before = view(store, None, lambda t: t.works_mark(query))
    assert before.ids == ("c1", "w1")  # c1 was created first, in the same transaction

    tx(store, UNCHANGED["another Work rewritten"])
    tx(store, UNCHANGED["another Work's Timer rescheduled"])
    tx(store, lambda t: t.put_work(make_work("zz-later")))  # after w1 and w2 (a tie on time)

    assert view(store, None, lambda t: t.works_mark(query)) == before


def test_a_page_mark_needs_a_bounded_page(store: Store) -> None:
    for limit in (0, 501):
        fails(
            store,
            Invalid,
            lambda t, n=limit: t.works_mark(WorkQuery(limit=n)),
            f"a page of {limit}",
        )
    assert view(store, None, lambda t: t.works_mark(WorkQuery(limit=500))).ids == ()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    program=st.lists(st.lists(st.sampled_from(OPS), min_size=1, max_size=3), max_size=8),
    page=st.sampled_from(list(PAGES)),
)
@example(
    program=[["a Timer armed for another Work"], ["another Work's Timer moved to it"]],
    page="oldest first",
)
def test_a_different_page_of_work_always_has_a_different_mark(
    store: Store, clock: FakeClock, program: list[list[str]], page: str
) -> None:
    """As the Work page's property, for a page of Work: after every transaction of a
    random program, the page differs from before only if its mark does too."""
    query = PAGES[page]
    play(store, clock, program, lambda t: (listed(t, query), t.works_mark(query)))
