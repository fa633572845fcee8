"""Transaction bodies the simulated runtime (``runtime``, ``workers``) and the history
generator (``generator``) both need: the deliveries (one that opens a Work, noise, a
stray update, a derived Event), a Work with its first attempt, the next attempt, the
retry and timeout timers, parking on a Wait, and failing or completing an attempt.

Every step draws its IDs from the caller's ``Ids`` (the runtime and the generator keep
their own seeded streams) in a fixed order, and takes anything else random from its
caller as an argument: what a seed writes depends on the caller's streams alone.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from typing import Any, Protocol

from storage import (
    ArtifactRef,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Nanos,
    Outcome,
    OutcomeKind,
    Payload,
    Timer,
    Tx,
    Wait,
    Work,
    WorkState,
)

from . import catalog
from .catalog import Flow


class Ids(Protocol):
    """A seeded source of IDs and tokens (``Simulator`` and ``Generator`` are ones)."""

    def new_id(self) -> str: ...

    def token(self, n: int) -> str: ...


def opening_event(ids: Ids, rng: random.Random, flow: Flow, external: str) -> Event:
    """The external delivery that opens a Work of ``flow``, keyed by ``external``."""
    return _opening(ids, flow, {"id": external, "amount": rng.randint(5, 900) * 100})


def poison_event(ids: Ids, flow: Flow, external: str) -> Event:
    """An opening delivery whose every attempt fails the same way (``catalog.poison_failure``).
    Its numbers come from ``ids`` so that sending it never shifts a behavioural choice."""
    amount = -(int(ids.token(3), 16) % 900 + 1) * 100
    body = {"id": external, "amount": amount, "poison": True, "request": ids.token(12)}
    return _opening(ids, flow, body)


def _opening(ids: Ids, flow: Flow, body: dict[str, Any]) -> Event:
    return Event(
        id=ids.new_id(),
        source=flow.source,
        delivery_id=f"dlv_{ids.token(16)}",
        type=flow.opens,
        keys=(CorrelationKey(flow.source, body["id"]),),
        payload=Payload(f"demo.{flow.kind.split('.')[-1]}", json.dumps(body).encode()),
    )


def noise_event(ids: Ids, source: str, type_: str) -> Event:
    """A delivery no flow opens or wakes on (routing drops it)."""
    return Event(ids.new_id(), source, f"dlv_{ids.token(16)}", type_)


def stray_charge(ids: Ids, charge: str) -> Event:
    """An update for a charge no Work was opened for (routing finds nothing to match)."""
    key = CorrelationKey("stripe:acct_1", charge)
    return Event(
        ids.new_id(), key.source, f"dlv_{ids.token(16)}", "stripe.charge.succeeded", keys=(key,)
    )


def derived_event(
    ids: Ids,
    scope: str,
    type_: str,
    body: dict[str, Any],
    cause: str,
    *,
    work_id: str = "",
    keys: tuple[CorrelationKey, ...] = (),
) -> Event:
    """An Event a Work's attempt emits in ``scope``, caused by ``cause``."""
    return Event(
        id=ids.new_id(),
        source=f"conduit:{scope}",
        delivery_id=f"emit/{ids.token(16)}",
        type=type_,
        work_id=work_id,
        keys=keys,
        causation_id=cause,
        payload=Payload("demo.step", json.dumps(body).encode()),
    )


def open_work(
    tx: Tx,
    ids: Ids,
    flow: Flow,
    keys: tuple[CorrelationKey, ...],
    context: Payload | None,
    parent_id: str = "",
) -> tuple[Work, Execution]:
    """New Work of ``flow`` with its first attempt pending."""
    work = tx.put_work(
        Work(
            id=ids.new_id(),
            kind=flow.kind,
            scope_id=flow.scope,
            parent_id=parent_id,
            keys=keys,
            context=context,
        )
    )
    first = tx.put_execution(
        Execution(
            id=ids.new_id(),
            work_id=work.id,
            attempt=1,
            binding=flow.binding,
            trace_id=ids.token(32),
        )
    )
    return work, first


