"""A Work list page bounded by ``until`` alone (a settled list, which every open tab
polls) walks its order's index on SQLite: the bound holds most of the history, and
the update-time index's range would make SQLite sort all of it for one page."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

from storage import Guard, Tx, WorkQuery, WorkState
from storage.orm import OrmStore

from ..support import FakeClock, make_work

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.sqlite_only,  # the plan is SQLite's (PostgreSQL plans from statistics)
]


def test_a_page_bounded_by_until_alone_needs_no_sort() -> None:
    store = OrmStore(clock=FakeClock())
    try:

        def fill(t: Tx) -> None:
            for n in range(20):
                t.put_work(make_work(f"w{n:02}"))

        store.transact(Guard(), fill)
        until = store.view(lambda t: t.now) + 1
        query = WorkQuery(states=frozenset({WorkState.READY}), updated_before=until, limit=5)
        seen: list[tuple[str, Any]] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            if sql.lstrip().upper().startswith("SELECT") and "ORDER BY" in sql:
                seen.append((sql, list(params)))
            return execute(sql, params, many, context)

        with connections["view"].execute_wrapper(record):
            works = store.view(lambda t: t.query_works(query))
    finally:
        store.close()

    assert [w.id for w in works] == ["w19", "w18", "w17", "w16", "w15"]
    [(sql, params)] = [s for s in seen if "conduit_work" in s[0]]
    with connections["default"].cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert "work_state_created" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
