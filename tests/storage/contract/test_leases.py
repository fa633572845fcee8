"""Lease authority, fencing and recovery (checklist §16, L)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from storage import Conflict, Fenced, Invalid, LeaseRef, NotFound, Store, Tx, seconds

from ..support import (
    BLOCK_TIMEOUT,
    TTL,
    FakeClock,
    Worker,
    fails,
    get_execution,
    lease_of,
    make_event,
    make_execution,
    make_timer,
    make_work,
    park,
    payload,
    put_works,
    start_attempt,
    tx,
    update_work,
)
from ._helpers import (
    CANCELLED,
    RUNNING,
    X_COMPLETED,
    X_PENDING,
    X_RUNNING,
    inventory,
    stored_state,
    terminate,
)

# ---------------------------------------------------------------------------------
# 16. Lease authority, fencing and recovery (L)
# ---------------------------------------------------------------------------------


def test_claim_rules(store: Store, clock: FakeClock) -> None:
    """L-04, L-05 (resolution 15): claim needs a nonempty owner and a future expiry,
    a nonterminal Work and attempt; it moves both to running with owner, expiry and
    epoch 1; any live lease, even the same owner's, conflicts."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    fails(store, Invalid, lambda t: t.claim("x1", "", t.now + TTL), "L-04 empty owner")
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now), "L-04 expiry == now")
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now - 1), "L-04 past expiry")
    fails(store, NotFound, lambda t: t.claim("ghost", "runner-a", t.now + TTL), "L-04 unknown")
    assert get_execution(store, "x1").state == X_PENDING, "L-04: a refused claim changed state"
    expires = clock() + TTL
    x = tx(store, lambda t: t.claim("x1", "runner-a", expires))
    assert (x.state, x.owner, x.lease_expires_at, x.epoch) == (
        X_RUNNING,
        "runner-a",
        expires,
        1,
    ), f"L-04: claim produced {x}"
    assert stored_state(store, "w1") == RUNNING, "L-04: claim did not move Work to running"
    for owner in ("runner-b", "runner-a"):
        fails(
            store,
            Conflict,
            lambda t, o=owner: t.claim("x1", o, t.now + 2 * TTL),
            f"L-05 claim by {owner} beside a live lease",
        )
    assert get_execution(store, "x1") == x, "L-05: a refused claim changed the lease"

    # A terminal Work or attempt cannot be claimed.
    put_works(store, make_work("w2"))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w2")))
    update_work(store, "w2", state=CANCELLED)
    fails(store, Invalid, lambda t: t.claim("x2", "runner-a", t.now + TTL), "L-04 terminal Work")
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, None))
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now + TTL), "L-04 terminal attempt")


def test_concurrent_claims(store: Store, clock: FakeClock) -> None:
    """Scenario "concurrent claims" (L-05, L-14): two threads claiming the same
    pending attempt at once: exactly one wins, the other gets Conflict."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def claimer(owner: str) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.claim("x1", owner, t.now + TTL))

        return run

    workers = {o: Worker(claimer(o), name=o) for o in ("runner-a", "runner-b")}
    assert all(w.join() for w in workers.values()), "concurrent claims: a claimer never finished"
    winners = [o for o, w in workers.items() if w.error is None]
    errors = [type(w.error).__name__ for w in workers.values() if w.error is not None]
    assert len(winners) == 1, f"concurrent claims: {len(winners)} claims of one attempt won"
    assert errors == ["Conflict"], f"concurrent claims: the losing claim got {errors}"
    x = get_execution(store, "x1")
    assert (x.owner, x.epoch) == (winners[0], 1), f"concurrent claims: stored lease is {x}"


def test_lease_expiry(store: Store, clock: FakeClock) -> None:
    """Scenario "lease expiry" (L-03, L-06, L-07): a lease is live until now <
    expires_at; at now == expires_at it has expired: its transactions are fenced and
    another owner may claim with a higher epoch."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    expires = clock() + seconds(10)
    lease = lease_of(tx(store, lambda t: t.claim("x1", "runner-a", expires)))
    clock.set(expires - 1)
    tx(store, lambda t: t.kv_put("exec", "progress", b"1"), lease=lease)
    fails(
        store,
        Conflict,
        lambda t: t.claim("x1", "runner-b", t.now + TTL),
        "lease expiry: claim one nanosecond before expiry",
    )
    clock.set(expires)
    fails(
        store,
        Fenced,
        lambda t: t.kv_put("exec", "progress", b"2"),
        "lease expiry: a transaction at now == expires_at",
        lease=lease,
    )
    x = tx(store, lambda t: t.claim("x1", "runner-b", t.now + TTL))
    assert (x.owner, x.epoch) == ("runner-b", 2), f"lease expiry: recovery claim gave {x}"
    assert tx(store, lambda t: t.kv_get("exec", "progress")) == b"1", (
        "lease expiry: a fenced write was kept"
    )


