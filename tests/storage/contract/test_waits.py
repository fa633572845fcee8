"""Waits (checklist §18, WT)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from storage import Conflict, Invalid, NotFound, StorageError, Store, Tx, Wait, WaitState, seconds

from ..support import (
    TTL,
    Crash,
    FakeClock,
    crashes,
    fails,
    get_execution,
    ids,
    key,
    make_event,
    make_timer,
    make_wait,
    make_work,
    park,
    put_works,
    raises,
    start_attempt,
    tx,
)
from ._helpers import READY, RUNNING, WAITING, X_FAILED, X_PARKED, X_RUNNING, inventory, terminate

# ---------------------------------------------------------------------------------
# 18. Waits (WT)
# ---------------------------------------------------------------------------------


def _parked_with_wait(store: Store, **wait_fields: Any) -> Wait:
    """w1 (key github.acme/1) waiting, x1 parked, Wait wt1 active with a timeout
    timer t-timeout; returns the stored Wait."""
    lease = start_attempt(store, keys=[key("1")])

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1", purpose="timeout"))
        fields: dict[str, Any] = {
            "keys": [key("1")],
            "types": ["review.approved"],
            "after_sequence": t.latest_sequence(),
            "timeout_timer_id": "t-timeout",
            "description": "await review",
            "owner": "ext.review",
            **wait_fields,
        }
        park(t, "x1", make_wait("wt1", **fields))

    tx(store, register, lease=lease)
    return tx(store, lambda t: t.wait("wt1"))


def test_wait_registration_round_trip(store: Store, clock: FakeClock) -> None:
    """WT-01: a registered Wait keeps Work, attempt, key and type filters, boundary,
    timeout timer, description and owner; it starts active at revision 1."""
    tx(store, lambda t: t.accept_event(make_event("before")))
    wait = _parked_with_wait(store)
    boundary = tx(store, lambda t: t.event("before").sequence)
    expected = Wait(
        id="wt1",
        work_id="w1",
        execution_id="x1",
        keys=(key("1"),),
        types=("review.approved",),
        after_sequence=boundary,
        timeout_timer_id="t-timeout",
        description="await review",
        owner="ext.review",
    )
    assert replace(wait, revision=0, created_at=0, updated_at=0) == expected, (
        f"WT-01: the registered Wait read back as {wait}"
    )
    assert (wait.state, wait.revision) == (WaitState.ACTIVE, 1), "WT-01: new Wait not active/1"


def test_wait_must_join_park(store: Store, clock: FakeClock) -> None:
    """WT-02 (resolution 19): a Wait registered without its attempt parked (or in
    terminal waiting) and its Work waiting in the same transaction fails the whole
    transaction with Invalid at commit."""
    lease = start_attempt(store)
    before = inventory(store)

    def only_wait(t: Tx) -> None:
        t.put_wait(make_wait("wt1"))
        t.accept_event(make_event("e1"))

    fails(store, Invalid, only_wait, "WT-02 Wait without parking")

    def parked_but_work_running(t: Tx) -> None:
        terminate(t, "x1", X_PARKED, None)
        t.put_wait(make_wait("wt1"))

    fails(store, Invalid, parked_but_work_running, "WT-02 Wait with Work still running")

    def work_waiting_attempt_running(t: Tx) -> None:
        t.put_work(replace(t.work("w1"), state=WAITING))
        t.put_wait(make_wait("wt1"))

    fails(store, Invalid, work_waiting_attempt_running, "WT-02 Wait with attempt still running")
    assert inventory(store) == before, "WT-02: a refused Wait registration committed something"
    tx(store, lambda t: park(t, "x1", make_wait("wt1"), terminal=True), lease=lease)
    assert tx(store, lambda t: t.wait("wt1").state) == WaitState.ACTIVE, (
        "WT-02: a Wait registered with terminal waiting was refused"
    )


def test_wait_registration_validation(store: Store, clock: FakeClock) -> None:
    """WT-01, WT-03, WT-04, ID-08 (lead rule): a new Wait is active; its Work and
    attempt exist and belong together; its keys are owned by that Work; its types
    are dotted; a named timeout timer exists."""
    start_attempt(store, keys=[key("1")])
    start_attempt(store, work_id="w2", execution_id="x2", keys=[key("2")])
    tx(store, lambda t: t.accept_event(make_event("e1")))
    bad: list[tuple[str, type[StorageError], Wait]] = [
        ("not active", Invalid, replace(make_wait(), state=WaitState.WOKEN, woken_by="e1")),
        ("unknown Work", NotFound, make_wait(work_id="ghost")),
        ("unknown attempt", NotFound, make_wait(execution_id="ghost")),
        ("attempt of another Work", Invalid, make_wait(execution_id="x2")),
        ("foreign key", Invalid, make_wait(keys=[key("1"), key("2")])),
        ("unowned key", Invalid, make_wait(keys=[key("nobody")])),
        ("malformed type", Invalid, make_wait(types=["review"])),
        ("unknown timeout timer", NotFound, make_wait(timeout_timer_id="ghost")),
    ]
    for what, error, wait in bad:

        def register(
            t: Tx, w: Wait = wait, e: type[StorageError] = error, rule: str = what
        ) -> None:
            raises(e, lambda: t.put_wait(w), f"WT-03/WT-04 {rule}")

        tx(store, register)
    assert tx(store, lambda t: t.waits()) == [], "WT-03: a refused Wait was stored"


def test_wait_fields_immutable(store: Store, clock: FakeClock) -> None:
    """WT-05: keys, types, boundary, timeout, description and owner cannot change."""
    wait = _parked_with_wait(store)
    tx(store, lambda t: t.put_timer(make_timer("t-other", t.now + seconds(60), work_id="w1")))
    tx(store, lambda t: t.put_work(replace(t.work("w1"), keys=(key("1"), key("1b")))))
    for what, changed in [
        ("keys", replace(wait, keys=(key("1"), key("1b")))),
        ("types", replace(wait, types=("review.rejected",))),
        ("boundary", replace(wait, after_sequence=wait.after_sequence + 1)),
        ("timeout", replace(wait, timeout_timer_id="t-other")),
        ("description", replace(wait, description="other")),
        ("owner", replace(wait, owner="ext.other")),
        ("Work", replace(wait, work_id="w2")),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_wait(c), f"WT-05 change of {what}")
    assert tx(store, lambda t: t.wait("wt1")) == wait, "WT-05: an immutable Wait field changed"


def test_wait_progress_needs_owner(store: Store, clock: FakeClock) -> None:
    """WT-06: while active, progress may change only on a Wait with an owner."""
    wait = _parked_with_wait(store)
    updated = tx(store, lambda t: t.put_wait(replace(wait, progress="2 of 3 approvals")))
    assert (updated.progress, updated.revision) == ("2 of 3 approvals", 2), "WT-06: progress"
    fails(
        store,
        Conflict,
        lambda t: t.put_wait(replace(wait, progress="stale")),
        "WT-06 progress with a stale revision",
    )
    put_works(store, make_work("w2"))
    start_attempt(store, work_id="w2", execution_id="x2", create_work=False)
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    ownerless = tx(store, lambda t: t.wait("wt2"))
    fails(
        store,
        Invalid,
        lambda t: t.put_wait(replace(ownerless, progress="halfway")),
        "WT-06 progress on a Wait without owner",
    )


def test_wait_state_changes_once(store: Store, clock: FakeClock) -> None:
    """WT-07, WT-08: active -> woken needs a stored Event (empty Invalid, unknown
    NotFound); active -> cancelled; progress is kept; woken and cancelled Waits are
    immutable."""
    wait = _parked_with_wait(store)
    wait = tx(store, lambda t: t.put_wait(replace(wait, progress="halfway")))
    tx(store, lambda t: t.accept_event(make_event("wake", type="review.approved")))
    woken = replace(wait, state=WaitState.WOKEN)
    fails(store, Invalid, lambda t: t.put_wait(replace(woken, woken_by="")), "WT-07 no Event")
    fails(store, NotFound, lambda t: t.put_wait(replace(woken, woken_by="ghost")), "WT-07 ghost")
    done = tx(store, lambda t: t.put_wait(replace(woken, woken_by="wake")))
    assert (done.state, done.woken_by, done.progress) == (WaitState.WOKEN, "wake", "halfway"), (
        f"WT-07: woken Wait is {done}"
    )
    for what, changed in [
        ("cancel", replace(done, state=WaitState.CANCELLED)),
        ("reactivate", replace(done, state=WaitState.ACTIVE, woken_by="")),
        ("progress", replace(done, progress="more")),
        ("same", done),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_wait(c), f"WT-08 woken Wait {what}")

    put_works(store, make_work("w2"))
    start_attempt(store, work_id="w2", execution_id="x2", create_work=False)
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    cancelled = tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    assert cancelled.state == WaitState.CANCELLED, "WT-07: active -> cancelled refused"
    fails(
        store,
        Invalid,
        lambda t: t.put_wait(replace(cancelled, state=WaitState.WOKEN, woken_by="wake")),
        "WT-08 cancelled Wait woken",
    )


def test_wait_park_wake(store: Store, clock: FakeClock) -> None:
    """Scenario "wait park/wake" (WT-09, O-06): the wake transaction records the
    winning Event, deletes the timeout timer, claims the parked attempt and updates
    Work, all together; a failure in it leaves everything parked."""
    wait = _parked_with_wait(store)
    parked = get_execution(store, "x1")
    tx(store, lambda t: t.accept_event(make_event("wake", type="review.approved", keys=[key("1")])))
    before = inventory(store)

    def wake(t: Tx, crash: bool) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake"))
        t.delete_timer("t-timeout", t.timer("t-timeout").revision)
        t.claim("x1", "runner-b", t.now + TTL)
        t.mark_routed("wake", "w1", "routed")
        if crash:
            raise Crash("crash during wake")

    crashes(store, lambda t: wake(t, True), "wait park/wake: crashed wake")
    assert inventory(store) == before, "wait park/wake: a failed wake left partial effects"
    tx(store, lambda t: wake(t, False))

    def after(t: Tx) -> tuple[object, ...]:
        x = t.execution("x1")
        return (
            t.wait("wt1").state,
            t.wait("wt1").woken_by,
            ids(t.timers()),
            x.state,
            x.epoch,
            t.work("w1").state,
        )

    assert tx(store, after) == (
        WaitState.WOKEN,
        "wake",
        [],
        X_RUNNING,
        parked.epoch + 1,
        RUNNING,
    ), f"wait park/wake: after the wake: {tx(store, after)}"
    assert wait.timeout_timer_id == "t-timeout", "wait park/wake: fixture lost its timeout"


def test_wait_timer_cancellation(store: Store, clock: FakeClock) -> None:
    """Scenario "wait timer cancellation" (WT-04, WT-09, WT-10): the timeout timer
    fires and wins: its Event wakes the Wait and the attempt is failed in one
    transaction; the losing wake then conflicts. Separately, a timeout timer deleted
    before the Wait changes state does not block cancelling the Wait."""
    wait = _parked_with_wait(store)
    clock.advance(seconds=601)

    def timeout(t: Tx) -> None:
        timer = t.timer("t-timeout")
        fired = t.fire_timer("t-timeout", timer.revision)
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by=fired.id))
        terminate(t, "x1", X_FAILED, READY)
        t.mark_routed(fired.id, "w1", "routed")

    tx(store, timeout)
    timer_event = tx(store, lambda t: t.wait("wt1").woken_by)
    assert timer_event == "t-timeout-fire", f"wait timer: Wait woken by {timer_event!r}"
    tx(store, lambda t: t.accept_event(make_event("late-wake", type="review.approved")))
    fails(
        store,
        Conflict,
        lambda t: t.put_wait(replace(wait, state=WaitState.WOKEN, woken_by="late-wake")),
        "wait timer: the wake that lost the race",
    )
    state = tx(store, lambda t: (ids(t.timers()), t.execution("x1").state, t.work("w1").state))
    assert state == ([], X_FAILED, READY), f"wait timer: after the timeout: {state}"

    # A timeout timer deleted first; the Wait is then cancelled on its own.
    start_attempt(store, work_id="w2", execution_id="x2", keys=[key("2")])

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t2", t.now + seconds(60), work_id="w2"))
        park(t, "x2", make_wait("wt2", "w2", "x2", timeout_timer_id="t2"))

    tx(store, register)
    tx(store, lambda t: t.delete_timer("t2", t.timer("t2").revision))
    cancelled = tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    assert cancelled.state == WaitState.CANCELLED, "WT-04: Wait with a deleted timer stuck"


def test_wait_history_listed(store: Store, clock: FakeClock) -> None:
    """WT-11, EN-06: woken and cancelled Waits stay listed by waits(); only
    active_waits() drops them."""
    _parked_with_wait(store)
    start_attempt(store, work_id="w2", execution_id="x2")
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    start_attempt(store, work_id="w3", execution_id="x3")
    tx(store, lambda t: park(t, "x3", make_wait("wt3", "w3", "x3")))
    tx(store, lambda t: t.accept_event(make_event("wake")))
    tx(
        store,
        lambda t: t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake")),
    )
    tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    lists = tx(
        store,
        lambda t: (ids(t.waits()), ids(t.active_waits()), ids(t.active_waits("w1"))),
    )
    assert lists == (["wt1", "wt2", "wt3"], ["wt3"], []), f"WT-11: wait lists are {lists}"
