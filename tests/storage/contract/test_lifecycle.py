"""The Work and Execution lifecycles (checklist §7-8: W, X)."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import storage
from storage import (
    ArtifactRef,
    Conflict,
    Execution,
    ExecutionState,
    Invalid,
    NotFound,
    Outcome,
    OutcomeKind,
    Store,
    WorkState,
)

from ..support import (
    TTL,
    FakeClock,
    fails,
    get_execution,
    get_work,
    ids,
    key,
    make_execution,
    make_work,
    outcome,
    payload,
    put_works,
    start_attempt,
    tx,
    update_work,
)
from ._helpers import (
    CANCELLED,
    COMPLETED,
    FAILED,
    OUTCOME_FOR,
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
    terminate,
)

# ---------------------------------------------------------------------------------
# 7. Work lifecycle (W)
# ---------------------------------------------------------------------------------


def test_new_work_must_be_ready(store: Store, clock: FakeClock) -> None:
    """W-07 (resolution 2): a new Work is created ready; any other initial state is
    Invalid; ready Work may stay ready without attempts."""
    for state in (RUNNING, WAITING, COMPLETED, FAILED, CANCELLED):
        fails(
            store,
            Invalid,
            lambda t, s=state: t.put_work(make_work("w1", state=s)),
            f"W-07 Work created {state}",
        )
    put_works(store, make_work("w1"))
    clock.advance(seconds=3600)
    work = get_work(store, "w1")
    assert work.state == READY, "W-07: ready Work changed state on its own"
    assert tx(store, lambda t: t.executions("w1")) == [], "W-07: storage scheduled an attempt"


def test_work_transition_refused_leaves_record(store: Store, clock: FakeClock) -> None:
    """W-01, W-02, W-03: ready -> waiting/completed and waiting -> completed are Invalid
    and leave the record unchanged; the allowed moves succeed."""
    (w,) = put_works(store, make_work("w1"))
    for target in (WAITING, COMPLETED):
        fails(
            store, Invalid, lambda t, s=target: t.put_work(replace(w, state=s)), f"ready->{target}"
        )
    assert get_work(store, "w1") == w, "W-01: a refused transition changed the Work"
    update_work(store, "w1", state=RUNNING)
    w = update_work(store, "w1", state=WAITING)
    fails(store, Invalid, lambda t: t.put_work(replace(w, state=COMPLETED)), "W-03 waiting->done")
    assert get_work(store, "w1") == w, "W-03: a refused transition changed the Work"
    for target in (READY, RUNNING, WAITING, RUNNING, COMPLETED):
        w = update_work(store, "w1", state=target)
    assert w.state == COMPLETED, "W-02: an allowed transition chain failed"


def test_work_same_state_write(store: Store, clock: FakeClock) -> None:
    """W-05: same-state writes on nonterminal Work are allowed, check the revision
    and advance it."""
    (w,) = put_works(store, make_work("w1"))
    for state in (READY, RUNNING, WAITING):
        if w.state != state:
            w = update_work(store, "w1", state=state)
        again = tx(store, lambda t, cur=w: t.put_work(replace(cur, context=payload())))
        assert (again.state, again.revision) == (state, w.revision + 1), (
            f"W-05: same-state {state} write did not advance the revision"
        )
        fails(
            store,
            Conflict,
            lambda t, cur=w: t.put_work(cur),
            f"W-05 same-state {state} write with a stale revision",
        )
        w = again


def test_terminal_work_is_immutable(store: Store, clock: FakeClock) -> None:
    """W-04: terminal Work refuses any write, even same-state or a field change."""
    for n, final in enumerate((COMPLETED, FAILED, CANCELLED)):
        work_id = f"w{n}"
        put_works(store, make_work(work_id))
        if final == COMPLETED:
            update_work(store, work_id, state=RUNNING)
        done = update_work(store, work_id, state=final)
        for what, changed in [
            ("same state", done),
            ("context", replace(done, context=payload())),
            ("ready", replace(done, state=READY)),
            ("new key", replace(done, keys=(key(work_id),))),
        ]:
            fails(store, Invalid, lambda t, c=changed: t.put_work(c), f"W-04 {final} {what}")
        assert get_work(store, work_id) == done, f"W-04: terminal {final} Work was changed"


def test_unknown_work_state_refused(store: Store, clock: FakeClock) -> None:
    """W-06: an unknown Work state is Invalid, on create and on update."""
    bogus = cast(WorkState, "paused")
    fails(store, Invalid, lambda t: t.put_work(make_work("w1", state=bogus)), "W-06 create")
    (w,) = put_works(store, make_work("w1"))
    fails(store, Invalid, lambda t: t.put_work(replace(w, state=bogus)), "W-06 unknown state")
    assert get_work(store, "w1") == w, "W-06: an unknown state was stored"


# ---------------------------------------------------------------------------------
# 8. Execution lifecycle (X)
# ---------------------------------------------------------------------------------


def test_execution_create_rules(store: Store, clock: FakeClock) -> None:
    """X-08 (resolution 2): a new Execution is pending and names an existing,
    nonterminal Work."""
    put_works(store, make_work("w1"), make_work("done"))
    update_work(store, "done", state=CANCELLED)
    for state in (X_RUNNING, X_PARKED, X_COMPLETED, X_CANCELLED):
        kind = OUTCOME_FOR[state]
        fails(
            store,
            Invalid,
            lambda t, s=state, k=kind: t.put_execution(
                make_execution("x1", state=s, outcome=outcome(k) if k else None)
            ),
            f"X-08 Execution created {state}",
        )
    fails(
        store,
        NotFound,
        lambda t: t.put_execution(make_execution("x1", "ghost")),
        "X-08 Execution of a missing Work",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(make_execution("x1", "done")),
        "X-08 Execution of a terminal Work",
    )
    created = tx(store, lambda t: t.put_execution(make_execution("x1")))
    assert (created.state, created.revision) == (X_PENDING, 1), "X-08: pending create failed"
    assert tx(store, lambda t: t.executions()) == [created], "X-08: a refused attempt was stored"


def test_execution_running_only_via_claim(store: Store, clock: FakeClock) -> None:
    """X-01: pending -> running and parked -> running through put_execution are
    Invalid; claim does both."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    fails(store, Invalid, lambda t: t.put_execution(replace(x, state=X_RUNNING)), "X-01 pending")
    claimed = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert claimed.state == X_RUNNING, "X-01: claim did not move pending -> running"
    parked = tx(
        store,
        lambda t: t.put_execution(
            replace(t.execution("x1"), state=X_PARKED, outcome=outcome(OutcomeKind.WAITING))
        ),
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(replace(parked, state=X_RUNNING, outcome=None)),
        "X-01 parked -> running through put_execution",
    )
    resumed = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert resumed.state == X_RUNNING, "X-01: claim did not resume the parked attempt"


