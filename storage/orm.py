"""The Django ORM backend: SQLite by default, PostgreSQL when DATABASE_URL names one.

Writes run in ``transaction.atomic`` on the ``default`` alias. On SQLite its connection
begins ``IMMEDIATE``: the write lock is taken at BEGIN, so ``Guard.now`` read after it
orders with commits across processes, and a read-then-write inside a transaction
cannot race another writer (serializable). ``synchronous=FULL`` in WAL makes the commit
durable before ``transact`` returns. On PostgreSQL the same order comes from an
advisory lock held from before BEGIN to after COMMIT, inside SERIALIZABLE
(``OrmStore._writers_serialised`` says why), and ``synchronous_commit=on``.

Views run on the ``view`` alias: the same database through another connection. On
SQLite it begins deferred and is ``query_only``; on PostgreSQL it begins REPEATABLE
READ with ``default_transaction_read_only``. Its first read opens the snapshot that
every later read of the View shares; it never takes the writers' lock, so it never
waits for a writer.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from django.core.exceptions import FullResultSet
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.models import (
    Count,
    Exists,
    Model,
    OuterRef,
    Q,
    QuerySet,
)

from . import codec
from .clock import wall_clock
from .core import BaseTx, EventScan, Table, TxScope, check_admission
from .errors import Conflict, ReadOnly, RecordsNewer, SchemaNewer, TxClosed, Unavailable
from .models import (
    LIVE_EXECUTION,
    EventRow,
    ExecutionRow,
    JsonNanos,
    KVRow,
    MetaRow,
    RunRecordRow,
    ScopeRow,
    TimerRow,
    WaitRow,
    WorkRow,
    json_nanos_sql,
)
from .records import (
    RECORD_FORMAT,
    SCHEMA_VERSION,
    Buckets,
    CorrelationKey,
    Event,
    Execution,
    Guard,
    Nanos,
    Route,
    Scope,
    StoredEvent,
    Timer,
    Wait,
    Work,
    WorkFacets,
    WorkQuery,
)
from .runs.query import RunRow
from .runs.records import RunQuery
from .series import series_states

T = TypeVar("T")

logger = logging.getLogger(__name__)

# The most parameters one statement of a dashboard read binds (SQLite's default cap
# is 32766).
_MAX_PARAMS = 30_000

# The Scope of an attempt (alias x): its Work's, by a primary-key probe.
_WORK_SCOPE = "(SELECT w.scope_id FROM conduit_work w WHERE w.id = x.work_id)"

# PostgreSQL: the session-level advisory lock that serialises writers ("conduit" in
# ASCII). Advisory locks are per database, so test databases do not share it.
WRITERS_LOCK = 0x636F6E64756974

_MODELS: dict[Table, type[Model]] = {
    "work": WorkRow,
    "execution": ExecutionRow,
    "scope": ScopeRow,
    "timer": TimerRow,
    "wait": WaitRow,
}
_CLASSES: dict[Table, type[Any]] = {
    "work": Work,
    "execution": Execution,
    "scope": Scope,
    "timer": Timer,
    "wait": Wait,
}


_TABLES: dict[Table, str] = {table: model._meta.db_table for table, model in _MODELS.items()}
# Written exactly as the partial indexes' conditions (models.py), so SQLite uses them.
_LIVE_SQL: dict[Table, str] = {
    "work": "state IN ('ready', 'running', 'waiting')",
    "execution": "state IN ('pending', 'running', 'parked')",
    "wait": "state = 'active'",
}


def _columns(table: Table, r: Any) -> dict[str, Any]:
    """The indexed columns stored beside a record's JSON."""
    data = codec.encode(r)
    if table == "work":
        return {
            "kind": r.kind,
            "scope_id": r.scope_id,
            "parent_id": r.parent_id,
            "state": r.state.value,
            "source": r.source,
            "latest_executor": r.latest_executor,
            "created_ns": r.created_at,
            "updated_ns": r.updated_at,
            "revision": r.revision,
            "data": data,
        }
    if table == "execution":
        return {
            "work_id": r.work_id,
            "attempt": r.attempt,
            "state": r.state.value,
            "executor": r.executor,
            "lease_expires_ns": r.lease_expires_at,
            "data": data,
        }
    if table == "scope":
        return {"parent_id": r.parent_id, "data": data}
    if table == "timer":
        return {
            "live": True,
            "revision": r.revision,
            "fire_ns": r.fire_at,
            "work_id": r.work_id,
            "data": data,
        }
    return {
        "work_id": r.work_id,
        "execution_id": r.execution_id,
        "state": r.state.value,
        "data": data,
    }


