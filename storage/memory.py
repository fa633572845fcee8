"""The volatile in-memory reference double.

It serialises transactions behind one lock and copies state on commit: each
transaction works on shallow copies of the committed tables (whose values are immutable
JSON strings) and publishes them only after the callback returned, so a rollback is
simply dropping the copies and a View is a reference to the last published state. It
makes no durability or throughput claim, and implements no scheduling or routing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import codec
from .clock import wall_clock
from .meaning import executions as executions_meaning
from .meaning import ids as id_meaning
from .meaning import pages, series, series_tally, tally, triage
from .meaning.events import EventScan
from .meaning.query import select_facets, select_works
from .memory_versions import MemoryVersions, VersionRow
from .records import (
    SCHEMA_VERSION,
    ActiveWaitQuery,
    Buckets,
    CorrelationKey,
    ErrorGroup,
    Event,
    Execution,
    ExecutionQuery,
    Guard,
    IdKind,
    IdMatch,
    Nanos,
    Route,
    StoredEvent,
    Table,
    Timer,
    TimerQuery,
    Wait,
    Work,
    WorkFacets,
    WorkOrder,
    WorkQuery,
    is_live,
)
from .routed.rows_memory import RoutedTables, copy_tables, empty_tables
from .run_records.query import RunRow, count_run_rows, select_run_rows
from .run_records.records import RunQuery
from .tables import RECORD_CLASSES
from .tx import BaseTx, TxScope, check_admission
from .versions import WorkMark, WorksMark

T = TypeVar("T")

# The record tables behind the ID kinds that are records (Events and run records are
# kept apart).
_ID_TABLES: dict[IdKind, Table] = {
    IdKind.WORK: "work",
    IdKind.EXECUTION: "execution",
    IdKind.WAIT: "wait",
    IdKind.TIMER: "timer",
    IdKind.SCOPE: "scope",
}


@dataclass
class _EventRow:
    envelope: str
    sequence: int
    scope_id: str = ""
    route: Route | None = None


@dataclass
class MemoryState:
    """Committed state. Tables map IDs to encoded records (immutable strings)."""

    tables: dict[Table, dict[str, str]] = field(
        default_factory=lambda: {name: {} for name in RECORD_CLASSES}
    )
    keys: dict[CorrelationKey, tuple[str, int]] = field(default_factory=dict)
    events: dict[int, _EventRow] = field(default_factory=dict)
    event_ids: dict[str, int] = field(default_factory=dict)
    deliveries: dict[tuple[str, str], int] = field(default_factory=dict)
    timer_floor: dict[str, int] = field(default_factory=dict)
    kv: dict[tuple[str, str], bytes] = field(default_factory=dict)
    runs: dict[str, RunRow] = field(default_factory=dict)  # rows are immutable
    routed: RoutedTables = field(default_factory=empty_tables)  # storage.routed's rows
    tally: dict[tally.TallyKey, int] = field(default_factory=dict)  # meaning.tally
    # meaning.series_tally: kept as the rules say, though this double answers the
    # series from its records (it is the reference the ORM's tally reads must meet).
    series: dict[series_tally.SeriesKey, int] = field(default_factory=dict)
    # Each owned row's Work (attempts, Waits, Timers: ID -> Work ID), so listing one
    # Work's rows decodes those rows only: decoding every attempt to find one Work's
    # made a generated history quadratic (1,200 Work took minutes).
    owners: dict[Table, dict[str, str]] = field(default_factory=dict)
    sequence: int = 0
    last_now: Nanos = 0
    version: int = 0
    # The record-version log (``storage.versions``): rows (position, at, kind, ID, KV
    # key, state before, Event sequence, attempt ID) by position, and its horizon.
    versions: list[VersionRow] = field(default_factory=list)
    version_horizon: int = 0

    def copy(self) -> MemoryState:
        return MemoryState(
            tables={name: dict(rows) for name, rows in self.tables.items()},
            keys=dict(self.keys),
            events={seq: _EventRow(**vars(row)) for seq, row in self.events.items()},
            event_ids=dict(self.event_ids),
            deliveries=dict(self.deliveries),
            timer_floor=dict(self.timer_floor),
            kv=dict(self.kv),
            runs=dict(self.runs),
            routed=copy_tables(self.routed),
            tally=dict(self.tally),
            series=dict(self.series),
            owners={name: dict(rows) for name, rows in self.owners.items()},
            sequence=self.sequence,
            last_now=self.last_now,
            version=self.version,
            versions=list(self.versions),
            version_horizon=self.version_horizon,
        )


class MemoryTx(MemoryVersions, BaseTx):
    state: MemoryState

    def __init__(self, state: MemoryState, now: Nanos, *, read_only: bool) -> None:
        super().__init__(now, read_only=read_only)
        self.state = state

    def _get(self, table: Table, id: str) -> Any:
        text = self.state.tables[table].get(id)
        return None if text is None else codec.decode(RECORD_CLASSES[table], text)

    def _put(self, table: Table, record: Any, create: bool) -> None:
        rows = self.state.tables[table]
        before = rows.get(record.id)
        if table == "work" or table == "scope":
            work_id = record.id if table == "work" else ""
        elif before is not None:  # the Work it was of (a Timer may move)
            work_id = self.state.owners.get(table, {}).get(record.id, "")
        else:
            work_id = record.work_id
        self._note_before(table, record.id, "", before, work_id)
        rows[record.id] = codec.encode(record)
        work_id = getattr(record, "work_id", None)
        if work_id is not None and table != "work":
            self.state.owners.setdefault(table, {})[record.id] = work_id
        if table == "timer":
            floor = self.state.timer_floor.get(record.id, 0)
            self.state.timer_floor[record.id] = max(floor, record.revision)

    def _list(self, table: Table, work_id: str = "", live: bool = False) -> list[Any]:
        ids = sorted(self.state.tables[table])
        if work_id:
            owners = self.state.owners.get(table, {})
            ids = [id for id in ids if owners.get(id) == work_id]
        rows = [self._get(table, id) for id in ids]
        if work_id:
            rows = [r for r in rows if r.work_id == work_id]
        if live:
            rows = [r for r in rows if is_live(table, r)]
        return rows

    def _list_of_works(self, table: Table, work_ids: Sequence[str]) -> list[Any]:
        wanted = set(work_ids)
        return [r for r in self._list(table) if r.work_id in wanted]

    def _works_by_id(self, work_ids: Sequence[str]) -> list[Work]:
        found = (self._get("work", id) for id in sorted(work_ids))
        return [w for w in found if w is not None]

    def _timer_floor(self, timer_id: str) -> int:
        return self.state.timer_floor.get(timer_id, 0)

    def _delete_timer(self, timer_id: str) -> None:
        work_id = self.state.owners.get("timer", {}).get(timer_id, "")
        self._note_before("timer", timer_id, "", self.state.tables["timer"][timer_id], work_id)
        del self.state.tables["timer"][timer_id]
        self.state.owners.get("timer", {}).pop(timer_id, None)

    def _due_timers(self, now: Nanos, limit: int) -> list[Timer]:
        due = sorted(
            (t for t in self._list("timer") if t.fire_at <= now), key=lambda t: (t.fire_at, t.id)
        )
        return due[:limit] if limit else due

    def _key_owner(self, key: CorrelationKey) -> str | None:
        owner = self.state.keys.get(key)
        return owner[0] if owner else None

    def _add_keys(self, work_id: str, keys: Sequence[CorrelationKey], first: int) -> None:
        for offset, key in enumerate(keys):
            self.state.keys[key] = (work_id, first + offset)

    def _latest_attempt(self, work_id: str) -> Execution | None:
        attempts = self._list("execution", work_id=work_id)
        return max(attempts, key=lambda x: x.attempt, default=None)

    def _query_works(self, query: WorkQuery) -> list[Work]:
        return select_works(query, self._list("work"))

    def _count_works(self, query: WorkQuery) -> int:
        return len(select_works(WorkQuery(**{**_filters(query)}), self._list("work")))

    def _work_facets(self, query: WorkQuery) -> WorkFacets:
        return select_facets(query, self._list("work"))

    def _add_tally(self, changes: Mapping[tally.TallyKey, int]) -> None:
        rows = self.state.tally
        for key, n in changes.items():
            rows[key] = rows.get(key, 0) + n

    def _tally_facets(self, query: WorkQuery) -> WorkFacets:
        return tally.facets(query, self.state.tally.items())

    def _tally_total(self, query: WorkQuery, exhausted: bool) -> int:
        return tally.total(query, exhausted, self.state.tally.items())

    def _add_series_tally(self, changes: Mapping[series_tally.SeriesKey, int]) -> None:
        rows = self.state.series
        for key, n in changes.items():
            rows[key] = rows.get(key, 0) + n

    def _stored(self, seq: int) -> StoredEvent:
        row = self.state.events[seq]
        return StoredEvent(codec.decode(Event, row.envelope), seq, row.scope_id, row.route)

    def _get_event(self, event_id: str) -> StoredEvent | None:
        seq = self.state.event_ids.get(event_id)
        return None if seq is None else self._stored(seq)

    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        seq = self.state.deliveries.get((source, delivery_id))
        return None if seq is None else self._stored(seq)

    def _insert_event(self, event: Event) -> int:
        self.state.sequence += 1
        seq = self.state.sequence
        self.state.events[seq] = _EventRow(codec.encode(event), seq)
        self.state.event_ids[event.id] = seq
        self.state.deliveries[(event.source, event.delivery_id)] = seq
        return seq

    def _set_event_scope(self, event_id: str, scope_id: str) -> None:
        self.state.events[self.state.event_ids[event_id]].scope_id = scope_id

    def _set_route(self, event_id: str, route: Route) -> None:
        self.state.events[self.state.event_ids[event_id]].route = route

    def _scan_events(self, scan: EventScan) -> list[StoredEvent]:
        out: list[StoredEvent] = []
        for seq in sorted(self.state.events, reverse=scan.newest_first):
            stored = self._stored(seq)
            if not scan.matches(stored):
                continue
            out.append(stored)
            if scan.limit and len(out) == scan.limit:
                break
        return out

    def _count_events(self, scan: EventScan) -> int:
        return sum(1 for seq in self.state.events if scan.matches(self._stored(seq)))

    def _work_mark(self, work_id: str, children: int) -> WorkMark:
        def newest(kind: str, id: str) -> int:
            rows = self.state.versions
            return max((r.position for r in rows if (r.kind, r.id) == (kind, id)), default=0)

        events = self._scan_events(EventScan(work_id=work_id))
        query = WorkQuery(parent_id=work_id, order=WorkOrder.CREATED_ASC, limit=children + 1)
        kids = select_works(query, self._list("work")) if children else []
        filed = [r.position for r in self.state.versions if r.work_id == work_id]
        return WorkMark(
            position=max(filed, default=0),
            timers=len(self._list("timer", work_id=work_id, live=True)),
            events=len(events),
            newest_event=max((e.sequence for e in events), default=0),
            routed_events=sum(1 for e in events if e.route is not None),
            scoped_events=sum(1 for e in events if e.scope_id),
            active_waits=len(self._list("wait", work_id=work_id, live=True)),
            children=tuple((w.id, newest("work", w.id)) for w in kids),
        )

    def _works_mark(self, query: WorkQuery) -> WorksMark:
        ids = tuple(w.id for w in select_works(query, self._list("work")))
        wanted = set(ids)
        filed = [r.position for r in self.state.versions if r.work_id in wanted]
        timers = [t for t in self._list("timer", live=True) if t.work_id in wanted]
        return WorksMark(ids, max(filed, default=0), len(timers))

    def _latest_sequence(self) -> int:
        return self.state.sequence

    def _store_version(self) -> int:
        return self.state.version

    def _work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        return series.work_series(query, buckets, self._list("work"))

    def _events_all(self) -> list[StoredEvent]:
        return [self._stored(seq) for seq in sorted(self.state.events)]

    def _event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        return series.event_series(buckets, scope_ids, self._events_all())

    def _attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        return series.attempt_series(buckets, scope_ids, self._list("execution"), self._scope_of())

    def _executions_without_executor(self, after: str, limit: int) -> list[Execution]:
        found = [x for x in self._list("execution") if not x.executor and x.id > after]
        return found[:limit] if limit else found

    def _query_executions(self, query: ExecutionQuery) -> list[Execution]:
        work_of = {w.id: (w.kind, w.scope_id) for w in self._list("work")}
        attempts = self._list("execution")
        return executions_meaning.select_executions(query, attempts, work_of, self._now)

    def _started_executions(
        self, since: Nanos, before: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        attempts = self._list("execution")
        return series.select_started(since, before, scope_ids, limit, attempts, self._scope_of())

    def _scope_of(self) -> dict[str, str]:
        return {w.id: w.scope_id for w in self._list("work")}

    def _running_executions(self, scope_ids: Sequence[str] | None, limit: int) -> list[Execution]:
        live = self._list("execution", live=True)
        return series.select_running(scope_ids, limit, live, self._scope_of())

    def _expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        live = self._list("execution", live=True)
        chosen = series.select_expired(at, scope_ids, live, self._scope_of())
        return chosen[:limit] if limit else chosen

    def _count_expired(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        return len(self._expired_executions(at, scope_ids, 0))

    def _overdue_timers(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Timer]:
        chosen = series.select_overdue(at, scope_ids, self._list("timer"), self._scope_of())
        return chosen[:limit] if limit else chosen

    def _count_overdue(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        return len(self._overdue_timers(at, scope_ids, 0))

    def _work_of(self, query: TimerQuery) -> pages.WorkOf:
        if query.scope_ids is None and query.kinds is None:
            return {}
        return {w.id: (w.scope_id, w.kind) for w in self._list("work")}

    def _query_timers(self, query: TimerQuery) -> list[Timer]:
        return pages.select_timers(query, self._list("timer"), self._work_of(query))

    def _count_timers(self, query: TimerQuery) -> int:
        return pages.count_timers(query, self._list("timer"), self._work_of(query))

    def _timer_series(self, buckets: Buckets, query: TimerQuery) -> list[int]:
        return pages.timer_series(buckets, query, self._list("timer"), self._work_of(query))

    def _query_active_waits(self, query: ActiveWaitQuery) -> list[Wait]:
        return pages.select_waits(query, self._list("wait", live=True))

    def _count_active_waits(self, query: ActiveWaitQuery) -> int:
        return pages.count_waits(query, self._list("wait", live=True))

    def _error_groups(self, query: WorkQuery) -> list[ErrorGroup]:
        return triage.select_error_groups(query, self._list("work"))

    def _prefix_ids(self, kind: IdKind, prefix: str, limit: int) -> list[IdMatch]:
        owners: dict[str, str]
        if kind is IdKind.EVENT:
            events = (self._stored(seq) for seq in self.state.event_ids.values())
            owners = {e.id: e.event.work_id or (e.route.work_id if e.route else "") for e in events}
        elif kind is IdKind.RUN:
            owners = dict.fromkeys(self.state.runs, "")
        else:
            records = self._list(_ID_TABLES[kind])
            owners = {
                r.id: r.id if kind is IdKind.WORK else getattr(r, "work_id", "") for r in records
            }
        found = id_meaning.matches(prefix, list(owners), limit)
        return [IdMatch(kind, i, owners[i]) for i in found]

    def _kv_get(self, namespace: str, key: str) -> bytes | None:
        return self.state.kv.get((namespace, key))

    def _kv_put(self, namespace: str, key: str, value: bytes) -> None:
        self._note_before("kv", namespace, key, self.state.kv.get((namespace, key)))
        self.state.kv[(namespace, key)] = bytes(value)

    def _kv_delete(self, namespace: str, key: str) -> None:
        before = self.state.kv.pop((namespace, key), None)
        if before is not None:
            self._note_before("kv", namespace, key, before)

    def _kv_list(
        self, namespace: str, prefix: str, after: str, limit: int
    ) -> list[tuple[str, bytes]]:
        found = sorted(
            (k, v)
            for (ns, k), v in self.state.kv.items()
            if ns == namespace and k.startswith(prefix) and k > after
        )
        return found[:limit] if limit else found

    def _kv_namespaces(self, after: str, limit: int) -> list[str]:
        found = sorted({ns for ns, _ in self.state.kv if ns > after})
        return found[:limit] if limit else found

    def _run_row(self, run_id: str) -> RunRow | None:
        return self.state.runs.get(run_id)

    def _put_run_row(self, row: RunRow, expected: int) -> None:
        self.state.runs[row.run_id] = row

    def _run_rows(self, query: RunQuery) -> list[RunRow]:
        return select_run_rows(query, self.state.runs.values())

    def _count_run_rows(self, query: RunQuery) -> int:
        return count_run_rows(query, self.state.runs.values())


def _filters(query: WorkQuery) -> dict[str, Any]:
    """A query's filters without its order, cursor and limit (what count_works sees)."""
    return {
        "states": query.states,
        "scope_id": query.scope_id,
        "kind": query.kind,
        "parent_id": query.parent_id,
        "sources": query.sources,
        "executor": query.executor,
        "updated_since": query.updated_since,
        "scope_ids": query.scope_ids,
        "updated_before": query.updated_before,
        "exhausted": query.exhausted,
        "error_group": query.error_group,
    }


