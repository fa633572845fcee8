"""The Work and Execution lifecycle tables of the spec, as predicates.

Equality is not a transition: the predicates answer False for equal states; whether a
same-state write is allowed is a separate rule (nonterminal records only).
"""

from __future__ import annotations

from ..errors import Invalid
from ..records import ExecutionState, WorkState

_W = WorkState
_X = ExecutionState

WORK_TRANSITIONS: dict[WorkState, frozenset[WorkState]] = {
    _W.READY: frozenset({_W.RUNNING, _W.FAILED, _W.CANCELLED}),
    _W.RUNNING: frozenset({_W.READY, _W.WAITING, _W.COMPLETED, _W.FAILED, _W.CANCELLED}),
    _W.WAITING: frozenset({_W.READY, _W.RUNNING, _W.FAILED, _W.CANCELLED}),
    _W.COMPLETED: frozenset(),
    _W.FAILED: frozenset(),
    _W.CANCELLED: frozenset(),
}

EXECUTION_TRANSITIONS: dict[ExecutionState, frozenset[ExecutionState]] = {
    _X.PENDING: frozenset({_X.RUNNING, _X.CANCELLED}),
    _X.RUNNING: frozenset(
        {_X.PARKED, _X.COMPLETED, _X.FAILED, _X.WAITING, _X.HANDOFF, _X.CANCELLED}
    ),
    _X.PARKED: frozenset({_X.RUNNING, _X.FAILED, _X.CANCELLED}),
    _X.COMPLETED: frozenset(),
    _X.FAILED: frozenset(),
    _X.WAITING: frozenset(),
    _X.HANDOFF: frozenset(),
    _X.CANCELLED: frozenset(),
}

# Entering running from these states is the Claim's alone (spec: "running (Claim only)").
CLAIM_ONLY_SOURCES = frozenset({_X.PENDING, _X.PARKED})


def work_state(value: WorkState | str) -> WorkState:
    try:
        return WorkState(value)
    except ValueError:
        raise Invalid(f"unknown Work state {value!r}") from None


def execution_state(value: ExecutionState | str) -> ExecutionState:
    try:
        return ExecutionState(value)
    except ValueError:
        raise Invalid(f"unknown Execution state {value!r}") from None


def work_transition_allowed(src: WorkState | str, dst: WorkState | str) -> bool:
    """True when the Work table allows ``src -> dst`` as an actual change."""
    a, b = work_state(src), work_state(dst)
    return b in WORK_TRANSITIONS[a]


def execution_transition_allowed(
    src: ExecutionState | str, dst: ExecutionState | str, *, via_claim: bool = False
) -> bool:
    """True when the Execution table allows ``src -> dst``; pending/parked -> running
    only when ``via_claim``."""
    a, b = execution_state(src), execution_state(dst)
    if b not in EXECUTION_TRANSITIONS[a]:
        return False
    if b is _X.RUNNING and a in CLAIM_ONLY_SOURCES:
        return via_claim
    return True
