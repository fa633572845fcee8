"""A View's ``now`` read from the clock is never earlier than the last commit's
``Guard.now`` (issue 20), as a transaction's is: a clock that steps back must not show
a lease as live or a Timer as not yet due that a committed transaction saw past."""

from __future__ import annotations

from storage import Store, Tx

from ..support import FakeClock, make_work, tx


def test_a_view_never_reads_a_now_earlier_than_the_last_commit(
    store: Store, clock: FakeClock
) -> None:
    committed = tx(store, lambda t: (t.put_work(make_work("w1")), t.now)[1])
    clock.set(committed - 10**9)  # the host clock steps back a second

    def now(t: Tx) -> int:
        return t.now

    assert store.view(now) == committed
    assert tx(store, now) == committed  # what a transaction already does
    clock.set(committed + 5)
    assert store.view(now) == committed + 5


def test_a_view_given_a_now_uses_it(store: Store, clock: FakeClock) -> None:
    committed = tx(store, lambda t: (t.put_work(make_work("w1")), t.now)[1])

    assert store.view(lambda t: t.now, now=committed - 7) == committed - 7