def _parse_clock(value: str | None) -> tuple[Nanos, int]:
    """The "clock" metadata row: the last committed Guard.now and the store version."""
    now, _, version = (value or "0 0").partition(" ")
    return int(now), int(version or 0)


# PostgreSQL SQLSTATEs meaning "a concurrent transaction won": serialization_failure,
# deadlock_detected (unique_violation arrives as IntegrityError). The caller may retry
# with freshly read state; transact never does, so its callback runs once (T-02).
_CONFLICT_SQLSTATES = frozenset({"40001", "40P01"})
_READ_ONLY_SQLSTATE = "25006"  # read_only_sql_transaction: the server's second line


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a Django database error raised by psycopg 3, else None."""
    code = getattr(exc.__cause__, "sqlstate", None)
    return code if isinstance(code, str) else None


@contextmanager
def translate_errors() -> Iterator[None]:
    """The one boundary where driver errors become storage errors."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict(f"constraint violated: {exc}") from exc
    except DatabaseError as exc:
        code = sqlstate(exc)
        if code in _CONFLICT_SQLSTATES:
            raise Conflict(f"concurrent transaction conflict ({code}): {exc}") from exc
        if code == _READ_ONLY_SQLSTATE:
            raise ReadOnly(f"the database refused a write (read-only transaction): {exc}") from exc
        raise Unavailable(f"database error: {exc}") from exc


