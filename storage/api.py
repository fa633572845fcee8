"""The storage contract: ``Store``, its transaction ``Tx`` and the module helpers.

``Store.transact(guard, callback)`` is the only mutation boundary: serializable, the
callback runs exactly once, an exception or a fired cancel token/deadline rolls back
everything. ``Store.view(callback)`` reads one consistent snapshot of committed state,
never waits for a writer and refuses every write with ``ReadOnly``.

Every method of ``Tx`` raises a ``StorageError`` subclass on failure and has no effect
when it raises (a callback that swallows the error may go on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from .records import (
    ActiveWaitQuery,
    Buckets,
    CorrelationKey,
    ErrorGroup,
    Event,
    Execution,
    ExecutionQuery,
    Guard,
    IdMatch,
    LeaseRef,
    Nanos,
    Scope,
    StoredEvent,
    Timer,
    TimerNext,
    TimerQuery,
    Wait,
    Work,
    WorkFacets,
    WorkQuery,
)
from .versions import (
    PRUNE_BATCH,
    KvAsOf,
    RecordAt,
    RecordVersion,
    VersionKind,
    WorkAsOf,
    WorkMark,
    WorksMark,
)

if TYPE_CHECKING:  # storage.run_records builds on this module
    from .run_records.records import DurableRunRecord, RunQuery, StoredRun

T = TypeVar("T")

# KV values are for small coordination state (cursors, observations); larger values
# are refused so nobody stores logs or artifact bytes there.
KV_VALUE_LIMIT = 64 * 1024

# Every write operation of ``Tx``, the one list: the read-only View refuses exactly
# these, and the contract cases check that a View refuses each and a Store exposes none.
WRITES: frozenset[str] = frozenset(
    {
        "accept_event",
        "mark_routed",
        "set_event_scope",
        "put_work",
        "put_execution",
        "claim",
        "renew",
        "release",
        "set_execution_executor",
        "revoke_lease",
        "put_scope",
        "put_timer",
        "delete_timer",
        "fire_timer",
        "put_wait",
        "kv_put",
        "kv_delete",
        "put_run_record",
        "prune_versions",
    }
)


@runtime_checkable
class Tx(Protocol):
    """One transaction (or one View). Must not escape its callback or cross threads."""

    @property
    def now(self) -> Nanos:
        """Guard.now: trusted, fixed for the whole transaction, never decreasing."""
        ...

    @property
    def read_only(self) -> bool: ...

    # Events ---------------------------------------------------------------------
    def accept_event(self, event: Event) -> tuple[StoredEvent, bool]:
        """Accept an Event; returns (stored, added). A known (source, delivery_id)
        returns the original with added=False."""
        ...

    def mark_routed(self, event_id: str, work_id: str, disposition: str) -> None: ...
    def set_event_scope(self, event_id: str, scope_id: str) -> None: ...
    def event(self, event_id: str) -> StoredEvent: ...
    def event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent: ...
    def events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]: ...
    def unrouted_events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]: ...
    def work_events(self, work_id: str, after: int = 0, limit: int = 0) -> list[StoredEvent]: ...
    def scope_events(
        self, scope_ids: Sequence[str], after: int = 0, limit: int = 0
    ) -> list[StoredEvent]: ...
    def derived_events(self, event_id: str) -> list[StoredEvent]:
        """Events whose causation_id names ``event_id``, in acceptance order."""
        ...

    def find_events(
        self,
        *,
        after: int = 0,
        before: int = 0,
        limit: int = 0,
        newest_first: bool = False,
        sources: Sequence[str] = (),
        types: Sequence[str] = (),
        actors: Sequence[str] = (),
        key: CorrelationKey | None = None,
        scope_ids: Sequence[str] | None = None,
        work_id: str = "",
        unrouted: bool = False,
        received_since: Nanos | None = None,
        received_before: Nanos | None = None,
        ids: Sequence[str] | None = None,
        causes: Sequence[str] | None = None,
    ) -> list[StoredEvent]:
        """Events with after < sequence < before (0: unbounded) matching every given
        filter (acceptance time in [received_since, received_before); with any of
        ``ids``; caused by any of ``causes``: at most ``meaning.events.IDS_MAX`` each),
        ascending or newest first, at most ``limit`` (the console's search)."""
        ...

    def count_events(
        self,
        *,
        after: int = 0,
        before: int = 0,
        work_id: str = "",
        causes: Sequence[str] | None = None,
    ) -> int:
        """How many Events ``find_events`` selects with these filters and no limit."""
        ...

    def latest_sequence(self) -> int: ...
    def store_version(self) -> int:
        """A store-wide change counter: it grows with every committed transaction that
        wrote, so an unchanged value means nothing changed."""
        ...

    # Work -----------------------------------------------------------------------
    def put_work(self, work: Work) -> Work: ...
    def work(self, work_id: str) -> Work: ...
    def work_by_key(self, key: CorrelationKey) -> Work: ...
    def works(self) -> list[Work]: ...
    def works_of(self, work_ids: Sequence[str]) -> list[Work]:
        """The listed Work that exist, by ID (unknown IDs absent), in one read."""
        ...

    def live_works(self) -> list[Work]: ...
    def query_works(self, query: WorkQuery) -> list[Work]: ...
    def count_works(self, query: WorkQuery) -> int: ...
    def work_facets(self, query: WorkQuery) -> WorkFacets: ...

    # Dashboard reads (meaning: storage/meaning/series.py) -------------------------
    def work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        """Work matching ``query``'s filters per state (the query's, else all six),
        counted by the bucket of its updated time; order, cursor and limit unused."""
        ...

    def event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Events per bucket of acceptance time, recorded in any of ``scope_ids``."""
        ...

    def attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Attempts per bucket of first claim, of Work in any of ``scope_ids``."""
        ...

    def started_executions(
        self,
        since: Nanos,
        before: Nanos,
        scope_ids: Sequence[str] | None = None,
        limit: int = 0,
    ) -> list[Execution]:
        """Attempts first claimed in [since, before), newest first."""
        ...

    def running_executions(
        self, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Execution]:
        """Running attempts of Work in any of ``scope_ids``, the longest running first."""
        ...

    def expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Execution]:
        """Running attempts whose lease expired by ``at``, the oldest expiry first."""
        ...

    def count_expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None = None
    ) -> int: ...

    def overdue_timers(
        self, at: Nanos, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Timer]:
        """Timers due by ``at`` of Work in any of ``scope_ids``, the earliest first."""
        ...

    def count_overdue_timers(self, at: Nanos, scope_ids: Sequence[str] | None = None) -> int: ...

    def exhausted_works(self, query: WorkQuery) -> list[Work]:
        """Ready Work with an attempt, none live and no Timer, among ``query``'s."""
        ...

    def count_exhausted(self, query: WorkQuery) -> int: ...
    def error_groups(self, query: WorkQuery, limit: int = 0) -> list[ErrorGroup]:
        """The error groups of ``query``'s failed and exhausted Work, largest first."""
        ...

    # Executions -----------------------------------------------------------------
    def put_execution(self, execution: Execution) -> Execution: ...
    def execution(self, execution_id: str) -> Execution: ...
    def executions(self, work_id: str = "") -> list[Execution]: ...
    def live_executions(self, work_id: str = "") -> list[Execution]: ...
    def executions_without_executor(self, after: str = "", limit: int = 0) -> list[Execution]:
        """Attempts with no executor recorded, by ID after ``after``, at most ``limit``
        (0: all): the executor backfill's candidates, from an index of those alone."""
        ...

    def query_executions(self, query: ExecutionQuery) -> list[Execution]:
        """Attempts matching ``query``, the most recently first claimed first, paged by
        its keyset cursor (meaning: storage/meaning/executions.py)."""
        ...

    def latest_executions(self, work_ids: Sequence[str]) -> dict[str, Execution]:
        """Each listed Work's highest-numbered attempt, by Work ID (none: absent)."""
        ...

    def claim(self, execution_id: str, owner: str, expires_at: Nanos) -> Execution: ...
    def renew(self, lease: LeaseRef, expires_at: Nanos) -> Execution: ...
    def release(self, lease: LeaseRef) -> Execution: ...
    def set_execution_executor(self, execution_id: str, executor: str) -> Execution: ...
    def revoke_lease(self, execution_id: str) -> Execution:
        """Control plane only (Fenced under a lease Guard): expire a lease now."""
        ...

    # Scopes ---------------------------------------------------------------------
    def put_scope(self, scope: Scope) -> Scope: ...
    def scope(self, scope_id: str) -> Scope: ...
    def scopes(self) -> list[Scope]: ...

    # Timers ---------------------------------------------------------------------
    def put_timer(self, timer: Timer) -> Timer: ...
    def timer(self, timer_id: str) -> Timer: ...
    def timers(self, work_id: str = "") -> list[Timer]: ...
    def timers_of(self, work_ids: Sequence[str]) -> list[Timer]:
        """The Timers of any of the listed Work, by ID."""
        ...

    def due_timers(self, now: Nanos, limit: int = 0) -> list[Timer]:
        """Timers with fire_at <= now, earliest first (ties by ID)."""
        ...

    def query_timers(self, query: TimerQuery) -> list[Timer]:
        """A keyset page of Timers, earliest fire time first (ties by ID), optionally
        only those due by an instant (meaning: storage/meaning/pages.py)."""
        ...

    def count_timers(self, query: TimerQuery) -> int:
        """How many Timers ``query`` selects, cursor and limit aside."""
        ...

    def timer_series(self, buckets: Buckets, query: TimerQuery) -> list[int]:
        """Per bucket, how many of the Timers ``count_timers(query)`` counts fire in
        it (meaning: storage/meaning/pages.py), from the due times, none decoded."""
        ...

    def delete_timer(self, timer_id: str, revision: int) -> None: ...
    def fire_timer(
        self, timer_id: str, revision: int, next: TimerNext | None = None
    ) -> StoredEvent: ...

    # Waits ----------------------------------------------------------------------
    def put_wait(self, wait: Wait) -> Wait: ...
    def wait(self, wait_id: str) -> Wait: ...
    def waits(self, work_id: str = "") -> list[Wait]: ...
    def waits_of(self, work_ids: Sequence[str]) -> list[Wait]:
        """The Waits of any of the listed Work, by ID."""
        ...

    def active_waits(self, work_id: str = "") -> list[Wait]: ...
    def query_active_waits(self, query: ActiveWaitQuery) -> list[Wait]:
        """A keyset page of active Waits, oldest first (ties by ID), optionally only
        those created by an instant (meaning: storage/meaning/pages.py)."""
        ...

    def count_active_waits(self, query: ActiveWaitQuery) -> int:
        """How many active Waits ``query`` selects, cursor and limit aside."""
        ...

    # Lookup by ID prefix (meaning: storage/meaning/ids.py) --------------------------
    def find_ids(self, prefix: str, limit: int = 10) -> list[IdMatch]:
        """Records of every kind (Work, Event, Execution, Wait, Timer, Scope, run
        record) whose ID starts with ``prefix`` (exactly: no wildcards), at most
        ``limit`` (1 to ``FIND_IDS_MAX``) of each kind, by kind then ID. An exact ID
        is its own prefix. Each kind is one range read of its ID index."""
        ...

    # Namespaced KV --------------------------------------------------------------
    def kv_get(self, namespace: str, key: str) -> bytes: ...
    def kv_put(self, namespace: str, key: str, value: bytes) -> None: ...
    def kv_delete(self, namespace: str, key: str) -> None: ...
    def kv_list(
        self, namespace: str, prefix: str = "", after: str = "", limit: int = 0
    ) -> list[tuple[str, bytes]]:
        """(key, value) of ``namespace`` whose key starts with ``prefix``, by key in
        binary order, after the key ``after`` (a keyset cursor), at most ``limit``."""
        ...

    def kv_namespaces(self, after: str = "", limit: int = 0) -> list[str]:
        """The namespaces holding at least one key, in binary order, after ``after``,
        at most ``limit`` (0: all): one index seek per namespace returned."""
        ...

    # The record-version log (storage/versions.py) ----------------------------------
    def version_horizon(self) -> int:
        """The oldest version the log reconstructs: every change after it is logged."""
        ...

    def record_versions(
        self,
        kind: VersionKind,
        id: str,
        key: str = "",
        *,
        after: int = 0,
        upto: int = 0,
        limit: int = 0,
        newest_first: bool = False,
    ) -> list[RecordVersion]:
        """One record's log rows (a KV entry: ``id`` its namespace, ``key`` its key)
        with after < version <= upto (0: unbounded), oldest or newest first."""
        ...

    def version_changes(
        self, *, after: int = 0, upto: int = 0, start: int = 0, limit: int = 0
    ) -> list[RecordVersion]:
        """Every record's log rows with after < version <= upto and position > start,
        in the log's order: what changed between two moments, a page at a time."""
        ...

    def record_as_of(self, kind: VersionKind, id: str, version: int, key: str = "") -> RecordAt:
        """The record (a KV entry's bytes) as it was once ``version`` had committed."""
        ...

    def kv_list_as_of(
        self, namespace: str, version: int, prefix: str = "", after: str = "", limit: int = 0
    ) -> KvAsOf:
        """``kv_list`` as it was once ``version`` had committed (deleted keys included);
        ``known`` False below the horizon."""
        ...

    def work_versions(
        self, work_id: str, *, after: int = 0, upto: int = 0, start: int = 0, limit: int = 0
    ) -> list[RecordVersion]:
        """The log rows of a Work's records (it, its attempts, Waits and Timers) with
        after < version <= upto and position > start, in the log's order."""
        ...

    def later_versions(
        self, kind: VersionKind, wanted: Sequence[tuple[str, int]]
    ) -> dict[str, RecordVersion]:
        """For each (record ID, version), the record's first log row after that
        version, by ID; absent when it has not changed since."""
        ...

    def work_as_of(self, work_id: str, version: int) -> WorkAsOf:
        """A Work with its attempts, Waits and Timers as they were once ``version``
        had committed."""
        ...

    def work_mark(self, work_id: str, children: int = 0) -> WorkMark:
        """What changes whenever anything of the Work's page changes: the Work, its
        attempts, Waits and Timers, its timeline's Events, its first ``children``
        children (``storage.versions.WorkMark``); a few index reads, nothing decoded."""
        ...

    def works_mark(self, query: WorkQuery) -> WorksMark:
        """What changes whenever ``query``'s page (it needs a limit, at most
        ``MARKED_WORKS_MAX``) or an attempt, Wait or Timer of its Work changes
        (``storage.versions.WorksMark``); index reads, nothing decoded."""
        ...

    def version_at(self, at: Nanos) -> int:
        """The store version as of time ``at`` (the last one committed at or before it)."""
        ...

    def prune_versions(self, before: Nanos, limit: int = PRUNE_BATCH) -> int:
        """Delete at most ``limit`` of the oldest log rows committed before ``before``
        (control plane only); returns how many went, 0 when none is left."""
        ...

    # Run records (durable-run-records.txt; ownership is storage.run_records' Session) --------
    def run_record(self, run_id: str) -> StoredRun | None:
        """The stored record, or None; ``Corrupt``/``RecordsNewer`` if it does not decode."""
        ...

    def run_records(self, query: RunQuery) -> list[StoredRun]:
        """A page, newest update first; undecodable rows come back with ``error`` set."""
        ...

    def count_run_records(self, query: RunQuery) -> int: ...
    def put_run_record(self, record: DurableRunRecord, expected_revision: int) -> int:
        """Whole-record CAS (0 creates revision 1); returns the new revision."""
        ...


@runtime_checkable
class Store(Protocol):
    def transact(self, guard: Guard, callback: Callable[[Tx], T]) -> T: ...
    def close(self) -> None: ...

    @property
    def schema_version(self) -> int: ...


@runtime_checkable
class Viewer(Protocol):
    def view(self, callback: Callable[[Tx], T], now: Nanos | None = None) -> T: ...
