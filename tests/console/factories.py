"""Seed data for console tests, written through the storage API (never the ORM).

Each helper is one control-plane transaction on the process-wide store, so what the
views read is exactly what a runtime would have committed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from storage import (
    ArtifactRef,
    Binding,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    LeaseRef,
    Outcome,
    OutcomeKind,
    Payload,
    Scope,
    StoredEvent,
    Timer,
    Tx,
    Wait,
    WaitState,
    Work,
    WorkState,
    seconds,
    view,
)
from storage.default import default_artifacts, default_store
from storage.ops import manual

KIND = "billing.charge"


def transact[T](fn: Callable[[Tx], T]) -> T:
    return default_store().transact(Guard(), fn)


def scope(scope_id: str, *, parent: str = "", name: str = "") -> Scope:
    return transact(lambda tx: tx.put_scope(Scope(id=scope_id, parent_id=parent, name=name)))


def work(
    work_id: str,
    *,
    kind: str = KIND,
    scope_id: str = "",
    parent: str = "",
    keys: Sequence[tuple[str, str]] = (),
    context: dict[str, object] | None = None,
) -> Work:
    record = Work(
        id=work_id,
        kind=kind,
        scope_id=scope_id,
        parent_id=parent,
        keys=tuple(CorrelationKey(s, e) for s, e in keys),
        context=Payload("test.context", json.dumps(context).encode()) if context else None,
    )
    return transact(lambda tx: tx.put_work(record))


def works_at_once(*work_ids: str, kind: str = KIND, scope_id: str = "") -> list[Work]:
    """Several Works created in one transaction: they share created_at to the
    nanosecond (a tie that keyset paging breaks by ID)."""
    return transact(
        lambda tx: [tx.put_work(Work(id=i, kind=kind, scope_id=scope_id)) for i in work_ids]
    )


def _next_attempt(tx: Tx, work_id: str) -> int:
    return max((x.attempt for x in tx.executions(work_id)), default=0) + 1


def start(
    work_id: str, *, executor: str = "python", owner: str = "worker-1", lease: float = 30
) -> Execution:
    """A new attempt, claimed: the Work becomes running with a live lease."""

    def run(tx: Tx) -> Execution:
        n = _next_attempt(tx, work_id)
        x = tx.put_execution(
            Execution(
                id=f"{work_id}-x{n}",
                work_id=work_id,
                attempt=n,
                executor=executor,
                binding=Binding(name=executor, executor=executor),
                trace_id=f"trace-{work_id}-{n}",
            )
        )
        return tx.claim(x.id, owner, tx.now + seconds(lease))

    return transact(run)


def pending(work_id: str, *, executor: str = "python") -> Execution:
    def run(tx: Tx) -> Execution:
        n = _next_attempt(tx, work_id)
        return tx.put_execution(
            Execution(id=f"{work_id}-x{n}", work_id=work_id, attempt=n, executor=executor)
        )

    return transact(run)


def finish(
    execution_id: str,
    *,
    state: ExecutionState = ExecutionState.COMPLETED,
    work_state: WorkState | None = None,
    message: str = "",
    artifacts: Sequence[ArtifactRef] = (),
) -> Execution:
    """End an attempt with its outcome; move its Work to ``work_state`` if given."""
    kind = {
        ExecutionState.COMPLETED: OutcomeKind.COMPLETED,
        ExecutionState.FAILED: OutcomeKind.FAILED,
        ExecutionState.HANDOFF: OutcomeKind.HANDOFF,
    }[state]

    def run(tx: Tx) -> Execution:
        x = tx.execution(execution_id)
        done = tx.put_execution(
            replace(x, state=state, outcome=Outcome(kind, message), artifacts=tuple(artifacts))
        )
        if work_state is not None:
            tx.put_work(replace(tx.work(x.work_id), state=work_state))
        return done

    return transact(run)


def completed(work_id: str, **kw: object) -> Work:
    work(work_id, **kw)  # type: ignore[arg-type]
    x = start(work_id)
    finish(x.id, work_state=WorkState.COMPLETED)
    return transact(lambda tx: tx.work(work_id))


def exhausted(work_id: str, *, message: str = "boom", **kw: object) -> Work:
    """A failed attempt with retries exhausted: nonterminal ready Work, no live attempt
    (what an operator retry is for)."""
    work(work_id, **kw)  # type: ignore[arg-type]
    x = start(work_id)
    finish(x.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message=message)
    return transact(lambda tx: tx.work(work_id))


def exhausted_at_once(
    *work_ids: str, message: str = "boom", kind: str = KIND, scope_id: str = ""
) -> list[Work]:
    """Several exhausted Works in ONE transaction (created, attempted, failed, left
    ready without a Timer): the fast path for data sets past the bulk cap."""

    def run(tx: Tx) -> list[Work]:
        out = []
        for work_id in work_ids:
            w = tx.put_work(Work(id=work_id, kind=kind, scope_id=scope_id))
            x = tx.put_execution(Execution(id=f"{work_id}-x1", work_id=work_id, attempt=1))
            x = tx.claim(x.id, "worker-1", tx.now + seconds(30))
            failure = Outcome(OutcomeKind.FAILED, message)
            tx.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failure))
            out.append(tx.put_work(replace(tx.work(w.id), state=WorkState.READY)))
        return out

    return transact(run)


def backoff(work_id: str, *, message: str = "boom", **kw: object) -> Timer:
    """A failed attempt whose Work waits for its retry Timer: ready, not exhausted."""
    exhausted(work_id, message=message, **kw)
    return timer(f"{work_id}-retry", work_id=work_id, purpose="retry")


def failed(work_id: str, *, message: str = "fatal", **kw: object) -> Work:
    """Explicitly terminal failed Work."""
    work(work_id, **kw)  # type: ignore[arg-type]
    x = start(work_id)
    finish(x.id, state=ExecutionState.FAILED, work_state=WorkState.FAILED, message=message)
    return transact(lambda tx: tx.work(work_id))


def running(work_id: str, *, lease: float = 30, **kw: object) -> Execution:
    work(work_id, **kw)  # type: ignore[arg-type]
    return start(work_id, lease=lease)


def event(
    event_id: str,
    *,
    source: str = "github",
    type: str = "push.received",
    work_id: str = "",
    causation: str = "",
    scope_id: str = "",
    data: dict[str, object] | None = None,
    route: str = "",
    actor: str = "",
    schema: str = "test.payload",
    keys: Sequence[tuple[str, str]] = (),
) -> StoredEvent:
    def run(tx: Tx) -> StoredEvent:
        tx.accept_event(
            Event(
                id=event_id,
                source=source,
                delivery_id=f"d-{event_id}",
                type=type,
                work_id=work_id,
                causation_id=causation,
                actor=actor,
                keys=tuple(CorrelationKey(s, e) for s, e in keys),
                payload=Payload(schema, json.dumps(data).encode()) if data else None,
            )
        )
        if scope_id:
            tx.set_event_scope(event_id, scope_id)
        if route:
            tx.mark_routed(event_id, work_id, route)
        return tx.event(event_id)

    return transact(run)


def timer(
    timer_id: str, *, work_id: str = "", fire_in: float = 60, purpose: str = "retry"
) -> Timer:
    def run(tx: Tx) -> Timer:
        template = Event(
            id=f"{timer_id}-fire",
            source="core.timer",
            delivery_id=f"{timer_id}-fire",
            type="timer.fired",
            work_id=work_id,
        )
        return tx.put_timer(
            Timer(
                id=timer_id,
                fire_at=tx.now + seconds(fire_in),
                template=template,
                work_id=work_id,
                purpose=purpose,
            )
        )

    return transact(run)


def parked(
    work_id: str,
    *,
    timeout_in: float = 3600,
    wait_keys: Sequence[tuple[str, str]] = (),
    after_latest: bool = False,
    **kw: object,
) -> Wait:
    """A running attempt parks on a Wait with a timeout Timer; the Work waits. The Wait
    listens on ``wait_keys`` (none: any key), after the latest accepted Event when
    ``after_latest`` (else from the start)."""
    x = running(work_id, **kw)
    timer(f"{work_id}-timeout", work_id=work_id, fire_in=timeout_in, purpose="timeout")

    def run(tx: Tx) -> Wait:
        current = tx.execution(x.id)
        tx.put_execution(
            replace(current, state=ExecutionState.PARKED, outcome=Outcome(OutcomeKind.WAITING))
        )
        tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
        return tx.put_wait(
            Wait(
                id=f"{work_id}-wait",
                work_id=work_id,
                execution_id=x.id,
                types=("approval.granted",),
                keys=tuple(CorrelationKey(s, e) for s, e in wait_keys),
                after_sequence=tx.latest_sequence() if after_latest else 0,
                timeout_timer_id=f"{work_id}-timeout",
                description="waiting for approval",
            )
        )

    return transact(run)


def timed_out(
    work_id: str, *, types: Sequence[str] = ("zendesk.ticket.replied",), **kw: object
) -> Work:
    """An attempt ends waiting (an executor that cannot resume) on a Wait for ``types``
    whose timeout fires first: the Wait cancelled, the Work ready with nothing to run
    it (exhausted), as the demo's support tickets end."""
    x = running(work_id, **kw)
    timeout = timer(f"{work_id}-timeout", work_id=work_id, fire_in=60, purpose="timeout")

    def park(tx: Tx) -> None:
        waiting = Outcome(OutcomeKind.WAITING, f"waiting for {' or '.join(types)}")
        tx.put_execution(replace(tx.execution(x.id), state=ExecutionState.WAITING, outcome=waiting))
        tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
        tx.put_wait(
            Wait(
                id=f"{work_id}-wait",
                work_id=work_id,
                execution_id=x.id,
                types=tuple(types),
                timeout_timer_id=timeout.id,
                description=waiting.message,
            )
        )

    def time_out(tx: Tx) -> Work:
        tx.delete_timer(timeout.id, tx.timer(timeout.id).revision)
        tx.put_wait(replace(tx.wait(f"{work_id}-wait"), state=WaitState.CANCELLED))
        return tx.put_work(replace(tx.work(work_id), state=WorkState.READY))

    transact(park)
    return transact(time_out)


