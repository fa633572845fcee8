"""Parked Work in bulk for the runtime pages' paging tests."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from storage import (
    Event,
    Execution,
    ExecutionState,
    Outcome,
    OutcomeKind,
    Timer,
    Tx,
    Wait,
    Work,
    WorkState,
    seconds,
)
from tests.console import factories as f


def timer_in(tx: Tx, timer_id: str, work_id: str, fire_in: float) -> Timer:
    # The template's identity from a digest: a Timer ID may take all 255 bytes.
    fire = "fire-" + hashlib.sha256(timer_id.encode()).hexdigest()
    template = Event(
        id=fire,
        source="core.timer",
        delivery_id=fire,
        type="timer.fired",
        work_id=work_id,
    )
    return tx.put_timer(
        Timer(
            id=timer_id,
            fire_at=tx.now + seconds(fire_in),
            template=template,
            work_id=work_id,
            purpose="timeout",
        )
    )


def parked_at_once(*wait_ids: str, timeout: bool = True) -> None:
    """One Work, parked attempt, timeout Timer and active Wait per ID, in ONE
    transaction: the Waits share their creation time (a tie broken by ID). Each
    record takes the Wait's ID in its own table (an ID may take all 255 bytes)."""

    def run(tx: Tx) -> None:
        for wait_id in wait_ids:
            work_id = x_id = wait_id
            tx.put_work(Work(id=work_id, kind=f.KIND))
            tx.put_execution(Execution(id=x_id, work_id=work_id, attempt=1))
            x = tx.claim(x_id, "worker-1", tx.now + seconds(600))
            tx.put_execution(
                replace(x, state=ExecutionState.PARKED, outcome=Outcome(OutcomeKind.WAITING))
            )
            tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
            timer_id = wait_id if timeout else ""
            if timeout:
                timer_in(tx, timer_id, work_id, 3600)
            tx.put_wait(
                Wait(id=wait_id, work_id=work_id, execution_id=x_id, timeout_timer_id=timer_id)
            )

    f.transact(run)