class OrmTx(BaseTx):
    """Row access for BaseTx. Point reads and writes, the hot path of every runtime
    transaction, are single SQL statements through Django's cursor (same connection,
    same transaction, same error wrapping), which costs a fraction of building an ORM
    query each time; the Work queries and Event scans, which compose filters, use the
    ORM. Literal state lists match the partial indexes' WHERE clauses exactly, which
    SQLite needs before it will use a partial index."""

    def __init__(self, now: Nanos, *, alias: str, read_only: bool) -> None:
        super().__init__(now, read_only=read_only)
        self.alias = alias
        self._cursor = connections[alias].cursor()
        self._true = "true" if connections[alias].vendor == "postgresql" else "1"

    def close(self) -> None:
        super().close()
        self._cursor.close()

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        self._cursor.execute(sql, params)
        row = self._cursor.fetchone()
        return None if row is None else row[0]

    def _column(self, sql: str, params: Sequence[Any]) -> list[Any]:
        self._cursor.execute(sql, params)
        return [row[0] for row in self._cursor.fetchall()]

    def _rows(self, table: Table) -> QuerySet[Any]:
        qs: QuerySet[Any] = _MODELS[table].objects.using(self.alias)  # type: ignore[attr-defined]
        return qs.filter(live=True) if table == "timer" else qs

    # -- records --------------------------------------------------------------------
    def _get(self, table: Table, id: str) -> Any:
        live = f" AND live = {self._true}" if table == "timer" else ""
        data = self._one(f"SELECT data FROM {_TABLES[table]} WHERE id = %s{live}", [id])
        return None if data is None else codec.decode(_CLASSES[table], data)

    def _put(self, table: Table, record: Any, create: bool) -> None:
        columns = _columns(table, record)
        names = list(columns)
        values = [columns[n] for n in names]
        # A timer ID may have a tombstone row: recreation overwrites it.
        if not create or table == "timer":
            assignments = ", ".join(f"{n} = %s" for n in names)
            sql = f"UPDATE {_TABLES[table]} SET {assignments} WHERE id = %s"
            self._cursor.execute(sql, [*values, record.id])
            if self._cursor.rowcount:
                return
        placeholders = ", ".join(["%s"] * (len(names) + 1))
        sql = f"INSERT INTO {_TABLES[table]} (id, {', '.join(names)}) VALUES ({placeholders})"
        self._cursor.execute(sql, [record.id, *values])

    def _list(self, table: Table, work_id: str = "", live: bool = False) -> list[Any]:
        where, params = [], []
        if table == "timer":
            where.append(f"live = {self._true}")
        if work_id:
            where.append("work_id = %s")
            params.append(work_id)
        if live and table in _LIVE_SQL:
            where.append(_LIVE_SQL[table])
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._column(f"SELECT data FROM {_TABLES[table]}{clause} ORDER BY id", params)
        cls = _CLASSES[table]
        return [codec.decode(cls, d) for d in rows]

    def _timer_floor(self, timer_id: str) -> int:
        return int(self._one("SELECT revision FROM conduit_timer WHERE id = %s", [timer_id]) or 0)

    def _delete_timer(self, timer_id: str) -> None:
        live = "false" if self._true == "true" else "0"
        self._cursor.execute(f"UPDATE conduit_timer SET live = {live} WHERE id = %s", [timer_id])

    def _due_timers(self, now: Nanos, limit: int) -> list[Timer]:
        sql = (
            f"SELECT data FROM conduit_timer WHERE live = {self._true} AND fire_ns <= %s "
            "ORDER BY fire_ns, id"
        )
        params: list[Any] = [now]
        if limit:
            sql += " LIMIT %s"
            params.append(limit)
        return [codec.decode(Timer, d) for d in self._column(sql, params)]

    def _key_owner(self, key: CorrelationKey) -> str | None:
        sql = "SELECT work_id FROM conduit_key WHERE source = %s AND external_id = %s"
        owner: str | None = self._one(sql, [key.source, key.external_id])
        return owner

    def _add_keys(self, work_id: str, keys: Sequence[CorrelationKey], first: int) -> None:
        if keys:
            self._cursor.executemany(
                "INSERT INTO conduit_key (source, external_id, work_id, ordinal) "
                "VALUES (%s, %s, %s, %s)",
                [(k.source, k.external_id, work_id, first + i) for i, k in enumerate(keys)],
            )

    def _latest_attempt(self, work_id: str) -> Execution | None:
        sql = "SELECT data FROM conduit_execution WHERE work_id = %s ORDER BY attempt DESC LIMIT 1"
        data = self._one(sql, [work_id])
        return None if data is None else codec.decode(Execution, data)

    # -- queries --------------------------------------------------------------------
    def _filtered(self, q: WorkQuery) -> QuerySet[WorkRow]:
        qs = WorkRow.objects.using(self.alias).all()
        if q.states:
            qs = qs.filter(state__in=sorted(s.value for s in q.states))
        if q.scope_id:
            qs = qs.filter(scope_id=q.scope_id)
        if q.kind:
            qs = qs.filter(kind=q.kind)
        if q.parent_id:
            qs = qs.filter(parent_id=q.parent_id)
        if q.sources:
            qs = qs.filter(source__in=sorted(q.sources))
        if q.executor:
            qs = qs.filter(latest_executor=q.executor)
        if q.updated_since is not None:
            qs = qs.filter(updated_ns__gte=q.updated_since)
        if q.scope_ids:
            qs = qs.filter(scope_id__in=sorted(q.scope_ids))
        if q.updated_before is not None:
            qs = qs.filter(updated_ns__lt=q.updated_before)
        return qs

    def _query_works(self, query: WorkQuery) -> list[Work]:
        return self._page(self._filtered(query), query)

    def _page(self, qs: QuerySet[WorkRow], query: WorkQuery) -> list[Work]:
        """``qs`` in the query's keyset order, after its cursor, up to its limit."""
        col = "updated_ns" if query.order.by_updated else "created_ns"
        desc = query.order.descending
        if query.after is not None:
            t, id = query.after.time, query.after.id
            # The inclusive bound lets the index range-scan; the OR breaks time ties by ID.
            op = "lt" if desc else "gt"
            qs = qs.filter(**{f"{col}__{op}e": t}).filter(
                Q(**{f"{col}__{op}": t}) | Q(**{f"id__{op}": id})
            )
        qs = qs.order_by(f"-{col}", "-id") if desc else qs.order_by(col, "id")
        data = qs.values_list("data", flat=True)
        return [codec.decode(Work, d) for d in (data[: query.limit] if query.limit else data)]

    def _count_works(self, query: WorkQuery) -> int:
        return self._filtered(query).count()

    def _work_facets(self, query: WorkQuery) -> WorkFacets:
        # One GROUP BY over all five dimensions, answered from the work_facets covering
        # index (COUNT(*), not COUNT(id), so no table row is read), then folded per
        # dimension: the combinations are few even when the Work are many.
        columns = ("state", "kind", "source", "scope_id", "latest_executor")
        rows = self._filtered(query).order_by().values_list(*columns).annotate(n=Count("*"))
        folded: list[Counter[str]] = [Counter() for _ in columns]
        for *values, n in rows:
            for counter, value in zip(folded, values, strict=True):
                counter[value] += n
        state, kind, source, scope, executor = (dict(c) for c in folded)
        return WorkFacets(state=state, kind=kind, source=source, scope=scope, executor=executor)

    # -- events ---------------------------------------------------------------------
    @staticmethod
    def _stored(row: dict[str, Any]) -> StoredEvent:
        route = None
        if row["disposition"]:
            route = Route(row["route_work_id"], row["disposition"], row["routed_ns"])
        return StoredEvent(codec.decode(Event, row["data"]), row["seq"], row["scope_id"], route)

    _EVENT_FIELDS = ("seq", "data", "scope_id", "route_work_id", "disposition", "routed_ns")

    def _events(self) -> QuerySet[EventRow]:
        return EventRow.objects.using(self.alias).all()

    def _one_event(self, where: str, params: Sequence[Any]) -> StoredEvent | None:
        columns = ", ".join(self._EVENT_FIELDS)
        self._cursor.execute(f"SELECT {columns} FROM conduit_event WHERE {where}", params)
        row = self._cursor.fetchone()
        return (
            None if row is None else self._stored(dict(zip(self._EVENT_FIELDS, row, strict=True)))
        )

    def _get_event(self, event_id: str) -> StoredEvent | None:
        return self._one_event("id = %s", [event_id])

    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        return self._one_event("source = %s AND delivery_id = %s", [source, delivery_id])

    def _insert_event(self, event: Event) -> int:
        # RETURNING (SQLite 3.35+, PostgreSQL) hands back the acceptance sequence.
        sequence = self._one(
            "INSERT INTO conduit_event (id, source, delivery_id, type, work_id, causation_id, "
            "scope_id, route_work_id, disposition, routed_ns, data) "
            "VALUES (%s, %s, %s, %s, %s, %s, '', '', '', 0, %s) RETURNING seq",
            [
                event.id,
                event.source,
                event.delivery_id,
                event.type,
                event.work_id,
                event.causation_id,
                codec.encode(event),
            ],
        )
        return int(sequence)

    def _set_event_scope(self, event_id: str, scope_id: str) -> None:
        self._cursor.execute(
            "UPDATE conduit_event SET scope_id = %s WHERE id = %s", [scope_id, event_id]
        )

    def _set_route(self, event_id: str, route: Route) -> None:
        self._cursor.execute(
            "UPDATE conduit_event SET route_work_id = %s, disposition = %s, routed_ns = %s "
            "WHERE id = %s",
            [route.work_id, route.disposition, route.routed_at, event_id],
        )

    def _scan_events(self, scan: EventScan) -> list[StoredEvent]:
        qs = self._events().filter(seq__gt=scan.after)
        if scan.before:
            qs = qs.filter(seq__lt=scan.before)
        if scan.unrouted:
            qs = qs.filter(disposition="")
        if scan.work_id is not None:
            qs = qs.filter(Q(work_id=scan.work_id) | Q(route_work_id=scan.work_id))
        if scan.scope_ids is not None:
            qs = qs.filter(scope_id__in=list(scan.scope_ids))
        if scan.caused_by is not None:
            qs = qs.filter(causation_id=scan.caused_by)
        if scan.sources:
            qs = qs.filter(source__in=list(scan.sources))
        if scan.types:
            qs = qs.filter(type__in=list(scan.types))
        if scan.received_since is not None or scan.received_before is not None:
            qs = self._received_between(qs, scan.received_since, scan.received_before)
        rows = qs.order_by("-seq" if scan.newest_first else "seq").values(*self._EVENT_FIELDS)
        return [self._stored(r) for r in (rows[: scan.limit] if scan.limit else rows)]

    @staticmethod
    def _received_between(
        qs: QuerySet[EventRow], since: Nanos | None, before: Nanos | None
    ) -> QuerySet[EventRow]:
        """Acceptance time in [since, before), by the event_received index (the same
        expression, models.JsonNanos)."""
        qs = qs.alias(received=JsonNanos("received_at"))
        if since is not None:
            qs = qs.filter(received__gte=since)
        if before is not None:
            qs = qs.filter(received__lt=before)
        return qs

    def _latest_sequence(self) -> int:
        return int(self._one("SELECT MAX(seq) FROM conduit_event", []) or 0)

    def _store_version(self) -> int:
        return _parse_clock(self.meta("clock"))[1]

    def meta(self, key: str) -> str | None:
        value: str | None = self._one("SELECT value FROM conduit_meta WHERE key = %s", [key])
        return value

    def set_meta(self, key: str, value: str) -> None:
        self._cursor.execute("UPDATE conduit_meta SET value = %s WHERE key = %s", [value, key])

    # -- KV -------------------------------------------------------------------------
    def _kv(self, namespace: str) -> QuerySet[KVRow]:
        return KVRow.objects.using(self.alias).filter(namespace=namespace)

    def _kv_get(self, namespace: str, key: str) -> bytes | None:
        sql = "SELECT value FROM conduit_kv WHERE namespace = %s AND key = %s"
        value = self._one(sql, [namespace, key])
        return None if value is None else bytes(value)

    def _kv_put(self, namespace: str, key: str, value: bytes) -> None:
        self._cursor.execute(
            "UPDATE conduit_kv SET value = %s WHERE namespace = %s AND key = %s",
            [value, namespace, key],
        )
        if not self._cursor.rowcount:
            self._cursor.execute(
                "INSERT INTO conduit_kv (namespace, key, value) VALUES (%s, %s, %s)",
                [namespace, key, value],
            )

    def _kv_delete(self, namespace: str, key: str) -> None:
        self._cursor.execute(
            "DELETE FROM conduit_kv WHERE namespace = %s AND key = %s", [namespace, key]
        )

    def _kv_list(self, namespace: str, prefix: str) -> list[tuple[str, bytes]]:
        # Not key__startswith: SQLite's LIKE ignores case. A range scan in binary
        # order, stopped at the first key past the prefix, is exact and indexed.
        out: list[tuple[str, bytes]] = []
        rows = self._kv(namespace).filter(key__gte=prefix).order_by("key")
        for key, value in rows.values_list("key", "value").iterator():
            if not key.startswith(prefix):
                break
            out.append((key, bytes(value)))
        return out

    # -- run records ----------------------------------------------------------------
    _RUN_TABLE = RunRecordRow._meta.db_table
    _RUN_COLUMNS = "run_id, revision, format, created_ns, updated_ns, data"

    @staticmethod
    def _run(row: Sequence[Any]) -> RunRow:
        run_id, revision, fmt, created, updated, data = row
        return RunRow(run_id, int(revision), int(fmt), int(created), int(updated), bytes(data))

    def _run_row(self, run_id: str) -> RunRow | None:
        sql = f"SELECT {self._RUN_COLUMNS} FROM {self._RUN_TABLE} WHERE run_id = %s"
        self._cursor.execute(sql, [run_id])
        row = self._cursor.fetchone()
        return None if row is None else self._run(row)

    def _put_run_row(self, row: RunRow, expected: int) -> None:
        values: list[Any] = [str(row.revision), row.format, row.created_ns, row.updated_ns]
        values.append(row.data)
        if expected == 0:
            self._cursor.execute(
                f"INSERT INTO {self._RUN_TABLE} ({self._RUN_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                [row.run_id, *values],
            )
            return
        # The rule was checked under the writers' lock; the revision in WHERE makes the
        # statement itself a compare-and-swap as well.
        self._cursor.execute(
            f"UPDATE {self._RUN_TABLE} SET revision = %s, format = %s, created_ns = %s, "
            "updated_ns = %s, data = %s WHERE run_id = %s AND revision = %s",
            [*values, row.run_id, str(expected)],
        )
        if self._cursor.rowcount != 1:
            raise Conflict(f"run {row.run_id!r} changed under its compare-and-swap")

    def _run_where(self, q: RunQuery, paged: bool) -> tuple[str, list[Any]]:
        """The WHERE clause of ``q`` (with its keyset cursor when ``paged``), meaning
        what ``storage.runs.query.run_matches`` means."""
        where: list[str] = []
        params: list[Any] = []
        if q.search:
            # Not LIKE: SQLite's ignores ASCII case and both treat % and _ specially.
            position = "strpos" if connections[self.alias].vendor == "postgresql" else "instr"
            where.append(f"{position}(run_id, %s) > 0")
            params.append(q.search)
        if q.run_id_prefix:
            where.append("substr(run_id, 1, %s) = %s")
            params += [len(q.run_id_prefix), q.run_id_prefix]
        if q.format is not None:
            where.append("format = %s")
            params.append(q.format)
        if q.updated_since is not None:
            where.append("updated_ns >= %s")
            params.append(q.updated_since)
        if q.updated_before is not None:
            where.append("updated_ns < %s")
            params.append(q.updated_before)
        if paged and q.after is not None:
            # The inclusive bound lets the index range-scan; the OR breaks time ties.
            where.append("updated_ns <= %s AND (updated_ns < %s OR run_id < %s)")
            params += [q.after[0], q.after[0], q.after[1]]
        return (f" WHERE {' AND '.join(where)}" if where else ""), params

    def _run_rows(self, query: RunQuery) -> list[RunRow]:
        where, params = self._run_where(query, paged=True)
        sql = (
            f"SELECT {self._RUN_COLUMNS} FROM {self._RUN_TABLE}{where} "
            "ORDER BY updated_ns DESC, run_id DESC"
        )
        if query.limit:
            sql += " LIMIT %s"
            params.append(query.limit)
        self._cursor.execute(sql, params)
        return [self._run(row) for row in self._cursor.fetchall()]

    def _count_run_rows(self, query: RunQuery) -> int:
        where, params = self._run_where(query, paged=False)
        return int(self._one(f"SELECT COUNT(*) FROM {self._RUN_TABLE}{where}", params))
    # -- dashboard reads ------------------------------------------------------------
    def _work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        # A COUNT per (state, bucket) over the (state, updated) index, or (state,
        # Scope, updated) for a Scope subtree, read from the index alone: 7 times
        # faster than one GROUP BY (state, bucket), which computes every row's bucket
        # and sorts them (measured at 100,000 Work in the window).
        states = series_states(query)
        where, params = self._where(self._filtered(query))
        per_state = f"{where} AND state = %s" if where else " AND state = %s"
        parts = [
            (
                f"conduit_work WHERE updated_ns >= %s AND updated_ns < %s{per_state}",
                [*b, *params, s.value],
            )
            for s in states
            for b in (buckets.bounds(i) for i in range(buckets.count))
        ]
        counts = self._counts(parts)
        n = buckets.count
        return {s.value: counts[k * n : (k + 1) * n] for k, s in enumerate(states)}

    def _where(self, qs: QuerySet[Any]) -> tuple[str, list[Any]]:
        """The WHERE clause Django compiles for ``qs``'s filters, as " AND (...)"
        ("" for none), to reuse the Work query's meaning in hand-written counts."""
        query = qs.query
        try:
            sql, params = query.get_compiler(using=self.alias).compile(query.where)
        except FullResultSet:
            return "", []
        return f" AND ({sql})", list(params)

    def _counts(self, parts: Sequence[tuple[str, list[Any]]]) -> list[int]:
        """``SELECT COUNT(*) FROM <part>`` for each part, as scalar subqueries of one
        statement (more when the drivers' parameter cap, SQLite 32766 and
        PostgreSQL 65535, would be passed: a long subtree of Scopes, many buckets)."""
        counts: list[int] = []
        start = 0
        while start < len(parts):
            stop, bound = start, 0
            while stop < len(parts) and (
                stop == start or bound + len(parts[stop][1]) <= _MAX_PARAMS
            ):
                bound += len(parts[stop][1])
                stop += 1
            chunk = parts[start:stop]
            sql = "SELECT " + ", ".join(f"(SELECT COUNT(*) FROM {p})" for p, _ in chunk)
            self._cursor.execute(sql, [v for _, ps in chunk for v in ps])
            counts += [int(n) for n in self._cursor.fetchone()]
            start = stop
        return counts

    def _bucket_counts(
        self, source: str, time: str, where: str, params: list[Any], b: Buckets
    ) -> list[int]:
        """Rows of ``source`` per bucket of the indexed time expression ``time``: a
        COUNT over one index range per bucket, bounds as parameters (SQLite uses an
        expression index only against those, not against a joined table of bounds).
        Not one GROUP BY: grouping by a JSON expression evaluates it again from every
        table row (SQLite before 3.41 and PostgreSQL do not take it from the index),
        which measured 20 times slower."""
        window = f"{source} WHERE {time} >= %s AND {time} < %s{where}"
        return self._counts([(window, [*b.bounds(i), *params]) for i in range(b.count)])

    @staticmethod
    def _in(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        if not values:
            return " AND 1 = 0", []  # "any of no Scopes" selects nothing
        return f" AND {column} IN ({', '.join(['%s'] * len(values))})", sorted(values)

    def _event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        time = json_nanos_sql(connections[self.alias].vendor, "data", "received_at")
        where, params = ("", []) if scope_ids is None else self._in("scope_id", scope_ids)
        return self._bucket_counts("conduit_event", time, where, params, buckets)

    def _attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        time = json_nanos_sql(connections[self.alias].vendor, "x.data", "started_at")
        if scope_ids is None:
            return self._bucket_counts("conduit_execution x", time, "", [], buckets)
        # The attempt's Scope is its Work's, read by a primary-key probe per attempt in
        # the bucket: a correlated subquery rather than a join, which SQLite (without
        # statistics) and PostgreSQL (which hash-joined the Scope's whole history,
        # measured 80 times slower) could start from the Scope's Work.
        where, params = self._in(_WORK_SCOPE, scope_ids)
        return self._bucket_counts("conduit_execution x", time, where, params, buckets)

    def _started_executions(
        self, since: Nanos, before: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        # The execution_started range, newest first; the Scope as in _attempt_series.
        time = json_nanos_sql(connections[self.alias].vendor, "x.data", "started_at")
        where, params = ("", []) if scope_ids is None else self._in(_WORK_SCOPE, scope_ids)
        sql = (
            f"SELECT x.data FROM conduit_execution x WHERE {time} >= %s AND {time} < %s"
            f"{where} ORDER BY {time} DESC, x.id DESC"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._column(sql, [since, before, *params])
        return [codec.decode(Execution, d) for d in rows]

    def _exhausted(self, query: WorkQuery) -> QuerySet[WorkRow]:
        # Ready Work is live (the state index's range); each candidate costs three
        # index probes: any attempt, a live attempt, a live Timer.
        attempts = ExecutionRow.objects.using(self.alias).filter(work_id=OuterRef("id"))
        live = attempts.filter(state__in=LIVE_EXECUTION)
        timers = TimerRow.objects.using(self.alias).filter(work_id=OuterRef("id"), live=True)
        return (
            self._filtered(query)
            .filter(state="ready")
            .filter(Exists(attempts))
            .exclude(Exists(live))
            .exclude(Exists(timers))
        )

    def _exhausted_works(self, query: WorkQuery) -> list[Work]:
        return self._page(self._exhausted(query), query)

    def _count_exhausted(self, query: WorkQuery) -> int:
        return self._exhausted(query).count()


class OrmStore:
    """The production store over Django's ``default`` (writes) and ``view`` aliases."""

    tx_class: type[OrmTx] = OrmTx

    def __init__(
        self,
        clock: Callable[[], Nanos] = wall_clock,
        *,
        using: str = "default",
        view_using: str = "view",
    ) -> None:
        self._clock = clock
        self.using = using
        self.view_using = view_using
        self._schema_version = self._open()

    @property
    def schema_version(self) -> int:
        return self._schema_version

    def _open(self) -> int:
        """Check the database's schema version and record format before touching it
        (SV-01, SV-02, SV-05..SV-07), then record ours if it is higher."""
        try:
            with (
                translate_errors(),
                self._writers_serialised(),
                transaction.atomic(using=self.using),
            ):
                meta = MetaRow.objects.using(self.using)
                found = dict(meta.values_list("key", "value"))
                schema = int(found.get("schema_version", SCHEMA_VERSION))
                if schema < SCHEMA_VERSION:
                    # Upgrades are explicit migrations; never rewrite the version here.
                    raise Unavailable(
                        f"database schema version {schema} is older than this code's "
                        f"version {SCHEMA_VERSION}; run `manage.py migrate` first"
                    )
                if schema > SCHEMA_VERSION:
                    raise SchemaNewer(
                        f"database schema version {schema} is newer than this code's "
                        f"version {SCHEMA_VERSION}; run a newer Conduit Console or restore "
                        "a backup taken before the upgrade"
                    )
                fmt = int(found.get("record_format", 1))
                if fmt > RECORD_FORMAT:
                    raise RecordsNewer(
                        f"database record format {fmt} is newer than this code's "
                        f"{RECORD_FORMAT} (records_newer); writing would drop fields"
                    )
                wanted = {
                    "schema_version": str(SCHEMA_VERSION),
                    "record_format": str(max(fmt, RECORD_FORMAT)),
                    "clock": found.get("clock", "0 0"),
                }
                for key, value in wanted.items():
                    if found.get(key) != value:
                        meta.update_or_create(key=key, defaults={"value": value})
                return schema
        except Unavailable as exc:
            raise Unavailable(f"{exc} (has `manage.py migrate` run?)") from exc

    def close(self) -> None:
        """Close this thread's connections; Django reopens them on next use."""
        for alias in {self.using, self.view_using}:
            connections[alias].close()

    def transact(self, guard: Guard, callback: Callable[[Any], T]) -> T:
        with TxScope():
            check_admission(guard)
            if connections[self.using].in_atomic_block:
                # atomic() would become a savepoint: no IMMEDIATE lock, no admission order.
                raise TxClosed("transact cannot run inside an open database transaction")
            tx: OrmTx | None = None
            try:
                with (
                    translate_errors(),
                    self._writers_serialised(),
                    transaction.atomic(using=self.using),
                ):
                    # One row holds "<last now> <version>": read once under the lock,
                    # written once at the end, so the clock costs two statements a tx.
                    # This read is the first statement: on PostgreSQL it takes the
                    # snapshot, after the writers' lock was granted.
                    tx = self.tx_class(0, alias=self.using, read_only=False)
                    last, version = _parse_clock(tx.meta("clock"))
                    now = max((guard.clock or self._clock)(), last)
                    tx.admit(now)
                    if guard.lease is not None:
                        tx.trusted = False
                        tx.verify_lease(guard.lease)
                    result = callback(tx)
                    tx.before_commit()
                    check_admission(guard)
                    if tx.dirty or now != last:
                        tx.set_meta("clock", f"{now} {version + (1 if tx.dirty else 0)}")
                return result
            finally:
                if tx is not None:
                    tx.close()

    def view(self, callback: Callable[[Any], T], now: Nanos | None = None) -> T:
        with TxScope():
            tx: OrmTx | None = None
            try:
                with translate_errors(), transaction.atomic(using=self.view_using):
                    self._pin_snapshot()
                    at = now if now is not None else self._clock()
                    tx = self.tx_class(at, alias=self.view_using, read_only=True)
                    return callback(tx)
            finally:
                if tx is not None:
                    tx.close()

    def _pin_snapshot(self) -> None:
        """The View's first statement: it opens the snapshot every later read shares
        (SQLite: the WAL read mark; PostgreSQL REPEATABLE READ: the snapshot)."""
        MetaRow.objects.using(self.view_using).filter(key="clock").exists()

    @contextmanager
    def _writers_serialised(self) -> Iterator[None]:
        """PostgreSQL: hold the writers' advisory lock from before BEGIN to after
        COMMIT or ROLLBACK. SQLite: nothing (BEGIN IMMEDIATE does the same).

        Why a session-level lock taken in autocommit, before the transaction: under
        REPEATABLE READ and SERIALIZABLE the snapshot is taken by the transaction's
        first statement. A lock taken inside the transaction (pg_advisory_xact_lock,
        or SELECT ... FOR UPDATE of the clock row) is granted after that snapshot, so
        the snapshot can miss the commit of the writer that held the lock just before:
        the callback's reads and the clock row are stale, and the transaction can only
        end in 40001 (Conflict) where it should have waited its turn. Taken before
        BEGIN, the lock is granted only after the previous holder's COMMIT returned,
        so every writer's snapshot includes all earlier commits: Guard.now = max(clock,
        last committed now) follows commit order across processes and hosts, and
        writers queue instead of failing each other, as behind SQLite's write lock.
        SERIALIZABLE stays underneath as defence in depth for writers that do not
        take the lock (Django's own tables, a raw query): a conflict with one is
        40001 -> Conflict. Every committing writer updates the clock row, so even
        without the lock two overlapping writers could not both commit.

        The lock belongs to the session, so it must be released even when the
        transaction failed; if releasing fails, the connection is closed, which ends
        the session and with it the lock (a pool discards a closed connection).
        ``lock_timeout`` (settings) bounds the wait, like SQLite's busy timeout.
        """
        conn = connections[self.using]
        if conn.vendor != "postgresql":
            yield
            return
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [WRITERS_LOCK])
        except DatabaseError:
            raise  # the statement failed (e.g. lock_timeout): the lock was not granted
        except BaseException:
            # Interrupted while waiting: the lock may have been granted.
            _discard_session(conn)
            raise
        try:
            yield
        finally:
            try:
                with conn.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [WRITERS_LOCK])
            except BaseException as exc:
                _discard_session(conn)
                if not isinstance(exc, Exception):
                    raise
                logger.warning("closed a connection whose writers' lock was not released: %s", exc)


def _discard_session(conn: Any) -> None:
    """Close the server session under a Django connection, releasing its locks."""
    raw = conn.connection
    if raw is not None:
        raw.close()  # before Django's close: a pool must not take the session back
    conn.close()
