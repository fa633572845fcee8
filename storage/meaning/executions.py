"""The meaning of an ExecutionQuery over plain lists (the console's Executions page).

The reference double answers with these functions; the SQL backend must agree with
them (tests/storage/contract/test_execution_query.py runs both).

An attempt matches when its state is one of ``states``, its Work's kind one of
``kinds`` and its Work's Scope one of ``scope_ids`` ("" for Work without a Scope),
its Work's ID starts with ``work_id_prefix`` (characters compared exactly, no
wildcards), and, with ``expired``, it is live with a lease that has expired at
``now`` (``0 < lease_expires_at <= now``). Order: ``started_at`` then ID, both
descending, so attempts never claimed (``started_at`` 0) come last; ``after`` keeps
the rows strictly beyond that key in this order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import Invalid
from ..records import (
    LIVE_EXECUTION_STATES,
    Execution,
    ExecutionQuery,
    ExecutionState,
    Nanos,
)


def check_execution_query(query: ExecutionQuery) -> None:
    """Invalid for a query no backend could answer the same way."""
    if query.limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {query.limit}")
    for name in ("states", "kinds", "scope_ids"):
        value = getattr(query, name)
        if isinstance(value, str):
            raise Invalid(f"ExecutionQuery.{name} takes a set, not a string")
    if any(not isinstance(s, ExecutionState) for s in query.states):
        raise Invalid("ExecutionQuery.states takes ExecutionState values")
    if not isinstance(query.work_id_prefix, str):
        raise Invalid("ExecutionQuery.work_id_prefix takes a string")
    if query.after is not None and query.after.started_at < 0:
        raise Invalid("an ExecutionKey's started_at is 0 or positive")


def execution_matches(
    query: ExecutionQuery, x: Execution, kind: str, scope_id: str, now: Nanos
) -> bool:
    """True when ``x`` (of a Work with ``kind`` and ``scope_id``) passes every filter."""
    return (
        (not query.states or x.state in query.states)
        and (not query.kinds or kind in query.kinds)
        and (query.scope_ids is None or scope_id in query.scope_ids)
        and x.work_id.startswith(query.work_id_prefix)
        and (
            not query.expired
            or (x.state in LIVE_EXECUTION_STATES and 0 < x.lease_expires_at <= now)
        )
        and (query.after is None or (x.started_at, x.id) < (query.after.started_at, query.after.id))
    )


def select_executions(
    query: ExecutionQuery,
    executions: Iterable[Execution],
    work_of: Mapping[str, tuple[str, str]],
    now: Nanos,
) -> list[Execution]:
    """``work_of`` maps a Work ID to its (kind, scope ID)."""
    chosen = sorted(
        (
            x
            for x in executions
            if execution_matches(query, x, *work_of.get(x.work_id, ("", "")), now)
        ),
        key=lambda x: (x.started_at, x.id),
        reverse=True,
    )
    return chosen[: query.limit] if query.limit else chosen
