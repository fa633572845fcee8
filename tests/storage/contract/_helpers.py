"""Private helpers shared by several sections of the contract tests: state aliases,
the outcome each Execution state requires, and small read/write shortcuts.
"""

from __future__ import annotations

from dataclasses import replace

from storage import ExecutionState, OutcomeKind, Store, Tx, WorkState

from ..support import get_work, outcome, tx

READY = WorkState.READY
RUNNING = WorkState.RUNNING
WAITING = WorkState.WAITING
COMPLETED = WorkState.COMPLETED
FAILED = WorkState.FAILED
CANCELLED = WorkState.CANCELLED

X_PENDING = ExecutionState.PENDING
X_RUNNING = ExecutionState.RUNNING
X_PARKED = ExecutionState.PARKED
X_COMPLETED = ExecutionState.COMPLETED
X_FAILED = ExecutionState.FAILED
X_WAITING = ExecutionState.WAITING
X_HANDOFF = ExecutionState.HANDOFF
X_CANCELLED = ExecutionState.CANCELLED

# The outcome each Execution state requires (O-02..O-04); None means "no outcome".
OUTCOME_FOR: dict[ExecutionState, OutcomeKind | None] = {
    X_PENDING: None,
    X_RUNNING: None,
    X_PARKED: OutcomeKind.WAITING,
    X_COMPLETED: OutcomeKind.COMPLETED,
    X_FAILED: OutcomeKind.FAILED,
    X_WAITING: OutcomeKind.WAITING,
    X_HANDOFF: OutcomeKind.HANDOFF,
    X_CANCELLED: None,
}

# Valid JSON written with odd spacing, key order and escapes: it must come back byte
# for byte, never re-serialised (ID-10).
RAW_JSON = b'{ "b" :1,\n  "a":[1, 2.50, "\\u00e9", {"z": null}] }'


def stored_state(store: Store, work_id: str) -> WorkState:
    return get_work(store, work_id).state


def terminate(t: Tx, execution_id: str, state: ExecutionState, work: WorkState | None) -> None:
    """Inside a transaction: end an attempt in ``state`` (with its required outcome)
    and optionally move its Work to ``work``."""
    execution = t.execution(execution_id)
    kind = OUTCOME_FOR[state]
    t.put_execution(
        replace(execution, state=state, outcome=outcome(kind) if kind is not None else None)
    )
    if work is not None:
        t.put_work(replace(t.work(execution.work_id), state=work))


def inventory(store: Store, *namespaces: str) -> dict[str, object]:
    """Everything a store holds, for "nothing changed" comparisons."""

    def read(t: Tx) -> dict[str, object]:
        return {
            "works": t.works(),
            "events": t.events(),
            "latest_sequence": t.latest_sequence(),
            "executions": t.executions(),
            "scopes": t.scopes(),
            "timers": t.timers(),
            "waits": t.waits(),
            **{f"kv:{ns}": t.kv_list(ns) for ns in namespaces},
        }

    return tx(store, read)
