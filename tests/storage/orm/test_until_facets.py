"""The facets and count of a Work list bounded by ``until`` alone (a settled list,
which every open tab polls) come from the Work tally less the Work updated since the
bound (``storage.meaning.tally.complements``): the one statement on the Work rows is
an index range of update times from the bound on, so its cost follows the Work
updated since, not the history the bound keeps. The same read serves ``since``
alone. The exhausted list's facets (counted from the rows: the tally has no source,
executor or group per exhausted Work) read the exhausted Work's partial index, not
the whole covering index of the facets (benchmark 7: 3,200 exhausted of a million).

SQLite plans with EXPLAIN QUERY PLAN; PostgreSQL with EXPLAIN, sequential scans
priced out (on a handful of rows it would rightly prefer one), after ANALYZE, so the
test asks whether the index bounds the statement when the statistics say the bound
is recent, or the exhausted Work few."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.db import connections

from storage import (
    ExecutionState,
    Guard,
    Tx,
    WorkFacets,
    WorkQuery,
    WorkState,
    select_facets,
)
from storage.orm import OrmStore

from ..contract._helpers import terminate
from ..support import KIND, FakeClock, make_execution, make_scope, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements


def _reads_work(sql: str) -> bool:
    return '"conduit_work"' in sql or "conduit_work " in sql


pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

READY = frozenset({WorkState.READY})


@pytest.fixture
def store() -> Iterator[OrmStore]:
    clock = FakeClock()
    opened = OrmStore(clock=clock)

    def fill(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        for n in range(200):
            t.put_work(make_work(f"w{n:03}", scope_id="acme" if n % 2 else ""))

    opened.transact(Guard(), fill)
    clock.advance(5)
    opened.transact(Guard(), lambda t: t.put_work(t.work("w007")))
    if connections["default"].vendor == "postgresql":
        # PostgreSQL plans from statistics: give it the table's (the bound selects
        # one Work in 200), as a store that has run for a while has.
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE conduit_work")
    yield opened
    opened.close()


@pytest.mark.parametrize(
    "query",
    [
        WorkQuery(),
        WorkQuery(states=READY),
        WorkQuery(scope_id="acme"),
        WorkQuery(kind=KIND),
        WorkQuery(scope_ids=frozenset({"acme", ""})),
        WorkQuery(states=READY, kind=KIND),
    ],
    ids=["all", "ready", "scope", "kind", "subtree", "ready-kind"],
)
@pytest.mark.parametrize("bound", ["updated_before", "updated_since"])
def test_until_alone_reads_only_the_work_updated_since_the_bound(
    store: OrmStore, query: WorkQuery, bound: str
) -> None:
    until = store.view(lambda t: t.now)  # w007 was updated then, the rest before
    bounded = replace(query, **{bound: until})
    expected = store.view(lambda t: select_facets(bounded, t.works()))
    facets: list[WorkFacets] = []
    counts: list[int] = []
    sent = view_statements(store, lambda t: facets.append(t.work_facets(bounded)), _reads_work)
    sent += view_statements(store, lambda t: counts.append(t.count_works(bounded)), _reads_work)
    assert facets == [expected]
    assert counts == [sum(expected.state.values())]
    # One statement on the Work rows each, bounded below by ``until``.
    assert len(sent) == 2, [sql for sql, _ in sent]
    for sql, params in sent:
        assert until in params, (sql, params)
        plan = plan_of(sql, params)
        if connections["default"].vendor == "sqlite":
            assert "updated_ns>?" in plan, (sql, plan)
            assert "SCAN" not in plan, (sql, plan)
        else:
            conditions = [line for line in plan.splitlines() if "Index Cond" in line]
            assert any("updated_ns >=" in line for line in conditions), (sql, plan)
            assert "Seq Scan" not in plan, (sql, plan)


@pytest.mark.parametrize(
    "query",
    [
        WorkQuery(exhausted=True),
        WorkQuery(exhausted=True, kind=KIND),
        WorkQuery(exhausted=True, scope_id="acme"),
    ],
    ids=["exhausted", "kind", "scope"],
)
def test_the_exhausted_facets_read_only_the_exhausted_work(
    store: OrmStore, query: WorkQuery
) -> None:
    def exhaust(t: Tx) -> None:
        # Two attempts that failed, their Work back to ready: exhausted at commit.
        for work_id in ("w010", "w011"):
            x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1))
            x = t.claim(x.id, "runner", t.now + 30 * 10**9)
            terminate(t, x.id, ExecutionState.FAILED, WorkState.READY)

    store.transact(Guard(), exhaust)
    if connections["default"].vendor == "postgresql":
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE conduit_work")
    expected = store.view(lambda t: select_facets(query, t.works()))
    assert 0 < expected.exhausted <= 2
    facets: list[WorkFacets] = []
    sent = view_statements(store, lambda t: facets.append(t.work_facets(query)), _reads_work)
    assert facets == [expected]
    [(sql, params)] = sent
    plan = plan_of(sql, params)
    assert "work_exhausted_" in plan, (sql, plan)
    assert "work_facets_triage" not in plan, (sql, plan)
