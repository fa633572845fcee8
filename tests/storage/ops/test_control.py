"""storage.ops.control (cancel_work, retry_work) and the control-plane revoke_lease, on
the reference double and on SQLite."""

from __future__ import annotations

from dataclasses import replace

from storage import (
    ExecutionState,
    Fenced,
    Invalid,
    OutcomeKind,
    Store,
    Tx,
    WaitState,
    WorkState,
    seconds,
)
from storage.ops import control

from ..support import (
    FakeClock,
    fails,
    get_execution,
    get_work,
    make_execution,
    make_timer,
    make_wait,
    make_work,
    outcome,
    park,
    start_attempt,
    tx,
)


def test_cancel_is_one_transaction_and_fences_the_old_lease(store: Store) -> None:
    lease = start_attempt(store)
    tx(store, lambda t: t.put_timer(make_timer("retry-w1", t.now + seconds(60), work_id="w1")))
    result = tx(store, lambda t: control.cancel_work(t, "w1"))
    assert result.cancelled_attempt == "x1"
    assert result.deleted_timers == ("retry-w1",)
    assert get_work(store, "w1").state is WorkState.CANCELLED
    assert get_execution(store, "x1").state is ExecutionState.CANCELLED
    assert tx(store, lambda t: t.timers("w1")) == []

    def complete(t: Tx) -> None:
        x = t.execution("x1")
        t.put_execution(replace(x, state=ExecutionState.COMPLETED))

    fails(store, Fenced, complete, "stale completion after cancel", lease=lease)
    fails(store, Invalid, lambda t: control.cancel_work(t, "w1"), "cancel of terminal Work")


def test_cancel_cancels_active_waits(store: Store) -> None:
    start_attempt(store)

    def park_it(t: Tx) -> None:
        park(t, "x1", make_wait("wait-1", "w1", "x1"))

    tx(store, park_it)
    result = tx(store, lambda t: control.cancel_work(t, "w1"))
    assert result.cancelled_waits == ("wait-1",)
    assert tx(store, lambda t: t.wait("wait-1").state) is WaitState.CANCELLED
    assert tx(store, lambda t: t.active_waits()) == []


def test_retry_creates_the_next_attempt_for_exhausted_work(store: Store) -> None:
    lease = start_attempt(store, executor="shell")

    def fail(t: Tx) -> None:
        x = t.execution("x1")
        t.put_execution(
            replace(x, state=ExecutionState.FAILED, outcome=outcome(OutcomeKind.FAILED))
        )
        t.put_work(replace(t.work("w1"), state=WorkState.READY))

    tx(store, fail, lease=lease)
    created = tx(store, lambda t: control.retry_work(t, "w1", "x2"))
    assert (created.attempt, created.state, created.executor) == (
        2,
        ExecutionState.PENDING,
        "shell",
    )
    assert get_work(store, "w1").state is WorkState.READY
    fails(
        store, Exception, lambda t: control.retry_work(t, "w1", "x3"), "retry with a live attempt"
    )


def test_retry_of_terminal_work_is_refused(store: Store) -> None:
    start_attempt(store)
    tx(store, lambda t: control.cancel_work(t, "w1"))
    fails(store, Invalid, lambda t: control.retry_work(t, "w1", "x2"), "retry of cancelled Work")


def test_revoke_lease_fences_the_holder_and_allows_recovery(store: Store, clock: FakeClock) -> None:
    lease = start_attempt(store)
    revoked = tx(store, lambda t: t.revoke_lease("x1"))
    assert (revoked.owner, revoked.epoch) == (lease.owner, lease.epoch)
    fails(
        store,
        Fenced,
        lambda t: t.kv_put("ns", "k", b"1"),
        "write under a revoked lease",
        lease=lease,
    )
    recovered = tx(store, lambda t: t.claim("x1", lease.owner, t.now + seconds(30)))
    assert recovered.epoch == lease.epoch + 1


def test_revoke_lease_needs_control_plane_authority(store: Store) -> None:
    lease = start_attempt(store)
    fails(store, Fenced, lambda t: t.revoke_lease("x1"), "revoke under a lease", lease=lease)


def test_revoke_lease_leaves_other_attempts_alone(store: Store) -> None:
    tx(store, lambda t: t.put_work(make_work("w9")))
    tx(store, lambda t: t.put_execution(make_execution("x9", "w9")))
    pending = tx(store, lambda t: t.revoke_lease("x9"))
    assert pending.state is ExecutionState.PENDING
    assert pending.revision == 1