def publish(data: bytes, media_type: str = "text/plain") -> ArtifactRef:
    with default_artifacts().create(media_type) as writer:
        writer.write(data)
        return writer.commit()


def exhausted_many(work_ids: Sequence[str], *, kind: str = KIND, per_tx: int = 500) -> None:
    """Many exhausted Work fast (``per_tx`` per transaction, not one each): each has one
    failed attempt and nothing scheduled, as ``exhausted`` makes one. Each batch first
    reads its Work, their attempts and Timers in one set read each, as a bulk action
    does (``manual.prefetch``): the store then knows them absent without a point read
    per Work."""

    def batch(ids: Sequence[str]) -> Callable[[Tx], None]:
        def run(tx: Tx) -> None:
            manual.prefetch(tx, ids, attempts=True)
            for work_id in ids:
                tx.put_work(Work(id=work_id, kind=kind))
                x = tx.put_execution(
                    Execution(id=f"{work_id}-x1", work_id=work_id, attempt=1, executor="python")
                )
                x = tx.claim(x.id, "worker-1", tx.now + seconds(30))
                failed = Outcome(OutcomeKind.FAILED, "upstream returned 502 Bad Gateway")
                tx.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failed))
                tx.put_work(replace(tx.work(work_id), state=WorkState.READY))

        return run

    for start in range(0, len(work_ids), per_tx):
        transact(batch(work_ids[start : start + per_tx]))


