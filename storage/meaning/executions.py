"""The meaning of an ExecutionQuery over plain lists (the console's Executions page).

The reference double answers with these functions; the SQL backend must agree with
them (tests/storage/contract/test_execution_query.py runs both).

An attempt matches when its state is one of ``states``, its Work's kind one of
``kinds`` and its Work's Scope one of ``scope_ids`` ("" for Work without a Scope),
its Work's ID starts with ``work_id_prefix`` (characters compared exactly, no
wildcards), and, with ``expired``, it is live with a lease that has expired at
``now`` (``0 < lease_expires_at <= now``). Order: ``started_at`` then ID, both
descending, so attempts never claimed (``started_at`` 0) come last; ``after`` keeps
the rows strictly beyond that key in this order. With ``expiring_by``, only running
attempts with ``now < lease_expires_at <= expiring_by``. With ``by_lease``, only
running attempts, ordered by ``lease_expires_at`` then ID ascending, ``after_lease``
keeping the rows strictly beyond that key.
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
    if query.after_lease is not None and not query.by_lease:
        raise Invalid("after_lease pages the lease order: set by_lease")
    if query.after is not None and query.by_lease:
        raise Invalid("the lease order pages with after_lease, not after")
    if query.expiring_by is not None and query.expiring_by < 0:
        raise Invalid("expiring_by is a time, 0 or positive")


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
        and (
            query.expiring_by is None
            or (x.state is ExecutionState.RUNNING and now < x.lease_expires_at <= query.expiring_by)
        )
        and (not query.by_lease or x.state is ExecutionState.RUNNING)
        and (
            query.after_lease is None
            or (x.lease_expires_at, x.id)
            > (query.after_lease.lease_expires_at, query.after_lease.id)
        )
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
        key=lambda x: (x.lease_expires_at, x.id) if query.by_lease else (x.started_at, x.id),
        reverse=not query.by_lease,
    )
    return chosen[: query.limit] if query.limit else chosen
