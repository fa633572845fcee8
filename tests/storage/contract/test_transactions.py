"""Transactions (checklist §11, T)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from storage import (
    Cancelled,
    CancelToken,
    Conflict,
    Guard,
    Invalid,
    NotFound,
    StorageError,
    Store,
    Tx,
    TxClosed,
    WaitState,
    seconds,
)
from storage.api import WRITES

from ..support import (
    BLOCK_TIMEOUT,
    TTL,
    Crash,
    FakeClock,
    Worker,
    crashes,
    fails,
    ids,
    key,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    payload,
    put_works,
    raises,
    start_attempt,
    tx,
    update_work,
)
from ._helpers import RUNNING, WAITING, X_PARKED, inventory

# ---------------------------------------------------------------------------------
# 11. Transactions (T)
# ---------------------------------------------------------------------------------


def test_transact_is_the_only_write_path(store: Store, clock: FakeClock) -> None:
    """T-01: the store itself has no write operation; writes need a live Tx."""
    exposed = [name for name in sorted(WRITES) if hasattr(store, name)]
    assert exposed == [], f"T-01: the store exposes writes outside transact: {exposed}"


def test_callback_runs_once(store: Store, clock: FakeClock) -> None:
    """T-02: the callback runs exactly once per transact: on success, on a callback
    error, on a failure at commit and on cancellation; no transparent retries."""
    start_attempt(store)
    calls: list[str] = []

    def counted(name: str, body: Callable[[Tx], object]) -> Callable[[Tx], object]:
        def run(t: Tx) -> object:
            calls.append(name)
            return body(t)

        return run

    def boom(t: Tx) -> None:
        raise Crash("callback error")

    def cancel(t: Tx, token: CancelToken) -> None:
        t.put_work(make_work("w-cancelled"))
        token.cancel()

    tx(store, counted("ok", lambda t: t.put_work(make_work("w2"))))
    crashes(store, counted("error", boom), "T-02 callback error")
    # A Wait registered without parking fails only at commit (WT-02).
    fails(
        store,
        Invalid,
        counted("commit", lambda t: t.put_wait(make_wait("wt1"))),
        "T-02 commit failure",
    )
    token = CancelToken()
    with contextlib.suppress(Cancelled):
        store.transact(Guard(cancel=token), counted("cancel", lambda t: cancel(t, token)))
    assert calls == ["ok", "error", "commit", "cancel"], f"T-02: callback calls were {calls}"


def test_callback_error_rolls_back(store: Store, clock: FakeClock) -> None:
    """T-03, T-10: a storage error returned (raised) by the callback rolls back every
    earlier write and transact raises that same error."""
    put_works(store, make_work("w1"))
    before = inventory(store)
    seen: list[StorageError] = []

    def fn(t: Tx) -> None:
        t.put_work(replace(t.work("w1"), state=RUNNING))
        t.accept_event(make_event("e1"))
        try:
            t.put_work(make_work("w2", kind="nodot"))
        except Invalid as err:
            seen.append(err)
            raise

    caught = fails(store, Invalid, fn, "T-03 callback error")
    assert seen, "T-03: the operation did not raise"
    assert caught is seen[0], "T-03: transact did not return the callback's error"
    assert inventory(store) == before, "T-03: writes before a callback error were committed"


def test_panic_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "panic rollback" (T-04, T-09): an exception from the callback after
    writes of every kind rolls all of them back and propagates unchanged."""
    put_works(store, make_work("w0", keys=[key("0")]))
    before = inventory(store, "ns")
    boom = Crash("panic inside the callback")

    def fn(t: Tx) -> None:
        t.put_scope(make_scope("s1"))
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_work(replace(t.work("w0"), state=RUNNING, keys=(key("0"), key("0b"))))
        t.accept_event(make_event("e1", work_id="w1"))
        t.mark_routed("e1", "w1", "routed")
        t.put_execution(make_execution("x1", "w1"))
        t.claim("x1", "runner-a", t.now + TTL)
        t.put_timer(make_timer("t1", t.now + seconds(5), work_id="w1"))
        t.kv_put("ns", "cursor", b"42")
        raise boom

    raised = crashes(store, fn, "panic rollback")
    assert raised is boom, "panic rollback: transact did not propagate the same exception"
    assert inventory(store, "ns") == before, "panic rollback: writes before the panic committed"
    fails(store, NotFound, lambda t: t.work_by_key(key("0b")), "panic rollback: key attached")


