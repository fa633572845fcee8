"""Outcomes, retry, handoff and cancellation (checklist §9-10: O, R)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from storage import (
    Binding,
    Conflict,
    Execution,
    ExecutionState,
    Fenced,
    Invalid,
    LeaseRef,
    Outcome,
    OutcomeKind,
    Payload,
    Store,
    Tx,
    WaitState,
    WorkState,
    seconds,
)

from ..support import (
    TTL,
    Crash,
    FakeClock,
    crashes,
    fails,
    get_execution,
    ids,
    key,
    lease_of,
    make_event,
    make_execution,
    make_timer,
    make_wait,
    make_work,
    outcome,
    park,
    payload,
    put_works,
    start_attempt,
    tx,
)
from ._helpers import (
    CANCELLED,
    COMPLETED,
    FAILED,
    OUTCOME_FOR,
    RAW_JSON,
    READY,
    RUNNING,
    WAITING,
    X_CANCELLED,
    X_COMPLETED,
    X_FAILED,
    X_HANDOFF,
    X_PARKED,
    X_PENDING,
    X_RUNNING,
    X_WAITING,
    inventory,
    stored_state,
    terminate,
)

# ---------------------------------------------------------------------------------
# 9. Outcomes (O)
# ---------------------------------------------------------------------------------


def _running(store: Store, n: int) -> Execution:
    work_id, execution_id = f"w{n}", f"x{n}"
    start_attempt(store, work_id=work_id, execution_id=execution_id)
    return get_execution(store, execution_id)


def test_outcome_kind_valid(store: Store, clock: FakeClock) -> None:
    """O-01: an outcome kind outside completed/failed/waiting/handoff is Invalid."""
    x = _running(store, 1)
    bogus = Outcome(cast(OutcomeKind, "exploded"))
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(replace(x, state=X_FAILED, outcome=bogus)),
        "O-01 unknown outcome kind",
    )
    assert get_execution(store, "x1") == x, "O-01: an unknown outcome kind was stored"


def test_outcome_matches_state(store: Store, clock: FakeClock) -> None:
    """O-02, O-03, O-04: completed/failed/handoff need their outcome; parked and
    terminal waiting need a waiting outcome; pending, running and cancelled have
    none."""
    n = 0
    for state in (X_COMPLETED, X_FAILED, X_HANDOFF, X_PARKED, X_WAITING):
        wanted = OUTCOME_FOR[state]
        wrong = [None, *(k for k in OutcomeKind if k != wanted)]
        for bad in wrong:
            n += 1
            x = _running(store, n)
            fails(
                store,
                Invalid,
                lambda t, x=x, s=state, b=bad: t.put_execution(
                    replace(x, state=s, outcome=outcome(b) if b else None)
                ),
                f"O-02/O-04 {state} with outcome {bad}",
            )
    for state in (X_RUNNING, X_CANCELLED):
        for kind in OutcomeKind:
            n += 1
            x = _running(store, n)
            fails(
                store,
                Invalid,
                lambda t, x=x, s=state, k=kind: t.put_execution(
                    replace(x, state=s, outcome=outcome(k))
                ),
                f"O-03 {state} with outcome {kind}",
            )
    put_works(store, make_work("wp"))
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(
            make_execution("xp", "wp", outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "O-03 pending with an outcome",
    )


def test_outcome_round_trip(store: Store, clock: FakeClock) -> None:
    """O-07, X-11: outcome content is opaque and round-trips unchanged."""
    x = _running(store, 1)
    done = Outcome(OutcomeKind.FAILED, "exit status 3", Payload("conduit.exit", RAW_JSON))
    tx(store, lambda t: t.put_execution(replace(x, state=X_FAILED, outcome=done)))
    assert get_execution(store, "x1").outcome == done, "O-07: the outcome did not round-trip"


def test_park_and_terminal_release_authority(store: Store, clock: FakeClock) -> None:
    """O-05: parking or ending an attempt clears owner and expiry, keeps the epoch,
    and the old lease is then fenced."""
    for n, state in enumerate((X_PARKED, X_WAITING, X_COMPLETED, X_FAILED, X_HANDOFF)):
        work_id, execution_id = f"w{n}", f"x{n}"
        lease = start_attempt(store, work_id=work_id, execution_id=execution_id)
        tx(store, lambda t, x=execution_id, s=state: terminate(t, x, s, None), lease=lease)
        x = get_execution(store, execution_id)
        assert (x.owner, x.lease_expires_at, x.epoch) == ("", 0, lease.epoch), (
            f"O-05: {state} did not release authority while keeping the epoch: {x}"
        )
        fails(
            store,
            Fenced,
            lambda t, w=work_id: t.put_work(replace(t.work(w), context=payload())),
            f"O-05 old lease after {state}",
            lease=lease,
        )


# ---------------------------------------------------------------------------------
# 10. Retry, handoff and cancellation (R)
# ---------------------------------------------------------------------------------


def test_failed_attempt_does_not_fail_work(store: Store, clock: FakeClock) -> None:
    """R-01: an attempt failing leaves its Work's state alone; storage never
    cascades."""
    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_FAILED, None))
    assert stored_state(store, "w1") == RUNNING, "R-01: a failed attempt changed its Work"


def test_retry_transaction_is_atomic(store: Store, clock: FakeClock) -> None:
    """R-02: failed attempt + MarkRouted + Work running->ready + backoff Timer commit
    together; a failure injected after the last step leaves none of them."""
    start_attempt(store)
    tx(store, lambda t: t.accept_event(make_event("e1", work_id="w1")))
    before = inventory(store)

    def retry(t: Tx, fail: bool) -> None:
        terminate(t, "x1", X_FAILED, READY)
        t.mark_routed("e1", "w1", "routed")
        t.put_timer(make_timer("retry-w1", t.now + seconds(300), work_id="w1", purpose="retry"))
        if fail:
            raise Crash("injected failure after the last retry step")

    crashes(store, lambda t: retry(t, True), "R-02 failed retry")
    assert inventory(store) == before, "R-02: a failed retry transaction left partial effects"
    tx(store, lambda t: retry(t, False))

    def after(t: Tx) -> tuple[ExecutionState, WorkState, bool, list[str]]:
        return (
            t.execution("x1").state,
            t.work("w1").state,
            t.event("e1").routed,
            ids(t.timers("w1")),
        )

    assert tx(store, after) == (X_FAILED, READY, True, ["retry-w1"]), (
        "R-02: the retry transaction did not commit all of its effects"
    )


def test_attempt_exhaustion(store: Store, clock: FakeClock) -> None:
    """Scenario "attempt exhaustion" (R-03, X-09, X-10, O-06): after the last
    automatic attempt fails the Work stays ready with no timer; an operator retry (a
    core.manual Event, then retry_work and MarkRouted) creates attempt N+1 with the
    same binding and executor."""
    from storage.ops.control import retry_work

    binding = Binding(name="default", executor="shell", pass_env=("HOME",))
    put_works(store, make_work("w1"))
    for n in (1, 2, 3):

        def attempt(t: Tx, n: int = n) -> None:
            t.put_execution(make_execution(f"x{n}", "w1", n, executor="shell", binding=binding))
            t.claim(f"x{n}", "runner-a", t.now + TTL)

        tx(store, attempt)
        tx(store, lambda t, n=n: terminate(t, f"x{n}", X_FAILED, READY))
        clock.advance(seconds=1)

    def exhausted(t: Tx) -> tuple[WorkState, list[Any], list[Any]]:
        return t.work("w1").state, t.timers("w1"), t.live_executions("w1")

    assert tx(store, exhausted) == (READY, [], []), (
        "attempt exhaustion: exhausted Work is not ready, idle and timer-free"
    )
    manual = make_event("retry-1", source="core.manual", actor="operator:alice", work_id="w1")
    tx(store, lambda t: t.accept_event(manual))

    def operator_retry(t: Tx) -> Execution:
        execution = retry_work(t, "w1", "x4")
        t.mark_routed("retry-1", "w1", "routed")
        return execution

    x4 = tx(store, operator_retry)
    assert (x4.attempt, x4.state) == (4, X_PENDING), (
        f"attempt exhaustion: operator retry made attempt {x4.attempt} ({x4.state}), expected 4"
    )
    assert (x4.executor, x4.binding) == ("shell", binding), (
        "attempt exhaustion: the retry did not keep the previous binding and executor"
    )
    attempts = [x.attempt for x in tx(store, lambda t: t.executions("w1"))]
    assert attempts == [1, 2, 3, 4], f"attempt exhaustion: attempts have gaps: {attempts}"
    assert stored_state(store, "w1") == READY, "attempt exhaustion: retried Work is not ready"
    fails(
        store,
        Conflict,
        lambda t: retry_work(t, "w1", "x5"),
        "attempt exhaustion: a second retry beside a live attempt",
    )


def test_terminal_failure_policy(store: Store, clock: FakeClock) -> None:
    """R-04, R-09: the failed attempt and Work -> failed commit in one tx; retry of
    failed Work is refused; a successor needs distinct keys."""
    from storage.ops.control import retry_work

    k = key("issue-1")
    start_attempt(store, keys=[k])
    tx(store, lambda t: terminate(t, "x1", X_FAILED, FAILED))
    assert stored_state(store, "w1") == FAILED, "R-04: Work -> failed was refused"
    before = inventory(store)
    fails(store, Invalid, lambda t: retry_work(t, "w1", "x2"), "R-09 retry of failed Work")
    assert inventory(store) == before, "R-09: a refused retry changed the failed Work"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1-gen2", keys=[k])),
        "R-09 successor reusing a terminal Work's key",
    )
    successor = put_works(store, make_work("w1-gen2", keys=[key("issue-1#gen2")]))[0]
    assert successor.state == READY, "R-09: a successor with a distinct key was refused"


def test_retry_work_rules(store: Store, clock: FakeClock) -> None:
    """R-03, R-05 (lead rule): retry_work needs nonterminal Work without a live
    attempt (Conflict otherwise) and returns it to ready with attempt N+1."""
    from storage.ops.control import retry_work

    start_attempt(store, executor="docker")
    fails(store, Conflict, lambda t: retry_work(t, "w1", "x2"), "retry beside a running attempt")
    tx(store, lambda t: park(t, "x1", terminal=True))
    assert stored_state(store, "w1") == WAITING, "retry rules: Work not waiting after park"
    x2 = tx(store, lambda t: retry_work(t, "w1", "x2"))
    assert (x2.attempt, x2.state, x2.executor) == (2, X_PENDING, "docker"), (
        f"retry rules: unexpected attempt {x2}"
    )
    assert stored_state(store, "w1") == READY, "retry rules: retried Work is not ready"


def test_handoff_and_wait_outcomes(store: Store, clock: FakeClock) -> None:
    """Scenario "handoff/wait outcomes" (R-05, O-04, O-06, WT-09): handoff ends the
    attempt and returns Work to ready (not completed); terminal waiting is woken by
    attempt N+1; parked is woken by a new claim of the same attempt."""
    lease = start_attempt(store)

    def handoff(t: Tx) -> None:
        x = t.execution("x1")
        done = Outcome(OutcomeKind.HANDOFF, "continue on gpu")
        t.put_execution(replace(x, state=X_HANDOFF, outcome=done))
        t.put_work(replace(t.work("w1"), state=READY))

    tx(store, handoff, lease=lease)
    assert (get_execution(store, "x1").state, stored_state(store, "w1")) == (X_HANDOFF, READY), (
        "handoff/wait outcomes: handoff did not end the attempt and return Work to ready"
    )

    # Terminal waiting: an executor without resume; the wake creates attempt 3.
    lease = start_attempt(store, execution_id="x2", attempt=2, create_work=False)
    wait1 = make_wait("wt1", "w1", "x2", types=["review.approved"])
    tx(store, lambda t: park(t, "x2", wait1, terminal=True), lease=lease)
    x2 = get_execution(store, "x2")
    assert (x2.state, x2.outcome) == (X_WAITING, outcome(OutcomeKind.WAITING)), (
        "handoff/wait outcomes: terminal waiting lost its waiting outcome"
    )
    tx(store, lambda t: t.accept_event(make_event("wake-1", type="review.approved")))

    def wake_next(t: Tx) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake-1"))
        t.put_execution(make_execution("x3", "w1", 3))
        t.put_work(replace(t.work("w1"), state=READY))

    tx(store, wake_next)
    assert (tx(store, lambda t: t.wait("wt1").state), stored_state(store, "w1")) == (
        WaitState.WOKEN,
        READY,
    ), "handoff/wait outcomes: waking terminal waiting did not create attempt N+1"

    # Parked: a resume-capable executor; the wake claims the same attempt again.
    first = tx(store, lambda t: t.claim("x3", "runner-a", t.now + TTL))
    wait2 = make_wait("wt2", "w1", "x3", types=["review.approved"])
    tx(store, lambda t: park(t, "x3", wait2), lease=lease_of(first))
    tx(store, lambda t: t.accept_event(make_event("wake-2", type="review.approved")))

    def wake_parked(t: Tx) -> Execution:
        t.put_wait(replace(t.wait("wt2"), state=WaitState.WOKEN, woken_by="wake-2"))
        return t.claim("x3", "runner-b", t.now + TTL)

    resumed = tx(store, wake_parked)
    assert (resumed.state, resumed.epoch) == (X_RUNNING, first.epoch + 1), (
        "handoff/wait outcomes: the parked attempt was not resumed by a new claim"
    )
    assert resumed.started_at == first.started_at, "handoff/wait outcomes: resume moved start"
    assert stored_state(store, "w1") == RUNNING, "handoff/wait outcomes: resumed Work not running"
    tx(store, lambda t: terminate(t, "x3", X_COMPLETED, COMPLETED), lease=lease_of(resumed))
    assert stored_state(store, "w1") == COMPLETED, "handoff/wait outcomes: completion refused"


def _waiting_work_with_timers(store: Store, clock: FakeClock) -> LeaseRef:
    """w1 waiting on wt1 (timeout timer t-timeout) with its attempt x1 parked, plus a
    retry timer of w1 and an unrelated timer of w2."""
    lease = start_attempt(store, keys=[key("1")])
    put_works(store, make_work("w2"))

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1", purpose="timeout"))
        t.put_timer(make_timer("t-retry", t.now + seconds(300), work_id="w1", purpose="retry"))
        t.put_timer(make_timer("t-other", t.now + seconds(300), work_id="w2"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t-timeout"))

    tx(store, register, lease=lease)
    return lease


def test_cancel_work(store: Store, clock: FakeClock) -> None:
    """R-06: cancel_work cancels the nonterminal attempt, cancels active waits,
    deletes the Work's timers and cancels the Work, in one transaction; a failure
    after it leaves everything as it was."""
    from storage.ops.control import cancel_work

    _waiting_work_with_timers(store, clock)
    before = inventory(store)

    def cancel_then_fail(t: Tx) -> None:
        cancel_work(t, "w1")
        raise Crash("injected failure after cancel_work")

    crashes(store, cancel_then_fail, "R-06 cancel then failure")
    assert inventory(store) == before, "R-06: a rolled-back cancellation left partial effects"
    tx(store, lambda t: cancel_work(t, "w1"))

    def after(t: Tx) -> tuple[object, ...]:
        return (
            t.work("w1").state,
            t.execution("x1").state,
            t.wait("wt1").state,
            ids(t.timers()),
            t.work("w2").state,
        )

    assert tx(store, after) == (CANCELLED, X_CANCELLED, WaitState.CANCELLED, ["t-other"], READY), (
        "R-06: cancel_work did not cancel attempt, waits, timers and Work together"
    )

    # A pending attempt is cancelled too.
    put_works(store, make_work("w3"))
    tx(store, lambda t: t.put_execution(make_execution("x3", "w3")))
    tx(store, lambda t: cancel_work(t, "w3"))
    assert get_execution(store, "x3").state == X_CANCELLED, "R-06: pending attempt not cancelled"


def test_cancellation_fencing(store: Store, clock: FakeClock) -> None:
    """Scenario "cancellation fencing" (R-07, L-07, O-05): after a cancel commits, a
    transaction guarded by the old lease is Fenced before its callback runs; a stale
    completion cannot reverse the cancellation."""
    from storage.ops.control import cancel_work

    lease = start_attempt(store)
    tx(store, lambda t: cancel_work(t, "w1"))
    calls: list[int] = []

    def stale_completion(t: Tx) -> None:
        calls.append(1)
        terminate(t, "x1", X_COMPLETED, COMPLETED)

    fails(store, Fenced, stale_completion, "cancellation fencing: stale completion", lease=lease)
    assert calls == [], "cancellation fencing: the fenced callback ran"
    fails(
        store,
        Invalid,
        lambda t: terminate(t, "x1", X_COMPLETED, None),
        "cancellation fencing: completion of a cancelled attempt",
    )
    fails(
        store,
        Invalid,
        lambda t: t.claim("x1", "runner-b", t.now + TTL),
        "cancellation fencing: claim of a cancelled attempt",
    )
    assert (stored_state(store, "w1"), get_execution(store, "x1").state) == (
        CANCELLED,
        X_CANCELLED,
    ), "cancellation fencing: a stale writer reversed the cancellation"


def test_cancel_terminal_work_refused(store: Store, clock: FakeClock) -> None:
    """R-08: cancelling terminal Work is Invalid and changes nothing."""
    from storage.ops.control import cancel_work

    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, COMPLETED))
    before = inventory(store)
    fails(store, Invalid, lambda t: cancel_work(t, "w1"), "R-08 cancel of completed Work")
    assert inventory(store) == before, "R-08: a refused cancel changed something"