class MemoryStore:
    """Reference double: serialised transactions, snapshot Views, no durability."""

    tx_class: type[MemoryTx] = MemoryTx

    def __init__(
        self, clock: Callable[[], Nanos] = wall_clock, *, version_log: bool = True
    ) -> None:
        self._clock = clock
        # False: no version log (``storage.versions``), a benchmark's baseline.
        self.version_log = version_log
        self._lock = threading.Lock()
        self._state = MemoryState()

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION

    def close(self) -> None:
        """Nothing to release; the double keeps its state until dropped."""

    def transact(self, guard: Guard, callback: Callable[[Any], T]) -> T:
        with TxScope():
            check_admission(guard)
            with self._lock:
                now = max((guard.clock or self._clock)(), self._state.last_now)
                working = self._state.copy()
                tx = self.tx_class(working, now, read_only=False)
                tx.version_log = self.version_log
                try:
                    if guard.lease is not None:
                        tx.trusted = False
                        tx.verify_lease(guard.lease)
                    result = callback(tx)
                    tx.before_commit()
                    check_admission(guard)
                    if tx.dirty:
                        tx.log_versions(working.version + 1)
                finally:
                    tx.close()
                working.last_now = now
                working.version += 1 if tx.dirty else 0
                self.commit(working)
                return result

    def commit(self, working: MemoryState) -> None:
        """Publish a transaction's state (negative controls override this)."""
        self._state = working

    def view(self, callback: Callable[[Any], T], now: Nanos | None = None) -> T:
        with TxScope():
            snapshot = self._state  # published states are never mutated after commit
            # Like Guard.now, never earlier than the last commit's (the clock may step back).
            at = now if now is not None else max(self._clock(), snapshot.last_now)
            tx = self.tx_class(snapshot, at, read_only=True)
            try:
                return callback(tx)
            finally:
                tx.close()
