"""Support of the storage suite. This module: the helpers the contract tests and most
others share (a fake clock, record builders and small transaction wrappers). Beside it:
``runs`` (run-record fixtures and strategies), ``backup`` (the backup tests' helpers),
``proc`` (child processes on the test database) and ``fixtures`` (data files).

Every case drives a store only through ``Store.transact`` (and ``view`` where the case
is about views), so the same case runs unchanged against the reference double and the
ORM backend, and against the deliberately broken backends of the negative controls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from storage import (
    Binding,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    Payload,
    Scope,
    StorageError,
    Store,
    Timer,
    Tx,
    Wait,
    Work,
    WorkState,
    seconds,
)

# 2026-01-01T00:00:00.123456789Z: nanosecond digits catch a backend that rounds to
# microseconds.
CLOCK_START: Nanos = 1_767_225_600_123_456_789

# How long a case waits for another thread before it calls the backend blocked. A
# broken backend then fails the case instead of hanging the suite.
BLOCK_TIMEOUT = 5.0

KIND = "conduit.test"
EVENT_TYPE = "test.happened"
EVENT_SOURCE = "test.hooks"
KEY_SOURCE = "github.acme"
TTL: Nanos = seconds(30)


class FakeClock:
    """An injectable store clock: integer UTC nanoseconds that move only when told."""

    def __init__(self, start: Nanos = CLOCK_START) -> None:
        self._now = start

    def __call__(self) -> Nanos:
        return self._now

    def advance(self, seconds: float = 0, ns: int = 0) -> Nanos:
        self._now += int(seconds * 1_000_000_000) + ns
        return self._now

    def set(self, ns: Nanos) -> None:
        self._now = ns


# Builders -------------------------------------------------------------------------


def key(external_id: str, source: str = KEY_SOURCE) -> CorrelationKey:
    return CorrelationKey(source, external_id)


def payload(data: bytes = b'{"n": 1}', schema: str = "test.payload") -> Payload:
    return Payload(schema, data)


def make_work(
    id: str = "w1",
    *,
    kind: str = KIND,
    keys: Sequence[CorrelationKey] = (),
    scope_id: str = "",
    parent_id: str = "",
    state: WorkState = WorkState.READY,
    context: Payload | None = None,
) -> Work:
    return Work(
        id=id,
        kind=kind,
        scope_id=scope_id,
        parent_id=parent_id,
        state=state,
        keys=tuple(keys),
        context=context,
    )


def make_event(
    id: str = "e1",
    *,
    source: str = EVENT_SOURCE,
    delivery_id: str = "",
    type: str = EVENT_TYPE,
    work_id: str = "",
    keys: Sequence[CorrelationKey] = (),
    causation_id: str = "",
    actor: str = "",
    payload: Payload | None = None,
    occurred_at: Nanos = 0,
) -> Event:
    """An Event whose delivery ID defaults to ``d-<id>``."""
    return Event(
        id=id,
        source=source,
        delivery_id=delivery_id or f"d-{id}",
        type=type,
        work_id=work_id,
        keys=tuple(keys),
        causation_id=causation_id,
        actor=actor,
        payload=payload,
        occurred_at=occurred_at,
    )


def make_scope(id: str = "s1", *, parent_id: str = "", name: str = "") -> Scope:
    return Scope(id=id, parent_id=parent_id, name=name or id)


def make_execution(
    id: str = "x1",
    work_id: str = "w1",
    attempt: int = 1,
    *,
    state: ExecutionState = ExecutionState.PENDING,
    executor: str = "",
    binding: Binding | None = None,
    outcome: Outcome | None = None,
) -> Execution:
    return Execution(
        id=id,
        work_id=work_id,
        attempt=attempt,
        state=state,
        executor=executor,
        binding=binding,
        outcome=outcome,
    )


def make_timer(
    id: str = "t1",
    fire_at: Nanos = CLOCK_START,
    *,
    template: Event | None = None,
    work_id: str = "",
    purpose: str = "",
) -> Timer:
    return Timer(
        id=id,
        fire_at=fire_at,
        template=template or make_event(f"{id}-fire", source="core.timer"),
        work_id=work_id,
        purpose=purpose,
    )


def make_wait(
    id: str = "wt1",
    work_id: str = "w1",
    execution_id: str = "x1",
    *,
    keys: Sequence[CorrelationKey] = (),
    types: Sequence[str] = (),
    after_sequence: int = 0,
    timeout_timer_id: str = "",
    description: str = "",
    owner: str = "",
) -> Wait:
    return Wait(
        id=id,
        work_id=work_id,
        execution_id=execution_id,
        keys=tuple(keys),
        types=tuple(types),
        after_sequence=after_sequence,
        timeout_timer_id=timeout_timer_id,
        description=description,
        owner=owner,
    )


def outcome(kind: OutcomeKind, message: str = "") -> Outcome:
    return Outcome(kind, message)


def lease_of(execution: Execution) -> LeaseRef:
    return LeaseRef(execution.id, execution.owner, execution.epoch)


def ids(records: Sequence[Any]) -> list[str]:
    """IDs of records (or of StoredEvents) in the order given."""
    return [record.id for record in records]


# Transactions ---------------------------------------------------------------------


def tx[T](
    store: Store,
    fn: Callable[[Tx], T],
    *,
    clock: Callable[[], Nanos] | None = None,
    lease: LeaseRef | None = None,
) -> T:
    """Run ``fn`` in one transaction (control-plane authority unless ``lease``)."""
    return store.transact(Guard(lease=lease, clock=clock), fn)


def fails(
    store: Store,
    expected: type[StorageError] | tuple[type[StorageError], ...],
    fn: Callable[[Tx], object],
    what: str,
    *,
    lease: LeaseRef | None = None,
) -> StorageError:
    """Run ``fn`` in a transaction that must raise ``expected``; ``what`` names the
    rule in the assertion message."""
    try:
        tx(store, fn, lease=lease)
    except StorageError as err:
        caught = err
    else:
        raise AssertionError(f"{what}: expected {_names(expected)}, but the transaction committed")
    assert isinstance(caught, expected), (
        f"{what}: expected {_names(expected)}, got {type(caught).__name__}: {caught}"
    )
    return caught


def raises(
    expected: type[StorageError] | tuple[type[StorageError], ...],
    fn: Callable[[], object],
    what: str,
) -> StorageError:
    """Call ``fn`` (usually one Tx operation inside a callback), which must raise."""
    try:
        fn()
    except StorageError as err:
        caught = err
    else:
        raise AssertionError(f"{what}: expected {_names(expected)}, but it succeeded")
    assert isinstance(caught, expected), (
        f"{what}: expected {_names(expected)}, got {type(caught).__name__}: {caught}"
    )
    return caught


class Crash(Exception):
    """Raised by a callback to abandon its transaction (the Python form of a Go
    panic or a process dying before commit)."""


def crashes(
    store: Store, fn: Callable[[Tx], object], what: str, *, lease: LeaseRef | None = None
) -> Crash:
    """Run ``fn``, which ends by raising ``Crash``; transact must propagate it."""
    try:
        tx(store, fn, lease=lease)
    except Crash as err:
        return err
    raise AssertionError(f"{what}: the callback's exception did not propagate from transact")


def _names(expected: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    if isinstance(expected, tuple):
        return " or ".join(cls.__name__ for cls in expected)
    return expected.__name__


def get_work(store: Store, work_id: str) -> Work:
    return tx(store, lambda t: t.work(work_id))


def get_execution(store: Store, execution_id: str) -> Execution:
    return tx(store, lambda t: t.execution(execution_id))


def put_works(store: Store, *works: Work) -> list[Work]:
    return tx(store, lambda t: [t.put_work(work) for work in works])


def update_work(store: Store, work_id: str, **changes: Any) -> Work:
    """Re-read a Work and write it back with ``changes`` at its current revision."""
    return tx(store, lambda t: t.put_work(replace(t.work(work_id), **changes)))


def start_attempt(
    store: Store,
    *,
    work_id: str = "w1",
    execution_id: str = "x1",
    attempt: int = 1,
    owner: str = "runner-a",
    ttl: Nanos = TTL,
    executor: str = "",
    keys: Sequence[CorrelationKey] = (),
    create_work: bool = True,
) -> LeaseRef:
    """Create (optionally) a ready Work and a pending attempt, claim it; return the
    lease."""

    def fn(t: Tx) -> LeaseRef:
        if create_work:
            t.put_work(make_work(work_id, keys=keys))
        t.put_execution(make_execution(execution_id, work_id, attempt, executor=executor))
        return lease_of(t.claim(execution_id, owner, t.now + ttl))

    return tx(store, fn)


def park(t: Tx, execution_id: str, wait: Wait | None = None, *, terminal: bool = False) -> None:
    """Inside a transaction: park the running attempt (or end it in terminal waiting),
    mark its Work waiting and register ``wait``, as WT-02 requires."""
    execution = t.execution(execution_id)
    state = ExecutionState.WAITING if terminal else ExecutionState.PARKED
    t.put_execution(replace(execution, state=state, outcome=outcome(OutcomeKind.WAITING)))
    t.put_work(replace(t.work(execution.work_id), state=WorkState.WAITING))
    if wait is not None:
        t.put_wait(wait)


# Threads --------------------------------------------------------------------------


def close_thread_connections() -> None:
    """Django opens one connection per thread; a thread that touched the ORM backend
    must close its own before it ends, or the test database cannot be flushed."""
    try:
        from django.conf import settings
        from django.db import connections
    except ImportError:  # pragma: no cover - the suite always runs under Django
        return
    if settings.configured:
        connections.close_all()


class Worker:
    """Runs ``fn`` in a daemon thread and keeps its result or exception."""

    def __init__(self, fn: Callable[[], object], name: str = "worker") -> None:
        self.result: object = None
        self.error: BaseException | None = None
        self._fn = fn
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as err:  # kept for the case to inspect
            self.error = err
        finally:
            close_thread_connections()

    def join(self, timeout: float = BLOCK_TIMEOUT) -> bool:
        """Wait up to ``timeout``; True when the thread has finished."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


class TransactOnlyStore:
    """A store without ``view``: what an extension's protocol store looks like, so
    ``storage.view`` must fall back to a read-only transaction."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    def transact[T](self, guard: Guard, callback: Callable[[Tx], T]) -> T:
        return self._inner.transact(guard, callback)

    def close(self) -> None:
        self._inner.close()

    @property
    def schema_version(self) -> int:
        return self._inner.schema_version
