"""W-06, X-01..X-07, L-04: the Work and Execution lifecycle tables over every state
pair (36 Work, 64 Execution) and unknown states, through the pure predicates of
``storage.tx.lifecycle`` and through ``put_work``/``put_execution``/``claim`` on each
backend.

Equality is not a transition: the predicates say False for equal states, while the
stores accept a same-state write on nonterminal records (W-05, X-07).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

import pytest

from storage import (
    TERMINAL_EXECUTION_STATES,
    TERMINAL_WORK_STATES,
    Conflict,
    Execution,
    ExecutionState,
    Invalid,
    Store,
    Tx,
    WorkState,
)
from storage.tx.lifecycle import execution_transition_allowed, work_transition_allowed

from .contract import OUTCOME_FOR, terminate
from .support import TTL, fails, get_execution, get_work, make_execution, make_work, outcome, tx

W = WorkState
X = ExecutionState

# The spec's tables, written out (storage-contract.txt, "Work and Execution lifecycle").
WORK_NEXT: dict[WorkState, set[WorkState]] = {
    W.READY: {W.RUNNING, W.FAILED, W.CANCELLED},
    W.RUNNING: {W.READY, W.WAITING, W.COMPLETED, W.FAILED, W.CANCELLED},
    W.WAITING: {W.READY, W.RUNNING, W.FAILED, W.CANCELLED},
    W.COMPLETED: set(),
    W.FAILED: set(),
    W.CANCELLED: set(),
}
EXECUTION_NEXT: dict[ExecutionState, set[ExecutionState]] = {
    X.PENDING: {X.CANCELLED},
    X.RUNNING: {X.PARKED, X.COMPLETED, X.FAILED, X.WAITING, X.HANDOFF, X.CANCELLED},
    X.PARKED: {X.FAILED, X.CANCELLED},
    **{state: set() for state in TERMINAL_EXECUTION_STATES},
}
CLAIM_ONLY = {(X.PENDING, X.RUNNING), (X.PARKED, X.RUNNING)}

WORK_PAIRS = list(product(WorkState, WorkState))
EXECUTION_PAIRS = list(product(ExecutionState, ExecutionState))

# How to reach each Work state from ready, along allowed moves.
WORK_PATH: dict[WorkState, list[WorkState]] = {
    W.READY: [],
    W.RUNNING: [W.RUNNING],
    W.WAITING: [W.RUNNING, W.WAITING],
    W.COMPLETED: [W.RUNNING, W.COMPLETED],
    W.FAILED: [W.FAILED],
    W.CANCELLED: [W.CANCELLED],
}

UNKNOWN_WORK = [("paused", "ready"), ("ready", "paused"), ("", "ready"), ("READY", "running")]
UNKNOWN_EXECUTION = [("sleeping", "running"), ("running", "sleeping"), ("", "pending")]


def pair_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}->{pair[1]}"


# Pure predicates -------------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), WORK_PAIRS, ids=map(pair_id, WORK_PAIRS))
def test_work_predicate_follows_the_table(src: WorkState, dst: WorkState) -> None:
    expected = dst in WORK_NEXT[src]
    assert work_transition_allowed(src, dst) is expected
    assert work_transition_allowed(src.value, dst.value) is expected


@pytest.mark.parametrize(("src", "dst"), EXECUTION_PAIRS, ids=map(pair_id, EXECUTION_PAIRS))
def test_execution_predicate_follows_the_table(src: ExecutionState, dst: ExecutionState) -> None:
    expected = dst in EXECUTION_NEXT[src]
    assert execution_transition_allowed(src, dst) is expected
    assert execution_transition_allowed(src.value, dst.value) is expected
    if (src, dst) in CLAIM_ONLY:
        assert execution_transition_allowed(src, dst, via_claim=True) is True
    elif not expected:
        # A claim grants nothing outside the table.
        assert execution_transition_allowed(src, dst, via_claim=True) is False


@pytest.mark.parametrize(("src", "dst"), UNKNOWN_WORK, ids=map(pair_id, UNKNOWN_WORK))
def test_work_predicate_refuses_unknown_states(src: str, dst: str) -> None:
    with pytest.raises(Invalid):
        work_transition_allowed(src, dst)


@pytest.mark.parametrize(("src", "dst"), UNKNOWN_EXECUTION, ids=map(pair_id, UNKNOWN_EXECUTION))
@pytest.mark.parametrize("via_claim", [False, True])
def test_execution_predicate_refuses_unknown_states(src: str, dst: str, via_claim: bool) -> None:
    with pytest.raises(Invalid):
        execution_transition_allowed(src, dst, via_claim=via_claim)


# Through the stores ----------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), WORK_PAIRS, ids=map(pair_id, WORK_PAIRS))
def test_put_work_follows_the_table(store: Store, src: WorkState, dst: WorkState) -> None:
    tx(store, lambda t: t.put_work(make_work("w1")))
    for step in WORK_PATH[src]:
        tx(store, lambda t, s=step: t.put_work(replace(t.work("w1"), state=s)))
    before = get_work(store, "w1")
    same_state_write = src == dst and src not in TERMINAL_WORK_STATES
    if dst in WORK_NEXT[src] or same_state_write:
        after = tx(store, lambda t: t.put_work(replace(before, state=dst)))
        assert (after.state, after.revision) == (dst, before.revision + 1)
    else:
        fails(store, Invalid, lambda t: t.put_work(replace(before, state=dst)), f"{src}->{dst}")
        assert get_work(store, "w1") == before


def drive_execution(store: Store, state: ExecutionState) -> Execution:
    """A Work w1 with its attempt x1 brought to ``state`` along allowed moves."""
    tx(store, lambda t: [t.put_work(make_work("w1")), t.put_execution(make_execution("x1"))])
    if state in (X.PENDING, X.CANCELLED):
        if state == X.CANCELLED:
            tx(store, lambda t: terminate(t, "x1", X.CANCELLED, None))
        return get_execution(store, "x1")
    tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    if state != X.RUNNING:
        tx(store, lambda t: terminate(t, "x1", state, None))
    return get_execution(store, "x1")


@pytest.mark.parametrize(("src", "dst"), EXECUTION_PAIRS, ids=map(pair_id, EXECUTION_PAIRS))
def test_put_execution_follows_the_table(
    store: Store, src: ExecutionState, dst: ExecutionState
) -> None:
    before = drive_execution(store, src)
    assert before.state == src
    kind = OUTCOME_FOR[dst]
    target = replace(before, state=dst, outcome=outcome(kind) if kind else None)
    same_state_write = src == dst and src not in TERMINAL_EXECUTION_STATES
    if dst in EXECUTION_NEXT[src] or same_state_write:
        after = tx(store, lambda t: t.put_execution(target))
        assert (after.state, after.revision) == (dst, before.revision + 1)
    else:
        # Includes pending/parked -> running, which only claim may do.
        fails(store, Invalid, lambda t: t.put_execution(target), f"{src}->{dst}")
        assert get_execution(store, "x1") == before


@pytest.mark.parametrize("src", list(ExecutionState), ids=str)
def test_claim_follows_the_table(store: Store, src: ExecutionState) -> None:
    before = drive_execution(store, src)

    def claim(t: Tx) -> Execution:
        return t.claim("x1", "runner-b", t.now + TTL)

    if (src, X.RUNNING) in CLAIM_ONLY:
        after = tx(store, claim)
        assert (after.state, after.epoch) == (X.RUNNING, before.epoch + 1)
    elif src == X.RUNNING:
        fails(store, Conflict, claim, "claim beside a live lease")
    else:
        fails(store, Invalid, claim, f"claim of a {src} attempt")
        assert get_execution(store, "x1") == before


@pytest.mark.parametrize("state", ["paused", "", "READY"])
def test_put_work_refuses_unknown_states(store: Store, state: str) -> None:
    work = tx(store, lambda t: t.put_work(make_work("w1")))
    fails(store, Invalid, lambda t: t.put_work(replace(work, state=state)), f"Work {state!r}")
    fails(store, Invalid, lambda t: t.put_work(make_work("w2", state=state)), f"new {state!r}")
    assert get_work(store, "w1") == work


@pytest.mark.parametrize("state", ["sleeping", "", "PENDING"])
def test_put_execution_refuses_unknown_states(store: Store, state: str) -> None:
    before = drive_execution(store, X.RUNNING)
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(replace(before, state=state)),
        f"Execution {state!r}",
    )
    assert get_execution(store, "x1") == before