def _to_state(store: Store, execution_id: str, state: ExecutionState) -> Execution:
    """Drive an attempt from pending to ``state`` along allowed moves."""
    if state not in (X_PENDING, X_CANCELLED):
        tx(store, lambda t: t.claim(execution_id, "runner-a", t.now + TTL))
    if state not in (X_PENDING, X_RUNNING):
        tx(store, lambda t: terminate(t, execution_id, state, None))
    return get_execution(store, execution_id)


def test_execution_allowed_moves(store: Store, clock: FakeClock) -> None:
    """X-02, X-03, X-04: pending -> cancelled; running -> parked, completed, failed,
    waiting, handoff, cancelled; parked -> failed, cancelled."""
    moves = [
        (X_PENDING, X_CANCELLED),
        *((X_RUNNING, s) for s in (X_PARKED, X_COMPLETED, X_FAILED, X_WAITING, X_HANDOFF)),
        (X_RUNNING, X_CANCELLED),
        (X_PARKED, X_FAILED),
        (X_PARKED, X_CANCELLED),
    ]
    for n, (source, target) in enumerate(moves):
        work_id, execution_id = f"w{n}", f"x{n}"
        put_works(store, make_work(work_id))
        tx(store, lambda t, w=work_id, x=execution_id: t.put_execution(make_execution(x, w)))
        _to_state(store, execution_id, source)
        tx(store, lambda t, x=execution_id, s=target: terminate(t, x, s, None))
        assert get_execution(store, execution_id).state == target, (
            f"X-02..X-04: {source} -> {target} was not applied"
        )


