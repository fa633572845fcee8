"""A Timer that moves to another Work inside a transaction is listed under its new
Work at once (issue 20): every answer inside the transaction equals what the database
gives after the commit, on every backend. The ORM's write-behind buffer indexes rows
by Work; a Timer is the one row kind whose Work can change (re-created under its ID
for another Work, or put again at its revision with another ``work_id``)."""

from __future__ import annotations

from dataclasses import replace

from storage import Store, Timer, Tx
from storage.ops.control import cancel_work

from ..support import FakeClock, ids, make_event, make_timer, make_work, tx

WORKS = ("wa", "wb")


def listings(t: Tx) -> dict[str, list[str]]:
    return {w: ids(t.timers(w)) for w in WORKS}


def again(t: Tx) -> Timer:
    """Timer t1 re-created for the second Work, with a fresh fire Event identity."""
    fire = make_event("t1-again", source="core.timer")
    return make_timer("t1", t.now + 10**9, template=fire, work_id="wb")


def setup(store: Store) -> int:
    """Two Work, and Timer t1 of the first; returns the Timer's revision."""

    def fn(t: Tx) -> int:
        for w in WORKS:
            t.put_work(make_work(w))
        return t.put_timer(make_timer("t1", t.now, work_id="wa")).revision

    return tx(store, fn)


def test_a_timer_fired_and_recreated_for_another_work_is_listed_under_it(
    store: Store, clock: FakeClock
) -> None:
    revision = setup(store)

    def fn(t: Tx) -> dict[str, list[str]]:
        listings(t)  # both Work's Timers read (and cached) before the move
        t.fire_timer("t1", revision)
        t.put_timer(again(t))
        return listings(t)

    inside = tx(store, fn)

    assert inside == tx(store, listings) == {"wa": [], "wb": ["t1"]}


def test_a_timer_put_at_its_revision_for_another_work_moves(store: Store, clock: FakeClock) -> None:
    revision = setup(store)

    def fn(t: Tx) -> dict[str, list[str]]:
        listings(t)
        t.put_timer(replace(make_timer("t1", t.now, work_id="wb"), revision=revision))
        return listings(t)

    inside = tx(store, fn)

    assert inside == tx(store, listings) == {"wa": [], "wb": ["t1"]}


def test_a_timer_recreated_from_an_older_tombstone_is_listed_under_its_new_work(
    store: Store, clock: FakeClock
) -> None:
    revision = setup(store)
    tx(store, lambda t: t.delete_timer("t1", revision))

    def fn(t: Tx) -> dict[str, list[str]]:
        listings(t)
        t.put_timer(again(t))
        return listings(t)

    inside = tx(store, fn)

    assert inside == tx(store, listings) == {"wa": [], "wb": ["t1"]}


def test_cancelling_the_new_work_in_the_same_transaction_removes_the_moved_timer(
    store: Store, clock: FakeClock
) -> None:
    revision = setup(store)

    def fn(t: Tx) -> None:
        listings(t)
        t.fire_timer("t1", revision)
        t.put_timer(again(t))
        cancel_work(t, "wb")

    tx(store, fn)

    # No live retry timer may point at a cancelled Work.
    assert tx(store, lambda t: ids(t.timers())) == []
