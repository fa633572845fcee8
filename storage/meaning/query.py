"""The meaning of a WorkQuery over a plain list (spec ``storage.SelectWorks``).

The reference double answers queries with these functions; the SQL backend must agree
with them for every query (the differential test in tests/storage checks it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..errors import Invalid
from ..records import Work, WorkFacets, WorkQuery


def check_query(query: WorkQuery) -> None:
    if query.limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {query.limit}")
    if isinstance(query.scope_ids, str):  # type: ignore[unreachable]  # untyped callers
        raise Invalid("WorkQuery.scope_ids takes a set of Scope IDs, not a string")
    if not isinstance(query.error_group, str):
        raise Invalid("WorkQuery.error_group takes one error group key")


def matches(query: WorkQuery, work: Work) -> bool:
    """True when ``work`` passes every filter of ``query`` (paging aside)."""
    return (
        (not query.states or work.state in query.states)
        and (not query.scope_id or work.scope_id == query.scope_id)
        and (not query.kind or work.kind == query.kind)
        and (not query.parent_id or work.parent_id == query.parent_id)
        and (not query.sources or work.source in query.sources)
        and (not query.executor or work.latest_executor == query.executor)
        and (query.updated_since is None or work.updated_at >= query.updated_since)
        and (not query.scope_ids or work.scope_id in query.scope_ids)
        and (query.updated_before is None or work.updated_at < query.updated_before)
        and (not query.exhausted or work.exhausted)
        and (not query.error_group or work.error_group == query.error_group)
    )


def _sort_key(query: WorkQuery, work: Work) -> tuple[int, str]:
    key = query.key_of(work)
    return (key.time, key.id)


def select_works(query: WorkQuery, works: Iterable[Work]) -> list[Work]:
    """Filter, order (time then ID, one direction), page after ``query.after``, limit."""
    check_query(query)
    desc = query.order.descending
    selected = sorted(
        (w for w in works if matches(query, w)),
        key=lambda w: _sort_key(query, w),
        reverse=desc,
    )
    if query.after is not None:
        cursor = (query.after.time, query.after.id)
        selected = [
            w
            for w in selected
            if (_sort_key(query, w) < cursor if desc else _sort_key(query, w) > cursor)
        ]
    return selected[: query.limit] if query.limit else selected


def select_facets(query: WorkQuery, works: Iterable[Work]) -> WorkFacets:
    """Counts per facet value under the full filter (paging ignored)."""
    check_query(query)
    chosen = [w for w in works if matches(query, w)]
    return WorkFacets(
        state=dict(Counter(w.state.value for w in chosen)),
        kind=dict(Counter(w.kind for w in chosen)),
        source=dict(Counter(w.source for w in chosen)),
        scope=dict(Counter(w.scope_id for w in chosen)),
        executor=dict(Counter(w.latest_executor for w in chosen)),
        exhausted=sum(1 for w in chosen if w.exhausted),
        error_group=dict(Counter(w.error_group for w in chosen)),
    )
