"""The ORM backend's Work counts and facets: from the Work tally when it answers the
selection (``storage.meaning.tally``), from the tally less a few recent rows when the
selection is bounded by ``until`` alone (``tally.complements``), else one GROUP BY
over the selected Work rows.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from dataclasses import replace
from typing import Any

from django.db.models import CharField, Count, F, QuerySet, Value
from django.db.models.functions import Concat

from ..meaning import tally
from ..models import WorkRow
from ..records import WorkFacets, WorkQuery
from ..tx import BaseTx
from . import tally as tally_sql


class OrmFacets(BaseTx):
    """``_count_works``, ``_work_facets`` and ``_tally_facets`` of ``OrmTx``."""

    @abstractmethod
    def _filtered(self, q: WorkQuery) -> QuerySet[WorkRow]:
        """The Work rows ``q`` selects (order, cursor and limit unused), after a flush."""

    @property
    @abstractmethod
    def _cursor(self) -> Any:
        """The cursor, once every buffered write has reached the database."""

    def _count_works(self, query: WorkQuery) -> int:
        # The rules asked the tally first (``_tally_count``); bounded by ``until``
        # alone (``tally.complements``, exhausted or not, as ``_tally_count`` counts
        # either), the count is the tally's less the Work updated since the bound.
        if query.updated_before is not None and query.updated_since is None:
            whole = self._tally_count(tally.unbounded(query))
            if whole is not None:
                return whole - self._selected(tally.since_bound(query)).count()
        return self._selected(query).count()

    def _selected(self, query: WorkQuery) -> QuerySet[WorkRow]:
        """The Work rows ``query`` selects, for a count or the facets (no page)."""
        if not query.kind or (query.updated_since is None and not query.exhausted):
            return self._filtered(query)
        # Bounded below in time, or exhausted, with a kind: SQLite (no statistics)
        # would take the kind's index (an equality beats a range there) and read
        # every Work of the kind to count the few updated since, or exhausted.
        # Compared through ``kind || ''`` the kind leaves it the update-time range
        # (per state or Scope when those are filtered too) or the exhausted Work's
        # partial index; same rows.
        unindexed = Concat(F("kind"), Value(""), output_field=CharField())
        return (
            self._filtered(replace(query, kind=""))
            .alias(kind_unindexed=unindexed)
            .filter(kind_unindexed=query.kind)
        )

    def _tally_facets(self, query: WorkQuery) -> WorkFacets:
        sql, params = tally_sql.facets_statement(query)
        cursor = self._cursor
        cursor.execute(sql, params)
        return tally_sql.facets_of(cursor.fetchall())

    def _tally_total(self, query: WorkQuery, exhausted: bool) -> int:
        sql, params = tally_sql.total_statement(query, exhausted)
        cursor = self._cursor
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return int(row[0] or 0)  # SUM of no row is NULL

    def _work_facets(self, query: WorkQuery) -> WorkFacets:
        if tally.complements(query):
            # A settled list's ``until`` is recent: the Work updated since it are few
            # (an update-time index range), while the bound keeps nearly the whole
            # history, which the GROUP BY would read (seconds at a million Work). The
            # tally is settled first and the rows read after a flush, so inside a
            # writing transaction both count its own writes.
            self._settle_tally()
            whole = self._tally_facets(tally.unbounded(query))
            return tally.minus(whole, self._grouped_facets(tally.since_bound(query)))
        return self._grouped_facets(query)

    def _grouped_facets(self, query: WorkQuery) -> WorkFacets:
        # One GROUP BY over all seven dimensions, answered from the work_facets_triage
        # covering index (COUNT(*), not COUNT(id), so no table row is read) unless a
        # narrower index holds the selection (below), then folded per dimension: the
        # combinations are few even when the Work are many.
        columns = ("state", "kind", "source", "scope_id", "latest_executor", "error_group")
        qs = self._selected(query).order_by()
        if query.updated_since is not None or query.exhausted:
            # Bounded below in time (``since``, or what ``until`` alone subtracts):
            # the rows are an update-time index range, few when the bound is recent.
            # SQLite (no statistics) would rather walk the whole covering index, whose
            # order is the GROUP BY's, and probe each row's table entry for its time
            # (every Work, for a handful counted). Grouped by ``state || ''``, that
            # order is no longer the GROUP BY's, and SQLite takes the range; same
            # groups, on both engines. The exhausted list likewise: SQLite walked the
            # whole covering index for its few rows (a million entries for 3,200
            # exhausted Work, benchmark 7: 12 ms against 3 ms at 30,000 Work); grouped
            # so, it reads their partial index and probes just those rows.
            unindexed = Concat(F("state"), Value(""), output_field=CharField())
            qs = qs.annotate(state_unindexed=unindexed)
            columns = ("state_unindexed", *columns[1:])
        rows = qs.values_list(*columns, "exhausted").annotate(n=Count("*"))
        folded: list[Counter[str]] = [Counter() for _ in columns]
        exhausted = 0
        for *values, is_exhausted, n in rows:
            for counter, value in zip(folded, values, strict=True):
                counter[value] += n
            exhausted += n if is_exhausted else 0
        state, kind, source, scope, executor, group = (dict(c) for c in folded)
        return WorkFacets(
            state=state,
            kind=kind,
            source=source,
            scope=scope,
            executor=executor,
            exhausted=exhausted,
            error_group=group,
        )
