"""The ORM backend's set-based reads: Work queries (their counts and facets are
``orm.facets``'), Event scans, run record lists, and the dashboards' counts.

They compose filters (QuerySets, or SQL whose WHERE clause Django compiled), so the
write-behind buffer cannot answer them: each sends the buffered writes first, through
``flush`` or ``_cursor``, and then reads the database, which is then exact. The point
reads and writes that go through the buffer are ``storage.orm.rows``'.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import FullResultSet
from django.db.models import (
    BigIntegerField,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    Max,
    Min,
    Q,
    QuerySet,
    Value,
)
from django.db.models.functions import Concat

from .. import codec
from ..meaning import series_tally
from ..meaning.events import EventScan
from ..meaning.ids import prefix_upper
from ..meaning.series import series_states
from ..models import (
    EXHAUSTED_ROWS,
    GROUPED_ROWS,
    EventKeyRow,
    EventRow,
    JsonNanos,
    JsonText,
    WorkRow,
)
from ..records import (
    LIVE_EXECUTION_STATES,
    LIVE_WORK_STATES,
    Buckets,
    ErrorGroup,
    Event,
    Execution,
    ExecutionQuery,
    IdKind,
    IdMatch,
    Nanos,
    Route,
    StoredEvent,
    Timer,
    Work,
    WorkQuery,
)
from ..run_records.query import RunRow
from ..run_records.records import RunQuery
from . import keyset, schema
from . import series_tally as series_sql
from .dialect import Dialect
from .facets import OrmFacets

# The Scope of a Timer (alias t): its Work's, by a primary-key probe ("" for none).
# Only the overdue Timers are probed, which are few whatever the history.
TIMER_SCOPE = f"COALESCE((SELECT w.scope_id FROM {schema.WORK} w WHERE w.id = t.work_id), '')"
# The kind of an attempt's Work (alias x), by a primary-key probe: only the
# Executions page's kind filter asks, for the rows of one page.
_WORK_KIND = f"(SELECT w.kind FROM {schema.WORK} w WHERE w.id = x.work_id)"

# The attempts (alias x) of the dashboards' attempt reads.
_ATTEMPTS = f"{schema.EXECUTION} x"
# Up to this many Scopes, a list of running attempts is merged from each Scope's first
# rows (``_live_attempts``); past it, one IN list and a sort.
_MERGED_SCOPES = 64
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Per ID kind: the table, its ID column, the SQL of the owning Work's ID, and the
# condition of rows that exist (a deleted Timer's row is a revision tombstone).
_ID_COLUMNS: dict[IdKind, tuple[str, str, str, bool]] = {
    IdKind.WORK: (schema.WORK, "id", "id", False),
    IdKind.EVENT: (
        schema.EVENT,
        "id",
        "CASE WHEN work_id <> '' THEN work_id ELSE route_work_id END",
        False,
    ),
    IdKind.EXECUTION: (schema.EXECUTION, "id", "work_id", False),
    IdKind.WAIT: (schema.WAIT, "id", "work_id", False),
    IdKind.TIMER: (schema.TIMER, "id", "work_id", True),
    IdKind.SCOPE: (schema.SCOPE, "id", "''", False),
    IdKind.RUN: (schema.RUN_RECORD, "run_id", "''", False),
}

# The columns of an Event row that make a StoredEvent.
EVENT_FIELDS = ("seq", "data", "scope_id", "route_work_id", "disposition", "routed_ns")


def stored_event(row: dict[str, Any]) -> StoredEvent:
    """The StoredEvent of an Event row (``EVENT_FIELDS``)."""
    route = None
    if row["disposition"]:
        route = Route(row["route_work_id"], row["disposition"], row["routed_ns"])
    return StoredEvent(codec.decode(Event, row["data"]), row["seq"], row["scope_id"], route)


def run_row(row: Sequence[Any]) -> RunRow:
    """The RunRow of a run record row (``schema.RUN_COLUMNS``)."""
    run_id, revision, fmt, created, updated, data = row
    return RunRow(run_id, int(revision), int(fmt), int(created), int(updated), bytes(data))


class OrmReads(OrmFacets):
    """The reads of ``OrmTx`` that go to the database after a flush."""

    alias: str
    dialect: Dialect

    @abstractmethod
    def flush(self) -> None:
        """Send every buffered write to the database."""

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self._cursor
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else row[0]

    def _column(self, sql: str, params: Sequence[Any]) -> list[Any]:
        cursor = self._cursor
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]

    # -- queries --------------------------------------------------------------------
    def _filtered(self, q: WorkQuery) -> QuerySet[WorkRow]:
        self.flush()
        qs = WorkRow.objects.using(self.alias).all()
        scope = "scope_id"
        few = q.exhausted or (q.states and q.states <= LIVE_WORK_STATES)
        if few and (q.scope_id or q.scope_ids):
            # The exhausted Work are few and have their own partial indexes, and the
            # live ones the (state, ...) indexes; with a Scope filter beside them,
            # SQLite (no statistics) took the Scope's index and read every Work of the
            # Scope (250 ms at 100,000 Work, a Scope dashboard's exhausted list; its
            # oldest waiting walked the Scope's whole history from the oldest).
            # Compared through ``scope_id || ''`` the Scope leaves it no index but
            # those, on both engines; same rows.
            unindexed = Concat(F("scope_id"), Value(""), output_field=CharField())
            qs, scope = qs.alias(scope_unindexed=unindexed), "scope_unindexed"
        if q.states:
            qs = qs.filter(state__in=sorted(s.value for s in q.states))
        if q.scope_id:
            qs = qs.filter(**{scope: q.scope_id})
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
            qs = qs.filter(**{f"{scope}__in": sorted(q.scope_ids)})
        if q.updated_before is not None and q.updated_since is None and not q.order.by_updated:
            # An "until" alone holds most of the history: SQLite (no statistics) took
            # the update-time index's range and sorted it all for one page in creation
            # order (900 ms at 100,000 Work, a poll of a settled list). Compared through
            # ``updated_ns + 0`` the bound leaves it the order's index, on both engines.
            # Typed as the column is, which the sum is not (Django makes it an
            # IntegerField), else the lookup on PostgreSQL drops a bound past 32 bits
            # as true of every row, and every nanosecond time is past them.
            bound = ExpressionWrapper(F("updated_ns") + Value(0), BigIntegerField())
            qs = qs.alias(updated_unindexed=bound).filter(updated_unindexed__lt=q.updated_before)
        elif q.updated_before is not None:
            qs = qs.filter(updated_ns__lt=q.updated_before)
        if q.exhausted:
            qs = qs.filter(EXHAUSTED_ROWS)
        if q.error_group:
            qs = qs.filter(GROUPED_ROWS, error_group=q.error_group)
        return qs

    def _query_works(self, query: WorkQuery) -> list[Work]:
        return [codec.decode(Work, d) for d in self._page_column(query, "data")]

    def _page_column(self, query: WorkQuery, column: str) -> list[Any]:
        """``column`` of each Work of ``query``'s page (its JSON, or its ID for
        ``works_mark``), in its keyset order, after its cursor, up to its limit: one
        index range, or one per state merged (``keyset``)."""
        if keyset.is_merged(query):
            sql, params = keyset.merged(query, self._filtered, self.alias, column)
            return self._column(sql, params)
        values = keyset.ordered(self._filtered(query), query).values_list(column, flat=True)
        return list(values[: query.limit] if query.limit else values)

    # -- event scans ----------------------------------------------------------------
    def _scan_events(self, scan: EventScan) -> list[StoredEvent]:
        qs = self._selected_events(scan)
        rows = qs.order_by("-seq" if scan.newest_first else "seq").values(*EVENT_FIELDS)
        return [stored_event(r) for r in (rows[: scan.limit] if scan.limit else rows)]

    def _count_events(self, scan: EventScan) -> int:
        return self._selected_events(scan).count()

    def _selected_events(self, scan: EventScan) -> QuerySet[EventRow]:
        """The Event rows ``scan`` selects (``EventScan.matches``), unordered."""
        self.flush()
        qs = EventRow.objects.using(self.alias).filter(seq__gt=scan.after)
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
        if scan.actors:
            # By the event_actor expression index (migration 0019, the same spelling).
            qs = qs.alias(actor=JsonText("actor")).filter(actor__in=list(scan.actors))
        if scan.key is not None:
            # The key's Events by the event_key index (source, external_id, seq): the
            # cost follows the Events carrying it, not the history.
            carrying = EventKeyRow.objects.using(self.alias).filter(
                source=scan.key.source, external_id=scan.key.external_id, seq__gt=scan.after
            )
            if scan.before:
                carrying = carrying.filter(seq__lt=scan.before)
            qs = qs.filter(seq__in=carrying.values("seq"))
        if scan.received_since is not None or scan.received_before is not None:
            qs = self._received_between(qs, scan.received_since, scan.received_before)
        if scan.ids is not None:
            qs = qs.filter(id__in=list(scan.ids))  # the unique ID index
        if scan.causes is not None:
            qs = qs.filter(causation_id__in=list(scan.causes))  # event_causation
        return qs

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

    # -- lookup by ID prefix --------------------------------------------------------
    def _prefix_ids(self, kind: IdKind, prefix: str, limit: int) -> list[IdMatch]:
        table, column, owner, tombstones = _ID_COLUMNS[kind]
        upper = prefix_upper(prefix)
        where = self.dialect.prefix_range(column, upper is not None)
        if tombstones:
            where = f"live = {self.dialect.true} AND {where}"
        sql = f"SELECT {column}, {owner} FROM {table} WHERE {where} LIMIT %s"
        params = [prefix, upper, limit] if upper is not None else [prefix, limit]
        self._cursor.execute(sql, params)
        return [IdMatch(kind, id, work_id) for id, work_id in self._cursor.fetchall()]

    # -- run records ----------------------------------------------------------------
    def _run_row(self, run_id: str) -> RunRow | None:
        sql = f"SELECT {schema.RUN_COLUMNS} FROM {schema.RUN_RECORD} WHERE run_id = %s"
        self._cursor.execute(sql, [run_id])
        row = self._cursor.fetchone()
        return None if row is None else run_row(row)

    def _run_where(self, q: RunQuery, paged: bool) -> tuple[str, list[Any]]:
        """The WHERE clause of ``q`` (with its keyset cursor when ``paged``), meaning
        what ``storage.run_records.query.run_matches`` means."""
        where: list[str] = []
        params: list[Any] = []
        if q.search:
            # Not LIKE: SQLite's ignores ASCII case and both treat % and _ specially.
            where.append(f"{self.dialect.position}(run_id, %s) > 0")
            params.append(q.search)
        if q.run_id_prefix:
            where.append("substr(run_id, 1, %s) = %s")
            params += [len(q.run_id_prefix), q.run_id_prefix]
        if q.format is not None:
            where.append("format = %s")
            params.append(q.format)
        # Stored times are 64-bit: a bound beyond them (before 1677, after 2262) holds
        # for every row and is left out, or for none (below), as Django's ORM does.
        if q.updated_since is not None and q.updated_since > _INT64_MIN:
            where.append("updated_ns >= %s")
            params.append(q.updated_since)
        if q.updated_before is not None and q.updated_before <= _INT64_MAX:
            where.append("updated_ns < %s")
            params.append(q.updated_before)
        if paged and q.after is not None and q.after[0] <= _INT64_MAX:
            # The inclusive bound lets the index range-scan; the OR breaks time ties.
            where.append("updated_ns <= %s AND (updated_ns < %s OR run_id < %s)")
            params += [q.after[0], q.after[0], q.after[1]]
        if any(type(p) is int and not _INT64_MIN <= p <= _INT64_MAX for p in params):
            return " WHERE 1 = 0", []  # no stored row matches; the driver cannot bind it
        return (f" WHERE {' AND '.join(where)}" if where else ""), params

    def _run_rows(self, query: RunQuery) -> list[RunRow]:
        where, params = self._run_where(query, paged=True)
        sql = (
            f"SELECT {schema.RUN_COLUMNS} FROM {schema.RUN_RECORD}{where} "
            "ORDER BY updated_ns DESC, run_id DESC"
        )
        if query.limit:
            sql += " LIMIT %s"
            params.append(query.limit)
        self._cursor.execute(sql, params)
        return [run_row(row) for row in self._cursor.fetchall()]

    def _count_run_rows(self, query: RunQuery) -> int:
        where, params = self._run_where(query, paged=False)
        return int(self._one(f"SELECT COUNT(*) FROM {schema.RUN_RECORD}{where}", params))

    # -- dashboard reads ------------------------------------------------------------
    def _work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        # A COUNT per (state, bucket) over the (state, updated) index, or (state,
        # Scope, updated) for a Scope subtree, read from the index alone: 7 times
        # faster than one GROUP BY (state, bucket), which computes every row's bucket
        # and sorts them (measured at 100,000 Work in the window). A selection by
        # states and Scope alone takes a bucket's whole days from the series tally.
        states = series_states(query)
        where, params = self._where(self._filtered(query))
        per_state = f"{where} AND state = %s" if where else " AND state = %s"
        low, high = series_sql.LOW, series_sql.HIGH
        window = f"{schema.WORK} WHERE updated_ns >= {low} AND updated_ns < {high}{per_state}"
        scopes, tallied = series_tally.work_scopes(query), series_tally.answers(query)
        values = [s.value for s in states]
        bound = [[*params, v] for v in values]
        grid, read = self.dialect.grid_counts, (self._scalars, self._rows)
        counts = series_sql.counts(
            *read, buckets, window, bound, series_tally.WORK, scopes, values, tallied, grid
        )
        return dict(zip(values, counts, strict=True))

    def _where(self, qs: QuerySet[Any]) -> tuple[str, list[Any]]:
        """The WHERE clause Django compiles for ``qs``'s filters, as " AND (...)"
        ("" for none), to reuse the Work query's meaning in hand-written counts."""
        query = qs.query
        try:
            sql, params = query.get_compiler(using=self.alias).compile(query.where)
        except FullResultSet:
            return "", []
        return f" AND ({sql})", list(params)

    def _scalars(self, parts: Sequence[tuple[str, list[Any]]]) -> list[int]:
        """Each part, a scalar subquery, as a column of one statement (more when the
        drivers' parameter cap, SQLite 32766 and PostgreSQL 65535, would be passed: a
        long subtree of Scopes, many buckets; and past ``max_subqueries``)."""
        counts: list[int] = []
        start = 0
        cap = self.dialect.max_subqueries or len(parts)
        while start < len(parts):
            stop, bound = start, 0
            while stop < len(parts) and (
                stop == start
                or (bound + len(parts[stop][1]) <= self.dialect.max_params and stop - start < cap)
            ):
                bound += len(parts[stop][1])
                stop += 1
            chunk = parts[start:stop]
            sql = "SELECT " + ", ".join(p for p, _ in chunk)
            self._cursor.execute(sql, [v for _, ps in chunk for v in ps])
            counts += [int(n) for n in self._cursor.fetchone()]
            start = stop
        return counts

    def _rows(self, sql: str, params: list[Any]) -> list[Any]:
        """Every row of a statement, once the buffered writes have been sent."""
        cursor = self._cursor
        cursor.execute(sql, params)
        return list(cursor.fetchall())

    @staticmethod
    def _in(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        if not values:
            return " AND 1 = 0", []  # "any of no Scopes" selects nothing
        return f" AND {column} IN ({', '.join(['%s'] * len(values))})", sorted(values)

    def _event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        time = self.dialect.json_nanos("data", "received_at")
        where, params = ("", []) if scope_ids is None else self._in("scope_id", scope_ids)
        low, high = series_sql.LOW, series_sql.HIGH
        window = f"{schema.EVENT} WHERE {time} >= {low} AND {time} < {high}{where}"
        grid, read = self.dialect.grid_counts, (self._scalars, self._rows)
        (counts,) = series_sql.counts(
            *read, buckets, window, [params], series_tally.EVENT, scope_ids, [""], True, grid
        )
        return counts

    def _attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None) -> list[int]:
        time = self.dialect.json_nanos("x.data", "started_at")
        # The attempt's own Scope column (its Work's, written at its INSERT), so a
        # bucket's edge is one range per Scope of the execution_scope_started index,
        # and no attempt's Work is looked up (1.08 million probes for the whole
        # history at a million Work before it).
        where, params = ("", []) if scope_ids is None else self._in("x.scope_id", scope_ids)
        low, high = series_sql.LOW, series_sql.HIGH
        window = f"{_ATTEMPTS} WHERE {time} >= {low} AND {time} < {high}{where}"
        grid, read = self.dialect.grid_counts, (self._scalars, self._rows)
        (counts,) = series_sql.counts(
            *read, buckets, window, [params], series_tally.ATTEMPT, scope_ids, [""], True, grid
        )
        return counts

    def _query_executions(self, query: ExecutionQuery) -> list[Execution]:
        # One statement. The order is the execution_started expression index's, so an
        # unfiltered page is an index scan with a LIMIT; the Scope is the attempt's
        # own column (its Work's), the kind a probe of its Work by primary key.
        time = self.dialect.json_nanos("x.data", "started_at")
        where = ["1 = 1"]
        params: list[Any] = []
        if query.expired or (query.states and query.states <= LIVE_EXECUTION_STATES):
            # Only live attempts (the page's default): the predicate of the live
            # partial index in this order (execution_live_started), as written there,
            # so a page reads its own rows backward from the cursor, without a sort.
            where = [str(schema.TABLES["execution"].live_sql)]
        if query.states:
            states = sorted(s.value for s in query.states)
            where.append(f"x.state IN ({', '.join(['%s'] * len(states))})")
            params += states
        if query.kinds:
            clause, values = self._in(_WORK_KIND, sorted(query.kinds))
            where.append(clause.removeprefix(" AND "))
            params += values
        if query.scope_ids is not None:
            clause, values = self._in("x.scope_id", sorted(query.scope_ids))
            where.append(clause.removeprefix(" AND "))
            params += values
        if query.work_id_prefix:
            # Not LIKE: SQLite's ignores ASCII case and both treat % and _ specially.
            where.append("substr(x.work_id, 1, %s) = %s")
            params += [len(query.work_id_prefix), query.work_id_prefix]
        if query.expired:
            live = sorted(s.value for s in LIVE_EXECUTION_STATES)
            where.append(
                f"x.state IN ({', '.join(['%s'] * len(live))})"
                " AND x.lease_expires_ns > 0 AND x.lease_expires_ns <= %s"
            )
            params += [*live, self._now]
        if query.after is not None:
            # The inclusive bound lets the index range-scan; the OR breaks ties by ID.
            where.append(f"{time} <= %s AND ({time} < %s OR x.id < %s)")
            params += [query.after.started_at, query.after.started_at, query.after.id]
        if query.expiring_by is not None:
            # The running attempts' lease index (execution_running_lease), its own
            # predicate as written there.
            where.append("x.state = 'running' AND x.lease_expires_ns > %s")
            where.append("x.lease_expires_ns <= %s")
            params += [self._now, query.expiring_by]
        if query.by_lease:
            return self._by_lease(query, where, params)
        sql = (
            f"SELECT x.data FROM {_ATTEMPTS} WHERE {' AND '.join(where)}"
            f" ORDER BY {time} DESC, x.id DESC"
        )
        if query.limit:
            sql += f" LIMIT {int(query.limit)}"
        return [codec.decode(Execution, d) for d in self._column(sql, params)]

    def _by_lease(
        self, query: ExecutionQuery, where: list[str], params: list[Any]
    ) -> list[Execution]:
        """The running attempts in lease order: a range of execution_running_lease
        (lease_expires_ns, id; state = 'running') from the cursor, without a sort."""
        where = [*where, "x.state = 'running'"]
        if query.after_lease is not None:
            t, id = query.after_lease.lease_expires_at, query.after_lease.id
            # The inclusive bound lets the index range-scan; the OR breaks ties by ID.
            where.append("x.lease_expires_ns >= %s AND (x.lease_expires_ns > %s OR x.id > %s)")
            params = [*params, t, t, id]
        sql = (
            f"SELECT x.data FROM {_ATTEMPTS} WHERE {' AND '.join(where)}"
            " ORDER BY x.lease_expires_ns, x.id"
        )
        if query.limit:
            sql += f" LIMIT {int(query.limit)}"
        return [codec.decode(Execution, d) for d in self._column(sql, params)]

    def _started_executions(
        self, since: Nanos, before: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        # The execution_started range, newest first; the Scope as in _attempt_series.
        time = self.dialect.json_nanos("x.data", "started_at")
        where, params = ("", []) if scope_ids is None else self._in("x.scope_id", scope_ids)
        sql = (
            f"SELECT x.data FROM {_ATTEMPTS} WHERE {time} >= %s AND {time} < %s"
            f"{where} ORDER BY {time} DESC, x.id DESC"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._column(sql, [since, before, *params])
        return [codec.decode(Execution, d) for d in rows]

    def _running(
        self, what: str, where: str, params: list[Any], scope_ids: Sequence[str] | None
    ) -> tuple[str, list[Any]]:
        """SELECT ``what`` of the running attempts (through the live partial indexes,
        whose predicate comes first, as written there) meeting ``where``."""
        live = schema.TABLES["execution"].live_sql
        scoped, scope_params = ("", []) if scope_ids is None else self._in("scope_id", scope_ids)
        sql = (
            f"SELECT {what} FROM {schema.EXECUTION} WHERE {live} AND state = 'running'"
            f"{where}{scoped}"
        )
        return sql, [*params, *scope_params]

    def _live_attempts(
        self,
        where: str,
        params: list[Any],
        scope_ids: Sequence[str] | None,
        key: str,
        limit: int,
    ) -> list[Execution]:
        """The running attempts meeting ``where`` in ``key, id`` order, the first
        ``limit`` (0: all). Within a few Scopes, the first ``limit`` of each Scope
        (one range of the execution_scope_run_* index each), merged: one IN list
        would fetch and sort every running attempt of the subtree (a realistic
        million holds 12,000 in the busiest tree) to keep ten."""
        cap = f" LIMIT {int(limit)}" if limit else ""
        if limit and scope_ids is not None and 0 < len(scope_ids) <= _MERGED_SCOPES:
            branches, bound = [], []
            for n, scope in enumerate(sorted(scope_ids)):
                sql, more = self._running("data, id, " + key + " AS k", where, params, None)
                branches.append(
                    f"SELECT data, id, k FROM ({sql} AND scope_id = %s"
                    f" ORDER BY {key}, id{cap}) b{n}"
                )
                bound += [*more, scope]
            merged = " UNION ALL ".join(branches)
            rows = self._column(f"SELECT data FROM ({merged}) m ORDER BY k, id{cap}", bound)
        else:
            sql, bound = self._running("data", where, params, scope_ids)
            rows = self._column(f"{sql} ORDER BY {key}, id{cap}", bound)
        return [codec.decode(Execution, d) for d in rows]

    def _running_executions(self, scope_ids: Sequence[str] | None, limit: int) -> list[Execution]:
        started = self.dialect.json_nanos("data", "started_at")
        return self._live_attempts("", [], scope_ids, started, limit)

    def _expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Execution]:
        where = " AND lease_expires_ns <= %s"
        return self._live_attempts(where, [at], scope_ids, "lease_expires_ns", limit)

    def _count_expired(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        sql, bound = self._running("COUNT(*)", " AND lease_expires_ns <= %s", [at], scope_ids)
        return int(self._one(sql, bound))

    def _due(self, what: str, at: Nanos, scope_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
        scoped, params = ("", []) if scope_ids is None else self._in(TIMER_SCOPE, scope_ids)
        sql = (
            f"SELECT {what} FROM {schema.TIMER} t WHERE t.live = {self.dialect.true} "
            f"AND t.fire_ns <= %s{scoped}"
        )
        return sql, [at, *params]

    def _overdue_timers(
        self, at: Nanos, scope_ids: Sequence[str] | None, limit: int
    ) -> list[Timer]:
        sql, params = self._due("t.data", at, scope_ids)
        sql += " ORDER BY t.fire_ns, t.id" + (f" LIMIT {int(limit)}" if limit else "")
        return [codec.decode(Timer, d) for d in self._column(sql, params)]

    def _count_overdue(self, at: Nanos, scope_ids: Sequence[str] | None) -> int:
        sql, params = self._due("COUNT(*)", at, scope_ids)
        return int(self._one(sql, params))

    def _error_groups(self, query: WorkQuery) -> list[ErrorGroup]:
        # One GROUP BY (group, kind, state) over the work_error_groups covering index,
        # which holds only grouped Work, folded per group: cost follows the failed and
        # exhausted Work, whatever else the table holds.
        rows = (
            self._filtered(query)
            .filter(GROUPED_ROWS)
            .filter(Q(state="failed") | EXHAUSTED_ROWS)
            .order_by()
            .values_list("error_group", "kind", "state")
            .annotate(n=Count("*"), first=Min("updated_ns"), last=Max("updated_ns"))
        )
        folded: dict[str, list[Any]] = {}
        for key, kind, state, n, first, last in rows:
            g = folded.setdefault(key, [Counter(), 0, 0, first, last])
            g[0][kind] += n
            g[1 if state == "failed" else 2] += n
            g[3], g[4] = min(g[3], first), max(g[4], last)
        groups = [
            ErrorGroup(key, f + e, dict(kinds), f, e, int(first), int(last))
            for key, (kinds, f, e, first, last) in folded.items()
        ]
        return sorted(groups, key=lambda g: (-g.count, g.key))
