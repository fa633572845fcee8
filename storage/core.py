"""The contract's rules, written once over a small persistence interface.

``BaseTx`` implements every ``Tx`` operation: validation, lifecycle tables, revisions,
ownership, fencing, timers, waits and KV. Backends subclass it and supply only row
access (``_get``, ``_put``, ``_list``, event and key tables, KV). Each operation checks
everything before its first write, so an operation that raises has no effect even when
the callback swallows the error (checklist T-10). Serializability comes from the
backend's transaction (a global lock in the double, ``BEGIN IMMEDIATE`` on SQLite), so
a read followed by a write inside one operation cannot race another transaction.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, overload

from . import lifecycle, series, validate
from .api import KV_VALUE_LIMIT
from .errors import (
    Cancelled,
    Conflict,
    Corrupt,
    Fenced,
    Invalid,
    NotFound,
    ReadOnly,
    RecordsNewer,
    StorageError,
    TxClosed,
)
from .query import check_query
from .records import (
    LIVE_EXECUTION_STATES,
    ArtifactRef,
    Binding,
    Buckets,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    Route,
    Scope,
    StoredEvent,
    Timer,
    TimerNext,
    Wait,
    WaitState,
    Work,
    WorkFacets,
    WorkQuery,
    WorkState,
)
from .runs.codec import decode as decode_run
from .runs.codec import encode as encode_run
from .runs.query import RunRow, check_run_id, check_run_query
from .runs.records import MAX_REVISION, RUN_FORMAT, RunQuery, RunRecord, StoredRun

Table = Literal["work", "execution", "scope", "timer", "wait"]

# Which outcome kind each Execution state requires (None: no outcome allowed).
_OUTCOME_FOR: dict[ExecutionState, OutcomeKind | None] = {
    ExecutionState.PENDING: None,
    ExecutionState.RUNNING: None,
    ExecutionState.CANCELLED: None,
    ExecutionState.PARKED: OutcomeKind.WAITING,
    ExecutionState.WAITING: OutcomeKind.WAITING,
    ExecutionState.COMPLETED: OutcomeKind.COMPLETED,
    ExecutionState.FAILED: OutcomeKind.FAILED,
    ExecutionState.HANDOFF: OutcomeKind.HANDOFF,
}


@dataclass(frozen=True, slots=True)
class EventScan:
    """One selection of Events, shared by every scan so backends implement one read.
    ``before`` 0 means no upper bound; ``None`` filters are off."""

    after: int = 0
    before: int = 0
    limit: int = 0
    newest_first: bool = False
    unrouted: bool = False
    work_id: str | None = None
    scope_ids: tuple[str, ...] | None = None
    caused_by: str | None = None
    sources: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    # Acceptance time in [received_since, received_before); None: unbounded.
    received_since: Nanos | None = None
    received_before: Nanos | None = None

    def matches(self, stored: StoredEvent) -> bool:
        """The scan's meaning for one Event (the reference double filters with it)."""
        e, route = stored.event, stored.route
        return (
            stored.sequence > self.after
            and (not self.before or stored.sequence < self.before)
            and (not self.unrouted or route is None)
            and (
                self.work_id is None
                or e.work_id == self.work_id
                or (route is not None and route.work_id == self.work_id)
            )
            and (self.scope_ids is None or stored.scope_id in self.scope_ids)
            and (self.caused_by is None or e.causation_id == self.caused_by)
            and (not self.sources or e.source in self.sources)
            and (not self.types or e.type in self.types)
            and (self.received_since is None or e.received_at >= self.received_since)
            and (self.received_before is None or e.received_at < self.received_before)
        )


# Thread-local marker of an open transaction, to refuse nesting (checklist T-08).
_local = threading.local()


def in_transaction() -> bool:
    return bool(getattr(_local, "depth", 0))


class TxScope:
    """Marks the current thread as inside a transaction for the ``with`` body."""

    def __enter__(self) -> None:
        if in_transaction():
            raise TxClosed("a transaction cannot be nested inside another transaction")
        _local.depth = 1

    def __exit__(self, *exc: object) -> None:
        _local.depth = 0


def check_admission(guard: Guard) -> None:
    """Raise Cancelled when the guard's token fired or its deadline passed."""
    if guard.cancel is not None and guard.cancel.cancelled:
        raise Cancelled("transaction cancelled before commit")
    if guard.deadline is not None and time.monotonic() >= guard.deadline:
        raise Cancelled("transaction deadline passed before commit")


