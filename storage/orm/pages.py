"""The ORM backend's keyset pages of the runtime lists: Timers and active Waits
(meaning in ``storage.meaning.pages``).

Each page is one statement over a partial index already in the table's order, so it
reads the rows shown and no more: Timers by ``timer_due`` (live, fire time, ID),
active Waits by ``wait_active_created`` (active, creation time from the JSON, ID;
migration 0017). A page before a cursor walks the same index backwards and is turned
round here. Each count is one range of the same index, reading no record; so is each bucket of
``timer_series`` (the Timers page's strip of what fires ahead): a COUNT over the
bucket's range of ``timer_due``, all buckets as scalar subqueries of one statement.
"""

from __future__ import annotations

from typing import Any

from .. import codec
from ..records import ActiveWaitQuery, Buckets, Nanos, Timer, TimerQuery, Wait
from . import schema
from .reads import TIMER_SCOPE, OrmReads

# A Timer's kind is its Work's ("" without one), by a primary-key probe, as its Scope.
TIMER_KIND = f"COALESCE((SELECT w.kind FROM {schema.WORK} w WHERE w.id = t.work_id), '')"


class OrmPages(OrmReads):
    """The paged runtime lists of ``OrmTx`` (after a flush, as every set read)."""

    def _keyset(
        self,
        source: str,
        where: list[str],
        params: list[Any],
        order: tuple[str, str],
        page: tuple[tuple[Nanos, str] | None, tuple[Nanos, str] | None, int],
    ) -> list[Any]:
        """``data`` of the rows of ``source`` meeting ``where``, in ``order``
        ascending, after or before a key, at most ``limit``."""
        after, before, limit = page
        time, ident = order
        backwards = before is not None
        key = after if after is not None else before
        if key is not None:
            # The row value is the condition; the time alone beside it is what
            # starts the index range at the cursor when the time is an expression
            # (SQLite does not start a range at a row value holding one, nor at the
            # spelled-out "t > %s OR (t = %s AND id > %s)": it scanned the index from
            # its first row to the cursor). Plans pinned in tests/storage/orm.
            op = "<" if backwards else ">"
            where.append(f"{time} {op}= %s AND ({time}, {ident}) {op} (%s, %s)")
            params += [key[0], key[0], key[1]]
        direction = " DESC" if backwards else ""
        sql = (
            f"SELECT data FROM {source} WHERE {' AND '.join(where)}"
            f" ORDER BY {time}{direction}, {ident}{direction}"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._column(sql, params)
        return rows[::-1] if backwards else rows

    def _timer_where(self, query: TimerQuery) -> tuple[list[str], list[Any]]:
        # The timer_due index's own predicate, as written there.
        where, params = [f"t.live = {self.dialect.true}"], []
        if query.due_by is not None:
            where.append("t.fire_ns <= %s")
            params.append(query.due_by)
        if query.scope_ids is not None:
            # A Timer's Scope is its Work's, by a primary-key probe per Timer row read
            # from timer_due, as the dashboards' overdue count finds it (``_due``).
            scoped, bound = self._in(TIMER_SCOPE, sorted(query.scope_ids))
            where.append(scoped.removeprefix(" AND "))
            params += bound
        if query.kinds is not None:
            kinds, bound = self._in(TIMER_KIND, sorted(query.kinds))
            where.append(kinds.removeprefix(" AND "))
            params += bound
        return where, params

    def _query_timers(self, query: TimerQuery) -> list[Timer]:
        where, params = self._timer_where(query)
        after = (query.after.fire_at, query.after.id) if query.after else None
        before = (query.before.fire_at, query.before.id) if query.before else None
        rows = self._keyset(
            f"{schema.TIMER} t",
            where,
            params,
            ("t.fire_ns", "t.id"),
            (after, before, query.limit),
        )
        return [codec.decode(Timer, d) for d in rows]

    def _count_timers(self, query: TimerQuery) -> int:
        where, params = self._timer_where(query)
        return int(
            self._one(f"SELECT COUNT(*) FROM {schema.TIMER} t WHERE {' AND '.join(where)}", params)
        )

    def _timer_series(self, buckets: Buckets, query: TimerQuery) -> list[int]:
        where, params = self._timer_where(query)
        # The bucket's bounds right after the index predicate, so each subquery is one
        # range of timer_due (plans pinned in tests/storage/orm/test_runtime_page_plans.py).
        where.insert(1, "t.fire_ns >= %s AND t.fire_ns < %s")
        sql = f"(SELECT COUNT(*) FROM {schema.TIMER} t WHERE {' AND '.join(where)})"
        return self._scalars([(sql, [*buckets.bounds(i), *params]) for i in range(buckets.count)])

    def _wait_where(self, query: ActiveWaitQuery) -> tuple[list[str], list[Any], str]:
        created = self.dialect.json_nanos("w.data", "created_at")
        # The live predicate first, as the partial index writes it (SQLite matches it
        # textually); the alias-free spelling is the index's.
        where, params = [str(schema.TABLES["wait"].live_sql)], []
        if query.created_by is not None:
            where.append(f"{created} <= %s")
            params.append(query.created_by)
        return where, params, created

    def _query_active_waits(self, query: ActiveWaitQuery) -> list[Wait]:
        where, params, created = self._wait_where(query)
        after = (query.after.created_at, query.after.id) if query.after else None
        before = (query.before.created_at, query.before.id) if query.before else None
        rows = self._keyset(
            f"{schema.WAIT} w",
            where,
            params,
            (created, "w.id"),
            (after, before, query.limit),
        )
        return [codec.decode(Wait, d) for d in rows]

    def _count_active_waits(self, query: ActiveWaitQuery) -> int:
        where, params, _ = self._wait_where(query)
        sql = f"SELECT COUNT(*) FROM {schema.WAIT} w WHERE {' AND '.join(where)}"
        return int(self._one(sql, params))
