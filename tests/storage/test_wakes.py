"""The Wait match written once (``storage.meaning.wakes``): the runtime wakes with it
and the console explains near misses with it, so each clause is pinned here."""

from __future__ import annotations

import pytest

from storage import StoredEvent, WaitMiss, wait_misses, wakes

from .support import key, make_event, make_wait

ORDER = key("order-1")


def stored(seq: int, type: str = "payment.settled", keys=(ORDER,)) -> StoredEvent:
    return StoredEvent(make_event(f"e{seq}", type=type, keys=keys), seq)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (stored(11), ()),
        (stored(10), (WaitMiss.BEFORE,)),  # the boundary is exclusive
        (stored(3), (WaitMiss.BEFORE,)),
        (stored(12, type="payment.failed"), (WaitMiss.TYPE,)),
        (stored(12, keys=(key("order-2"),)), (WaitMiss.KEY,)),
        (stored(12, keys=()), (WaitMiss.KEY,)),
        (stored(12, keys=(key("order-2"), ORDER)), ()),  # any one listed key
        (stored(2, type="x.y", keys=()), (WaitMiss.BEFORE, WaitMiss.TYPE, WaitMiss.KEY)),
    ],
)
def test_every_clause_an_event_fails_is_named(event, expected):
    wait = make_wait(types=["payment.settled"], keys=[ORDER], after_sequence=10)

    assert wait_misses(wait, event) == expected
    assert wakes(wait, event) is (expected == ())


def test_a_wait_listing_no_type_or_key_takes_any_event_after_its_boundary():
    wait = make_wait(after_sequence=5)

    assert wakes(wait, stored(6, type="anything", keys=()))
    assert wait_misses(wait, stored(5)) == (WaitMiss.BEFORE,)