def test_lease_recovery(store: Store, clock: FakeClock) -> None:
    """Scenario "lease recovery" (L-06, X-11): after expiry the same attempt is
    claimed again, even by the same owner string, with a higher epoch and its
    original start time; the old lease stays fenced."""
    old = start_attempt(store)
    started = get_execution(store, "x1").started_at
    clock.advance(seconds=TTL / 1e9 + 1)
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.owner, x.epoch, x.started_at) == ("runner-a", old.epoch + 1, started), (
        f"lease recovery: same-owner recovery gave {x}"
    )
    fails(
        store,
        Fenced,
        lambda t: t.put_work(replace(t.work("w1"), context=payload())),
        "lease recovery: the superseded epoch",
        lease=old,
    )
    tx(store, lambda t: t.put_work(replace(t.work("w1"), context=payload())), lease=lease_of(x))


def test_lease_renew(store: Store, clock: FakeClock) -> None:
    """Scenario "lease renew" (L-10): renew extends a live lease under the same
    authority; an earlier expiry is Invalid; a wrong owner/epoch or an expired lease
    is Fenced."""
    lease = start_attempt(store)
    current = get_execution(store, "x1").lease_expires_at
    later = current + TTL
    renewed = tx(store, lambda t: t.renew(lease, later), lease=lease)
    assert (renewed.lease_expires_at, renewed.epoch, renewed.owner) == (
        later,
        lease.epoch,
        "runner-a",
    ), f"lease renew: renew gave {renewed}"
    fails(store, Invalid, lambda t: t.renew(lease, later - 1), "lease renew: shortening")
    for what, bad in [
        ("wrong owner", replace(lease, owner="runner-b")),
        ("wrong epoch", replace(lease, epoch=lease.epoch + 1)),
    ]:
        fails(store, Fenced, lambda t, b=bad: t.renew(b, later + TTL), f"lease renew: {what}")
    clock.set(later)
    fails(store, Fenced, lambda t: t.renew(lease, later + TTL), "lease renew: expired lease")
    assert get_execution(store, "x1").lease_expires_at == later, (
        "lease renew: a refused renew changed the expiry"
    )


def test_lease_release(store: Store, clock: FakeClock) -> None:
    """Scenario "lease release" (L-11): release checks authority, clears owner and
    expiry, keeps the epoch and the running state; a later claim recovers the same
    attempt with a higher epoch."""
    lease = start_attempt(store)
    fails(
        store,
        Fenced,
        lambda t: t.release(replace(lease, owner="runner-b")),
        "lease release: wrong owner",
    )
    released = tx(store, lambda t: t.release(lease), lease=lease)
    assert (released.state, released.owner, released.lease_expires_at, released.epoch) == (
        X_RUNNING,
        "",
        0,
        lease.epoch,
    ), f"lease release: release gave {released}"
    fails(
        store,
        Fenced,
        lambda t: t.kv_put("exec", "k", b"v"),
        "lease release: a released lease still writes",
        lease=lease,
    )
    fails(store, Fenced, lambda t: t.release(lease), "lease release: releasing twice")
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.owner, x.epoch) == ("runner-a", lease.epoch + 1), (
        f"lease release: claim after release gave {x}"
    )


