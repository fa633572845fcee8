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

import functools
import itertools
import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from django.core.exceptions import FullResultSet
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.backends.utils import CursorWrapper
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
from .errors import (
    Conflict,
    ReadOnly,
    RecordsNewer,
    SchemaNewer,
    StorageError,
    TxClosed,
    Unavailable,
)
from .meaning.events import EventScan
from .meaning.series import series_states
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
    LIVE_EXECUTION_STATES,
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
    Table,
    Timer,
    Wait,
    WaitState,
    Work,
    WorkFacets,
    WorkQuery,
)
from .runs.query import RunRow
from .runs.records import RunQuery
from .tx import BaseTx, TxScope, check_admission
from .writebehind import PER_WORK, RECENT, Row, WriteBehind

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
# What live=True selects per Work in the buffer (as _LIVE_SQL does in the database).
_LIVE_STATES: dict[Table, frozenset[Any]] = {
    "execution": LIVE_EXECUTION_STATES,
    "wait": frozenset({WaitState.ACTIVE}),
}
# Written exactly as the partial indexes' conditions (models.py), so SQLite uses them.
_LIVE_SQL: dict[Table, str] = {
    "work": "state IN ('ready', 'running', 'waiting')",
    "execution": "state IN ('pending', 'running', 'parked')",
    "wait": "state = 'active'",
}


# The sqlite3 module's own execute, under Django's placeholder-converting subclass.
_SQLITE_EXECUTE = sqlite3.Cursor.execute


