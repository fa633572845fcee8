"""The Executions page's lease order ("expiring soon") reads the running attempts'
lease index (execution_running_lease: lease_expires_ns, id where state = 'running') on
each engine, first page and after a cursor, without a sort, so a page costs its rows
whatever the number of attempts ever made. Plans as in test_runtime_page_plans."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.db import connections

from storage import ExecutionQuery, Guard, LeaseKey, Tx, seconds
from storage.orm import OrmStore

from ..support import FakeClock, make_execution, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def test_the_lease_order_is_one_range_of_the_running_lease_index(store: OrmStore) -> None:
    def fill(t: Tx) -> None:
        for n in range(30):
            t.put_work(make_work(f"w{n:02}"))
            t.put_execution(make_execution(f"x{n:02}", f"w{n:02}", 1))
            if n % 3:
                t.claim(f"x{n:02}", "runner", t.now + seconds(n))

    store.transact(Guard(), fill)
    if connections["default"].vendor == "postgresql":
        # The planner's statistics are the cluster's, left by whichever test wrote
        # attempts before this one (the template reset refills rows, not statistics):
        # stale ones, of many attempts and few running, priced a sort of the state
        # index's rows below the running-lease index. Plan from this test's rows.
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE conduit_execution")
    now = store.view(lambda t: t.now)
    reads: dict[str, Callable[[Tx], object]] = {
        "first": lambda t: t.query_executions(ExecutionQuery(by_lease=True, limit=5)),
        "after": lambda t: t.query_executions(
            ExecutionQuery(by_lease=True, after_lease=LeaseKey(now + seconds(10), "x10"), limit=5)
        ),
        "expiring": lambda t: t.query_executions(
            ExecutionQuery(by_lease=True, expiring_by=now + seconds(30), limit=5)
        ),
    }
    for what, fn in reads.items():
        [(sql, params)] = view_statements(store, fn, lambda sql: "conduit_execution" in sql)
        plan = plan_of(sql, params, no_bitmap=True, no_sort=True)
        used = "INDEX execution_running_lease" in plan or "using execution_running_lease" in plan
        assert used, (what, sql, plan)
        if connections["default"].vendor == "sqlite":
            assert "TEMP B-TREE" not in plan, (what, sql, plan)
        else:
            assert "Sort" not in plan, (what, sql, plan)
            assert "Seq Scan" not in plan, (what, sql, plan)