def test_execution_refused_moves(store: Store, clock: FakeClock) -> None:
    """X-05, X-06: moves outside the table are Invalid and change nothing, terminal
    attempts included."""
    refused = [
        (X_PENDING, X_PARKED),
        (X_PENDING, X_COMPLETED),
        (X_PENDING, X_FAILED),
        (X_RUNNING, X_PENDING),
        (X_PARKED, X_COMPLETED),
        (X_PARKED, X_HANDOFF),
        (X_PARKED, X_WAITING),
        (X_PARKED, X_PENDING),
        *((s, t) for s in storage.TERMINAL_EXECUTION_STATES for t in (X_PENDING, X_CANCELLED)),
        (X_COMPLETED, X_COMPLETED),
        (X_FAILED, X_FAILED),
    ]
    for n, (source, target) in enumerate(refused):
        work_id, execution_id = f"w{n}", f"x{n}"
        put_works(store, make_work(work_id))
        tx(store, lambda t, w=work_id, x=execution_id: t.put_execution(make_execution(x, w)))
        before = _to_state(store, execution_id, source)
        kind = OUTCOME_FOR[target]
        fails(
            store,
            Invalid,
            lambda t, b=before, s=target, k=kind: t.put_execution(
                replace(b, state=s, outcome=outcome(k) if k else None)
            ),
            f"X-05/X-06 {source} -> {target}",
        )
        assert get_execution(store, execution_id) == before, (
            f"X-05/X-06: refused {source} -> {target} changed the attempt"
        )


def test_execution_same_state_write(store: Store, clock: FakeClock) -> None:
    """X-07 (resolution 3): same-state writes on pending, running and parked attempts
    are allowed with a revision check (e.g. attaching an artifact reference)."""
    ref = ArtifactRef(id="art-1", size=12, media_type="text/plain", sha256="ab" * 32)
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    x = tx(store, lambda t: t.put_execution(replace(x, trace_id="trace-1")))
    assert (x.state, x.trace_id, x.revision) == (X_PENDING, "trace-1", 2), "X-07 pending write"
    tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    x = tx(store, lambda t: t.put_execution(replace(t.execution("x1"), artifacts=(ref,))))
    assert (x.state, x.artifacts) == (X_RUNNING, (ref,)), "X-07: running write lost the artifact"
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(replace(x, revision=x.revision - 1, trace_id="t2")),
        "X-07 same-state write with a stale revision",
    )
    tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
    parked = tx(store, lambda t: t.put_execution(replace(t.execution("x1"), trace_id="t3")))
    assert (parked.state, parked.trace_id) == (X_PARKED, "t3"), "X-07: parked write refused"
    assert get_execution(store, "x1").artifacts == (ref,), "X-07: artifact ref lost"


def test_attempt_numbering(store: Store, clock: FakeClock) -> None:
    """X-09: attempts start at 1 and advance by 1 without gaps."""
    put_works(store, make_work("w1"))
    for bad in (0, 2, -1):
        fails(
            store,
            Invalid,
            lambda t, n=bad: t.put_execution(make_execution("x", "w1", n)),
            f"X-09 first attempt numbered {bad}",
        )
    tx(store, lambda t: t.put_execution(make_execution("x1", "w1", 1)))
    tx(store, lambda t: terminate(t, "x1", X_CANCELLED, None))
    for bad in (1, 3):
        fails(
            store,
            Invalid,
            lambda t, n=bad: t.put_execution(make_execution("x", "w1", n)),
            f"X-09 next attempt numbered {bad} after 1",
        )
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    attempts = [x.attempt for x in tx(store, lambda t: t.executions("w1"))]
    assert attempts == [1, 2], f"X-09: attempts are not gapless: {attempts}"


