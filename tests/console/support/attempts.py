"""A Work whose attempts went differently, for the Compare page's view tests
(``tests/console/test_compare.py``) and its browser journey
(``tests/console/browser/test_browser_compare.py``)."""

from __future__ import annotations

import json
from dataclasses import replace

from storage import (
    Binding,
    Execution,
    ExecutionState,
    LeaseRef,
    Outcome,
    OutcomeKind,
    Payload,
    Tx,
    WorkState,
    seconds,
)
from tests.console import factories as f

OK_LOG = "".join(f"step {n}: ok\n" for n in range(8)) + "charged 12.00 EUR\n"
BAD_LOG = "".join(f"step {n}: ok\n" for n in range(5)) + "FATAL: card declined\n"
OK_REPORT = {"amount": "12.00", "status": "charged", "tries": 1}
BAD_REPORT = {"amount": "12.00", "status": "declined", "tries": 1}


def attempt(
    work_id: str,
    *,
    state: ExecutionState,
    log: str,
    report: dict[str, object],
    executor: str = "python",
    owner: str = "worker-1",
    message: str = "",
    execution_id: str = "",
    event: str = "",
    claims: int = 1,
) -> Execution:
    """One attempt of ``work_id``, claimed ``claims`` times (by ``owner`` last: each
    earlier lease released, as a worker that lost it would leave it), one Event of its Work accepted
    while it runs (``event``, if given), ended in ``state`` with a log and a report;
    the Work is left ready (nothing scheduled: exhausted once an attempt failed)."""
    log_ref = f.publish(log.encode())
    report_ref = f.publish(json.dumps(report).encode(), "application/json")

    def run(tx: Tx) -> Execution:
        n = max((x.attempt for x in tx.executions(work_id)), default=0) + 1
        x = tx.put_execution(
            Execution(
                id=execution_id or f"{work_id}-x{n}",
                work_id=work_id,
                attempt=n,
                executor=executor,
                binding=Binding(name="charge", executor=executor, pass_env=("REGION",)),
            )
        )
        for n in range(1, claims):
            held = tx.claim(x.id, f"lost-{n}", tx.now + seconds(30))
            tx.release(LeaseRef(held.id, held.owner, held.epoch))
        return tx.claim(x.id, owner, tx.now + seconds(30))

    x = f.transact(run)
    if event:
        f.event(
            event,
            type="card.updated" if state is ExecutionState.COMPLETED else "card.expired",
            work_id=work_id,
        )
    kind = OutcomeKind.COMPLETED if state is ExecutionState.COMPLETED else OutcomeKind.FAILED
    detail = Payload("charge.result", json.dumps({"code": message or "ok"}).encode())

    def end(tx: Tx) -> Execution:
        done = tx.put_execution(
            replace(
                tx.execution(x.id),
                state=state,
                outcome=Outcome(kind, message, detail),
                artifacts=(log_ref, report_ref),
            )
        )
        tx.put_work(replace(tx.work(work_id), state=WorkState.READY))
        return done

    return f.transact(end)


def failed_then_succeeded_then_failed(work_id: str = "refund-7") -> list[Execution]:
    """Attempt 1 completed (then the Work was run again), attempts 2 and 3 failed on
    another executor, each claimed twice (attempt 3 saw an Event, 2 none): an exhausted
    Work whose default comparison is attempt 3 (the latest failed) against attempt 1
    (the latest completed)."""
    f.work(work_id)
    ok = attempt(
        work_id, state=ExecutionState.COMPLETED, log=OK_LOG, report=OK_REPORT, event=f"{work_id}-e1"
    )
    failed = {"state": ExecutionState.FAILED, "log": BAD_LOG, "report": BAD_REPORT}
    failed.update(executor="python-3.13", owner="worker-2", message="card declined", claims=2)
    return [ok, attempt(work_id, **failed), attempt(work_id, **failed, event=f"{work_id}-e3")]  # type: ignore[arg-type]
