"""The dashboards' "right now" lists of a Scope subtree: the longest running attempts
(``running_executions``), the running attempts whose lease expired
(``expired_executions``) and the overdue Timers (``overdue_timers``), with their
counts (``count_expired_executions``, ``count_overdue_timers``). On every backend
they equal their meaning in ``storage.meaning.series`` over the stored records, and
select a Scope's attempts by their Work's Scope (the ORM reads it from the attempt's
own column, written at its INSERT) without reading the Scope's Work."""

from __future__ import annotations

from storage import Invalid, Store, Tx, seconds
from storage.meaning.series import select_expired, select_overdue, select_running

from ..support import FakeClock, ids, make_execution, make_scope, make_timer, make_work, raises, tx
from ._helpers import X_COMPLETED, terminate

SELECTIONS: list[list[str] | None] = [None, ["acme"], ["acme", "globex"], [""], []]


def _seed(store: Store, clock: FakeClock) -> None:
    def scopes(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        t.put_scope(make_scope("globex"))
        for w, scope in (("a1", "acme"), ("a2", "acme"), ("g1", "globex"), ("n1", "")):
            t.put_work(make_work(w, scope_id=scope))

    tx(store, scopes)
    # Claimed one second apart, with leases of 10, 20, 30 and 40 seconds.
    for i, w in enumerate(("g1", "a2", "n1", "a1")):
        clock.advance(1)

        def start(t: Tx, w: str = w, i: int = i) -> None:
            x = t.put_execution(make_execution(f"{w}-x1", w, 1))
            t.claim(x.id, "runner", t.now + seconds(10 * (i + 1)))

        tx(store, start)

    def settle(t: Tx) -> None:
        # One attempt ends (no longer running); Timers, one serving no Work.
        terminate(t, "n1-x1", X_COMPLETED, None)
        t.put_timer(make_timer("t-a1", t.now + seconds(5), work_id="a1"))
        t.put_timer(make_timer("t-g1", t.now + seconds(15), work_id="g1"))
        t.put_timer(make_timer("t-none", t.now + seconds(5)))

    tx(store, settle)


def _expected(t: Tx, at: int, scope_ids: list[str] | None) -> tuple[list[str], ...]:
    scope_of = {w.id: w.scope_id for w in t.works()}
    attempts = t.executions()
    return (
        ids(select_running(scope_ids, 0, attempts, scope_of)),
        ids(select_expired(at, scope_ids, attempts, scope_of)),
        ids(select_overdue(at, scope_ids, t.timers(), scope_of)),
    )


def test_the_live_lists_of_a_scope_agree_with_their_meaning(store: Store, clock: FakeClock) -> None:
    _seed(store, clock)
    start = clock()
    for later in (0, 12, 25, 60):
        at = start + seconds(later)

        def check(t: Tx, at: int = at) -> None:
            for scope_ids in SELECTIONS:
                got = (
                    ids(t.running_executions(scope_ids)),
                    ids(t.expired_executions(at, scope_ids)),
                    ids(t.overdue_timers(at, scope_ids)),
                )
                assert got == _expected(t, at, scope_ids), (at, scope_ids)
                # Counted without decoding; a limit keeps the first.
                assert t.count_expired_executions(at, scope_ids) == len(got[1])
                assert t.count_overdue_timers(at, scope_ids) == len(got[2])
                assert ids(t.expired_executions(at, scope_ids, 1)) == got[1][:1]
                # A limit within several Scopes (the ORM merges each Scope's first).
                assert ids(t.running_executions(scope_ids, 2)) == got[0][:2]
                assert ids(t.expired_executions(at, scope_ids, 2)) == got[1][:2]
                assert ids(t.overdue_timers(at, scope_ids, 1)) == got[2][:1]

        store.view(check)

    def spot_checks(t: Tx) -> None:
        # Longest running first; a limit keeps the first.
        assert ids(t.running_executions()) == ["g1-x1", "a2-x1", "a1-x1"]
        assert ids(t.running_executions(["acme"], limit=1)) == ["a2-x1"]
        # 25 s after the last claim: g1's (10 s) and a2's (20 s) leases have expired.
        assert ids(t.expired_executions(start + seconds(25))) == ["g1-x1", "a2-x1"]
        assert ids(t.expired_executions(start + seconds(25), ["acme"])) == ["a2-x1"]
        # A Timer serving no Work has Scope "".
        assert ids(t.overdue_timers(start + seconds(5), [""])) == ["t-none"]
        assert ids(t.overdue_timers(start + seconds(60), ["acme", "globex"])) == ["t-a1", "t-g1"]

    store.view(spot_checks)


def test_the_live_lists_refuse_a_bare_string_of_scopes(store: Store) -> None:
    def bare(t: Tx) -> None:
        what = "a string is not a list of Scopes"
        raises(Invalid, lambda: t.running_executions("acme"), what)  # type: ignore[arg-type]
        raises(Invalid, lambda: t.expired_executions(0, "acme"), what)  # type: ignore[arg-type]
        raises(Invalid, lambda: t.overdue_timers(0, "acme"), what)  # type: ignore[arg-type]
        raises(Invalid, lambda: t.running_executions(None, -1), "a negative limit")
        raises(Invalid, lambda: t.expired_executions(0, None, -1), "a negative limit")
        raises(Invalid, lambda: t.overdue_timers(0, None, -1), "a negative limit")

    store.view(bare)
