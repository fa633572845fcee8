"""Conformance invariants of a store after runtimes and operators have used it.

``problems(store)`` reads one consistent snapshot through ``storage.view`` and returns
every broken invariant as a sentence (empty when the store is consistent), so a failing
test names all of them at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from storage import (
    LIVE_EXECUTION_STATES,
    ExecutionState,
    Store,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    WaitState,
    WorkState,
    view,
)
from storage.records import Execution, Work


@dataclass(frozen=True)
class Snapshot:
    now: int
    works: dict[str, Work]
    executions: list[Execution]
    waits: list[Wait]
    timers: list[Timer]
    events: list[StoredEvent]


def snapshot(store: Store) -> Snapshot:
    def read(tx: Tx) -> Snapshot:
        return Snapshot(
            now=tx.now,
            works={w.id: w for w in tx.works()},
            executions=tx.executions(),
            waits=tx.waits(),
            timers=tx.timers(),
            events=tx.events(),
        )

    return view(store, None, read)


def problems(store: Store) -> list[str]:
    return check(snapshot(store))


def check(s: Snapshot) -> list[str]:
    out: list[str] = []
    attempts: dict[str, list[Execution]] = defaultdict(list)
    for x in s.executions:
        attempts[x.work_id].append(x)
        if x.work_id not in s.works:
            out.append(f"attempt {x.id} names missing Work {x.work_id}")
        if x.state is ExecutionState.RUNNING and (not x.owner or x.epoch < 1):
            out.append(f"running attempt {x.id} has no owner or no epoch")
        if x.state is not ExecutionState.RUNNING and x.owner:
            out.append(f"{x.state} attempt {x.id} still holds a lease ({x.owner})")
    active: dict[str, list[Wait]] = defaultdict(list)
    for wait in s.waits:
        if wait.state is WaitState.ACTIVE:
            active[wait.work_id].append(wait)
    timers: dict[str, list[Timer]] = defaultdict(list)
    for timer in s.timers:
        if timer.work_id:
            timers[timer.work_id].append(timer)
    by_execution = {x.id: x for x in s.executions}

    for work in s.works.values():
        xs = sorted(attempts[work.id], key=lambda x: x.attempt)
        live = [x for x in xs if x.state in LIVE_EXECUTION_STATES]
        if len(live) > 1:
            out.append(f"Work {work.id} has {len(live)} live attempts")
        numbers = [x.attempt for x in xs]
        if numbers != list(range(1, len(xs) + 1)):
            out.append(f"Work {work.id} attempts are numbered {numbers}")
        if work.parent_id and work.parent_id not in s.works:
            out.append(f"Work {work.id} names missing parent {work.parent_id}")
        if work.terminal:
            if live:
                out.append(f"{work.state} Work {work.id} has live attempt {live[0].id}")
            if active[work.id]:
                out.append(f"{work.state} Work {work.id} has an active Wait")
            if timers[work.id]:
                out.append(f"{work.state} Work {work.id} has timer {timers[work.id][0].id}")
        running = [x for x in xs if x.state is ExecutionState.RUNNING]
        if work.state is WorkState.RUNNING and len(running) != 1:
            out.append(f"running Work {work.id} has {len(running)} running attempts")
        if work.state is WorkState.WAITING:
            if not active[work.id]:
                out.append(f"waiting Work {work.id} has no active Wait")
            if any(x.state in (ExecutionState.PENDING, ExecutionState.RUNNING) for x in live):
                out.append(f"waiting Work {work.id} has a pending or running attempt")
        if work.state is WorkState.READY and any(
            x.state in (ExecutionState.RUNNING, ExecutionState.PARKED) for x in live
        ):
            out.append(f"ready Work {work.id} has a running or parked attempt")
        if work.state is WorkState.COMPLETED and (
            not xs or xs[-1].state is not ExecutionState.COMPLETED
        ):
            out.append(f"completed Work {work.id} has no completed last attempt")

    for wait in s.waits:
        if wait.state is WaitState.ACTIVE:
            x = by_execution.get(wait.execution_id)
            if x is None or x.state not in (ExecutionState.PARKED, ExecutionState.WAITING):
                out.append(f"active Wait {wait.id}: attempt is {x.state if x else 'missing'}")
            work = s.works.get(wait.work_id)
            if work is None or work.state is not WorkState.WAITING:
                out.append(f"active Wait {wait.id}: Work is {work.state if work else 'missing'}")
        if wait.state is WaitState.WOKEN and not wait.woken_by:
            out.append(f"woken Wait {wait.id} names no waking Event")

    for timer in s.timers:
        if timer.work_id and timer.work_id not in s.works:
            out.append(f"timer {timer.id} names missing Work {timer.work_id}")

    ids = {e.id for e in s.events}
    for stored in s.events:
        route = stored.route
        if route is not None and route.work_id and route.work_id not in s.works:
            out.append(f"Event {stored.id} is routed to missing Work {route.work_id}")
        if route is not None and route.disposition == "routed" and not route.work_id:
            out.append(f"Event {stored.id} is routed to no Work")
        cause = stored.event.causation_id
        if cause and cause not in ids:
            out.append(f"Event {stored.id} names missing causation {cause}")
    woken_by = [w.woken_by for w in s.waits if w.woken_by]
    out.extend(f"a Wait was woken by missing Event {e}" for e in woken_by if e not in ids)
    return out
