"""The startup backfill's candidates (attempts without an executor) come from a partial
index of those rows alone on SQLite: a runtime starting on a million Work whose
attempts all have one reads no attempt (it decoded all 2.5 million: minutes and
gigabytes before it could start)."""

from __future__ import annotations

import pytest

from storage import Binding, Guard, Tx
from storage.orm import OrmStore

from ..support import FakeClock, make_execution, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.sqlite_only,  # the plan is SQLite's (PostgreSQL plans from statistics)
]


def test_the_attempts_without_an_executor_are_read_from_their_own_index() -> None:
    store = OrmStore(clock=FakeClock())
    try:

        def fill(t: Tx) -> None:
            for n in range(20):
                t.put_work(make_work(f"w{n:02}"))
                t.put_execution(
                    make_execution(f"x{n:02}", f"w{n:02}", binding=Binding("b", "runner"))
                )

        store.transact(Guard(), fill)
        found: list[object] = []
        [(sql, params)] = view_statements(
            store,
            lambda t: found.extend(t.executions_without_executor(limit=10)),
            lambda sql: "conduit_execution" in sql,
        )
    finally:
        store.close()

    assert found == []  # every attempt written through the contract has its executor
    plan = plan_of(sql, params)
    assert "execution_no_executor" in plan, plan
    assert "SCAN" not in plan.replace("USING INDEX execution_no_executor", ""), plan