def test_one_live_attempt(store: Store, clock: FakeClock) -> None:
    """X-10: creating an attempt while another pending, running or parked attempt of
    the same Work exists conflicts."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    for state in (X_PENDING, X_RUNNING, X_PARKED):
        if state == X_RUNNING:
            tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
        if state == X_PARKED:
            tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
        fails(
            store,
            Conflict,
            lambda t: t.put_execution(make_execution("x2", "w1", 2)),
            f"X-10 second attempt beside a {state} one",
        )
    tx(store, lambda t: terminate(t, "x1", X_FAILED, None))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    assert ids(tx(store, lambda t: t.live_executions("w1"))) == ["x2"], "X-10: live attempts"


def test_execution_times(store: Store, clock: FakeClock) -> None:
    """X-11: the first claim sets started_at; later claims keep it; a terminal write
    sets finished_at; pending, running and parked have none."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    assert (x.started_at, x.finished_at) == (0, 0), "X-11: a pending attempt has times"
    clock.advance(seconds=1)
    first_claim = clock()
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.started_at, x.finished_at) == (first_claim, 0), "X-11: first claim start time"
    clock.advance(seconds=1)
    tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
    clock.advance(seconds=1)
    x = tx(store, lambda t: t.claim("x1", "runner-b", t.now + TTL))
    assert (x.started_at, x.finished_at) == (first_claim, 0), (
        "X-11: resuming a parked attempt changed started_at or set finished_at"
    )
    clock.advance(seconds=TTL / 1e9 + 1)
    x = tx(store, lambda t: t.claim("x1", "runner-c", t.now + TTL))
    assert x.started_at == first_claim, "X-11: recovering an expired lease moved started_at"
    clock.advance(seconds=1)
    finish = clock()
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, None))
    x = get_execution(store, "x1")
    assert (x.started_at, x.finished_at) == (first_claim, finish), (
        "X-11: a terminal write did not set finished_at = tx.now"
    )


def test_unknown_execution_state_refused(store: Store, clock: FakeClock) -> None:
    """X-06: an unknown Execution state is Invalid."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    bogus = cast(ExecutionState, "sleeping")
    fails(store, Invalid, lambda t: t.put_execution(replace(x, state=bogus)), "X-06 unknown")
    assert get_execution(store, "x1") == x, "X-06: an unknown Execution state was stored"


def test_execution_update_check_order(store: Store, clock: FakeClock) -> None:
    """ID-05, O-01..O-03 (lead rule): put_execution checks an update for a missing
    record (NotFound), then its revision (Conflict, even when the outcome is also
    invalid), then the rules (Invalid); every refusal leaves the record unchanged."""
    start_attempt(store)
    x = get_execution(store, "x1")
    invalid = [
        ("completed without an outcome", X_COMPLETED, None),
        ("completed with a failed outcome", X_COMPLETED, outcome(OutcomeKind.FAILED)),
        ("failed with an unknown outcome kind", X_FAILED, Outcome(cast(OutcomeKind, "boom"))),
        ("running with an outcome", X_RUNNING, outcome(OutcomeKind.COMPLETED)),
    ]
    for what, state, bad in invalid:
        fails(
            store,
            NotFound,
            lambda t, s=state, b=bad: t.put_execution(
                replace(make_execution("ghost"), revision=2, state=s, outcome=b)
            ),
            f"execution check order: update of a missing Execution, {what}",
        )
        for stale in (x.revision - 1, x.revision + 1):
            fails(
                store,
                Conflict,
                lambda t, r=stale, s=state, b=bad: t.put_execution(
                    replace(x, revision=r, state=s, outcome=b)
                ),
                f"execution check order: revision {stale} (stored {x.revision}), {what}",
            )
        fails(
            store,
            Invalid,
            lambda t, s=state, b=bad: t.put_execution(replace(x, state=s, outcome=b)),
            f"execution check order: current revision, {what}",
        )
        assert get_execution(store, "x1") == x, (
            f"execution check order: a refused update ({what}) changed the Execution"
        )
        assert ids(tx(store, lambda t: t.executions())) == ["x1"], (
            f"execution check order: a refused update ({what}) stored another Execution"
        )