def kv(
    namespace: str,
    entries: dict[str, bytes | None],
    *,
    by: Execution | None = None,
    event: str = "",
    actor: str = "",
) -> int:
    """One transaction writing KV ``entries`` (None deletes the key), under the lease of
    the running attempt ``by`` (else the control plane), accepting the Event ``event``
    first when given (by ``actor``); returns the store version it committed as."""
    lease = LeaseRef(by.id, by.owner, by.epoch) if by is not None else None

    def run(tx: Tx) -> None:
        if event:
            tx.accept_event(
                Event(
                    id=event,
                    source="core.action" if actor else "test.kv",  # only they keep an actor
                    delivery_id=f"d-{event}",
                    type="kv.written",
                    work_id=by.work_id if by is not None else "",
                    actor=actor,
                )
            )
        for key, value in entries.items():
            if value is None:
                tx.kv_delete(namespace, key)
            else:
                tx.kv_put(namespace, key, value)

    default_store().transact(Guard(lease=lease), run)
    return view(default_store(), None, lambda tx: tx.store_version())


def failed_parked_retried(
    work_id: str, *, kind: str, topic: str, failures: int, wait_id: str
) -> None:
    """A Work's long life, each step its own transaction, as the browser journeys into
    the past open it: ``failures`` attempts fail (message ``declined <n>``), each
    followed by the Event ``declined-<n>`` (type ``<topic>.declined``); the next one
    parks on the Wait ``wait_id`` (then the Event ``parked``, ``<topic>.parked``), is
    woken by the Event ``approval`` and fails; an operator's retry (a manual Event by
    operator:alice) starts one more attempt, which completes."""
    work(work_id, kind=kind)
    for n in range(1, failures + 1):
        x = start(work_id)
        finish(
            x.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message=f"declined {n}"
        )
        event(f"declined-{n}", work_id=work_id, type=f"{topic}.declined")
    parked = start(work_id)

    def park(tx: Tx) -> None:
        waiting = Outcome(OutcomeKind.WAITING)
        tx.put_execution(
            replace(tx.execution(parked.id), state=ExecutionState.PARKED, outcome=waiting)
        )
        tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
        tx.put_wait(
            Wait(
                id=wait_id,
                work_id=work_id,
                execution_id=parked.id,
                types=("approval.granted",),
                description="waiting for the bank's approval",
            )
        )

    transact(park)
    event("parked", work_id=work_id, type=f"{topic}.parked")

    def approved_then_failed(tx: Tx) -> None:
        tx.accept_event(
            Event(
                id="approval",
                source="bank",
                delivery_id="d-approval",
                type="approval.granted",
                work_id=work_id,
            )
        )
        tx.put_wait(replace(tx.wait(wait_id), state=WaitState.WOKEN, woken_by="approval"))
        failure = Outcome(OutcomeKind.FAILED, f"declined {failures + 1}")
        tx.put_execution(
            replace(tx.execution(parked.id), state=ExecutionState.FAILED, outcome=failure)
        )
        tx.put_work(replace(tx.work(work_id), state=WorkState.READY))

    transact(approved_then_failed)
    store = default_store()
    stored, _ = store.transact(
        Guard(),
        lambda tx: manual.record(tx, manual.Action.RETRY, "alice", work_id, "bank said yes", "t1"),
    )
    manual.do_apply_manual_event(store, stored.id)
    last = max(transact(lambda tx: tx.executions(work_id)), key=lambda x: x.attempt)
    transact(lambda tx: tx.claim(last.id, "worker-1", tx.now + seconds(30)))
    finish(last.id, work_state=WorkState.COMPLETED)
