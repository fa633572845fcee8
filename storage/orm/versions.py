"""The ORM backend's record-version log (``storage.versions``) in the
``conduit_record_version`` table: rows buffered by ``log_versions`` and sent with the
transaction's other writes (one ``executemany``), read by position ranges of the key
and the per-record and per-time indexes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..records import Nanos, WorkQuery
from ..tx.versions import decoded, first_position, version_of
from ..versions import RecordVersion, VersionKind, WorkMark, WorksMark
from . import schema
from .pages import OrmPages
from .writebehind import WriteBehind

# The columns the reads select, in ``_version``'s order (``writebehind`` inserts them).
COLUMNS = "position, at_ns, kind, record_id, key, data, value, event_seq, execution_id, work_id"
_HORIZON = "version_horizon"
# The partial per-Work index's condition as its migration wrote it: SQLite uses the
# index only for a query that repeats it exactly.
_FILED = "NOT (work_id = '')"
# Records whose first row one statement reads (a UNION of that many seeks).
_PER_STATEMENT = 100


def _version(row: Sequence[Any]) -> RecordVersion:
    position, at, kind, id, key, data, value, event_sequence, execution_id, work_id = row
    before = value if kind == "kv" else data
    return RecordVersion(
        position,
        version_of(position),
        at,
        kind,
        id,
        key,
        decoded(kind, before),
        event_sequence,
        execution_id,
        work_id,
    )


class OrmVersions(OrmPages):
    """The version log's row hooks (``tx.rows.ContractRows``) for ``OrmTx``."""

    _buffer: WriteBehind

    def _append_versions(
        self,
        rows: Sequence[tuple[int, VersionKind, str, str, str | bytes | None, str]],
        at: Nanos,
        event_sequence: int,
        execution_id: str,
    ) -> None:
        values = []
        for position, kind, id, key, before, work_id in rows:
            data = None if kind == "kv" else before
            value = before if kind == "kv" else None
            values.append(
                [position, at, kind, id, key, data, value, event_sequence, execution_id, work_id]
            )
        self._buffer.versions.extend(values)

    def _ranged(
        self,
        where: str,
        params: list[Any],
        high: int | None,
        limit: int,
        newest_first: bool = False,
        equal: str = "",
    ) -> list[RecordVersion]:
        """Rows matching ``where`` (which bounds the position from below) and below
        ``high``, in the log's order or newest first, at most ``limit``. ``equal``:
        the columns ``where`` fixes, which the ORDER BY leads with: the order is the
        same, and only the index on them and the position delivers it (SQLite would
        otherwise walk the key from the bound, over every later row of the log)."""
        sql = f"SELECT {COLUMNS} FROM {schema.VERSION} WHERE {where}"
        if high is not None:
            sql += " AND position < %s"
            params = [*params, high]
        direction = " DESC" if newest_first else ""
        order = "".join(f"{column}{direction}, " for column in equal.split()) + "position"
        sql += f" ORDER BY {order}{direction}"
        if limit:
            sql += " LIMIT %s"
            params = [*params, limit]
        return [_version(row) for row in self._rows(sql, params)]

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
        where = "kind = %s AND record_id = %s AND key = %s AND position >= %s"
        params: list[Any] = [kind, id, key, first_position(after + 1)]
        high = first_position(upto + 1) if upto else None
        return self._ranged(where, params, high, limit, newest_first, "kind record_id key")

    def _version_changes(self, low: int, high: int | None, limit: int) -> list[RecordVersion]:
        return self._ranged("position >= %s", [low], high, limit)

    def _work_versions(
        self, work_id: str, low: int, high: int | None, limit: int
    ) -> list[RecordVersion]:
        where = f"work_id = %s AND {_FILED} AND position >= %s"
        return self._ranged(where, [work_id, low], high, limit, equal="work_id")

    def _first_versions(
        self,
        low: int = 0,
        work_id: str = "",
        kind: VersionKind = "work",
        seeks: Sequence[tuple[str, int]] = (),
    ) -> list[RecordVersion]:
        if work_id:
            # The Work's rows from ``low`` on (its index), numbered per record.
            sql = (
                f"SELECT {COLUMNS} FROM (SELECT {COLUMNS}, ROW_NUMBER() OVER "
                "(PARTITION BY kind, record_id, key ORDER BY position) AS n "
                f"FROM {schema.VERSION} WHERE work_id = %s AND {_FILED} AND position >= %s) "
                "AS firsts WHERE n = 1"
            )
            return [_version(r) for r in self._rows(sql, [work_id, low])]
        # One seek of version_record per record, as one statement of LIMIT 1 reads: a
        # window over an IN list would make SQLite walk the whole index.
        one = (
            f"SELECT * FROM (SELECT {COLUMNS} FROM {schema.VERSION} WHERE kind = %s "
            "AND record_id = %s AND key = '' AND position >= %s "
            "ORDER BY kind, record_id, key, position LIMIT 1) AS first{n}"
        )
        out: list[RecordVersion] = []
        for start in range(0, len(seeks), _PER_STATEMENT):
            chunk = seeks[start : start + _PER_STATEMENT]
            sql = " UNION ALL ".join(one.format(n=n) for n in range(len(chunk)))
            params = [p for id, at in chunk for p in (kind, id, at)]
            out += [_version(r) for r in self._rows(sql, params)]
        return out

    def _work_mark(self, work_id: str, children: int) -> WorkMark:
        # One statement of index reads: the per-Work log index's last entry (a seek
        # backward: the ORDER BY leads with the column fixed, as ``_ranged`` says), the live
        # Timers' and active Waits' per-Work indexes, and the Work's Events (its own
        # and routed to it: the two per-Work Event indexes, then their rows for the
        # route and Scope columns; a handful for most Work), and whether it has a
        # child (the children's index), so the children's statement runs only then.
        timers, waits = schema.TABLES["timer"], schema.TABLES["wait"]
        sql = (
            f"SELECT (SELECT position FROM {schema.VERSION} WHERE work_id = %s AND {_FILED} "
            "ORDER BY work_id DESC, position DESC LIMIT 1), "
            f"(SELECT COUNT(*) FROM {timers.name} WHERE work_id = %s "
            f"AND live = {self.dialect.true}), "
            f"(SELECT COUNT(*) FROM {waits.name} WHERE work_id = %s AND {waits.live_sql}), "
            f"(SELECT COUNT(*) FROM (SELECT 1 FROM {schema.WORK} WHERE parent_id = %s "
            "LIMIT 1) AS child), COUNT(*), MAX(seq), "
            "SUM(CASE WHEN disposition <> '' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN scope_id <> '' THEN 1 ELSE 0 END) "
            f"FROM {schema.EVENT} WHERE work_id = %s OR route_work_id = %s"
        )
        ((position, n_timers, n_waits, parent, n_events, newest, routed, scoped),) = self._rows(
            sql, [work_id] * 6
        )
        kids: list[tuple[str, int]] = []
        if children and parent:
            # The children's index range (work_parent_created), then a seek of the
            # per-record log index for each one's newest row.
            sql = (
                f"SELECT w.id, (SELECT v.position FROM {schema.VERSION} v "
                "WHERE v.kind = 'work' AND v.record_id = w.id AND v.key = '' "
                "ORDER BY v.kind DESC, v.record_id DESC, v.key DESC, v.position DESC LIMIT 1) "
                f"FROM (SELECT id, created_ns FROM {schema.WORK} WHERE parent_id = %s "
                "ORDER BY created_ns, id LIMIT %s) w ORDER BY w.created_ns, w.id"
            )
            kids = [(id, at or 0) for id, at in self._rows(sql, [work_id, children + 1])]
        return WorkMark(
            position=position or 0,
            timers=n_timers,
            events=n_events,
            newest_event=newest or 0,
            routed_events=routed or 0,
            scoped_events=scoped or 0,
            active_waits=n_waits,
            children=tuple(kids),
        )

    def _works_mark(self, query: WorkQuery) -> WorksMark:
        # The page's IDs, read as ``_query_works`` reads its JSON.
        ids = tuple(self._page_column(query, "id"))
        if not ids:
            return WorksMark((), 0, 0)
        # One statement: each one's newest row (a seek backward of the per-Work index,
        # as ``_work_mark``), their greatest, and their live Timers (its index).
        marks = ", ".join(["%s"] * len(ids))
        sql = (
            f"SELECT (SELECT MAX((SELECT position FROM {schema.VERSION} "
            f"WHERE work_id = w.id AND {_FILED} ORDER BY work_id DESC, position DESC LIMIT 1)) "
            f"FROM {schema.WORK} w WHERE w.id IN ({marks})), "
            f"(SELECT COUNT(*) FROM {schema.TIMER} WHERE work_id IN ({marks}) "
            f"AND live = {self.dialect.true})"
        )
        ((position, timers),) = self._rows(sql, [*ids, *ids])
        return WorksMark(ids, position or 0, timers)

    def _kv_first_versions(
        self, namespace: str, low: int, prefix: str, after: str, limit: int
    ) -> list[RecordVersion]:
        # The version_record index holds a namespace's rows by key, then position: the
        # window numbers each key's rows in that order, so no sort is needed. Keys past
        # the prefix sort after all of its keys (a LIMIT they count against still
        # returns the prefix's first keys): the scan stops at the first.
        sql = (
            f"SELECT {COLUMNS} FROM (SELECT {COLUMNS}, ROW_NUMBER() OVER "
            "(PARTITION BY key ORDER BY position) AS n "
            f"FROM {schema.VERSION} WHERE kind = 'kv' AND record_id = %s AND key >= %s "
            "AND key > %s AND position >= %s) AS firsts WHERE n = 1 ORDER BY key"
        )
        params: list[Any] = [namespace, prefix, after, low]
        if limit:
            sql += " LIMIT %s"
            params.append(limit)
        out: list[RecordVersion] = []
        for row in self._rows(sql, params):
            if not row[4].startswith(prefix):
                break
            out.append(_version(row))
        return out

    def _first_position_after(self, at: Nanos) -> int | None:
        sql = (
            f"SELECT position FROM {schema.VERSION} WHERE at_ns > %s "
            "ORDER BY at_ns, position LIMIT 1"
        )
        found: int | None = self._one(sql, [at])
        return found

    def _version_horizon(self) -> int:
        sql = f"SELECT value FROM {schema.META} WHERE key = %s"
        return int(self._one(sql, [_HORIZON]) or 0)

    def _set_version_horizon(self, version: int) -> None:
        self._cursor.execute(
            f"INSERT INTO {schema.META} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [_HORIZON, str(version)],
        )

    def _prune_versions(self, before: Nanos, limit: int) -> tuple[int, int] | None:
        sql = f"SELECT position, at_ns FROM {schema.VERSION} ORDER BY position LIMIT %s"
        count, last = 0, 0
        for position, at in self._rows(sql, [limit]):
            if at >= before:
                break
            count, last = count + 1, position
        if not count:
            return None
        self._cursor.execute(f"DELETE FROM {schema.VERSION} WHERE position <= %s", [last])
        return count, last
