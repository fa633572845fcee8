"""Control-plane operations built on the contract (trusted, no lease in the Guard).

These are the spec's single-transaction recipes, shared by the console's operator
actions, management commands, the simulated runtime and the tests, so there is one
definition of "cancel" and one of "operator retry".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..api import Tx
from ..errors import Conflict, Invalid
from ..records import Execution, ExecutionState, WaitState, Work, WorkState


@dataclass(frozen=True, slots=True)
class CancelResult:
    work: Work
    cancelled_attempt: str
    cancelled_waits: tuple[str, ...]
    deleted_timers: tuple[str, ...]


def cancel_refusal(work: Work) -> str:
    """Why ``work`` cannot be cancelled, or "" when it can."""
    if work.terminal:
        return f"Work is already {work.state}"
    return ""


def cancel_work(tx: Tx, work_id: str) -> CancelResult:
    """Cancel in one transaction (R-06): the live attempt cancelled, active Waits
    cancelled, the Work's Timers removed, then the Work cancelled. Authority of the old
    lease ends at this commit, so a stale completion is fenced afterwards."""
    work = tx.work(work_id)
    reason = cancel_refusal(work)
    if reason:
        raise Invalid(f"cannot cancel Work {work_id}: {reason}")
    attempt = ""
    for x in tx.live_executions(work_id):
        tx.put_execution(replace(x, state=ExecutionState.CANCELLED, outcome=None))
        attempt = x.id
    waits = []
    for wait in tx.active_waits(work_id):
        tx.put_wait(replace(wait, state=WaitState.CANCELLED))
        waits.append(wait.id)
    timers = []
    for timer in tx.timers(work_id):
        tx.delete_timer(timer.id, timer.revision)
        timers.append(timer.id)
    work = tx.work(work_id)
    cancelled = tx.put_work(replace(work, state=WorkState.CANCELLED))
    return CancelResult(cancelled, attempt, tuple(waits), tuple(timers))


def retry_refusal(work: Work, live_attempts: int) -> str:
    """Why an operator retry does not apply to ``work``, or "" when it does."""
    if work.terminal:
        return f"Work is {work.state}; a terminal Work needs a successor, not a retry"
    if live_attempts:
        return "Work has a live attempt"
    return ""


def next_attempt(previous: Iterable[Execution]) -> int:
    """The number of the attempt a retry creates: one past the highest so far (1 for
    Work never attempted). The confirmation page shows it before the retry runs."""
    return max((x.attempt for x in previous), default=0) + 1


def retry_work(tx: Tx, work_id: str, execution_id: str) -> Execution:
    """Operator retry of exhausted, nonterminal Work (R-03): attempt N+1 pending with
    the previous attempt's binding and executor, Work ready. Timers left over for the
    Work (a retry backoff) are removed so the runtime does not retry twice."""
    work = tx.work(work_id)
    live = tx.live_executions(work_id)
    reason = retry_refusal(work, len(live))
    if reason:
        raise (Conflict if live else Invalid)(f"cannot retry Work {work_id}: {reason}")
    previous = tx.executions(work_id)
    last = max(previous, key=lambda x: x.attempt, default=None)
    attempt = Execution(
        id=execution_id,
        work_id=work_id,
        attempt=next_attempt(previous),
        executor=last.executor if last else "",
        binding=last.binding if last else None,
    )
    for timer in tx.timers(work_id):
        tx.delete_timer(timer.id, timer.revision)
    created = tx.put_execution(attempt)
    if work.state is not WorkState.READY:
        tx.put_work(replace(tx.work(work_id), state=WorkState.READY))
    return created
