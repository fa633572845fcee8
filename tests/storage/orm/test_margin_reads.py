"""The Work tally's margins answer the selections by states alone, and only those:
the facets of the unfiltered Work list read rows keyed by state and value (states x
distinct values), none of the rows per (state, Scope, kind), whose number is states
x Scopes x kinds x values; a selection by Scope or kind reads those and no margin.
The counts likewise, from the Work rows alone (``tally.total``). Shown by spoiling
one kind of row and reading through the other, and by the plans: each part of a
statement is a range of the tally's unique index."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.db import connections

from storage import Guard, Tx, WorkQuery, WorkState, select_facets, select_works
from storage.meaning import tally
from storage.orm import OrmStore
from storage.orm import tally as tally_sql

from ..support import FakeClock, make_scope, make_work

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

SCOPES = [f"s{n}" for n in range(6)]
KINDS = [f"test.k{n}" for n in range(5)]
BY_STATES = [WorkQuery(), WorkQuery(states=frozenset({WorkState.READY}))]
BY_KEYS = [
    WorkQuery(scope_id="s1"),
    WorkQuery(kind="test.k2"),
    WorkQuery(scope_ids=frozenset({""})),
]


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())

    def fill(t: Tx) -> None:
        for scope in SCOPES:
            t.put_scope(make_scope(scope))
        n = 0
        for scope in ["", *SCOPES]:
            for kind in KINDS:
                for _ in range(2):
                    n += 1
                    work = t.put_work(make_work(f"w{n:03}", scope_id=scope, kind=kind))
                    if n % 3 == 0:
                        t.put_work(replace(work, state=WorkState.RUNNING))

    opened.transact(Guard(), fill)
    yield opened
    opened.close()


def _spoil(margins: bool) -> None:
    """Add 1,000 to every margin row (or every other row): a read of them is wrong."""
    test = "LIKE" if margins else "NOT LIKE"
    with connections["default"].cursor() as cursor:
        cursor.execute(
            f"UPDATE conduit_work_tally SET n = n + 1000 WHERE dimension {test} %s",  # noqa: S608
            [tally.MARGIN + "%"],
        )


def test_a_selection_by_states_alone_reads_only_the_margins(store: OrmStore) -> None:
    works = store.view(lambda t: t.works())
    _spoil(margins=False)
    for query in BY_STATES:
        assert store.view(lambda t, q=query: t.work_facets(q)) == select_facets(query, works)
        assert store.view(lambda t, q=query: t.count_works(q)) == len(select_works(query, works))


def test_a_selection_by_scope_or_kind_reads_no_margin(store: OrmStore) -> None:
    works = store.view(lambda t: t.works())
    _spoil(margins=True)
    for query in BY_KEYS:
        assert store.view(lambda t, q=query: t.work_facets(q)) == select_facets(query, works)
        assert store.view(lambda t, q=query: t.count_works(q)) == len(select_works(query, works))


def test_the_margins_are_few_and_each_part_is_an_index_range(store: OrmStore) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT dimension, state, scope_id, kind FROM conduit_work_tally")
        rows = cursor.fetchall()
    margins = [r for r in rows if r[0].startswith(tally.MARGIN)]
    combinations = [r for r in rows if not r[0].startswith(tally.MARGIN)]
    assert {(r[2], r[3]) for r in margins} == {("", "")}
    # 2 states x (1 + 5 kinds + 7 Scopes + 5 sources (the kinds) + 1 executor + 1
    # group) margins, against 4 rows per (state, Scope, kind) in use: 232 here.
    assert len(margins) == 2 * (1 + 5 + 7 + 5 + 1 + 1)
    in_use = {(r[1], r[2], r[3]) for r in combinations}
    assert len(combinations) == 4 * len(in_use) > 5 * len(margins)

    connection = connections["default"]
    statements = [
        *(tally_sql.facets_statement(q) for q in [*BY_STATES, *BY_KEYS]),
        *(tally_sql.total_statement(q, e) for q in [*BY_STATES, *BY_KEYS] for e in (False, True)),
    ]
    for sql, params in statements:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
                plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
                assert "SCAN" not in plan, (sql, plan)
                assert "INDEX" in plan, (sql, plan)
                assert "(dimension=?" in plan, (sql, plan)
            else:
                cursor.execute("SET enable_seqscan = off")
                try:
                    cursor.execute("EXPLAIN " + sql, params)
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                finally:
                    cursor.execute("RESET enable_seqscan")
                assert "Seq Scan" not in plan, (sql, plan)
                assert "work_tally_key" in plan, (sql, plan)
