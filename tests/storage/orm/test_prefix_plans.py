"""``find_ids`` is an index range scan on each engine, for every ID kind: the plan of
each statement it sends names an index and needs no sort, so its cost follows the
matches (at most the limit) and not the table. SQLite plans with EXPLAIN QUERY PLAN;
PostgreSQL with EXPLAIN, sequential scans and sorts priced out (on a handful of rows
it would rightly prefer one, and the statistics are whatever earlier tests left) so
the test asks whether an index can serve the statement, in its order, at all.
The Event ID keeps the database's collation there (ICU en-US on the test cluster),
which is why the statement uses the byte-wise pattern operators."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support import FakeClock, make_event, make_scope, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def test_each_kind_is_one_indexed_range_read_without_a_sort(store: OrmStore) -> None:
    def fill(t: Tx) -> None:
        t.put_scope(make_scope("needle-scope"))
        for n in range(20):
            t.put_work(make_work(f"needle-{n:02}"))
            t.accept_event(make_event(f"needle-e{n:02}"))

    store.transact(Guard(), fill)
    statements = view_statements(
        store, lambda t: t.find_ids("needle-0", 5), lambda sql: "~>=~" in sql or ">= %s" in sql
    )
    assert len(statements) == 7, [s for s, _ in statements]  # one per kind
    vendor = connections["default"].vendor
    for sql, params in statements:
        plan = plan_of(sql, params, no_sort=True)
        if vendor == "sqlite":
            assert " USING " in plan, (sql, plan)
            assert "INDEX" in plan, (sql, plan)
            assert "TEMP B-TREE" not in plan, (sql, plan)
        else:
            assert "Index" in plan, (sql, plan)
            assert "Seq Scan" not in plan, (sql, plan)
            assert "Sort" not in plan, (sql, plan)
