"""Finding records by ID prefix (``Tx.find_ids``, meaning in ``storage.meaning.ids``):
every kind with an ID, its owning Work, a limit per kind, and exact prefix matching
for any ID the identifier rule allows (multibyte, ``%``, ``_``, ``\\``, U+10FFFF)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import IdKind, IdMatch, Invalid, Store, Tx
from storage.meaning.ids import FIND_IDS_MAX, prefix_upper

from ..support import (
    FakeClock,
    fails,
    make_event,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    start_attempt,
    tx,
)
from ..support.run_records import ordinary_record


def _one_of_each(store: Store) -> None:
    """A record of every kind, each ID starting "abc123-", plus look-alikes that differ
    only after the prefix or by case."""
    start_attempt(store, work_id="abc123-work", execution_id="abc123-exec")

    def fill(t: Tx) -> None:
        t.put_scope(make_scope("abc123-scope"))
        t.put_work(make_work("ABC123-work"))  # other case: not a match
        t.accept_event(make_event("abc123-event", work_id="abc123-work"))
        t.accept_event(make_event("abc123-loose"))  # names no Work
        park(t, "abc123-exec", make_wait("abc123-wait", "abc123-work", "abc123-exec"))
        t.put_timer(make_timer("abc123-timer", t.now + 10**9, work_id="abc123-work"))
        t.put_timer(make_timer("abc123-gone", t.now + 10**9, work_id="abc123-work"))
        t.put_run_record(ordinary_record("abc123-run"), 0)

    tx(store, fill)
    tx(store, lambda t: t.delete_timer("abc123-gone", t.timer("abc123-gone").revision))


def test_it_finds_every_kind_by_prefix_with_its_owning_work(store: Store, clock: FakeClock) -> None:
    _one_of_each(store)
    found = tx(store, lambda t: t.find_ids("abc123"))
    assert found == [
        IdMatch(IdKind.WORK, "abc123-work", "abc123-work"),
        IdMatch(IdKind.EVENT, "abc123-event", "abc123-work"),
        IdMatch(IdKind.EVENT, "abc123-loose", ""),
        IdMatch(IdKind.EXECUTION, "abc123-exec", "abc123-work"),
        IdMatch(IdKind.WAIT, "abc123-wait", "abc123-work"),
        IdMatch(IdKind.TIMER, "abc123-timer", "abc123-work"),
        IdMatch(IdKind.SCOPE, "abc123-scope", ""),
        IdMatch(IdKind.RUN, "abc123-run", ""),
    ]


def test_an_exact_id_is_its_own_prefix_and_a_view_answers_too(
    store: Store, clock: FakeClock
) -> None:
    _one_of_each(store)
    assert tx(store, lambda t: t.find_ids("abc123-wait")) == [
        IdMatch(IdKind.WAIT, "abc123-wait", "abc123-work")
    ]
    assert tx(store, lambda t: t.find_ids("abc123-x")) == []
    assert tx(store, lambda t: t.find_ids("ABC123")) == [
        IdMatch(IdKind.WORK, "ABC123-work", "ABC123-work")
    ]


def test_it_returns_at_most_limit_of_each_kind_in_id_order(store: Store, clock: FakeClock) -> None:
    def fill(t: Tx) -> None:
        for n in (5, 3, 9, 1, 7):
            t.put_work(make_work(f"batch-{n}"))
            t.accept_event(make_event(f"batch-e{n}"))

    tx(store, fill)
    found = tx(store, lambda t: t.find_ids("batch-", limit=2))
    assert found == [
        IdMatch(IdKind.WORK, "batch-1", "batch-1"),
        IdMatch(IdKind.WORK, "batch-3", "batch-3"),
        IdMatch(IdKind.EVENT, "batch-e1", ""),
        IdMatch(IdKind.EVENT, "batch-e3", ""),
    ]


@pytest.mark.parametrize(
    ("prefix", "limit"),
    [("", 10), ("a\x00", 10), ("x" * 256, 10), ("abc", 0), ("abc", FIND_IDS_MAX + 1)],
    ids=["empty", "nul", "too-long", "limit-0", "limit-over-max"],
)
def test_it_refuses_a_prefix_or_limit_outside_the_rule(
    store: Store, clock: FakeClock, prefix: str, limit: int
) -> None:
    fails(store, Invalid, lambda t: t.find_ids(prefix, limit), f"find_ids({prefix!r}, {limit})")


# Characters that break naive prefix matching: LIKE's wildcards and escape, a
# character of each UTF-8 length, the edges of the surrogate gap, U+FFFF and the last
# code point (whose successor does not exist), and case.
TRICKY = "aA%_\\é€\ud7ff\ue000\uffff\U0001d11e\U0010ffff"
ids = st.text(alphabet=TRICKY, min_size=1, max_size=5)
_examples = itertools.count()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stored=st.sets(ids, min_size=1, max_size=8), probes=st.lists(ids, min_size=1, max_size=4))
def test_prefix_matches_are_exactly_the_ids_that_start_with_it(
    store: Store, clock: FakeClock, stored: set[str], probes: list[str]
) -> None:
    """Against the meaning (``str.startswith``, what the reference double does): each
    example writes under its own namespace so examples share the store; probes are
    arbitrary strings and prefixes of stored IDs, as Work and as Event IDs (the Event
    ID column has the database's collation on PostgreSQL, the others binary)."""
    space = f"h{next(_examples)}\U0010ffff"  # no other example's ID extends this one
    full = sorted(space + i for i in stored)

    def fill(t: Tx) -> None:
        for i in full:
            t.put_work(make_work(i))
            t.accept_event(make_event(i))

    tx(store, fill)
    cut = [i[: len(space) + n] for i in full[:2] for n in range(1, 4)]
    for probe in [*(space + p for p in probes), *cut, space]:
        expected = [i for i in full if i.startswith(probe)][:FIND_IDS_MAX]
        found = tx(store, lambda t, p=probe: t.find_ids(p, FIND_IDS_MAX))
        assert [m.id for m in found if m.kind is IdKind.WORK] == expected, probe
        assert [m.id for m in found if m.kind is IdKind.EVENT] == expected, probe


@given(prefix=st.text(alphabet=TRICKY, min_size=1, max_size=4), tail=st.text(TRICKY, max_size=3))
def test_the_upper_bound_is_above_every_extension_and_below_every_other_string(
    prefix: str, tail: str
) -> None:
    upper = prefix_upper(prefix)
    if upper is None:
        assert set(prefix) == {"\U0010ffff"}
        return
    assert prefix + tail < upper
    assert not upper.startswith(prefix)
    upper.encode("utf-8")  # never a surrogate