def next_attempt(tx: Tx, ids: Ids, previous: Execution, *, traced: bool = True) -> Execution:
    """Attempt N+1 after ``previous``, pending, on the same binding. The generator's
    later attempts carry no trace ID (``traced=False``): drawing one would shift every
    ID after it and change the history a seed writes."""
    return tx.put_execution(
        Execution(
            id=ids.new_id(),
            work_id=previous.work_id,
            attempt=previous.attempt + 1,
            binding=previous.binding,
            trace_id=ids.token(32) if traced else "",
        )
    )


def _timer(tx: Tx, ids: Ids, purpose: str, work_id: str, cause: str, fire_at: Nanos) -> Timer:
    timer_id = ids.new_id()
    template = Event(
        id=ids.new_id(),
        source=catalog.TIMER_SOURCE,
        delivery_id=f"{purpose}/{timer_id}",
        type=f"timer.{purpose}",
        work_id=work_id,
        causation_id=cause,
    )
    return tx.put_timer(Timer(timer_id, fire_at, template, work_id=work_id, purpose=purpose))


def retry_timer(tx: Tx, ids: Ids, work_id: str, cause: str, fire_at: Nanos) -> Timer:
    """The backoff timer whose firing starts the Work's next attempt."""
    return _timer(tx, ids, "retry", work_id, cause, fire_at)


def timeout_timer(tx: Tx, ids: Ids, work_id: str, cause: str, fire_at: Nanos) -> Timer:
    """The timer that ends a Wait nobody woke."""
    return _timer(tx, ids, "timeout", work_id, cause, fire_at)


@dataclass(frozen=True)
class Parked:
    """What parking wrote: the attempt, its Work, the Wait and the Wait's timeout."""

    execution: Execution
    work: Work
    wait: Wait
    timer: Timer


def park(
    tx: Tx,
    ids: Ids,
    work: Work,
    x: Execution,
    *,
    cause: str,
    fire_at: Nanos,
    after_sequence: int,
    resumable: bool,
) -> Parked:
    """Park the attempt on a Wait: attempt parked (or terminally waiting, when it
    cannot resume), Work waiting, the Wait and its timeout timer, in this transaction."""
    flow = catalog.FLOW_BY_KIND[work.kind]
    timer = timeout_timer(tx, ids, work.id, cause, fire_at)
    waiting = Outcome(OutcomeKind.WAITING, f"waiting for {' or '.join(flow.wake_types)}")
    state = ExecutionState.PARKED if resumable else ExecutionState.WAITING
    parked = tx.put_execution(replace(x, state=state, outcome=waiting))
    work = tx.put_work(replace(work, state=WorkState.WAITING))
    wait = tx.put_wait(
        Wait(
            id=ids.new_id(),
            work_id=work.id,
            execution_id=x.id,
            # A service waits for its steps' Events, which name it rather than its key.
            keys=() if flow.kind == "deploy.service" else work.keys[:1],
            types=flow.wake_types,
            after_sequence=after_sequence,
            timeout_timer_id=timer.id,
            description=waiting.message,
        )
    )
    return Parked(parked, work, wait, timer)


def fail_attempt(
    tx: Tx, x: Execution, message: str, artifacts: tuple[ArtifactRef, ...] | None = None
) -> Execution:
    """End the attempt failed with ``message`` (and ``artifacts``, when given)."""
    failed = Outcome(OutcomeKind.FAILED, message)
    ended = replace(x, state=ExecutionState.FAILED, outcome=failed)
    return tx.put_execution(ended if artifacts is None else replace(ended, artifacts=artifacts))


def complete(
    tx: Tx, x: Execution, work: Work, artifacts: tuple[ArtifactRef, ...] | None = None
) -> tuple[Execution, Work]:
    """End the attempt and its Work completed (attaching ``artifacts``, when given)."""
    done = replace(x, state=ExecutionState.COMPLETED, outcome=Outcome(OutcomeKind.COMPLETED))
    x = tx.put_execution(done if artifacts is None else replace(done, artifacts=artifacts))
    return x, tx.put_work(replace(work, state=WorkState.COMPLETED))
