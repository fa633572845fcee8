"""The six transition maps of the spec, verbatim, and their validators.

A status whose entry is empty (or missing) is terminal (resolution 2), for all six
resources. Every store write that changes a status goes through ``validate`` of its
resource; nothing else decides whether a change is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from .enums import AttemptStatus as A
from .enums import ChildBatchStatus as CB
from .enums import NodeStatus as N
from .enums import RunStatus as R
from .enums import ServiceStatus as S
from .enums import WorkflowStatus as W
from .errors import TransitionError

E = TypeVar("E", bound=Enum)

ATTEMPT_TRANSITIONS: Mapping[A, frozenset[A]] = {
    A.PENDING: frozenset({A.RUNNING, A.CANCELLED, A.FAILED}),
    A.RUNNING: frozenset({A.NEEDS_REPLAN, A.SUCCEEDED, A.FAILED, A.FENCED, A.CANCELLED}),
    A.NEEDS_REPLAN: frozenset({A.RUNNING, A.CANCELLED, A.FAILED}),
    A.SUCCEEDED: frozenset(),
    A.FAILED: frozenset(),
    A.FENCED: frozenset(),
    A.CANCELLED: frozenset(),
}

CHILD_BATCH_TRANSITIONS: Mapping[CB, frozenset[CB]] = {
    CB.INTENT: frozenset({CB.ALLOCATED, CB.CANCELLED}),
    CB.ALLOCATED: frozenset({CB.RUNNING, CB.CANCELLED}),
    CB.RUNNING: frozenset({CB.PAUSE_REQUESTED, CB.JOINING, CB.FAILED, CB.CANCELLED}),
    CB.PAUSE_REQUESTED: frozenset({CB.PAUSED, CB.RUNNING, CB.STOPPING, CB.CANCELLED}),
    CB.PAUSED: frozenset({CB.RUNNING, CB.STOPPING, CB.CANCELLED}),
    CB.JOINING: frozenset({CB.SUCCEEDED, CB.FAILED, CB.CANCELLED}),
    CB.STOPPING: frozenset({CB.STOPPED, CB.FAILED, CB.CANCELLED}),
    CB.SUCCEEDED: frozenset(),
    CB.FAILED: frozenset(),
    CB.CANCELLED: frozenset(),
    # ChildBatchStopped has no entry in the Go map: terminal (resolution 2).
}

NODE_TRANSITIONS: Mapping[N, frozenset[N]] = {
    N.PENDING: frozenset({N.READY, N.CANCELLED, N.SKIPPED}),
    N.READY: frozenset({N.LAUNCHING, N.CANCELLED, N.SKIPPED}),
    N.LAUNCHING: frozenset({N.RUNNING, N.FAILED, N.CANCELLED}),
    N.RUNNING: frozenset({N.PAUSE_REQUESTED, N.SUCCEEDED, N.FAILED, N.CANCELLED}),
    N.PAUSE_REQUESTED: frozenset({N.PAUSED, N.RUNNING, N.CANCELLED, N.FAILED}),
    N.PAUSED: frozenset({N.RUNNING, N.NEEDS_REPLAN, N.CANCELLED}),
    N.NEEDS_REPLAN: frozenset({N.RUNNING, N.CANCELLED}),
    N.SUCCEEDED: frozenset(),
    N.FAILED: frozenset(),
    N.CANCELLED: frozenset(),
    N.SKIPPED: frozenset(),
}

RUN_TRANSITIONS: Mapping[R, frozenset[R]] = {
    R.PENDING: frozenset({R.RUNNING, R.CANCELLED, R.FAILED}),
    R.RUNNING: frozenset(
        {R.PAUSE_REQUESTED, R.SUCCEEDED, R.FAILED, R.CANCELLED, R.BUDGET_EXCEEDED, R.EXPIRED}
    ),
    R.PAUSE_REQUESTED: frozenset(
        {R.PAUSED, R.RUNNING, R.CANCELLED, R.FAILED, R.BUDGET_EXCEEDED, R.EXPIRED}
    ),
    R.PAUSED: frozenset({R.RUNNING, R.NEEDS_REPLAN, R.CANCELLED, R.FAILED, R.EXPIRED}),
    R.NEEDS_REPLAN: frozenset({R.RUNNING, R.CANCELLED, R.FAILED, R.EXPIRED}),
    R.SUCCEEDED: frozenset(),
    R.FAILED: frozenset(),
    R.CANCELLED: frozenset(),
    R.BUDGET_EXCEEDED: frozenset(),
    R.EXPIRED: frozenset(),
}

SERVICE_TRANSITIONS: Mapping[S, frozenset[S]] = {
    S.DECLARED: frozenset({S.STARTING, S.FAILED}),
    S.STARTING: frozenset({S.READY, S.FAILED, S.STOPPED}),
    S.READY: frozenset({S.UNHEALTHY, S.STOPPING, S.FAILED}),
    S.UNHEALTHY: frozenset({S.READY, S.FENCED, S.STOPPING, S.FAILED}),
    S.FENCED: frozenset({S.STOPPING, S.FAILED}),
    S.STOPPING: frozenset({S.STOPPED, S.FAILED}),
    S.STOPPED: frozenset(),
    S.FAILED: frozenset(),
}

WORKFLOW_TRANSITIONS: Mapping[W, frozenset[W]] = {
    W.PENDING: frozenset({W.RUNNING, W.CANCELLED, W.FAILED}),
    W.RUNNING: frozenset(
        {W.PAUSE_REQUESTED, W.SUCCEEDED, W.FAILED, W.CANCELLED, W.BUDGET_EXCEEDED, W.EXPIRED}
    ),
    W.PAUSE_REQUESTED: frozenset(
        {W.PAUSED, W.RUNNING, W.CANCELLED, W.FAILED, W.BUDGET_EXCEEDED, W.EXPIRED}
    ),
    W.PAUSED: frozenset({W.RUNNING, W.NEEDS_REPLAN, W.CANCELLED, W.FAILED, W.EXPIRED}),
    W.NEEDS_REPLAN: frozenset({W.RUNNING, W.CANCELLED, W.FAILED, W.EXPIRED}),
    W.SUCCEEDED: frozenset(),
    W.FAILED: frozenset(),
    W.CANCELLED: frozenset(),
    W.EXPIRED: frozenset(),
    W.BUDGET_EXCEEDED: frozenset(),
}

# Resource name (as TransitionError.resource) -> (status enum, map).
MAPS: Mapping[str, tuple[type[Enum], Mapping[Enum, frozenset[Enum]]]] = {
    "run": (R, RUN_TRANSITIONS),  # type: ignore[dict-item]
    "attempt": (A, ATTEMPT_TRANSITIONS),  # type: ignore[dict-item]
    "workflow": (W, WORKFLOW_TRANSITIONS),  # type: ignore[dict-item]
    "node": (N, NODE_TRANSITIONS),  # type: ignore[dict-item]
    "service": (S, SERVICE_TRANSITIONS),  # type: ignore[dict-item]
    "child_batch": (CB, CHILD_BATCH_TRANSITIONS),  # type: ignore[dict-item]
}
RESOURCE_OF: Mapping[type[Enum], str] = {enum: name for name, (enum, _) in MAPS.items()}


def _validate[E: Enum](resource: str, table: Mapping[E, frozenset[E]], from_: E, to: E) -> None:
    kind = MAPS[resource][0]
    if not isinstance(from_, kind) or not isinstance(to, kind):
        raise TransitionError(resource, from_, to, f"{resource} statuses must be {kind.__name__}")
    if to not in table.get(from_, frozenset()):
        raise TransitionError(resource, from_, to)


def validate_run_transition(from_: R, to: R) -> None:
    _validate("run", RUN_TRANSITIONS, from_, to)


def validate_attempt_transition(from_: A, to: A) -> None:
    _validate("attempt", ATTEMPT_TRANSITIONS, from_, to)


def validate_workflow_transition(from_: W, to: W) -> None:
    _validate("workflow", WORKFLOW_TRANSITIONS, from_, to)


def validate_node_transition(from_: N, to: N) -> None:
    _validate("node", NODE_TRANSITIONS, from_, to)


def validate_service_transition(from_: S, to: S) -> None:
    _validate("service", SERVICE_TRANSITIONS, from_, to)


def validate_child_batch_transition(from_: CB, to: CB) -> None:
    _validate("child_batch", CHILD_BATCH_TRANSITIONS, from_, to)


def validate_transition(from_: Enum, to: Enum) -> None:
    """The validator of whichever resource ``from_`` belongs to."""
    resource = RESOURCE_OF.get(type(from_))
    if resource is None:
        raise TransitionError("unknown", from_, to, f"{type(from_).__name__} has no map")
    _validate(resource, MAPS[resource][1], from_, to)


def apply_run_transition(current: R, target: R) -> R:
    """The new status, or ``TransitionError`` (Go returns the original status too)."""
    validate_run_transition(current, target)
    return target


def is_terminal(status: Enum) -> bool:
    """No outgoing transition (resolution 2); for a status of any of the six maps."""
    resource = RESOURCE_OF.get(type(status))
    if resource is None:
        raise TypeError(f"{type(status).__name__} is not a status of a transition map")
    return not MAPS[resource][1].get(status)
