"""``OrmTx``: the ORM backend's row hooks for ``BaseTx``, through the write-behind
buffer (``storage.orm.writebehind``) for records, Events and keys, straight to the
database for KV, metadata and run records. The set-based reads it inherits are
``storage.orm.reads``'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.db import connections

from .. import codec
from ..errors import Conflict, StorageError
from ..meaning.series_tally import SeriesKey
from ..meaning.tally import TallyKey
from ..models import KVRow
from ..records import (
    LIVE_STATES,
    CorrelationKey,
    Event,
    Execution,
    Nanos,
    Route,
    StoredEvent,
    Table,
    Timer,
    Work,
)
from ..run_records.query import RunRow
from ..tx.kv import LIMIT_MAX
from . import schema
from . import series_tally as series_sql
from . import tally as tally_sql
from .dialect import PROBE_KEY, dialect
from .errors import translate_errors
from .reads import EVENT_FIELDS, stored_event
from .versions import OrmVersions
from .writebehind import RECENT, CachedRow, WriteBehind

_SET_META = f"UPDATE {schema.META} SET value = %s WHERE key = %s"
# ``_kv_namespaces``: the first namespace after the cursor, then the first after each
# one found, while one is found and fewer than the limit are (PostgreSQL's wiki calls
# it a loose index scan; SQLite runs the same text).
_KV_NAMESPACES = (
    "WITH RECURSIVE found (namespace, n) AS ("
    f" SELECT (SELECT MIN(namespace) FROM {schema.KV} WHERE namespace > %s), CAST(1 AS BIGINT)"
    " UNION ALL"
    f" SELECT (SELECT MIN(kv.namespace) FROM {schema.KV} AS kv"
    " WHERE kv.namespace > found.namespace), n + 1"
    " FROM found WHERE found.namespace IS NOT NULL AND n < %s"
    ") SELECT namespace FROM found WHERE namespace IS NOT NULL ORDER BY n"
)


def parse_clock(value: str | None) -> tuple[Nanos, int]:
    """The "clock" metadata row: the last committed Guard.now and the store version."""
    now, _, version = (value or "0 0").partition(" ")
    return int(now), int(version or 0)


class OrmTx(OrmVersions):
    """Row access for BaseTx, through a write-behind buffer (``storage.orm.writebehind``):
    records this transaction read or wrote are answered from memory, writes wait for
    ``flush`` (at commit, or before any read the buffer cannot answer exactly) and go
    out as one ``executemany`` per table. ``self._cursor`` flushes before it hands out
    the cursor, so a read written against it needs to know nothing of the buffer; the
    buffer's own point reads use ``self._raw``.

    Point reads are single SQL statements through Django's cursor (same connection,
    same transaction, same error wrapping), which costs a fraction of building an ORM
    query each time; the Work queries and Event scans, which compose filters, use the
    ORM. Live listings use ``schema``'s predicates, written as the partial indexes'
    WHERE clauses exactly, which SQLite needs before it will use a partial index."""

    def __init__(self, now: Nanos, *, alias: str, read_only: bool) -> None:
        super().__init__(now, read_only=read_only)
        self.alias = alias
        connection = self._connection = connections[alias]
        self._raw = connection.cursor()
        self.dialect = dialect(connection)
        self._buffer = WriteBehind()
        self._sequences: Iterator[int] | None = None
        self._sequence_last: str | None = None  # what admission_meta's probe read
        # A failed flush fails the transaction: its writes are partly sent, so every
        # later operation and the commit raise again and transact rolls it all back.
        self._failed: StorageError | None = None
        # A View's store version and latest sequence, read with its snapshot
        # (``OrmStore.view``): the same for the whole View, so ``store_version`` and
        # ``latest_sequence`` need no statement of their own.
        self.pinned_version: int | None = None
        self.pinned_sequence: int | None = None

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

    def flush(self, then: str = "") -> None:
        """Send the buffered writes: per table one INSERT and one UPDATE, each an
        ``executemany``, then the tally upsert and the clock row (``Dialect.send``: on
        PostgreSQL all in one round trip), then ``then``, SQL sent in the same text
        (``transact``'s COMMIT; only when something is pending: see ``pending``). A
        constraint violation is a ``Conflict`` here, inside the transaction, which
        then fails as a whole (see ``_failed``)."""
        if self._failed is not None:
            self._raise_failed()
        if not self._buffer.pending:
            return
        try:
            with translate_errors(writing=True):
                sequence = self.dialect.sequence_value(schema.EVENT, "seq")
                self.dialect.send(self._raw, self._buffer.statements(sequence), then)
        except StorageError as exc:
            self._failed = exc
            raise

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """Rows of a read the buffer has made exact without a flush (see its module),
        by the dialect's fast path to the driver's cursor (``Dialect.fetchall``).

        Each is an equality lookup, and no stored value holds a NUL (the identifier
        rule refuses one before any write): a NUL parameter matches nothing, as on the
        double, where PostgreSQL would refuse the statement (``Unavailable``)."""
        if any(isinstance(p, str) and "\x00" in p for p in params):
            return []
        return self.dialect.fetchall(self._connection, self._raw, sql, params)

    # -- records --------------------------------------------------------------------
    def _get(self, table: Table, id: str) -> Any:
        cache = self._buffer.tables[table]
        row = cache.rows.get(id)
        return cache.read(row if row is not None else self._load(table, id))

    def _exists(self, table: Table, id: str) -> bool:
        # No decoding: a Scope's reads are copies (see CachedTable.read).
        row = self._buffer.tables[table].rows.get(id) or self._load(table, id)
        return row.visible() is not None

    def _load(self, table: Table, id: str) -> CachedRow:
        cache = self._buffer.tables[table]
        spec = schema.TABLES[table]
        live = ", live" if spec.tombstones else ""
        found = self._fetch(f"SELECT data{live} FROM {spec.name} WHERE id = %s", [id])
        if table == "work":
            return self._keep_work(id, found[0][0] if found else None)
        if not found:
            return cache.keep(id, CachedRow(None, stored=False))
        data = found[0][0]
        text = None if codec.shareable_check(cache.cls) else data
        record = RECENT.decode(cache.cls, data)
        alive = bool(found[0][-1]) if live else True
        return cache.keep(id, CachedRow(record, text, live=alive, loaded=data))

    def _keep_work(self, id: str, data: str | None) -> CachedRow:
        """A Work row as read (``data`` None: there is none)."""
        cache = self._buffer.tables["work"]
        if data is None:
            # No attempt, Wait or Timer names a Work that does not exist (see
            # storage.orm.writebehind), so its listings need no read.
            for name in schema.PER_WORK:
                self._buffer.tables[name].complete.add(id)
            return cache.keep(id, CachedRow(None, stored=False))
        text = None if codec.shareable_check(Work) else data
        return cache.keep(id, CachedRow(RECENT.decode(Work, data), text, loaded=data))

    def _put(self, table: Table, record: Any, create: bool) -> None:
        extra = None
        if table == "execution" and create:
            # The attempt's Scope column: its Work's, which the rules just read (a
            # cached row, no statement), fixed for the Work's life.
            work = self._get("work", record.work_id)
            extra = {"scope_id": work.scope_id if work is not None else ""}
        self._note_stored(table, record.id, record)
        self._buffer.tables[table].write(record.id, record, create, extra)

    def _note_stored(self, table: Table, id: str, after: Any = None) -> None:
        """The version log's state before (``tx.versions``) of a record about to be
        written (``after``) or deleted: as the database holds it, read with the row
        (BaseTx reads a record before it writes it), at the transaction's first write
        of it; with the Work it was of, or is of once created."""
        if not self.version_log or (table, id, "") in self._befores:
            return
        row = self._buffer.tables[table].rows.get(id)
        before, owner = None, after
        if row is not None and row.visible() is not None:
            before = row.loaded if row.loaded is not None else codec.encode(row.record)
            owner = row.record
        work_id = id if table == "work" else getattr(owner, "work_id", "")
        self._note_before(table, id, "", before, work_id)

    def _list(self, table: Table, work_id: str = "", live: bool = False) -> list[Any]:
        spec = schema.TABLES[table]
        if work_id and spec.per_work:
            return self._list_of_work(table, work_id, live)
        if "\x00" in work_id:  # no record names such a Work (see _fetch)
            return []
        where, params = [], []
        if spec.tombstones:
            where.append(f"live = {self.dialect.true}")
        if work_id:
            where.append("work_id = %s")
            params.append(work_id)
        if live and spec.live_sql is not None:
            where.append(spec.live_sql)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._column(f"SELECT data FROM {spec.name}{clause} ORDER BY id", params)
        return [codec.decode(spec.cls, d) for d in rows]

    def _executions_without_executor(self, after: str, limit: int) -> list[Execution]:
        # The execution_no_executor partial index holds these rows alone: empty once
        # every attempt has its executor, which is every attempt written since.
        sql = f"SELECT data FROM {schema.EXECUTION} WHERE executor = '' AND id > %s ORDER BY id"
        params: list[Any] = [after]
        if limit:
            sql += " LIMIT %s"
            params.append(limit)
        return [codec.decode(Execution, d) for d in self._column(sql, params)]

    def _list_of_works(self, table: Table, work_ids: Sequence[str]) -> list[Any]:
        # Through the flushing cursor: the buffer cannot tell which of these Work it
        # holds every row of; once flushed, the database is exact, and what it returns
        # is kept with the Work marked complete, as ``_of_work`` would, so the rules'
        # per-Work reads that follow (a bulk action's batch) need no statement each.
        # One query per max_params IDs (one for any page).
        spec = schema.TABLES[table]
        cache = self._buffer.tables[table]
        live = f" AND live = {self.dialect.true}" if spec.tombstones else ""
        records = []
        for chunk in self._chunks(work_ids):
            marks = ", ".join(["%s"] * len(chunk))
            sql = f"SELECT id, data FROM {spec.name} WHERE work_id IN ({marks}){live}"
            kept = self._keep_listed(table, self._rows(sql, chunk), chunk)
            records += [cache.read(row) for row in kept]
        return sorted(records, key=lambda r: r.id)

    def _works_by_id(self, work_ids: Sequence[str]) -> list[Work]:
        # Through the flushing cursor, as _list_of_works, and kept as ``_load`` keeps
        # a Work (one absent is known absent): one query per max_params IDs.
        cache = self._buffer.tables["work"]
        works = []
        for chunk in self._chunks(work_ids):
            marks = ", ".join(["%s"] * len(chunk))
            sql = f"SELECT id, data FROM {schema.WORK} WHERE id IN ({marks})"
            found = dict(self._rows(sql, chunk))
            for id in chunk:
                row = cache.rows.get(id)
                if row is None:
                    row = self._keep_work(id, found.get(id))
                work = cache.read(row)
                if work is not None:
                    works.append(work)
        return sorted(works, key=lambda w: w.id)

    def _chunks(self, ids: Sequence[str]) -> Iterator[list[str]]:
        step = self.dialect.max_params
        for start in range(0, len(ids), step):
            yield list(ids[start : start + step])

    def _of_work(self, table: Table, work_id: str) -> list[CachedRow]:
        """The cached rows of one Work's attempts, Waits or live Timers, after reading
        the ones still in the database once (deleted Timers stay out: the partial
        index serves only live ones, and a tombstone is read by ID when needed)."""
        cache = self._buffer.tables[table]
        if work_id not in cache.complete:
            spec = schema.TABLES[table]
            live = f" AND live = {self.dialect.true}" if spec.tombstones else ""
            sql = f"SELECT id, data FROM {spec.name} WHERE work_id = %s{live}"
            self._keep_listed(table, self._fetch(sql, [work_id]), [work_id])
        return cache.of_work(work_id)

    def _keep_listed(
        self, table: Table, rows: Sequence[Any], work_ids: Sequence[str]
    ) -> list[CachedRow]:
        """The (ID, data) rows of ``table`` read for ``work_ids`` (every one of theirs
        the database holds), as the buffer has them: a row it holds stays as it is,
        any other is kept as read; those Work are then complete."""
        cache = self._buffer.tables[table]
        kept = []
        for id, data in rows:
            row = cache.rows.get(id)
            if row is None:
                row = cache.keep(id, CachedRow(RECENT.decode(cache.cls, data), loaded=data))
            kept.append(row)
        cache.complete.update(work_ids)
        return kept

    def _list_of_work(self, table: Table, work_id: str, live: bool) -> list[Any]:
        cache = self._buffer.tables[table]
        records = [cache.read(row) for row in self._of_work(table, work_id)]
        wanted = LIVE_STATES.get(table) if live else None
        return [r for r in records if r is not None and (wanted is None or r.state in wanted)]

    def _timer_floor(self, timer_id: str) -> int:
        row = self._buffer.tables["timer"].rows.get(timer_id) or self._load("timer", timer_id)
        return row.record.revision if row.record is not None else 0

    def _delete_timer(self, timer_id: str) -> None:
        cache = self._buffer.tables["timer"]
        row = cache.rows.get(timer_id) or self._load("timer", timer_id)
        if row.record is not None:
            self._note_stored("timer", timer_id)
            cache.bury(timer_id)

    def _due_timers(self, now: Nanos, limit: int) -> list[Timer]:
        sql = (
            f"SELECT data FROM {schema.TIMER} WHERE live = {self.dialect.true} AND fire_ns <= %s "
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
            sql = f"SELECT work_id FROM {schema.KEY} WHERE source = %s AND external_id = %s"
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

    # -- events ---------------------------------------------------------------------
    def _load_events(self, where: str, params: Sequence[Any]) -> list[StoredEvent]:
        columns = ", ".join(EVENT_FIELDS)
        rows = self._fetch(f"SELECT {columns} FROM {schema.EVENT} WHERE {where}", params)
        cache = self._buffer.events
        return [
            cache.keep(stored_event(dict(zip(EVENT_FIELDS, row, strict=True))), True).stored
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
        known when each is accepted although its row is written at the flush
        (``Dialect.sequences``: SQLite's AUTOINCREMENT, PostgreSQL's identity)."""
        return self.dialect.sequences(self._fetch, schema.EVENT, "seq", self._sequence_last)

    def _set_event_scope(self, event_id: str, scope_id: str) -> None:
        self._get_event(event_id)
        self._buffer.events.update(event_id, scope_id=scope_id)

    def _set_route(self, event_id: str, route: Route) -> None:
        self._get_event(event_id)
        self._buffer.events.update(event_id, route=route)

    def _latest_sequence(self) -> int:
        if self.pinned_sequence is not None:
            return self.pinned_sequence
        # This transaction's Events come after every stored one (_sequence_source).
        if self._buffer.events.last_sequence:
            return self._buffer.events.last_sequence
        return int(self._fetch(f"SELECT MAX(seq) FROM {schema.EVENT}", [])[0][0] or 0)

    def _store_version(self) -> int:
        if self.pinned_version is not None:
            return self.pinned_version
        return parse_clock(self.meta("clock"))[1]

    def meta(self, key: str) -> str | None:
        value: str | None = self._one(f"SELECT value FROM {schema.META} WHERE key = %s", [key])
        return value

    def admission_meta(self) -> tuple[str | None, str | None]:
        """The "clock" and "record_format" rows, in one statement; on PostgreSQL the
        Event sequence's last value too (``Dialect.sequence_probe``). Called by
        ``transact`` only, as its first statement under the writers' lock."""
        probe = self.dialect.sequence_probe(schema.EVENT, "seq")
        sql = f"SELECT key, value FROM {schema.META} WHERE key IN ('clock', 'record_format')"
        found = dict(self._fetch(sql + probe, []))
        self._sequence_last = found.get(PROBE_KEY)
        return found.get("clock"), found.get("record_format")

    def set_meta(self, key: str, value: str) -> None:
        self._cursor.execute(_SET_META, [value, key])

    @property
    def pending(self) -> bool:
        """Whether buffered writes wait for the flush."""
        return self._buffer.pending

    def set_meta_at_flush(self, key: str, value: str) -> None:
        """``set_meta`` sent with the buffered writes at the next flush (the clock row
        at commit: no statement of its own). Nothing reads the row in between."""
        self._buffer.after.append((_SET_META, [value, key]))

    def _add_tally(self, changes: Mapping[TallyKey, int]) -> None:
        # Sent with the row writes at the flush; a tally read flushes first.
        self._buffer.after.extend(tally_sql.upserts(changes))

    def _add_series_tally(self, changes: Mapping[SeriesKey, int]) -> None:
        # Sent with the row writes at the flush (after the Work tally's); a series
        # read flushes first.
        self._buffer.after.extend(series_sql.upserts(changes))

    # -- KV -------------------------------------------------------------------------
    def _kv_get(self, namespace: str, key: str) -> bytes | None:
        sql = f"SELECT value FROM {schema.KV} WHERE namespace = %s AND key = %s"
        value = self._one(sql, [namespace, key])
        return None if value is None else bytes(value)

    def _kv_put(self, namespace: str, key: str, value: bytes) -> None:
        if self.version_log and ("kv", namespace, key) not in self._befores:
            self._note_before("kv", namespace, key, self._kv_get(namespace, key))
        self._cursor.execute(
            f"UPDATE {schema.KV} SET value = %s WHERE namespace = %s AND key = %s",
            [value, namespace, key],
        )
        if not self._cursor.rowcount:
            self._cursor.execute(
                f"INSERT INTO {schema.KV} (namespace, key, value) VALUES (%s, %s, %s)",
                [namespace, key, value],
            )

    def _kv_delete(self, namespace: str, key: str) -> None:
        if self.version_log and ("kv", namespace, key) not in self._befores:
            before = self._kv_get(namespace, key)
            if before is not None:
                self._note_before("kv", namespace, key, before)
        self._cursor.execute(
            f"DELETE FROM {schema.KV} WHERE namespace = %s AND key = %s", [namespace, key]
        )

    def _kv_list(
        self, namespace: str, prefix: str, after: str, limit: int
    ) -> list[tuple[str, bytes]]:
        # Not key__startswith: SQLite's LIKE ignores case. A range scan in binary
        # order, stopped at the first key past the prefix, is exact and indexed. The
        # keys past the prefix sort after every key in it, so a LIMIT they count
        # against still returns the prefix's first ``limit`` keys.
        out: list[tuple[str, bytes]] = []
        self.flush()
        kv = KVRow.objects.using(self.alias).filter(namespace=namespace, key__gte=prefix)
        rows = (kv.filter(key__gt=after) if after else kv).order_by("key")
        for key, value in (rows[:limit] if limit else rows).values_list("key", "value").iterator():
            if not key.startswith(prefix):
                break
            out.append((key, bytes(value)))
        return out

    def _kv_namespaces(self, after: str, limit: int) -> list[str]:
        # A loose index scan: each step is one MIN seek of the kv_key (namespace, key)
        # index past the namespace before it, so a page of n namespaces costs n seeks
        # whatever the keys under them (a DISTINCT would read every key). The column
        # is binary on both engines (migration 0025), so the index's order is the
        # contract's. One statement; ``limit`` bounds the recursion, not just the result.
        return self._column(_KV_NAMESPACES, [after, limit or LIMIT_MAX])

    # -- run records ----------------------------------------------------------------
    def _put_run_row(self, row: RunRow, expected: int) -> None:
        values: list[Any] = [str(row.revision), row.format, row.created_ns, row.updated_ns]
        values.append(row.data)
        if expected == 0:
            self._cursor.execute(
                f"INSERT INTO {schema.RUN_RECORD} ({schema.RUN_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                [row.run_id, *values],
            )
            return
        # The rule was checked under the writers' lock; the revision in WHERE makes the
        # statement itself a compare-and-swap as well.
        self._cursor.execute(
            f"UPDATE {schema.RUN_RECORD} SET revision = %s, format = %s, created_ns = %s, "
            "updated_ns = %s, data = %s WHERE run_id = %s AND revision = %s",
            [*values, row.run_id, str(expected)],
        )
        if self._cursor.rowcount != 1:
            raise Conflict(f"run {row.run_id!r} changed under its compare-and-swap")