class BaseTx(ABC):
    def __init__(self, now: Nanos, *, read_only: bool) -> None:
        self._now = now
        self._read_only = read_only
        self._open = True
        self._thread = threading.get_ident()
        self._registered_waits: list[str] = []
        # Set by the first write call; commits of dirty transactions bump the store
        # version that lets the console answer "unchanged" without reading records.
        self.dirty = False
        # False when the Guard carries a lease: executor transactions may not use the
        # control-plane-only operations (revoke_lease).
        self.trusted = True

    # -- transaction plumbing ------------------------------------------------------
    @property
    def now(self) -> Nanos:
        self._check()
        return self._now

    def admit(self, now: Nanos) -> None:
        """Fix Guard.now once the backend holds its write lock and knows the last
        committed now (backends that read the clock through the Tx itself)."""
        self._now = now

    @property
    def read_only(self) -> bool:
        return self._read_only

    def close(self) -> None:
        self._open = False

    def _check(self) -> None:
        if not self._open:
            raise TxClosed("transaction already ended; a Tx must not escape its callback")
        if threading.get_ident() != self._thread:
            raise TxClosed("a Tx must not be used from another thread")

    def _writable(self) -> None:
        self._check()
        if self._read_only:
            raise ReadOnly("this transaction is read-only (View)")
        self.dirty = True

    def verify_lease(self, lease: LeaseRef) -> Execution:
        """Fencing (L-07): the lease must be the attempt's live authority."""
        x = self._get("execution", lease.execution_id)
        if x is None:
            raise Fenced(f"lease names unknown Execution {lease.execution_id!r}")
        if x.state is not ExecutionState.RUNNING or not x.owner:
            raise Fenced(f"Execution {x.id} holds no live lease (state {x.state})")
        if x.owner != lease.owner or x.epoch != lease.epoch:
            raise Fenced(f"lease {lease.owner}@{lease.epoch} superseded by {x.owner}@{x.epoch}")
        if self._now >= x.lease_expires_at:
            raise Fenced(f"lease of Execution {x.id} expired")
        work = self._get("work", x.work_id)
        if work is None or work.terminal:
            raise Fenced(f"Work {x.work_id} is terminal")
        return x

    def before_commit(self) -> None:
        """Waits must join the transaction that parks their attempt (resolution 19)."""
        for wait_id in self._registered_waits:
            wait = self._get("wait", wait_id)
            if wait is None or wait.state is not WaitState.ACTIVE:
                continue
            x = self._get("execution", wait.execution_id)
            work = self._get("work", wait.work_id)
            parked = x is not None and x.state in (ExecutionState.PARKED, ExecutionState.WAITING)
            if not parked or work is None or work.state is not WorkState.WAITING:
                raise Invalid(
                    f"Wait {wait_id} must be registered in the transaction that parks "
                    "its attempt and marks its Work waiting"
                )

    # -- persistence interface (backends) ------------------------------------------
    @overload
    @abstractmethod
    def _get(self, table: Literal["work"], id: str) -> Work | None: ...
    @overload
    @abstractmethod
    def _get(self, table: Literal["execution"], id: str) -> Execution | None: ...
    @overload
    @abstractmethod
    def _get(self, table: Literal["scope"], id: str) -> Scope | None: ...
    @overload
    @abstractmethod
    def _get(self, table: Literal["timer"], id: str) -> Timer | None: ...
    @overload
    @abstractmethod
    def _get(self, table: Literal["wait"], id: str) -> Wait | None: ...
    @abstractmethod
    def _get(self, table: Table, id: str) -> Work | Execution | Scope | Timer | Wait | None: ...

    def _exists(self, table: Table, id: str) -> bool:
        """Whether the record exists (a backend may answer without building it)."""
        return self._get(table, id) is not None

    @abstractmethod
    def _put(
        self, table: Table, record: Work | Execution | Scope | Timer | Wait, create: bool
    ) -> None:
        """Insert (create) or overwrite a record whose checks already passed."""

    @abstractmethod
    def _list(self, table: Table, work_id: str = "", live: bool = False) -> list[Any]:
        """Records sorted by ID, optionally of one Work and/or only live ones."""

    @abstractmethod
    def _timer_floor(self, timer_id: str) -> int:
        """Highest revision ever given to this timer ID, deleted ones included."""

    @abstractmethod
    def _delete_timer(self, timer_id: str) -> None:
        """Remove a timer, keeping its revision high-water mark."""

    @abstractmethod
    def _due_timers(self, now: Nanos, limit: int) -> list[Timer]: ...

    @abstractmethod
    def _key_owner(self, key: CorrelationKey) -> str | None: ...

    @abstractmethod
    def _add_keys(self, work_id: str, keys: Sequence[CorrelationKey], first: int) -> None: ...

    @abstractmethod
    def _latest_attempt(self, work_id: str) -> Execution | None: ...

    @abstractmethod
    def _query_works(self, query: WorkQuery) -> list[Work]: ...

    @abstractmethod
    def _count_works(self, query: WorkQuery) -> int: ...

    @abstractmethod
    def _work_facets(self, query: WorkQuery) -> WorkFacets: ...

    @abstractmethod
    def _get_event(self, event_id: str) -> StoredEvent | None: ...

    @abstractmethod
    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None: ...

    def _event_identity(self, event: Event) -> tuple[StoredEvent | None, StoredEvent | None]:
        """The stored Events holding ``event``'s delivery identity and its ID (a
        backend may answer both with one read)."""
        return self._event_by_delivery(event.source, event.delivery_id), self._get_event(event.id)

    @abstractmethod
    def _insert_event(self, event: Event) -> int:
        """Store a new envelope; returns its acceptance sequence."""

    @abstractmethod
    def _set_event_scope(self, event_id: str, scope_id: str) -> None: ...

    @abstractmethod
    def _set_route(self, event_id: str, route: Route) -> None: ...

    @abstractmethod
    def _scan_events(self, scan: EventScan) -> list[StoredEvent]:
        """Events selected by ``scan``, in its order, at most ``scan.limit``."""

    @abstractmethod
    def _latest_sequence(self) -> int: ...

    @abstractmethod
    def _store_version(self) -> int:
        """Count of committed write transactions (a store-wide change counter)."""

    @abstractmethod
    def _kv_get(self, namespace: str, key: str) -> bytes | None: ...

    @abstractmethod
    def _kv_put(self, namespace: str, key: str, value: bytes) -> None: ...

    @abstractmethod
    def _kv_delete(self, namespace: str, key: str) -> None: ...

    @abstractmethod
    def _kv_list(self, namespace: str, prefix: str) -> list[tuple[str, bytes]]: ...

    @abstractmethod
    def _run_row(self, run_id: str) -> RunRow | None: ...

    @abstractmethod
    def _put_run_row(self, row: RunRow, expected: int) -> None:
        """Insert (``expected`` 0) or overwrite the row whose stored revision is
        ``expected``; the checks already passed."""

    @abstractmethod
    def _run_rows(self, query: RunQuery) -> list[RunRow]:
        """Rows selected by ``query`` in its order (``select_run_rows`` is the meaning)."""

    @abstractmethod
    def _count_run_rows(self, query: RunQuery) -> int: ...

    # -- Events ---------------------------------------------------------------------
    def _validate_envelope(self, event: Event) -> None:
        validate.require_id(event.id, "Event ID")
        validate.require_id(event.source, "Event source")
        validate.require_id(event.delivery_id, "Event delivery_id")
        validate.require_dotted(event.type, "Event type")
        validate.require_payload(event.payload)
        validate.require_keys(event.keys)
        validate.actor_for(event.source, event.actor)

    def accept_event(self, event: Event) -> tuple[StoredEvent, bool]:
        self._writable()
        self._validate_envelope(event)
        existing, same_id = self._event_identity(event)
        if existing is not None:
            return existing, False
        if same_id is not None:
            raise Conflict(f"Event ID {event.id!r} already names another delivery")
        if event.causation_id:
            if event.causation_id == event.id:
                raise Invalid("an Event cannot be its own causation")
            if self._get_event(event.causation_id) is None:
                raise NotFound(f"causation Event {event.causation_id!r} does not exist")
        stored = replace(
            event,
            actor=validate.actor_for(event.source, event.actor),
            occurred_at=event.occurred_at or self._now,
            received_at=self._now,
        )
        sequence = self._insert_event(stored)
        return StoredEvent(stored, sequence), True

    def _require_event(self, event_id: str) -> StoredEvent:
        stored = self._get_event(event_id)
        if stored is None:
            raise NotFound(f"Event {event_id!r} does not exist")
        return stored

    def mark_routed(self, event_id: str, work_id: str, disposition: str) -> None:
        self._writable()
        stored = self._require_event(event_id)
        if not disposition:
            raise Invalid("a routing disposition must be nonempty")
        if disposition == "routed" and not work_id:
            raise Invalid("disposition 'routed' needs a Work")
        if work_id and self._get("work", work_id) is None:
            raise NotFound(f"Work {work_id!r} does not exist")
        if stored.route is not None:
            if (stored.route.work_id, stored.route.disposition) == (work_id, disposition):
                return
            raise Conflict(
                f"Event {event_id} already routed to {stored.route.work_id!r} "
                f"as {stored.route.disposition!r}"
            )
        self._set_route(event_id, Route(work_id, disposition, self._now))

    def set_event_scope(self, event_id: str, scope_id: str) -> None:
        self._writable()
        if not scope_id:
            raise Invalid("an Event scope must be nonempty")
        stored = self._require_event(event_id)
        if not self._exists("scope", scope_id):
            raise NotFound(f"Scope {scope_id!r} does not exist")
        if stored.scope_id == scope_id:
            return
        if stored.scope_id:
            raise Conflict(f"Event {event_id} already has scope {stored.scope_id!r}")
        self._set_event_scope(event_id, scope_id)

    def event(self, event_id: str) -> StoredEvent:
        self._check()
        return self._require_event(event_id)

    def event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent:
        self._check()
        stored = self._event_by_delivery(source, delivery_id)
        if stored is None:
            raise NotFound(f"no Event for delivery ({source!r}, {delivery_id!r})")
        return stored

    def _scan(self, scan: EventScan) -> list[StoredEvent]:
        self._check()
        validate.require_limit(scan.limit)
        if scan.after < 0 or scan.before < 0:
            raise Invalid("event cursors are nonnegative acceptance sequences")
        return self._scan_events(scan)

    def events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        return self._scan(EventScan(after=after, limit=limit))

    def unrouted_events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        return self._scan(EventScan(after=after, limit=limit, unrouted=True))

    def work_events(self, work_id: str, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        validate.require_id(work_id, "Work ID")
        return self._scan(EventScan(after=after, limit=limit, work_id=work_id))

    def scope_events(
        self, scope_ids: Sequence[str], after: int = 0, limit: int = 0
    ) -> list[StoredEvent]:
        if isinstance(scope_ids, str):
            raise Invalid("scope_events takes a sequence of Scope IDs")
        return self._scan(EventScan(after=after, limit=limit, scope_ids=tuple(scope_ids)))

    def derived_events(self, event_id: str) -> list[StoredEvent]:
        return self._scan(EventScan(caused_by=event_id))

    def find_events(
        self,
        *,
        after: int = 0,
        before: int = 0,
        limit: int = 0,
        newest_first: bool = False,
        sources: Sequence[str] = (),
        types: Sequence[str] = (),
        scope_ids: Sequence[str] | None = None,
        work_id: str = "",
        unrouted: bool = False,
        received_since: Nanos | None = None,
        received_before: Nanos | None = None,
    ) -> list[StoredEvent]:
        """The operator's Event search: sequence strictly between ``after`` and
        ``before`` (0: unbounded), any of ``sources``, any of ``types``, recorded in
        any of ``scope_ids`` ("" = none recorded), naming or routed to ``work_id``,
        unrouted only, accepted in [received_since, received_before) (the dashboard's
        buckets; by the acceptance-time index); ascending or newest first; at most
        ``limit``. Every filter is
        served by an index ending in the sequence, so a page costs what it returns."""
        for values, what in ((sources, "sources"), (types, "types"), (scope_ids, "scope_ids")):
            if isinstance(values, str):
                raise Invalid(f"find_events {what} takes a sequence, not a string")
        scan = EventScan(
            after=after,
            before=before,
            limit=limit,
            newest_first=newest_first,
            sources=tuple(sources),
            types=tuple(types),
            scope_ids=None if scope_ids is None else tuple(scope_ids),
            work_id=work_id or None,
            unrouted=unrouted,
            received_since=received_since,
            received_before=received_before,
        )
        return self._scan(scan)

    def latest_sequence(self) -> int:
        self._check()
        return self._latest_sequence()

    def store_version(self) -> int:
        self._check()
        return self._store_version()

    # -- Work -----------------------------------------------------------------------
    def _require_work(self, work_id: str) -> Work:
        work = self._get("work", work_id)
        if work is None:
            raise NotFound(f"Work {work_id!r} does not exist")
        return work

    def put_work(self, work: Work) -> Work:
        self._writable()
        validate.require_id(work.id, "Work ID")
        current = self._get("work", work.id)
        state = lifecycle.work_state(work.state)
        validate.require_keys(work.keys)
        validate.require_payload(work.context, "Work context")
        if len(set(work.keys)) != len(work.keys):
            raise Invalid("a Work lists the same correlation key twice")
        if work.revision == 0:
            if current is not None:
                raise Conflict(f"Work {work.id!r} already exists")
            validate.require_dotted(work.kind, "Work kind")
            if state is not WorkState.READY:
                raise Invalid(f"a new Work starts ready, not {state}")
            if work.scope_id and not self._exists("scope", work.scope_id):
                raise NotFound(f"Scope {work.scope_id!r} does not exist")
            if work.parent_id:
                if work.parent_id == work.id:
                    raise Invalid("a Work cannot be its own parent")
                self._require_work(work.parent_id)
            self._require_free_keys(work.id, work.keys)
            stored = replace(
                work,
                state=state,
                latest_executor="",
                revision=1,
                created_at=self._now,
                updated_at=self._now,
            )
            self._put("work", stored, create=True)
            self._add_keys(work.id, work.keys, 0)
            return stored
        if current is None:
            raise NotFound(f"Work {work.id!r} does not exist")
        if work.revision != current.revision:
            raise Conflict(f"Work {work.id} is at revision {current.revision}, not {work.revision}")
        if current.terminal:
            raise Invalid(f"Work {work.id} is {current.state}; terminal records are immutable")
        if (work.kind, work.scope_id, work.parent_id) != (
            current.kind,
            current.scope_id,
            current.parent_id,
        ):
            raise Invalid("Work kind, scope and parent are fixed at creation")
        if work.keys[: len(current.keys)] != current.keys:
            raise Invalid("correlation keys can be appended, never removed or reordered")
        added = work.keys[len(current.keys) :]
        if state is not current.state and not lifecycle.work_transition_allowed(
            current.state, state
        ):
            raise Invalid(f"Work cannot move from {current.state} to {state}")
        self._require_free_keys(work.id, added)
        stored = replace(
            work,
            state=state,
            latest_executor=current.latest_executor,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._put("work", stored, create=False)
        self._add_keys(work.id, added, len(current.keys))
        return stored

    def _require_free_keys(self, work_id: str, keys: Sequence[CorrelationKey]) -> None:
        for key in keys:
            owner = self._key_owner(key)
            if owner is not None and owner != work_id:
                raise Conflict(
                    f"correlation key ({key.source}, {key.external_id}) is owned by Work {owner}"
                )

    def work(self, work_id: str) -> Work:
        self._check()
        return self._require_work(work_id)

    def work_by_key(self, key: CorrelationKey) -> Work:
        self._check()
        owner = self._key_owner(key)
        if owner is None:
            raise NotFound(f"no Work owns key ({key.source}, {key.external_id})")
        return self._require_work(owner)

    def works(self) -> list[Work]:
        self._check()
        return self._list("work")

    def live_works(self) -> list[Work]:
        self._check()
        return self._list("work", live=True)

    def query_works(self, query: WorkQuery) -> list[Work]:
        self._check()
        check_query(query)
        return self._query_works(query)

    def count_works(self, query: WorkQuery) -> int:
        self._check()
        check_query(query)
        return self._count_works(query)

    def work_facets(self, query: WorkQuery) -> WorkFacets:
        self._check()
        check_query(query)
        return self._work_facets(query)

    # -- Executions -----------------------------------------------------------------
    def _require_execution(self, execution_id: str) -> Execution:
        x = self._get("execution", execution_id)
        if x is None:
            raise NotFound(f"Execution {execution_id!r} does not exist")
        return x

    @staticmethod
    def _check_outcome(state: ExecutionState, outcome: Outcome | None) -> None:
        needed = _OUTCOME_FOR[state]
        if outcome is None:
            if needed is not None:
                raise Invalid(f"state {state} needs a {needed} outcome")
            return
        try:
            kind = OutcomeKind(outcome.kind)
        except ValueError:
            raise Invalid(f"unknown outcome kind {outcome.kind!r}") from None
        if needed is None:
            raise Invalid(f"state {state} has no outcome")
        if kind is not needed:
            raise Invalid(f"state {state} needs a {needed} outcome, not {kind}")
        validate.require_payload(outcome.detail, "outcome detail")

    @staticmethod
    def _check_attachments(binding: Binding | None, artifacts: Sequence[ArtifactRef]) -> None:
        if binding is not None and not isinstance(binding, Binding):
            raise Invalid("binding must be a Binding")
        for ref in artifacts:
            if not isinstance(ref, ArtifactRef) or not ref.id or ref.size < 0:
                raise Invalid(f"bad artifact reference {ref!r}")

    def put_execution(self, execution: Execution) -> Execution:
        self._writable()
        x = execution
        validate.require_id(x.id, "Execution ID")
        current = self._get("execution", x.id)
        if x.revision != 0:
            # Same order as every update: NotFound, then revision, then the rules.
            if current is None:
                raise NotFound(f"Execution {x.id!r} does not exist")
            if x.revision != current.revision:
                raise Conflict(
                    f"Execution {x.id} is at revision {current.revision}, not {x.revision}"
                )
        state = lifecycle.execution_state(x.state)
        self._check_outcome(state, x.outcome)
        self._check_attachments(x.binding, x.artifacts)
        if current is None or x.revision == 0:
            return self._create_execution(x, current)
        if current.terminal:
            raise Invalid(f"Execution {x.id} is {current.state}; terminal records are immutable")
        if (x.work_id, x.attempt, x.binding) != (current.work_id, current.attempt, current.binding):
            raise Invalid("an Execution's Work, attempt number and binding are fixed")
        if state is not current.state and not lifecycle.execution_transition_allowed(
            current.state, state
        ):
            if state is ExecutionState.RUNNING:
                raise Invalid(f"{current.state} -> running happens only through claim")
            raise Invalid(f"Execution cannot move from {current.state} to {state}")
        executor = current.executor
        if x.executor and x.executor != current.executor:
            if current.executor:
                raise Conflict(f"Execution {x.id} executor is already {current.executor!r}")
            executor = x.executor
        # Parking and every terminal state release authority; the epoch stays (O-05).
        releases = state not in (ExecutionState.PENDING, ExecutionState.RUNNING)
        stored = replace(
            x,
            state=state,
            executor=executor,
            owner="" if releases else current.owner,
            epoch=current.epoch,
            lease_expires_at=0 if releases else current.lease_expires_at,
            started_at=current.started_at,
            finished_at=self._now if state not in LIVE_EXECUTION_STATES else 0,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._put("execution", stored, create=False)
        if executor != current.executor:
            self._note_executor(stored)
        return stored

    def _create_execution(self, x: Execution, current: Execution | None) -> Execution:
        if current is not None:
            raise Conflict(f"Execution {x.id!r} already exists")
        validate.require_id(x.work_id, "Execution work_id")
        if x.state is not ExecutionState.PENDING:
            raise Invalid(f"a new Execution starts pending, not {x.state}")
        work = self._require_work(x.work_id)
        if work.terminal:
            raise Invalid(f"Work {work.id} is {work.state}; it takes no new attempt")
        latest = self._latest_attempt(work.id)
        expected = latest.attempt + 1 if latest else 1
        if x.attempt != expected:
            raise Invalid(f"next attempt of Work {work.id} is {expected}, not {x.attempt}")
        if self._list("execution", work_id=work.id, live=True):
            raise Conflict(f"Work {work.id} already has a nonterminal attempt")
        executor = x.executor or (x.binding.executor if x.binding else "")
        stored = replace(
            x,
            executor=executor,
            owner="",
            epoch=0,
            lease_expires_at=0,
            started_at=0,
            finished_at=0,
            revision=1,
            created_at=self._now,
            updated_at=self._now,
        )
        self._put("execution", stored, create=True)
        # Storage keeps Work.latest_executor; it is metadata, so no Work revision bump.
        if work.latest_executor != executor:
            self._put("work", replace(work, latest_executor=executor), create=False)
        return stored

    def _note_executor(self, x: Execution) -> None:
        latest = self._latest_attempt(x.work_id)
        if latest is not None and latest.id == x.id:
            work = self._require_work(x.work_id)
            self._put("work", replace(work, latest_executor=x.executor), create=False)

    def execution(self, execution_id: str) -> Execution:
        self._check()
        return self._require_execution(execution_id)

    def executions(self, work_id: str = "") -> list[Execution]:
        self._check()
        return self._list("execution", work_id=work_id)

    def live_executions(self, work_id: str = "") -> list[Execution]:
        self._check()
        return self._list("execution", work_id=work_id, live=True)

    def claim(self, execution_id: str, owner: str, expires_at: Nanos) -> Execution:
        self._writable()
        validate.require_id(owner, "lease owner")
        x = self._require_execution(execution_id)
        if expires_at <= self._now:
            raise Invalid("a lease must expire after Guard.now")
        work = self._require_work(x.work_id)
        if work.terminal:
            raise Invalid(f"Work {work.id} is {work.state}")
        if x.terminal:
            raise Invalid(f"Execution {x.id} is {x.state}")
        if x.state is ExecutionState.RUNNING and x.owner and self._now < x.lease_expires_at:
            raise Conflict(f"Execution {x.id} is leased to {x.owner} (epoch {x.epoch})")
        stored = replace(
            x,
            state=ExecutionState.RUNNING,
            # A resumed parked attempt drops its waiting outcome: running has none (O-03).
            outcome=None,
            owner=owner,
            epoch=x.epoch + 1,
            lease_expires_at=expires_at,
            started_at=x.started_at or self._now,
            revision=x.revision + 1,
            updated_at=self._now,
        )
        self._put("execution", stored, create=False)
        if work.state is not WorkState.RUNNING:
            running = replace(
                work, state=WorkState.RUNNING, revision=work.revision + 1, updated_at=self._now
            )
            self._put("work", running, create=False)
        return stored

    def renew(self, lease: LeaseRef, expires_at: Nanos) -> Execution:
        self._writable()
        x = self.verify_lease(lease)
        if expires_at < x.lease_expires_at:
            raise Invalid("renew cannot shorten a lease")
        stored = replace(
            x, lease_expires_at=expires_at, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def release(self, lease: LeaseRef) -> Execution:
        self._writable()
        x = self.verify_lease(lease)
        stored = replace(
            x, owner="", lease_expires_at=0, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def revoke_lease(self, execution_id: str) -> Execution:
        """Control plane only: end a running attempt's lease now (expiry = Guard.now,
        already expired since expiry is exclusive). Owner and epoch stay, so the old
        holder is fenced and a later claim recovers the attempt with a higher epoch.
        Restore uses it to fence every restored lease before any executor commits."""
        self._writable()
        if not self.trusted:
            raise Fenced("revoke_lease needs control-plane authority (no lease in the Guard)")
        x = self._require_execution(execution_id)
        if x.state is not ExecutionState.RUNNING or not x.owner:
            return x
        if x.lease_expires_at <= self._now:
            return x
        stored = replace(
            x, lease_expires_at=self._now, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def set_execution_executor(self, execution_id: str, executor: str) -> Execution:
        self._writable()
        validate.require_id(executor, "executor")
        x = self._require_execution(execution_id)
        if x.executor == executor:
            return x
        if x.executor:
            raise Conflict(f"Execution {x.id} executor is already {x.executor!r}")
        # Write-once metadata kept by storage: no revision bump, like latest_executor.
        stored = replace(x, executor=executor)
        self._put("execution", stored, create=False)
        self._note_executor(stored)
        return stored

    # -- Scopes ---------------------------------------------------------------------
    def put_scope(self, scope: Scope) -> Scope:
        self._writable()
        validate.require_id(scope.id, "Scope ID")
        self._check_attachments(None, ())
        for binding in scope.bindings:
            self._check_attachments(binding, ())
        current = self._get("scope", scope.id)
        if scope.revision == 0 and current is not None:
            raise Conflict(f"Scope {scope.id!r} already exists")
        if scope.revision != 0:
            if current is None:
                raise NotFound(f"Scope {scope.id!r} does not exist")
            if scope.revision != current.revision:
                raise Conflict(
                    f"Scope {scope.id} is at revision {current.revision}, not {scope.revision}"
                )
        self._check_scope_parent(scope)
        stored = replace(
            scope,
            revision=current.revision + 1 if current else 1,
            created_at=current.created_at if current else self._now,
            updated_at=self._now,
        )
        self._put("scope", stored, create=current is None)
        return stored

    def _check_scope_parent(self, scope: Scope) -> None:
        parent_id = scope.parent_id
        seen = {scope.id}
        while parent_id:
            if parent_id in seen:
                raise Invalid(f"Scope {scope.id} parent chain would form a cycle")
            seen.add(parent_id)
            parent = self._get("scope", parent_id)
            if parent is None:
                raise NotFound(f"parent Scope {parent_id!r} does not exist")
            parent_id = parent.parent_id

    def scope(self, scope_id: str) -> Scope:
        self._check()
        scope = self._get("scope", scope_id)
        if scope is None:
            raise NotFound(f"Scope {scope_id!r} does not exist")
        return scope

    def scopes(self) -> list[Scope]:
        self._check()
        return self._list("scope")

    # -- Timers ---------------------------------------------------------------------
    def _require_unused_identity(self, template: Event) -> None:
        self._validate_envelope(template)
        if any(stored is not None for stored in self._event_identity(template)):
            raise Conflict(f"timer template reuses accepted Event identity {template.id!r}")

    def put_timer(self, timer: Timer) -> Timer:
        self._writable()
        validate.require_id(timer.id, "Timer ID")
        self._require_unused_identity(timer.template)
        if timer.work_id:
            self._require_work(timer.work_id)
        current = self._get("timer", timer.id)
        if timer.revision == 0:
            if current is not None:
                raise Conflict(f"Timer {timer.id!r} already exists")
            revision = self._timer_floor(timer.id) + 1
        else:
            if current is None:
                raise NotFound(f"Timer {timer.id!r} does not exist")
            if timer.revision != current.revision:
                raise Conflict(
                    f"Timer {timer.id} is at revision {current.revision}, not {timer.revision}"
                )
            revision = current.revision + 1
        stored = replace(
            timer,
            revision=revision,
            created_at=current.created_at if current else self._now,
            updated_at=self._now,
        )
        self._put("timer", stored, create=current is None)
        return stored

    def _current_timer(self, timer_id: str, revision: int) -> Timer:
        timer = self._get("timer", timer_id)
        if timer is None:
            raise NotFound(f"Timer {timer_id!r} does not exist")
        if timer.revision != revision:
            raise Conflict(f"Timer {timer_id} is at revision {timer.revision}, not {revision}")
        return timer

    def timer(self, timer_id: str) -> Timer:
        self._check()
        timer = self._get("timer", timer_id)
        if timer is None:
            raise NotFound(f"Timer {timer_id!r} does not exist")
        return timer

    def timers(self, work_id: str = "") -> list[Timer]:
        self._check()
        return self._list("timer", work_id=work_id)

    def due_timers(self, now: Nanos, limit: int = 0) -> list[Timer]:
        self._check()
        validate.require_limit(limit)
        return self._due_timers(now, limit)

    def delete_timer(self, timer_id: str, revision: int) -> None:
        self._writable()
        self._current_timer(timer_id, revision)
        self._delete_timer(timer_id)

    def fire_timer(
        self, timer_id: str, revision: int, next: TimerNext | None = None
    ) -> StoredEvent:
        self._writable()
        timer = self._current_timer(timer_id, revision)
        if self._now < timer.fire_at:
            raise Invalid(f"Timer {timer_id} is not due until {timer.fire_at}")
        fired = replace(timer.template, occurred_at=timer.fire_at)
        self._require_unused_identity(fired)
        if next is not None:
            if next.fire_at <= timer.fire_at:
                raise Invalid("a rearmed timer must fire later than the fired time")
            same = (next.template.source, next.template.delivery_id) == (
                fired.source,
                fired.delivery_id,
            )
            if same or next.template.id == fired.id:
                raise Invalid("a rearmed timer needs a new Event identity")
            self._require_unused_identity(next.template)
        stored, _ = self.accept_event(fired)
        if next is None:
            self._delete_timer(timer_id)
        else:
            rearmed = replace(
                timer,
                fire_at=next.fire_at,
                template=next.template,
                revision=timer.revision + 1,
                updated_at=self._now,
            )
            self._put("timer", rearmed, create=False)
        return stored

    # -- Waits ----------------------------------------------------------------------
    def put_wait(self, wait: Wait) -> Wait:
        self._writable()
        validate.require_id(wait.id, "Wait ID")
        try:
            state = WaitState(wait.state)
        except ValueError:
            raise Invalid(f"unknown Wait state {wait.state!r}") from None
        current = self._get("wait", wait.id)
        if wait.revision == 0:
            if current is not None:
                raise Conflict(f"Wait {wait.id!r} already exists")
            return self._register_wait(wait, state)
        if current is None:
            raise NotFound(f"Wait {wait.id!r} does not exist")
        if wait.revision != current.revision:
            raise Conflict(f"Wait {wait.id} is at revision {current.revision}, not {wait.revision}")
        if current.state is not WaitState.ACTIVE:
            raise Invalid(f"Wait {wait.id} is {current.state}; it changes state only once")
        fixed: tuple[str, ...] = ("work_id", "execution_id", "keys", "types", "after_sequence")
        fixed += ("timeout_timer_id", "description", "owner")
        if any(getattr(wait, f) != getattr(current, f) for f in fixed):
            raise Invalid("a Wait's predicate, boundary, timeout, description and owner are fixed")
        if wait.progress != current.progress and not current.owner:
            raise Invalid("only a Wait with an owner records progress")
        woken_by = ""
        if state is WaitState.WOKEN:
            validate.require_id(wait.woken_by, "the waking Event ID")
            self._require_event(wait.woken_by)
            woken_by = wait.woken_by
        stored = replace(
            wait,
            state=state,
            woken_by=woken_by,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._put("wait", stored, create=False)
        return stored

    def _register_wait(self, wait: Wait, state: WaitState) -> Wait:
        if state is not WaitState.ACTIVE:
            raise Invalid("a Wait is registered active")
        work = self._require_work(wait.work_id)
        x = self._require_execution(wait.execution_id)
        if x.work_id != work.id:
            raise Invalid(f"Execution {x.id} belongs to Work {x.work_id}, not {work.id}")
        validate.require_keys(wait.keys)
        foreign = [k for k in wait.keys if k not in work.keys]
        if foreign:
            raise Invalid(f"Wait keys {foreign} are not owned by Work {work.id}")
        for type_ in wait.types:
            validate.require_dotted(type_, "Wait type filter")
        if wait.after_sequence < 0:
            raise Invalid("a Wait boundary is a nonnegative acceptance sequence")
        if wait.timeout_timer_id and self._get("timer", wait.timeout_timer_id) is None:
            raise NotFound(f"timeout Timer {wait.timeout_timer_id!r} does not exist")
        stored = replace(
            wait,
            state=WaitState.ACTIVE,
            woken_by="",
            revision=1,
            created_at=self._now,
            updated_at=self._now,
        )
        self._put("wait", stored, create=True)
        self._registered_waits.append(wait.id)
        return stored

    def wait(self, wait_id: str) -> Wait:
        self._check()
        wait = self._get("wait", wait_id)
        if wait is None:
            raise NotFound(f"Wait {wait_id!r} does not exist")
        return wait

    def waits(self, work_id: str = "") -> list[Wait]:
        self._check()
        return self._list("wait", work_id=work_id)

    def active_waits(self, work_id: str = "") -> list[Wait]:
        self._check()
        return self._list("wait", work_id=work_id, live=True)

    # -- KV -------------------------------------------------------------------------
    @staticmethod
    def _kv_names(namespace: str, key: str | None) -> None:
        validate.require_id(namespace, "KV namespace")
        if key is not None:
            validate.require_id(key, "KV key")

    def kv_get(self, namespace: str, key: str) -> bytes:
        self._check()
        self._kv_names(namespace, key)
        value = self._kv_get(namespace, key)
        if value is None:
            raise NotFound(f"no KV entry {namespace}/{key}")
        return value

    def kv_put(self, namespace: str, key: str, value: bytes) -> None:
        self._writable()
        self._kv_names(namespace, key)
        if not isinstance(value, bytes):
            raise Invalid("a KV value must be bytes")
        if len(value) > KV_VALUE_LIMIT:
            raise Invalid(
                f"KV value of {len(value)} bytes exceeds the {KV_VALUE_LIMIT}-byte cap; "
                "KV holds small coordination state, use the artifact store for content"
            )
        self._kv_put(namespace, key, value)

    def kv_delete(self, namespace: str, key: str) -> None:
        self._writable()
        self._kv_names(namespace, key)
        self._kv_delete(namespace, key)

    def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, bytes]]:
        self._check()
        self._kv_names(namespace, None)
        return self._kv_list(namespace, prefix)

    # -- Run records (durable-run-records.txt) -----------------------------------------
    # Ownership is the Session's (storage.ops.run_sessions); these are the record operations
    # a Session runs inside ``transact`` and the console reads through ``view``.
    def run_record(self, run_id: str) -> StoredRun | None:
        """The stored record of ``run_id``, or None. A stored record that does not
        decode raises ``Corrupt`` (``RecordsNewer`` for a newer format)."""
        self._check()
        row = self._run_row(check_run_id(run_id))
        return None if row is None else _stored_run(row)

    def run_records(self, query: RunQuery) -> list[StoredRun]:
        """One page of stored records. A row that does not decode comes back with
        ``error`` set and a minimal record (run ID, revision, format), never raising:
        the console must still list it."""
        self._check()
        check_run_query(query)
        out = []
        for row in self._run_rows(query):
            try:
                out.append(_stored_run(row))
            except StorageError as exc:
                minimal = RunRecord(run_id=row.run_id, revision=row.revision, format=row.format)
                out.append(StoredRun(minimal, row.created_ns, row.updated_ns, row.format, str(exc)))
        return out

    def count_run_records(self, query: RunQuery) -> int:
        self._check()
        check_run_query(query)
        return self._count_run_rows(query)

    def put_run_record(self, record: RunRecord, expected_revision: int) -> int:
        """Whole-record compare-and-swap; returns the new revision. ``expected_revision``
        0 creates revision 1, the stored revision gives stored + 1; anything else, or a
        stored revision at ``MAX_REVISION``, is ``Conflict`` with nothing written. The
        record is written as format ``RUN_FORMAT`` at the new revision whatever its own
        ``format`` and ``revision`` say. ``Invalid``: a bad run ID, an expected revision
        outside [0, MAX_REVISION], a metadata string or map key that is not UTF-8.
        ``RecordsNewer``: the stored record has a newer format (writing would drop it)."""
        self._writable()
        if not isinstance(record, RunRecord):
            raise Invalid(f"expected a RunRecord, not {type(record).__name__}")
        run_id = check_run_id(record.run_id)
        expected = expected_revision
        if not isinstance(expected, int) or isinstance(expected, bool):
            raise Invalid(f"expected revision must be an integer, not {expected!r}")
        if not 0 <= expected <= MAX_REVISION:
            raise Invalid(f"expected revision {expected} is outside [0, 2^64)")
        current = self._run_row(run_id)
        if current is None:
            if expected != 0:
                raise Conflict(f"run {run_id!r} has no record; expected revision must be 0")
        else:
            if current.format > RUN_FORMAT:
                raise RecordsNewer(
                    f"run {run_id!r} is stored in format {current.format}, newer than this "
                    f"code's {RUN_FORMAT}; saving would drop its fields"
                )
            if expected != current.revision:
                raise Conflict(f"run {run_id!r} is at revision {current.revision}, not {expected}")
            if current.revision == MAX_REVISION:
                raise Conflict(f"run {run_id!r} is at the last revision (2^64-1)")
        revision = expected + 1
        data = encode_run(replace(record, format=RUN_FORMAT, revision=revision))
        created = current.created_ns if current is not None else self._now
        row = RunRow(run_id, revision, RUN_FORMAT, created, self._now, data)
        self._put_run_row(row, expected)
        return revision

    # -- Dashboard reads (series and exhausted Work; meaning in storage/series.py) ----
    @abstractmethod
    def _work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]: ...

    @abstractmethod
    def _event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]: ...

    @abstractmethod
    def _attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]: ...

    @abstractmethod
    def _started_executions(
        self, since: Nanos, before: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]: ...

    @abstractmethod
    def _exhausted_works(self, query: WorkQuery) -> list[Work]: ...

    @abstractmethod
    def _count_exhausted(self, query: WorkQuery) -> int: ...

    def work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        """Work matching ``query``'s filters, per state (the query's states, else all),
        counted by the bucket of its ``updated_at``. Order, cursor and limit are not
        used. Served by indexes on (state, updated) and (scope, state, updated)."""
        self._check()
        check_query(query)
        series.check_buckets(buckets)
        return self._work_series(query, buckets)

    def event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Events per bucket of their acceptance time, recorded in any of
        ``scope_ids`` ("" = none recorded; None = any)."""
        self._check()
        series.check_buckets(buckets)
        series.check_scope_ids(scope_ids)
        return self._event_series(buckets, scope_ids)

    def attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Attempts per bucket of their first claim, of Work in any of ``scope_ids``."""
        self._check()
        series.check_buckets(buckets)
        series.check_scope_ids(scope_ids)
        return self._attempt_series(buckets, scope_ids)

    def started_executions(
        self,
        since: Nanos,
        before: Nanos,
        scope_ids: Sequence[str] | None = None,
        limit: int = 0,
    ) -> list[Execution]:
        """Attempts first claimed in [since, before), of Work in any of ``scope_ids``,
        the most recently started first: what an ``attempt_series`` bucket counted."""
        self._check()
        validate.require_limit(limit)
        series.check_scope_ids(scope_ids)
        if since < 0 or before < since:
            raise Invalid("a time range runs from a nonnegative start to a later end")
        return self._started_executions(since, before, scope_ids, limit)

    def exhausted_works(self, query: WorkQuery) -> list[Work]:
        """``query``'s Work that is exhausted (ready, has had an attempt, no live
        attempt, no Timer), in the query's order, paged and limited by it."""
        self._check()
        check_query(query)
        return self._exhausted_works(query)

    def count_exhausted(self, query: WorkQuery) -> int:
        self._check()
        check_query(query)
        return self._count_exhausted(query)


def _stored_run(row: RunRow) -> StoredRun:
    """Decode a stored row. The columns are the CAS's authority and the JSON must agree
    with them; a disagreement is corruption, reported rather than guessed around."""
    record = decode_run(row.data)
    for what, stored, written in (
        ("run ID", row.run_id, record.run_id),
        ("revision", row.revision, record.revision),
        ("format", row.format, record.format),
    ):
        if stored != written:
            raise Corrupt(
                f"run {row.run_id!r}: stored {what} {stored!r} but its record says {written!r}"
            )
    return StoredRun(record, row.created_ns, row.updated_ns, row.format)
