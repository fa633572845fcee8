"""The row hooks a backend supplies: the persistence interface under the rules.

The rules (``storage.tx``) do every check before their first write and then call these
hooks, so a hook never validates and never refuses on contract grounds. Each hook's
docstring is its contract. Two have defaults a backend may override to save a read
(``_exists``, ``_event_identity``). Like procrastinate's ``BaseConnector``: all of the
interface in one place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

from ..meaning.events import EventScan
from ..meaning.series_tally import SeriesKey
from ..meaning.tally import TallyKey
from ..records import (
    ActiveWaitQuery,
    Buckets,
    CorrelationKey,
    ErrorGroup,
    Event,
    Execution,
    ExecutionQuery,
    IdKind,
    IdMatch,
    Nanos,
    Route,
    Scope,
    StoredEvent,
    Table,
    Timer,
    TimerQuery,
    Wait,
    Work,
    WorkFacets,
    WorkQuery,
)
from ..run_records.query import RunRow
from ..run_records.records import RunQuery
from ..versions import RecordVersion, VersionKind, WorkMark, WorksMark


class ContractRows(ABC):
    """Row access by table, Event, key, KV, run-record and dashboard hooks."""

    # -- records by table (work, execution, scope, timer, wait) ---------------------
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
    def _get(self, table: Table, id: str) -> Work | Execution | Scope | Timer | Wait | None:
        """The record of ``table`` with this ID, or None (a deleted Timer is None)."""

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
    def _list_of_works(self, table: Table, work_ids: Sequence[str]) -> list[Any]:
        """The records of ``table`` (execution, timer, wait) belonging to any of
        ``work_ids`` (distinct, checked), sorted by ID: a page's rows in one read, so a
        list's cost does not grow with its length. Deleted Timers are not listed."""

    @abstractmethod
    def _works_by_id(self, work_ids: Sequence[str]) -> list[Work]:
        """The Work among ``work_ids`` (distinct, checked) that exist, sorted by ID, in
        one read (a page's Work, whatever its length)."""

    @abstractmethod
    def _timer_floor(self, timer_id: str) -> int:
        """Highest revision ever given to this timer ID, deleted ones included."""

    @abstractmethod
    def _delete_timer(self, timer_id: str) -> None:
        """Remove a timer, keeping its revision high-water mark."""

    @abstractmethod
    def _due_timers(self, now: Nanos, limit: int) -> list[Timer]:
        """Live Timers with ``fire_at <= now``, by (fire_at, ID), at most ``limit`` (0: all)."""

    # -- correlation keys, attempts and Work queries ---------------------------------
    @abstractmethod
    def _key_owner(self, key: CorrelationKey) -> str | None:
        """The ID of the Work that owns ``key``, or None."""

    @abstractmethod
    def _add_keys(self, work_id: str, keys: Sequence[CorrelationKey], first: int) -> None:
        """Record ``work_id`` as owner of ``keys``, at positions from ``first`` on."""

    @abstractmethod
    def _latest_attempt(self, work_id: str) -> Execution | None:
        """The Work's Execution with the highest attempt number, or None."""

    @abstractmethod
    def _query_works(self, query: WorkQuery) -> list[Work]:
        """Work selected by ``query`` (``meaning.query.select_works`` is the meaning)."""

    @abstractmethod
    def _count_works(self, query: WorkQuery) -> int:
        """How many Work pass ``query``'s filters (order, cursor and limit unused)."""

    @abstractmethod
    def _work_facets(self, query: WorkQuery) -> WorkFacets:
        """Counts per facet value under ``query``'s filters (``select_facets``),
        counted from the Work: for the selections the tally cannot answer."""

    # -- the Work tally (meaning in storage/meaning/tally.py) ------------------------
    @abstractmethod
    def _add_tally(self, changes: Mapping[TallyKey, int]) -> None:
        """Add each (nonzero) change to its tally row, creating rows as needed."""

    @abstractmethod
    def _tally_facets(self, query: WorkQuery) -> WorkFacets:
        """``tally.facets`` of ``query`` (one the tally ``answers``) over the stored
        tally rows; cost follows the rows of the selected combinations."""

    @abstractmethod
    def _tally_total(self, query: WorkQuery, exhausted: bool) -> int:
        """``tally.total`` of ``query`` (one the tally ``answers``) over the stored
        tally rows: its Work, or its exhausted Work, from their rows alone."""

    # -- the series tally (meaning in storage/meaning/series_tally.py) -------------
    @abstractmethod
    def _add_series_tally(self, changes: Mapping[SeriesKey, int]) -> None:
        """Add each (nonzero) change to its series tally row, creating rows as needed."""

    # -- Events ---------------------------------------------------------------------
    @abstractmethod
    def _get_event(self, event_id: str) -> StoredEvent | None:
        """The stored Event with this ID, or None."""

    @abstractmethod
    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        """The stored Event with this (source, delivery_id), or None."""

    def _event_identity(self, event: Event) -> tuple[StoredEvent | None, StoredEvent | None]:
        """The stored Events holding ``event``'s delivery identity and its ID (a
        backend may answer both with one read)."""
        return self._event_by_delivery(event.source, event.delivery_id), self._get_event(event.id)

    @abstractmethod
    def _insert_event(self, event: Event) -> int:
        """Store a new envelope; returns its acceptance sequence."""

    @abstractmethod
    def _set_event_scope(self, event_id: str, scope_id: str) -> None:
        """Record the Scope of an Event that has none (checks already passed)."""

    @abstractmethod
    def _set_route(self, event_id: str, route: Route) -> None:
        """Record the routing of an unrouted Event (checks already passed)."""

    @abstractmethod
    def _scan_events(self, scan: EventScan) -> list[StoredEvent]:
        """Events selected by ``scan``, in its order, at most ``scan.limit``."""

    @abstractmethod
    def _count_events(self, scan: EventScan) -> int:
        """How many Events ``scan`` selects (its limit and order unused)."""

    @abstractmethod
    def _latest_sequence(self) -> int:
        """The highest acceptance sequence given so far (0: none)."""

    @abstractmethod
    def _store_version(self) -> int:
        """Count of committed write transactions (a store-wide change counter)."""

    # -- lookup by ID prefix --------------------------------------------------------
    @abstractmethod
    def _prefix_ids(self, kind: IdKind, prefix: str, limit: int) -> list[IdMatch]:
        """The first ``limit`` records of ``kind`` whose ID starts with ``prefix``, by
        ID (``meaning.ids``); a deleted Timer is not one. One indexed range read."""

    # -- KV -------------------------------------------------------------------------
    @abstractmethod
    def _kv_get(self, namespace: str, key: str) -> bytes | None:
        """The value stored under (namespace, key), or None."""

    @abstractmethod
    def _kv_put(self, namespace: str, key: str, value: bytes) -> None:
        """Store ``value`` under (namespace, key), replacing any value there."""

    @abstractmethod
    def _kv_delete(self, namespace: str, key: str) -> None:
        """Remove (namespace, key); absent is not an error."""

    @abstractmethod
    def _kv_list(
        self, namespace: str, prefix: str, after: str, limit: int
    ) -> list[tuple[str, bytes]]:
        """(key, value) pairs of ``namespace`` whose key starts with ``prefix`` and
        sorts after ``after``, by key in binary order, at most ``limit`` (0: all). One
        range read of the ``(namespace, key)`` index, stopped at the prefix's end."""

    @abstractmethod
    def _kv_namespaces(self, after: str, limit: int) -> list[str]:
        """The distinct namespaces of KV entries after ``after``, in binary order, at
        most ``limit`` (0: all). An index read whatever the number of keys: one seek
        of the ``(namespace, key)`` index per namespace returned."""

    # -- run records ----------------------------------------------------------------
    @abstractmethod
    def _run_row(self, run_id: str) -> RunRow | None:
        """The stored row of ``run_id``, undecoded, or None."""

    @abstractmethod
    def _put_run_row(self, row: RunRow, expected: int) -> None:
        """Insert (``expected`` 0) or overwrite the row whose stored revision is
        ``expected``; the checks already passed."""

    @abstractmethod
    def _run_rows(self, query: RunQuery) -> list[RunRow]:
        """Rows selected by ``query`` in its order (``select_run_rows`` is the meaning)."""

    @abstractmethod
    def _count_run_rows(self, query: RunQuery) -> int:
        """How many rows ``query`` selects, paging aside."""

    # -- dashboard reads (meaning in storage/meaning/series.py) ---------------------
    @abstractmethod
    def _work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        """Per state, Work counts by bucket of ``updated_at`` (``series.work_series``)."""

    @abstractmethod
    def _event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        """Events per bucket of acceptance time in ``scope_ids`` (``series.event_series``)."""

    @abstractmethod
    def _attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        """Attempts per bucket of first claim, Work in ``scope_ids`` (``series``)."""

    @abstractmethod
    def _executions_without_executor(self, after: str, limit: int) -> list[Execution]:
        """Attempts with an empty ``executor``, ID > ``after`` in ID order, at most
        ``limit`` (0: all)."""

    @abstractmethod
    def _query_executions(self, query: ExecutionQuery) -> list[Execution]:
        """Attempts selected by a checked ``query`` in its order, expiry at ``_now``
        (``storage.meaning.executions.select_executions``)."""

    @abstractmethod
    def _query_timers(self, query: TimerQuery) -> list[Timer]:
        """Timers selected by a checked ``query`` (``meaning.pages.select_timers``)."""

    @abstractmethod
    def _count_timers(self, query: TimerQuery) -> int:
        """How many Timers ``query``'s bound selects (``meaning.pages.count_timers``)."""

    @abstractmethod
    def _timer_series(self, buckets: Buckets, query: TimerQuery) -> list[int]:
        """Per bucket, the Timers ``query`` counts that fire in it, from the due
        times alone (``meaning.pages.timer_series``)."""

    @abstractmethod
    def _query_active_waits(self, query: ActiveWaitQuery) -> list[Wait]:
        """Active Waits selected by a checked ``query`` (``meaning.pages.select_waits``)."""

    @abstractmethod
    def _count_active_waits(self, query: ActiveWaitQuery) -> int:
        """How many active Waits ``query``'s bound selects (``meaning.pages.count_waits``)."""

    @abstractmethod
    def _started_executions(
        self, since: Nanos, before: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        """Attempts first claimed in [since, before), latest first (``select_started``)."""

    @abstractmethod
    def _running_executions(self, scope_ids: Sequence[str] | None, limit: int) -> list[Execution]:
        """Running attempts in ``scope_ids`` (``series.select_running``)."""

    @abstractmethod
    def _expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        """Running attempts expired by ``at`` (``series.select_expired``), at most
        ``limit`` (0: all)."""

    @abstractmethod
    def _count_expired(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        """How many running attempts expired by ``at`` (counted, not decoded)."""

    @abstractmethod
    def _overdue_timers(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Timer]:
        """Timers due by ``at`` in ``scope_ids`` (``series.select_overdue``), at most
        ``limit`` (0: all)."""

    @abstractmethod
    def _count_overdue(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        """How many Timers are due by ``at`` in ``scope_ids`` (counted, not decoded)."""

    @abstractmethod
    def _error_groups(self, query: WorkQuery) -> list[ErrorGroup]:
        """Every error group of ``query``'s failed and exhausted Work, largest first
        (``triage.select_error_groups``)."""

    # -- the record-version log (``storage.versions``) ---------------------------------
    @abstractmethod
    def _append_versions(
        self,
        rows: Sequence[tuple[int, VersionKind, str, str, str | bytes | None, str]],
        at: Nanos,
        event_sequence: int,
        execution_id: str,
    ) -> None:
        """Append (position, kind, ID, KV key, state before, Work ID) rows, stamped with ``at``,
        ``event_sequence`` and ``execution_id``, in this transaction. ``state before``
        is the stored text of a record or a KV entry's bytes (None: it was created)."""

    @abstractmethod
    def _record_versions(
        self,
        kind: VersionKind,
        id: str,
        key: str,
        after: int,
        upto: int,
        limit: int,
        newest_first: bool,
    ) -> list[RecordVersion]:
        """One record's rows with ``after`` < version <= ``upto`` (0: unbounded), by
        position or newest first, at most ``limit`` (0: all), ``before`` decoded
        (``tx.versions.decoded``). One range read of the record's index."""

    @abstractmethod
    def _version_changes(self, low: int, high: int | None, limit: int) -> list[RecordVersion]:
        """Rows with ``low`` <= position < ``high`` (None: unbounded), by position, at
        most ``limit`` (0: all). One range read of the log's key."""

    @abstractmethod
    def _work_versions(
        self, work_id: str, low: int, high: int | None, limit: int
    ) -> list[RecordVersion]:
        """Rows whose ``work_id`` is ``work_id`` with ``low`` <= position < ``high``
        (None: unbounded), by position, at most ``limit`` (0: all). One range read of
        the log's per-Work index."""

    @abstractmethod
    def _first_versions(
        self,
        low: int = 0,
        work_id: str = "",
        kind: VersionKind = "work",
        seeks: Sequence[tuple[str, int]] = (),
    ) -> list[RecordVersion]:
        """The first row of each record from a position on: of every record with rows
        of ``work_id`` from ``low`` (when given: one read of the per-Work index), else
        of each ``kind`` record ID of ``seeks`` from its own position (one seek of the
        per-record index each); the cost follows the rows read, not the log."""

    @abstractmethod
    def _work_mark(self, work_id: str, children: int) -> WorkMark:
        """``Tx.work_mark`` (``storage.versions.WorkMark``), ``children`` bounded:
        counts and maxima over the Work's rows and index entries, no record decoded;
        the children are the first ``children`` + 1 by (created_at, ID)."""

    @abstractmethod
    def _works_mark(self, query: WorkQuery) -> WorksMark:
        """``Tx.works_mark`` (``storage.versions.WorksMark``), the query checked and
        limited: the page's IDs as ``_query_works`` orders them, then counts and
        maxima over their index entries, no record decoded."""

    @abstractmethod
    def _kv_first_versions(
        self, namespace: str, low: int, prefix: str, after: str, limit: int
    ) -> list[RecordVersion]:
        """The first row at or after position ``low`` of each KV entry of ``namespace``
        whose key starts with ``prefix`` and sorts after ``after``: by key in binary
        order, at most ``limit`` (0: all). One read of the per-record index; the cost
        follows those keys' rows after ``low``."""

    @abstractmethod
    def _first_position_after(self, at: Nanos) -> int | None:
        """The position of the first row committed after ``at`` (None: none)."""

    @abstractmethod
    def _version_horizon(self) -> int:
        """The version the log reconstructs from (0 if it was always kept)."""

    @abstractmethod
    def _set_version_horizon(self, version: int) -> None:
        """Record a new horizon (a prune cut the log up to ``version``)."""

    @abstractmethod
    def _prune_versions(self, before: Nanos, limit: int) -> tuple[int, int] | None:
        """Delete the first ``limit`` rows by position, stopping at the first committed
        at or after ``before``; (how many, the last one's position), or None."""
