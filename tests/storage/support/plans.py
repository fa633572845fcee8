"""What the ORM sends and how each engine plans it: the statements a View sends that a
test is about, and their plan (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN).

PostgreSQL plans from statistics, and on the handful of rows a test writes a
sequential scan is rightly cheapest: the plan is asked with sequential scans priced
out (``no_bitmap``: bitmap scans too), so it says whether an index serves the
statement, which is the question. ``no_sort`` prices out sorts as well, for a test
whose question is whether an index delivers the statement's order: the statistics
are the cluster's, left by whichever test wrote before (the template reset refills
rows, not statistics), and on a near-empty table an index of another order plus a
sort of its one row can be priced below the ordered index (seen in CI: timer_due
and a Sort for a read of Timer IDs in ID order; an index on the order's first column
and an Incremental Sort for the rest). With sorts, incremental ones included, priced
out, a Sort still in the plan means no index delivers the order, whatever the
statistics say."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections

from storage import Tx
from storage.orm import OrmStore

Statement = tuple[str, list[Any]]


def view_statements(
    store: OrmStore, fn: Callable[[Tx], object], wanted: Callable[[str], bool]
) -> list[Statement]:
    """The statements ``fn`` sends inside ``store.view`` whose SQL is ``wanted``, in
    order: not the View's own first statement, which pins its snapshot (it reads the
    clock row and the newest Event's sequence, ``OrmStore._pin_snapshot``)."""
    seen: list[Statement] = []
    pinned = False

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal pinned
        if not pinned and "conduit_meta" in sql:
            pinned = True
        elif wanted(sql):
            seen.append((sql, list(params)))
        return execute(sql, params, many, context)

    with connections["view"].execute_wrapper(record):
        store.view(fn)
    return seen


def plan(sql: str, params: list[Any], *, no_bitmap: bool = False, no_sort: bool = False) -> str:
    """The engine's plan of one statement, a line a node."""
    connection = connections["default"]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        off = [
            "enable_seqscan",
            *(["enable_bitmapscan"] if no_bitmap else []),
            # An incremental sort is a sort too: an index on a prefix of the order
            # (execution_started under execution_live_started) plus one was chosen in
            # CI for the Executions page after a cursor.
            *(["enable_sort", "enable_incremental_sort"] if no_sort else []),
        ]
        for setting in off:
            cursor.execute(f"SET {setting} = off")
        try:
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            for setting in off:
                cursor.execute(f"RESET {setting}")
