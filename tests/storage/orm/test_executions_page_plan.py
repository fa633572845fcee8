"""The Executions page's default read (the live attempts, the latest first claim first)
is one backward range of the live attempts' started index (execution_live_started:
started_at, id where the attempt is live) on each engine, first page and after a
cursor, without a sort, so a page costs its rows and not every live attempt (16,700 at
a realistic million, whose JSON it read and sorted before). Plans as in
test_runtime_page_plans."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from django.db import connections

from storage import (
    LIVE_EXECUTION_STATES,
    ExecutionKey,
    ExecutionQuery,
    ExecutionState,
    Guard,
    Tx,
    seconds,
)
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


def _fill(t: Tx) -> None:
    for n in range(30):
        t.put_work(make_work(f"w{n:02}"))
        t.put_execution(make_execution(f"x{n:02}", f"w{n:02}", 1))
        if n % 3:
            t.claim(f"x{n:02}", "runner", t.now + seconds(n))


def test_the_live_attempts_page_is_one_backward_range_of_the_live_started_index(
    store: OrmStore,
) -> None:
    store.transact(Guard(), _fill)
    live = frozenset(LIVE_EXECUTION_STATES)
    started = store.view(lambda t: t.execution("x10")).started_at
    after = ExecutionKey(started, "x10")
    reads: dict[str, Callable[[Tx], object]] = {
        "first": lambda t: t.query_executions(ExecutionQuery(states=live, limit=5)),
        "after": lambda t: t.query_executions(ExecutionQuery(states=live, after=after, limit=5)),
        "running": lambda t: t.query_executions(
            ExecutionQuery(states=frozenset({ExecutionState.RUNNING}), after=after, limit=5)
        ),
    }
    for what, fn in reads.items():
        [(sql, params)] = view_statements(store, fn, lambda sql: "conduit_execution" in sql)
        plan = plan_of(sql, params, no_bitmap=True, no_sort=True)
        # The running attempts alone may read the running attempts' own index in the
        # same order (execution_running_started), narrower still.
        ordered = ["execution_live_started", "execution_running_started"][
            : 2 if what == "running" else 1
        ]
        used = [i for i in ordered if re.search(rf"(INDEX|using) {i}\b", plan)]
        assert used, (what, sql, plan)
        if connections["default"].vendor == "sqlite":
            assert "TEMP B-TREE" not in plan, (what, sql, plan)
            if what != "first":  # the range starts at the cursor
                assert "SEARCH" in plan, (what, sql, plan)
        else:
            assert "Sort" not in plan, (what, sql, plan)
            assert "Seq Scan" not in plan, (what, sql, plan)


def test_the_live_attempts_pages_list_every_live_attempt_once_latest_claim_first(
    store: OrmStore,
) -> None:
    store.transact(Guard(), _fill)
    live = frozenset(LIVE_EXECUTION_STATES)
    everything = store.view(lambda t: t.query_executions(ExecutionQuery(states=live)))
    paged, after = [], None
    while True:
        query = ExecutionQuery(states=live, after=after, limit=4)
        page = store.view(lambda t, q=query: t.query_executions(q))
        paged += page
        if len(page) < 4:
            break
        after = ExecutionKey(page[-1].started_at, page[-1].id)
    assert [x.id for x in paged] == [x.id for x in everything]
    assert len(everything) == 30
    order = [(x.started_at, x.id) for x in everything]
    assert order == sorted(order, reverse=True)
    # Never claimed (started_at 0) comes last.
    assert {x.started_at for x in everything[-10:]} == {0}
