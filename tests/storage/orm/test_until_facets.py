"""The facets and count of a Work list bounded by ``until`` alone (a settled list,
which every open tab polls) come from the Work tally less the Work updated since the
bound (``storage.meaning.tally.complements``): the one statement on the Work rows is
an index range of update times from the bound on, so its cost follows the Work
updated since, not the history the bound keeps. The same read serves ``since``
alone. The exhausted list's facets come from the exhausted Work's own tally rows
(``tally.answers_exhausted``): no statement on the Work rows at all (they were a
GROUP BY over every exhausted Work: 3,200 of a million, benchmark 7); bounded by
``until``, the tally's less the exhausted Work updated since the bound.

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
# Not bounded; bounded at the moment they became exhausted (both are after the bound:
# subtracted); bounded just after it (none is: nothing subtracted).
@pytest.mark.parametrize("offset", [None, 0, 1], ids=["now", "until-then", "until-after"])
def test_the_exhausted_facets_come_from_the_tally(
    store: OrmStore, query: WorkQuery, offset: int | None
) -> None:
    def exhaust(t: Tx) -> None:
        # Two attempts that failed, their Work back to ready: exhausted at commit.
        for work_id in ("w010", "w011"):
            x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1))
            x = t.claim(x.id, "runner", t.now + 30 * 10**9)
            terminate(t, x.id, ExecutionState.FAILED, WorkState.READY)

    store.transact(Guard(), exhaust)
    if offset is not None:  # a settled exhausted list
        then = store.view(lambda t: t.work("w010").updated_at)
        query = replace(query, updated_before=then + offset)
    expected = store.view(lambda t: select_facets(query, t.works()))
    if offset == 0:
        assert expected.exhausted == 0
    else:
        assert 0 < expected.exhausted <= 2
    facets: list[WorkFacets] = []
    sent = view_statements(store, lambda t: facets.append(t.work_facets(query)), _reads_work)
    assert facets == [expected]
    if offset is None:
        assert sent == []  # the tally alone
    else:  # the tally's, less the exhausted Work updated since the bound: one range
        [(sql, params)] = sent
        assert query.updated_before in params, (sql, params)
