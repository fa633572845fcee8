"""query_executions: the Executions page's paged read of attempts, on every backend.

A data set of attempts in two Scopes and two kinds, claimed at known instants, some
never claimed and one with an expired lease; every filter, the order (latest first
claim first, never-claimed last) and the keyset pages must come out the same from the
reference double and the SQL backend, as ``storage/meaning/executions.py`` says.
"""

from __future__ import annotations

from dataclasses import replace

from storage import (
    ExecutionKey,
    ExecutionQuery,
    ExecutionState,
    Invalid,
    LeaseKey,
    Store,
    Tx,
    seconds,
)

from ..support import CLOCK_START, FakeClock, ids, make_execution, make_scope, make_work, raises, tx
from ._helpers import X_COMPLETED, terminate

T0 = CLOCK_START + seconds(60)


def at(store: Store, when: int, fn: object) -> object:
    return tx(store, fn, clock=lambda: when)  # type: ignore[arg-type]


def seed(store: Store) -> None:
    """Work a1 (acme, billing.charge): x-a1-1 completed, x-a1-2 running (claimed at T0+3s, its
    lease expires at T0+13s). Work a2 (acme, billing.refund): x-a2-1 running, claimed at
    T0+1s, leased for an hour. Work g1 (globex, billing.charge): x-g1-1 pending, never claimed.
    Work n1 (no Scope, billing.charge): x-n1-1 claimed at T0+3s too (ties broken by ID)."""

    def scopes(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        t.put_scope(make_scope("globex"))
        t.put_work(make_work("a1", kind="billing.charge", scope_id="acme"))
        t.put_work(make_work("a2", kind="billing.refund", scope_id="acme"))
        t.put_work(make_work("g1", kind="billing.charge", scope_id="globex"))
        t.put_work(make_work("n1", kind="billing.charge"))
        t.put_execution(make_execution("x-g1-1", "g1", 1))

    at(store, T0, scopes)

    def claim(x: str, work: str, attempt: int, lease: int) -> object:
        def fn(t: Tx) -> None:
            t.put_execution(make_execution(x, work, attempt))
            t.claim(x, "runner", t.now + lease)

        return fn

    at(store, T0 + seconds(1), claim("x-a2-1", "a2", 1, seconds(3600)))
    at(store, T0 + seconds(2), claim("x-a1-1", "a1", 1, seconds(30)))
    at(
        store,
        T0 + seconds(2),
        lambda t: terminate(t, "x-a1-1", X_COMPLETED, None),
    )
    at(store, T0 + seconds(3), claim("x-a1-2", "a1", 2, seconds(10)))
    at(store, T0 + seconds(3), claim("x-n1-1", "n1", 1, seconds(3600)))


def query(store: Store, q: ExecutionQuery, when: int = T0 + seconds(20)) -> list[str]:
    return ids(at(store, when, lambda t: t.query_executions(q)))  # type: ignore[arg-type]


def test_attempts_come_latest_claim_first_and_every_filter_narrows(
    store: Store, clock: FakeClock
) -> None:
    seed(store)
    # First: a transaction's now never goes back behind one already committed.
    assert query(store, ExecutionQuery(expired=True), T0 + seconds(5)) == []
    running = frozenset({ExecutionState.RUNNING})
    assert {
        "all": query(store, ExecutionQuery()),
        "running": query(store, ExecutionQuery(states=running)),
        "billing.charge": query(store, ExecutionQuery(kinds=frozenset({"billing.charge"}))),
        "charge or refund": query(
            store, ExecutionQuery(kinds=frozenset({"billing.charge", "billing.refund"}))
        ),
        "acme": query(store, ExecutionQuery(scope_ids=frozenset({"acme"}))),
        "no scope": query(store, ExecutionQuery(scope_ids=frozenset({""}))),
        "no scopes at all": query(store, ExecutionQuery(scope_ids=frozenset())),
        "work a": query(store, ExecutionQuery(work_id_prefix="a")),
        "work a1 exactly": query(store, ExecutionQuery(work_id_prefix="a1")),
        "expired": query(store, ExecutionQuery(expired=True)),
        "charge in acme": query(
            store,
            ExecutionQuery(kinds=frozenset({"billing.charge"}), scope_ids=frozenset({"acme"})),
        ),
    } == {
        # x-n1-1 and x-a1-2 share their claim instant: the higher ID first.
        "all": ["x-n1-1", "x-a1-2", "x-a1-1", "x-a2-1", "x-g1-1"],
        "running": ["x-n1-1", "x-a1-2", "x-a2-1"],
        "billing.charge": ["x-n1-1", "x-a1-2", "x-a1-1", "x-g1-1"],
        "charge or refund": ["x-n1-1", "x-a1-2", "x-a1-1", "x-a2-1", "x-g1-1"],
        "acme": ["x-a1-2", "x-a1-1", "x-a2-1"],
        "no scope": ["x-n1-1"],
        "no scopes at all": [],
        "work a": ["x-a1-2", "x-a1-1", "x-a2-1"],
        "work a1 exactly": ["x-a1-2", "x-a1-1"],
        "expired": ["x-a1-2"],
        "charge in acme": ["x-a1-2", "x-a1-1"],
    }


def test_keyset_pages_cover_every_attempt_once_in_order(store: Store, clock: FakeClock) -> None:
    seed(store)
    everything = query(store, ExecutionQuery())
    seen: list[str] = []
    after: ExecutionKey | None = None
    while True:
        page = at(
            store,
            T0 + seconds(20),
            lambda t, a=after: t.query_executions(ExecutionQuery(after=a, limit=2)),
        )
        assert isinstance(page, list)
        if not page:
            break
        seen += ids(page)
        after = ExecutionQuery.key_of(page[-1])
    assert seen == everything


def test_the_lease_order_and_expiring_by_select_running_attempts(
    store: Store, clock: FakeClock
) -> None:
    """The Executions page's "expiring soon": running attempts only, the soonest lease
    expiry first (an expired lease first of all), keyset pages in that order; and
    ``expiring_by`` keeps the leases still live that expire by then (exclusive of now,
    inclusive of the bound)."""
    seed(store)
    now = T0 + seconds(20)
    # Leases: x-a1-2 expired at T0+13s, x-a2-1 expires at T0+3601s, x-n1-1 at T0+3603s.
    assert query(store, ExecutionQuery(by_lease=True)) == ["x-a1-2", "x-a2-1", "x-n1-1"]
    soon = ExecutionQuery(expiring_by=T0 + seconds(3601))
    assert query(store, soon) == ["x-a2-1"], "expiring by: live leases up to the bound"
    assert query(store, ExecutionQuery(expiring_by=now)) == [], "nothing live expires by now"
    both = ExecutionQuery(by_lease=True, expiring_by=T0 + seconds(3603))
    assert query(store, both) == ["x-a2-1", "x-n1-1"]
    charge = ExecutionQuery(by_lease=True, kinds=frozenset({"billing.charge"}))
    assert query(store, charge) == ["x-a1-2", "x-n1-1"], "other filters still apply"
    seen: list[str] = []
    after: LeaseKey | None = None
    while True:
        q = ExecutionQuery(by_lease=True, after_lease=after, limit=2)
        page = at(store, now, lambda t, q=q: t.query_executions(q))
        assert isinstance(page, list)
        if not page:
            break
        seen += ids(page)
        after = ExecutionQuery.lease_key_of(page[-1])
    assert seen == ["x-a1-2", "x-a2-1", "x-n1-1"], "lease-order pages cover each once"
    bad = {
        "after_lease without the lease order": ExecutionQuery(after_lease=LeaseKey(0, "x")),
        "after in the lease order": ExecutionQuery(by_lease=True, after=ExecutionKey(0, "x")),
        "a negative expiring_by": ExecutionQuery(expiring_by=-1),
    }
    for what, q in bad.items():
        tx(store, lambda t, q=q, what=what: raises(Invalid, lambda: t.query_executions(q), what))


def test_a_prefix_is_exact_characters_not_a_pattern(store: Store, clock: FakeClock) -> None:
    def fn(t: Tx) -> None:
        for work_id in ("a%b", "a_b", "aXb", "A%b"):
            t.put_work(make_work(work_id))
            t.put_execution(make_execution(f"x-{work_id}", work_id, 1))

    tx(store, fn)
    assert query(store, ExecutionQuery(work_id_prefix="a%")) == ["x-a%b"]
    assert query(store, ExecutionQuery(work_id_prefix="a_")) == ["x-a_b"]


def test_it_refuses_a_query_no_backend_could_answer_alike(store: Store, clock: FakeClock) -> None:
    def fn(t: Tx) -> None:
        raises(Invalid, lambda: t.query_executions(ExecutionQuery(limit=-1)), "negative limit")
        bad_scopes = replace(ExecutionQuery(), scope_ids="acme")  # type: ignore[arg-type]
        raises(Invalid, lambda: t.query_executions(bad_scopes), "a string of Scopes")
        raises(
            Invalid,
            lambda: t.query_executions(ExecutionQuery(work_id_prefix="a\x00")),
            "a NUL in the prefix",
        )
        raises(
            Invalid,
            lambda: t.query_executions(ExecutionQuery(states=frozenset({"running"}))),  # type: ignore[arg-type]
            "a state that is not an ExecutionState",
        )

    tx(store, fn)


def test_works_of_reads_the_listed_work_that_exist_by_id(store: Store, clock: FakeClock) -> None:
    seed(store)
    found = tx(store, lambda t: t.works_of(["n1", "a2", "missing", "a2"]))
    assert ids(found) == ["a2", "n1"]
    assert tx(store, lambda t: t.works_of([])) == []
    tx(store, lambda t: raises(Invalid, lambda: t.works_of("a2"), "a bare string"))