@functools.cache
def _qmark(sql: str) -> str:
    """Our SQL in sqlite3's placeholder style (it holds no literal %)."""
    return sql.replace("%s", "?")


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
    """Row access for BaseTx, through a write-behind buffer (``storage.writebehind``):
    records this transaction read or wrote are answered from memory, writes wait for
    ``flush`` (at commit, or before any read the buffer cannot answer exactly) and go
    out as one ``executemany`` per table. ``self._cursor`` flushes before it hands out
    the cursor, so a read written against it needs to know nothing of the buffer; the
    buffer's own point reads use ``self._raw``.

    Point reads are single SQL statements through Django's cursor (same connection,
    same transaction, same error wrapping), which costs a fraction of building an ORM
    query each time; the Work queries and Event scans, which compose filters, use the
    ORM. Literal state lists match the partial indexes' WHERE clauses exactly, which
    SQLite needs before it will use a partial index."""

    def __init__(self, now: Nanos, *, alias: str, read_only: bool) -> None:
        super().__init__(now, read_only=read_only)
        self.alias = alias
        connection = self._connection = connections[alias]
        self._raw = connection.cursor()
        self._postgres = connection.vendor == "postgresql"
        self._true = "true" if self._postgres else "1"
        self._buffer = WriteBehind()
        self._sequences: Iterator[int] | None = None
        # A failed flush fails the transaction: its writes are partly sent, so every
        # later operation and the commit raise again and transact rolls it all back.
        self._failed: StorageError | None = None

    @property
    def _cursor(self) -> Any:
        """The cursor, once every buffered write has reached the database."""
        self.flush()
        return self._raw

    def close(self) -> None:
        super().close()
        self._raw.close()
        self._buffer = WriteBehind()  # what a rolled-back transaction buffered goes too

    def _check(self) -> None:
        super()._check()
        if self._failed is not None:
            self._raise_failed()

    def _raise_failed(self) -> None:
        failed = self._failed
        if failed is not None:
            raise type(failed)(f"this transaction failed and rolls back: {failed}") from failed

    def flush(self) -> None:
        """Send the buffered writes: per table one INSERT and one UPDATE, each an
        ``executemany``. A constraint violation is a ``Conflict`` here, inside the
        transaction, which then fails as a whole (see ``_failed``)."""
        if self._failed is not None:
            self._raise_failed()
        if not self._buffer.pending:
            return
        try:
            with translate_errors():
                for sql, rows in self._buffer.statements(_TABLES):
                    self._raw.executemany(sql, rows)
        except StorageError as exc:
            self._failed = exc
            raise

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Rows of a read the buffer has made exact without a flush (see its module).

        These point reads are most of a large transaction's statements, and Django's
        cursor wrapping (wrappers, checks, SQLite's per-call placeholder regex) costs
        twice the read. So when nothing observes statements (no execute_wrapper, no
        debug cursor logging queries) they go to the driver's cursor, SQLite's with
        its own placeholders, still inside Django's error wrapping, so failures reach
        translate_errors as the same exceptions."""
        connection = self._connection
        if connection.execute_wrappers or type(self._raw) is not CursorWrapper:
            self._raw.execute(sql, params)
            return list(self._raw.fetchall())
        driver = self._raw.cursor
        with connection.wrap_database_errors:
            if self._postgres:
                driver.execute(sql, params)
            else:
                _SQLITE_EXECUTE(driver, _qmark(sql), params)
            return list(driver.fetchall())

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self._cursor
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else row[0]

    def _column(self, sql: str, params: Sequence[Any]) -> list[Any]:
        cursor = self._cursor
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]

    def _rows(self, table: Table) -> QuerySet[Any]:
        self.flush()
        qs: QuerySet[Any] = _MODELS[table].objects.using(self.alias)  # type: ignore[attr-defined]
        return qs.filter(live=True) if table == "timer" else qs

    # -- records --------------------------------------------------------------------
    def _get(self, table: Table, id: str) -> Any:
        cache = self._buffer.tables[table]
        row = cache.rows.get(id)
        return cache.read(row if row is not None else self._load(table, id))

    def _exists(self, table: Table, id: str) -> bool:
        # No decoding: a Scope's reads are copies (see RecordTable.read).
        row = self._buffer.tables[table].rows.get(id) or self._load(table, id)
        return row.visible() is not None

    def _load(self, table: Table, id: str) -> Row:
        cache = self._buffer.tables[table]
        live = ", live" if table == "timer" else ""
        found = self._fetch(f"SELECT data{live} FROM {_TABLES[table]} WHERE id = %s", [id])
        if not found:
            if table == "work":
                # No attempt, Wait or Timer names a Work that does not exist (see
                # storage.writebehind), so its listings need no read.
                for name in PER_WORK:
                    self._buffer.tables[name].complete.add(id)
            return cache.keep(id, Row(None, stored=False))
        data = found[0][0]
        text = None if codec.shareable_check(cache.cls) else data
        record = RECENT.decode(cache.cls, data)
        return cache.keep(id, Row(record, text, live=bool(found[0][-1]) if live else True))

    def _put(self, table: Table, record: Any, create: bool) -> None:
        self._buffer.tables[table].write(record.id, record, create)

    def _list(self, table: Table, work_id: str = "", live: bool = False) -> list[Any]:
        if work_id and table in PER_WORK:
            return self._list_of_work(table, work_id, live)
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

    def _of_work(self, table: Table, work_id: str) -> list[Row]:
        """The cached rows of one Work's attempts, Waits or live Timers, after reading
        the ones still in the database once (deleted Timers stay out: the partial
        index serves only live ones, and a tombstone is read by ID when needed)."""
        cache = self._buffer.tables[table]
        if work_id not in cache.complete:
            live = f" AND live = {self._true}" if table == "timer" else ""
            sql = f"SELECT id, data FROM {_TABLES[table]} WHERE work_id = %s{live}"
            for id, data in self._fetch(sql, [work_id]):
                if id not in cache.rows:
                    cache.keep(id, Row(RECENT.decode(cache.cls, data)))
            cache.complete.add(work_id)
        return cache.of_work(work_id)

    def _list_of_work(self, table: Table, work_id: str, live: bool) -> list[Any]:
        cache = self._buffer.tables[table]
        records = [cache.read(row) for row in self._of_work(table, work_id)]
        wanted = _LIVE_STATES.get(table) if live else None
        return [r for r in records if r is not None and (wanted is None or r.state in wanted)]

    def _timer_floor(self, timer_id: str) -> int:
        row = self._buffer.tables["timer"].rows.get(timer_id) or self._load("timer", timer_id)
        return row.record.revision if row.record is not None else 0

    def _delete_timer(self, timer_id: str) -> None:
        cache = self._buffer.tables["timer"]
        row = cache.rows.get(timer_id) or self._load("timer", timer_id)
        if row.record is not None:
            cache.bury(timer_id)

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
        keys = self._buffer.keys
        pair = (key.source, key.external_id)
        if pair not in keys:
            sql = "SELECT work_id FROM conduit_key WHERE source = %s AND external_id = %s"
            found = self._fetch(sql, pair)
            keys[pair] = found[0][0] if found else None
        return keys[pair]

    def _add_keys(self, work_id: str, keys: Sequence[CorrelationKey], first: int) -> None:
        for key in keys:
            if self._key_owner(key) is not None:  # what the unique constraint refuses
                raise Conflict(f"constraint violated: key {key} already has an owner")
        for i, key in enumerate(keys):
            self._buffer.keys[(key.source, key.external_id)] = work_id
            self._buffer.new_keys.append((key.source, key.external_id, work_id, first + i))

    def _latest_attempt(self, work_id: str) -> Execution | None:
        attempts = [row.record for row in self._of_work("execution", work_id)]
        return max((x for x in attempts if x is not None), key=lambda x: x.attempt, default=None)

    # -- queries --------------------------------------------------------------------
    def _filtered(self, q: WorkQuery) -> QuerySet[WorkRow]:
        self.flush()
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
        self.flush()
        return EventRow.objects.using(self.alias).all()

    def _load_events(self, where: str, params: Sequence[Any]) -> list[StoredEvent]:
        columns = ", ".join(self._EVENT_FIELDS)
        rows = self._fetch(f"SELECT {columns} FROM conduit_event WHERE {where}", params)
        cache = self._buffer.events
        return [
            cache.keep(self._stored(dict(zip(self._EVENT_FIELDS, row, strict=True))), True).stored
            for row in rows
        ]

    def _get_event(self, event_id: str) -> StoredEvent | None:
        cache = self._buffer.events
        if event_id not in cache.by_id and not self._load_events("id = %s", [event_id]):
            cache.by_id[event_id] = None
        row = cache.by_id[event_id]
        return None if row is None else row.stored

    def _event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent | None:
        cache = self._buffer.events
        delivery = (source, delivery_id)
        if delivery not in cache.deliveries and not self._load_events(
            "source = %s AND delivery_id = %s", delivery
        ):
            cache.deliveries[delivery] = None
        return cache.by_delivery(source, delivery_id)

    def _event_identity(self, event: Event) -> tuple[StoredEvent | None, StoredEvent | None]:
        # A new Event is unknown by both: one statement answers both lookups.
        cache = self._buffer.events
        delivery = (event.source, event.delivery_id)
        if delivery not in cache.deliveries and event.id not in cache.by_id:
            where = "(source = %s AND delivery_id = %s) OR id = %s"
            self._load_events(where, [*delivery, event.id])
            cache.deliveries.setdefault(delivery, None)
            cache.by_id.setdefault(event.id, None)
        return self._event_by_delivery(*delivery), self._get_event(event.id)

    def _insert_event(self, event: Event) -> int:
        sequence = self._next_sequence()
        self._buffer.events.insert(event, sequence)
        return sequence

    def _next_sequence(self) -> int:
        if self._sequences is None:
            self._sequences = self._sequence_source()
        return next(self._sequences)

    def _sequence_source(self) -> Iterator[int]:
        """The acceptance sequences the database would give this transaction's Events,
        known when each is accepted although its row is written at the flush.

        SQLite: AUTOINCREMENT's next values, read once (the writer holds the write
        lock; rows inserted with these values move ``sqlite_sequence`` as
        AUTOINCREMENT's own do, and a rollback takes them back likewise). PostgreSQL:
        one value drawn from the column's identity sequence per accepted Event, as the
        INSERT would (only a rollback leaves a gap, as it always did there)."""
        if not self._postgres:
            high = self._fetch(
                "SELECT MAX(n) FROM (SELECT seq AS n FROM sqlite_sequence "
                "WHERE name = 'conduit_event' UNION ALL SELECT MAX(seq) FROM conduit_event)",
                [],
            )[0][0]
            yield from itertools.count(int(high or 0) + 1)
        # One value per accepted Event, drawn when it is accepted: what the INSERT would
        # have drawn. Drawing ahead in blocks saved round trips but left gaps after every
        # transaction (a block's unused values), so Event sequences jumped in normal
        # operation and a seeded history numbered its Events differently on PostgreSQL.
        while True:
            drawn = self._fetch(
                "SELECT nextval(pg_get_serial_sequence('conduit_event', 'seq'))", []
            )
            yield int(drawn[0][0])

    def _set_event_scope(self, event_id: str, scope_id: str) -> None:
        self._get_event(event_id)
        self._buffer.events.update(event_id, scope_id=scope_id)

    def _set_route(self, event_id: str, route: Route) -> None:
        self._get_event(event_id)
        self._buffer.events.update(event_id, route=route)

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
        # This transaction's Events come after every stored one (_sequence_source).
        if self._buffer.events.last_sequence:
            return self._buffer.events.last_sequence
        return int(self._fetch("SELECT MAX(seq) FROM conduit_event", [])[0][0] or 0)

    def _store_version(self) -> int:
        return _parse_clock(self.meta("clock"))[1]

    def meta(self, key: str) -> str | None:
        value: str | None = self._one("SELECT value FROM conduit_meta WHERE key = %s", [key])
        return value

    def set_meta(self, key: str, value: str) -> None:
        self._cursor.execute("UPDATE conduit_meta SET value = %s WHERE key = %s", [value, key])

    # -- KV -------------------------------------------------------------------------
    def _kv(self, namespace: str) -> QuerySet[KVRow]:
        self.flush()
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
                    tx.flush()
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
