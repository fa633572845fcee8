"""Record IDs the storage rules accept but a URL finds awkward, and a seed of one of
each record under such an ID (tests/console/test_odd_ids.py and its neighbours)."""

from __future__ import annotations

from dataclasses import replace

from demo.graphs import Plan
from storage import (
    Event,
    Execution,
    ExecutionState,
    Outcome,
    OutcomeKind,
    Scope,
    Timer,
    Tx,
    Wait,
    Work,
    WorkState,
    seconds,
)
from tests.console import factories as f
from tests.console import run_record_factories as rf


def exactly_255_bytes(prefix: str) -> str:
    body = prefix + "€" * ((255 - len(prefix.encode())) // 3)
    return body + "x" * (255 - len(body.encode()))


IDS = {
    "255-bytes": exactly_255_bytes("long-"),
    "255-bytes-slashes": exactly_255_bytes("a/ü/"),
    "slash": "team/a/b",
    "percent": "50%off%2e%2F",
    "query": "why?not=1&x",
    "hash": "a#b",
    "space": "a b ",
    "plus": "a+b",
    "dot-dot-inside": "a/../b",
    "dot-dot": "..",
    "dot": ".",
    "leading-dots": "../x/./y",
    "tilde": "~home/~",
    "bidi": "rtl\u202egnp.exe\u2066",
    "emoji": "🚀/👩\u200d💻",
    "trailing-slash": "end/",
}


def seed(record_id: str, n: int) -> str:
    """One of each record under ``record_id``: Scope, Work in it, its attempt parked
    on a Wait with a timeout Timer and an artifact, an Event, a run record. Returns
    the artifact's ID."""
    ref = f.publish(b"artifact body")

    def fn(tx: Tx) -> None:
        tx.put_scope(Scope(id=record_id, name=record_id))
        tx.put_work(Work(id=record_id, kind=f.KIND, scope_id=record_id))
        x = tx.put_execution(Execution(id=record_id, work_id=record_id, attempt=1))
        x = tx.claim(x.id, "worker-1", tx.now + seconds(30))
        template = Event(
            id=f"fire-{n}", source="core.timer", delivery_id=f"fire-{n}", type="timer.fired"
        )
        fire_at = tx.now + seconds(60)
        tx.put_timer(Timer(id=record_id, fire_at=fire_at, template=template, work_id=record_id))
        parked = replace(
            x, state=ExecutionState.PARKED, outcome=Outcome(OutcomeKind.WAITING), artifacts=(ref,)
        )
        tx.put_execution(parked)
        tx.put_work(replace(tx.work(record_id), state=WorkState.WAITING))
        wait = Wait(
            id=record_id, work_id=record_id, execution_id=record_id, timeout_timer_id=record_id
        )
        tx.put_wait(wait)
        tx.accept_event(
            Event(
                id=record_id,
                source="github",
                delivery_id=f"d-{n}",
                type="push.received",
                work_id=record_id,
            )
        )
        tx.set_event_scope(record_id, record_id)

    f.transact(fn)
    rf.save(rf.until(record_id, Plan("checkout")))
    return ref.id
