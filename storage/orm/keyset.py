"""A page of Work in the keyset order a ``WorkQuery`` names (its order, after its
cursor, up to its limit), and the same page over several states as one range per
state, merged.

Why merged: a page of Work in two or three states (the dashboard's oldest waiting,
ready or waiting, least recently changed first) as one ``state IN (...)`` has no index
that delivers its order. PostgreSQL walked the update-time index from the oldest Work
and discarded every ended one (about 969,000 at a million, 350 ms, on every dashboard
load and poll); SQLite read every Work of those states and sorted them. A range of the
(state, time, id) index per state, each cut at the limit, then merged, reads at most
the limit per state on both engines, whatever the history."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.db.models import Q, QuerySet

from ..models import WorkRow
from ..records import WorkQuery

# At most this many states are merged (the five a page can name would be five ranges
# and a union; a live or ended subset is two or three).
MERGED_STATES = 3


def _time(query: WorkQuery) -> str:
    """The time column ``query``'s order sorts by (then by ID)."""
    return "updated_ns" if query.order.by_updated else "created_ns"


def ordered(qs: QuerySet[WorkRow], query: WorkQuery) -> QuerySet[WorkRow]:
    """``qs`` in the query's keyset order, after its cursor (not yet cut)."""
    col = _time(query)
    desc = query.order.descending
    if query.after is not None:
        t, id = query.after.time, query.after.id
        # The inclusive bound lets the index range-scan; the OR breaks time ties by ID.
        op = "lt" if desc else "gt"
        qs = qs.filter(**{f"{col}__{op}e": t}).filter(
            Q(**{f"{col}__{op}": t}) | Q(**{f"id__{op}": id})
        )
    return qs.order_by(f"-{col}", "-id") if desc else qs.order_by(col, "id")


def is_merged(query: WorkQuery) -> bool:
    """Whether ``query``'s page is read one state at a time (``merged``)."""
    return bool(query.limit) and 1 < len(query.states) <= MERGED_STATES


def merged(
    query: WorkQuery,
    filtered: Callable[[WorkQuery], QuerySet[WorkRow]],
    alias: str,
    column: str = "data",
) -> tuple[str, list[Any]]:
    """The SQL of ``query``'s page (its records' JSON, or another ``column``, in its
    order) as one range per state (``filtered``: the query's rows, unordered, for a
    ``WorkQuery``), each cut at the limit, merged and cut again."""
    col = _time(query)
    direction = " DESC" if query.order.descending else ""
    branches, params = [], []
    for n, state in enumerate(sorted(query.states)):
        one = replace(query, states=frozenset({state}))
        selected = (column, col) if column == "id" else (column, col, "id")
        qs = ordered(filtered(one), one).values_list(*selected)[: query.limit]
        sql, more = qs.query.get_compiler(using=alias).as_sql()
        branches.append(f"SELECT * FROM ({sql}) AS state{n}")  # noqa: S608 - Django's SQL
        params += list(more)
    union = " UNION ALL ".join(branches)
    order = f"{col}{direction}, id{direction}"
    cut = f"ORDER BY {order} LIMIT {int(query.limit)}"
    return f"SELECT {column} FROM ({union}) AS merged {cut}", params  # noqa: S608 - as above