def test_cancellation_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "cancellation rollback" (T-05): a cancel token fired inside the
    callback, or a passed deadline, raises Cancelled and commits nothing."""
    put_works(store, make_work("w0"))
    before = inventory(store, "ns")

    def writes(t: Tx) -> None:
        t.put_work(make_work("w1"))
        t.put_work(replace(t.work("w0"), state=RUNNING))
        t.accept_event(make_event("e1"))
        t.kv_put("ns", "k", b"v")

    token = CancelToken()

    def cancelled_inside(t: Tx) -> None:
        writes(t)
        token.cancel()

    for what, guard, fn in [
        ("cancel token", Guard(cancel=token), cancelled_inside),
        ("deadline", Guard(deadline=time.monotonic() - 1), writes),
    ]:
        try:
            store.transact(guard, fn)
        except Cancelled:
            pass
        else:
            raise AssertionError(f"cancellation rollback: {what} did not raise Cancelled")
        assert inventory(store, "ns") == before, f"cancellation rollback: {what} committed"


def test_stale_read_modify_write_conflicts(store: Store, clock: FakeClock) -> None:
    """T-06, ID-05: two concurrent writers updating the revision they both read: one
    commits, the other gets Conflict, and a retry with re-read state succeeds."""
    (w,) = put_works(store, make_work("w1"))
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def writer(n: int) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.put_work(replace(w, context=payload(f"[{n}]".encode()))))

        return run

    workers = [Worker(writer(n), name=f"writer-{n}") for n in (1, 2)]
    assert all(worker.join() for worker in workers), "T-06: a writer never finished"
    errors = [type(worker.error).__name__ for worker in workers if worker.error is not None]
    assert errors == ["Conflict"], f"T-06: concurrent writers of one revision got {errors}"
    retried = update_work(store, "w1", state=RUNNING)
    assert retried.revision == 3, "T-06: retry with re-read state did not commit"


def test_tx_closed_after_return(store: Store, clock: FakeClock) -> None:
    """T-08: a Tx used after its transact returned raises TxClosed."""
    put_works(store, make_work("w1"))
    leaked: Tx = tx(store, lambda t: t)
    raises(TxClosed, lambda: leaked.work("w1"), "T-08 read through a leaked Tx")
    raises(TxClosed, lambda: leaked.put_work(make_work("w2")), "T-08 write through a leaked Tx")
    assert ids(tx(store, lambda t: t.works())) == ["w1"], "T-08: a leaked Tx wrote"


def test_nested_transact_refused(store: Store, clock: FakeClock) -> None:
    """T-08: transact inside a callback raises TxClosed (run in a thread so a
    deadlocking backend fails instead of hanging)."""

    def outer() -> object:
        def callback(t: Tx) -> object:
            t.put_work(make_work("w1"))
            try:
                tx(store, lambda inner: inner.put_work(make_work("w2")))
            except TxClosed:
                return "refused"
            return "nested transaction ran"

        return tx(store, callback)

    worker = Worker(outer, name="nested")
    assert worker.join(), "T-08: a nested transact deadlocked"
    assert worker.error is None, f"T-08: nested transact raised {worker.error!r}"
    assert worker.result == "refused", f"T-08: {worker.result}"
    assert "w2" not in ids(tx(store, lambda t: t.works())), "T-08: a nested transaction wrote"


def test_tx_refused_from_other_thread(store: Store, clock: FakeClock) -> None:
    """T-08: using a Tx from another thread raises TxClosed."""
    put_works(store, make_work("w1"))

    def callback(t: Tx) -> BaseException | None:
        worker = Worker(lambda: t.put_work(make_work("w2")), name="intruder")
        assert worker.join(), "T-08: a Tx used from another thread blocked"
        return worker.error

    error = tx(store, callback)
    assert isinstance(error, TxClosed), f"T-08: another thread's use of a Tx gave {error!r}"
    assert ids(tx(store, lambda t: t.works())) == ["w1"], "T-08: another thread wrote via a Tx"


def test_everything_in_one_transaction(store: Store, clock: FakeClock) -> None:
    """T-09: Event acceptance, Work create/correlate/update, route progress, attempt
    create/claim, Wait registration, Timer and KV writes commit together."""
    put_works(store, make_work("w0"))

    def fn(t: Tx) -> None:
        t.accept_event(make_event("e1", keys=[key("1")]))
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_work(replace(t.work("w0"), state=RUNNING))
        t.mark_routed("e1", "w1", "routed")
        t.put_execution(make_execution("x1", "w1"))
        t.claim("x1", "runner-a", t.now + TTL)
        t.put_timer(make_timer("t1", t.now + seconds(60), work_id="w1", purpose="timeout"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t1"))
        t.kv_put("ns", "cursor", b"1")

    tx(store, fn)

    def read(t: Tx) -> tuple[object, ...]:
        return (
            t.event("e1").routed,
            t.work("w1").state,
            t.work("w0").state,
            t.execution("x1").state,
            t.wait("wt1").state,
            t.timer("t1").id,
            t.kv_get("ns", "cursor"),
        )

    assert tx(store, read) == (True, WAITING, RUNNING, X_PARKED, WaitState.ACTIVE, "t1", b"1"), (
        "T-09: one transaction did not commit all of its operations"
    )


def test_swallowed_error_leaves_no_partial_effect(store: Store, clock: FakeClock) -> None:
    """T-10 (resolution 6): an operation that raises has no effect; a callback that
    swallows the error can go on and commit its other writes."""
    put_works(store, make_work("owner", keys=[key("owned")]))

    def fn(t: Tx) -> None:
        raises(
            Conflict,
            lambda: t.put_work(make_work("w1", keys=[key("free"), key("owned")])),
            "T-10 conflicting create",
        )
        raises(Invalid, lambda: t.kv_put("", "k", b"v"), "T-10 empty namespace")
        t.put_work(make_work("w2", keys=[key("free")]))

    tx(store, fn)
    assert tx(store, lambda t: t.work_by_key(key("free")).id) == "w2", (
        "T-10: a failed operation left a partial effect or blocked the rest"
    )
    assert ids(tx(store, lambda t: t.works())) == ["owner", "w2"], "T-10: failed create stored"


def test_now_is_fixed_for_the_transaction(store: Store, clock: FakeClock) -> None:
    """T-11, L-01: tx.now is fixed for a transaction; every timestamp it writes is
    that value even when the clock moves during the callback."""

    def fn(t: Tx) -> tuple[int, list[int]]:
        now = t.now
        stamps = [t.put_work(make_work("w1")).created_at]
        clock.advance(seconds=5)
        assert t.now == now, "T-11: tx.now moved during the transaction"
        stamps.append(t.put_scope(make_scope("s1")).updated_at)
        clock.advance(seconds=5)
        stamps.append(t.accept_event(make_event("e1"))[0].event.received_at)
        t.put_execution(make_execution("x1"))
        stamps.append(t.claim("x1", "runner-a", now + TTL).started_at)
        return now, stamps

    now, stamps = tx(store, fn)
    assert stamps == [now] * 4, f"T-11: timestamps of one transaction differ: {stamps}"


def test_now_never_decreases(store: Store, clock: FakeClock) -> None:
    """L-02, resolution 11: tx.now = max(clock, last committed now), so a clock that
    steps back never moves trusted time backwards; Guard.clock overrides the clock."""
    clock.advance(seconds=10)
    first = tx(store, lambda t: t.put_work(make_work("w1")).created_at)
    clock.set(first - seconds(60))
    second = tx(store, lambda t: t.put_work(make_work("w2")).created_at)
    assert second >= first, f"L-02: tx.now went backwards ({first} -> {second})"
    later = first + seconds(3600)
    third = store.transact(
        Guard(clock=lambda: later), lambda t: t.put_work(make_work("w-later")).created_at
    )
    assert third == later, "L-01: Guard.clock did not set tx.now"
    clock.set(first)
    fourth = tx(store, lambda t: t.put_work(make_work("w3")).created_at)
    assert fourth >= later, "L-02: tx.now fell below an earlier committed Guard.clock time"
