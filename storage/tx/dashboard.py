"""Dashboard reads: time series of Work, Events and attempts, the attempts behind a
bucket, exhausted Work and error groups. Their meaning over plain lists is
``storage.meaning.series`` and ``storage.meaning.triage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Invalid
from ..meaning import series
from ..meaning.query import check_query
from ..records import Buckets, ErrorGroup, Execution, Nanos, Timer, Work, WorkQuery
from . import fields
from .base import TxBase


class DashboardRules(TxBase):
    """The dashboard reads of ``Tx``."""

    def work_series(self, query: WorkQuery, buckets: Buckets) -> dict[str, list[int]]:
        """Work matching ``query``'s filters, per state (the query's states, else all),
        counted by the bucket of its ``updated_at``. Order, cursor and limit are not
        used. Served by indexes on (state, updated) and (scope, state, updated)."""
        self._check()
        check_query(query)
        series.check_buckets(buckets)
        self._settle_series()
        return self._work_series(query, buckets)

    def event_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Events per bucket of their acceptance time, recorded in any of
        ``scope_ids`` ("" = none recorded; None = any)."""
        self._check()
        series.check_buckets(buckets)
        series.check_scope_ids(scope_ids)
        self._settle_series()
        return self._event_series(buckets, scope_ids)

    def attempt_series(self, buckets: Buckets, scope_ids: Sequence[str] | None = None) -> list[int]:
        """Attempts per bucket of their first claim, of Work in any of ``scope_ids``."""
        self._check()
        series.check_buckets(buckets)
        series.check_scope_ids(scope_ids)
        self._settle_series()
        return self._attempt_series(buckets, scope_ids)

    def started_executions(
        self,
        since: Nanos,
        before: Nanos,
        scope_ids: Sequence[str] | None = None,
        limit: int = 0,
    ) -> list[Execution]:
        """Attempts first claimed in [since, before), of Work in any of ``scope_ids``,
        the most recently started first: what an ``attempt_series`` bucket counted."""
        self._check()
        fields.require_limit(limit)
        series.check_scope_ids(scope_ids)
        if since < 0 or before < since:
            raise Invalid("a time range runs from a nonnegative start to a later end")
        return self._started_executions(since, before, scope_ids, limit)

    def running_executions(
        self, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Execution]:
        """Running attempts of Work in any of ``scope_ids`` (None: any), the longest
        running first, at most ``limit`` (0: all): a dashboard's "longest running",
        read from the live attempts and their Scope column, no Work decoded."""
        self._check()
        fields.require_limit(limit)
        series.check_scope_ids(scope_ids)
        return self._running_executions(scope_ids, limit)

    def expired_executions(
        self, at: Nanos, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Execution]:
        """Running attempts of Work in any of ``scope_ids`` whose lease expired by
        ``at``, the oldest expiry first, at most ``limit`` (0: all): nobody is running
        them any more."""
        self._check()
        fields.require_limit(limit)
        series.check_scope_ids(scope_ids)
        return self._expired_executions(at, scope_ids, limit)

    def count_expired_executions(self, at: Nanos, scope_ids: Sequence[str] | None = None) -> int:
        """How many ``expired_executions`` selects (an index count: none decoded)."""
        self._check()
        series.check_scope_ids(scope_ids)
        return self._count_expired(at, scope_ids)

    def overdue_timers(
        self, at: Nanos, scope_ids: Sequence[str] | None = None, limit: int = 0
    ) -> list[Timer]:
        """Timers due by ``at`` of Work in any of ``scope_ids`` ("" for a Timer serving
        no Work), the earliest first, at most ``limit`` (0: all): ``due_timers`` of a
        Scope subtree."""
        self._check()
        fields.require_limit(limit)
        series.check_scope_ids(scope_ids)
        return self._overdue_timers(at, scope_ids, limit)

    def count_overdue_timers(self, at: Nanos, scope_ids: Sequence[str] | None = None) -> int:
        """How many ``overdue_timers`` selects (an index count: none decoded)."""
        self._check()
        series.check_scope_ids(scope_ids)
        return self._count_overdue(at, scope_ids)

    def exhausted_works(self, query: WorkQuery) -> list[Work]:
        """``query``'s Work that is exhausted (ready, has had an attempt, no live
        attempt, no Timer), in the query's order, paged and limited by it: the
        ``exhausted`` selection of ``query_works``."""
        self._check()
        check_query(query)
        return self._query_works(replace(query, exhausted=True))

    def count_exhausted(self, query: WorkQuery) -> int:
        self._check()
        check_query(query)
        exhausted = replace(query, exhausted=True)
        counted = self._tally_count(exhausted)
        return self._count_works(exhausted) if counted is None else counted

    def error_groups(self, query: WorkQuery, limit: int = 0) -> list[ErrorGroup]:
        """The error groups of ``query``'s failed and exhausted Work, the largest first
        (ties by key), at most ``limit`` (0: all); order, cursor and limit of the query
        play no part (``triage.select_error_groups``). Served by an index on the group
        key holding only grouped Work, so the cost follows the grouped Work."""
        self._check()
        check_query(query)
        fields.require_limit(limit)
        groups = self._error_groups(query)
        return groups[:limit] if limit else groups
