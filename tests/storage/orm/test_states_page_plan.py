"""A page of Work in two or three states (the dashboard's oldest waiting: ready or
waiting, least recently changed first) is one range of the (state, time, id) index
per state, each cut at the page's size, then merged (``storage/orm/keyset.py``): no
engine walks the whole update-time index (PostgreSQL discarded every ended Work of a
million on it, 350 ms a dashboard) or reads every Work of those states to sort them.
The pages are the ones one ``state IN (...)`` gives, first page and after a cursor.
Plans as in test_runtime_page_plans: SQLite's are pinned to the state's index;
PostgreSQL's choice follows statistics, so its plan is checked for a cut per state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.db import connections

from storage import Guard, Scope, Tx, WorkKey, WorkOrder, WorkQuery, WorkState
from storage.orm import OrmStore

from ..support import FakeClock, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

STATES = [WorkState.READY, WorkState.WAITING, WorkState.COMPLETED, WorkState.FAILED]
PATHS = {  # how each state is reached from ready (test_query_differential's)
    WorkState.READY: [],
    WorkState.WAITING: [WorkState.RUNNING, WorkState.WAITING],
    WorkState.COMPLETED: [WorkState.RUNNING, WorkState.COMPLETED],
    WorkState.FAILED: [WorkState.FAILED],
}
WAITING = frozenset({WorkState.READY, WorkState.WAITING})
ENDED = frozenset({WorkState.COMPLETED, WorkState.FAILED, WorkState.CANCELLED})


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def _fill(store: OrmStore) -> None:
    """40 Work in two Scopes, created five at a time, then each moved to its state in
    its own transaction, so update times differ."""

    store.transact(Guard(), lambda t: [t.put_scope(Scope(id=s)) for s in ("eu", "us")])
    for first in range(0, 40, 5):  # five a transaction: created times tie in fives

        def create(t: Tx, first: int = first) -> None:
            for n in range(first, first + 5):
                t.put_work(make_work(f"w{n:02}", scope_id="eu" if n % 3 else "us"))

        store.transact(Guard(), create)
    for n in range(40):
        path = PATHS[STATES[n % len(STATES)]]

        def move(t: Tx, id: str = f"w{n:02}", path: list[WorkState] = path) -> None:
            for state in path:
                t.put_work(replace(t.work(id), state=state))

        if path:
            store.transact(Guard(), move)


QUERIES = {
    "oldest waiting": WorkQuery(states=WAITING, order=WorkOrder.UPDATED_ASC, limit=5),
    "oldest waiting in a Scope": WorkQuery(
        states=WAITING, scope_ids=frozenset({"eu"}), order=WorkOrder.UPDATED_ASC, limit=5
    ),
    "newest ended": WorkQuery(states=ENDED, order=WorkOrder.CREATED_DESC, limit=5),
    "latest changed ended": WorkQuery(states=ENDED, order=WorkOrder.UPDATED_DESC, limit=5),
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_page_over_several_states_is_the_one_state_in_gives_every_page(
    store: OrmStore, name: str
) -> None:
    _fill(store)
    query = QUERIES[name]
    everything = store.view(lambda t: t.query_works(replace(query, limit=0)))
    assert len(everything) > 2 * query.limit
    paged, after = [], None
    while True:
        page = store.view(lambda t, a=after: t.query_works(replace(query, after=a)))
        paged += page
        if len(page) < query.limit:
            break
        last = page[-1]
        time = last.updated_at if query.order.by_updated else last.created_at
        after = WorkKey(time, last.id)
    assert [w.id for w in paged] == [w.id for w in everything]


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_page_over_several_states_reads_one_index_range_per_state(
    store: OrmStore, name: str
) -> None:
    _fill(store)
    query = QUERIES[name]
    [(sql, params)] = view_statements(
        store, lambda t: t.query_works(query), lambda sql: "conduit_work" in sql
    )
    assert sql.count("UNION ALL") == len(query.states) - 1, sql
    plan = plan_of(sql, params, no_bitmap=True)
    if connections["default"].vendor == "sqlite":
        # Each state's range of its own index; never the time index from one end.
        time = "updated" if query.order.by_updated else "created"
        used = re.findall(rf"\bwork_state_(?:scope_)?{time}\b", plan)
        assert len(used) >= len(query.states), plan
        assert not re.search(rf"\bwork_{time}\b", plan), plan
    else:
        # PostgreSQL picks each branch's index from statistics (on a few dozen rows,
        # left by whichever test wrote before, the time index may price as well as
        # the state's): each branch is an index scan cut at the page's size, never a
        # sequential scan. At a million Work it took the state's index (350 ms to 4 ms
        # for the dashboard's oldest waiting, measured on a copy of benchmark 3's
        # history).
        assert plan.count("Limit") >= len(query.states) + 1, plan
        assert plan.count("Index Scan") + plan.count("Index Only Scan") >= len(query.states)
        assert "Seq Scan" not in plan, plan