def test_guard_lease_verified_before_callback(store: Store, clock: FakeClock) -> None:
    """L-07: a Guard lease is checked before the callback runs: wrong owner, wrong
    epoch, unknown attempt, non-running attempt or terminal Work -> Fenced and the
    callback is not called."""
    lease = start_attempt(store)
    put_works(store, make_work("w2"))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w2")))
    calls: list[str] = []

    def callback(t: Tx) -> None:
        calls.append("called")
        t.kv_put("exec", "k", b"v")

    for what, bad in [
        ("wrong owner", replace(lease, owner="runner-b")),
        ("wrong epoch", replace(lease, epoch=lease.epoch + 1)),
        ("older epoch", replace(lease, epoch=lease.epoch - 1)),
        ("unknown attempt", LeaseRef("ghost", "runner-a", 1)),
        ("pending attempt", LeaseRef("x2", "runner-a", 0)),
    ]:
        fails(store, Fenced, callback, f"L-07 {what}", lease=bad)
    assert calls == [], f"L-07: the callback ran {len(calls)} times under a bad lease"
    tx(store, callback, lease=lease)
    assert calls == ["called"], "L-07: a valid lease did not run the callback"
    # Work made terminal by the control plane while the attempt still runs.
    update_work(store, "w1", state=CANCELLED)
    fails(store, Fenced, callback, "L-07 terminal Work", lease=lease)
    assert calls == ["called"], "L-07: the callback ran for a terminal Work"


def test_fencing_covers_every_write(store: Store, clock: FakeClock) -> None:
    """L-08, KV-05: a stale lease fences Work/context writes, emitted Events,
    outcomes, timers and KV; nothing is written."""
    lease = start_attempt(store)
    clock.advance(seconds=TTL / 1e9)
    before = inventory(store, "exec")
    writes: list[tuple[str, Callable[[Tx], object]]] = [
        ("Work context", lambda t: t.put_work(replace(t.work("w1"), context=payload()))),
        ("emitted Event", lambda t: t.accept_event(make_event("emitted", work_id="w1"))),
        ("outcome", lambda t: terminate(t, "x1", X_COMPLETED, None)),
        ("timer", lambda t: t.put_timer(make_timer("t1", t.now, work_id="w1"))),
        ("KV", lambda t: t.kv_put("exec", "cursor", b"1")),
    ]
    for what, write in writes:
        fails(store, Fenced, write, f"L-08 fenced {what}", lease=lease)
    assert inventory(store, "exec") == before, "L-08: a fenced write was kept"


def test_put_execution_ignores_lease_fields(store: Store, clock: FakeClock) -> None:
    """L-09 (resolution 16): put_execution ignores supplied owner, epoch, expiry and
    start/finish times and keeps the stored ones."""
    start_attempt(store)
    x = get_execution(store, "x1")
    forged = replace(
        x,
        trace_id="trace-9",
        owner="intruder",
        epoch=99,
        lease_expires_at=x.lease_expires_at + seconds(3600),
        started_at=1,
        finished_at=2,
    )
    written = tx(store, lambda t: t.put_execution(forged))
    kept = (written.owner, written.epoch, written.lease_expires_at, written.started_at)
    assert kept == (x.owner, x.epoch, x.lease_expires_at, x.started_at), (
        f"L-09: put_execution changed lease fields: {written}"
    )
    assert (written.trace_id, written.finished_at) == ("trace-9", 0), "L-09: write not applied"
    assert get_execution(store, "x1") == written, "L-09: stored attempt differs from returned"


def test_resumed_attempt_drops_its_waiting_outcome(store: Store, clock: FakeClock) -> None:
    """O-03, O-06, X-07: a parked attempt resumed by Claim is running, which has no
    outcome, so its waiting outcome is cleared and a same-state write (attaching an
    artifact, say) is accepted."""
    start_attempt(store)
    tx(store, lambda t: park(t, "x1"))
    resumed = tx(store, lambda t: t.claim("x1", "runner-b", t.now + TTL))
    assert resumed.outcome is None, f"resume kept the outcome {resumed.outcome}"
    lease = lease_of(resumed)
    again = tx(
        store, lambda t: t.put_execution(replace(t.execution("x1"), trace_id="t-1")), lease=lease
    )
    assert again.state == X_RUNNING, "a same-state write after resume failed"
