"""The causation page's reads (console/causation/reads.py) are index reads on each
engine: Events by ID (the unique ID index), the Events some caused (event_causation:
one range per cause, no scan of every Event) and the count of a Work's Events after a
cursor (event_work and event_routed_work). Plans as in test_event_actor_plan."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support import make_event, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


def test_causes_effects_and_counts_are_index_reads(orm_store: OrmStore) -> None:
    """2,000 Events, a few of them w1's or caused by the ones asked about: each read
    goes through the index that selects them, never every Event. PostgreSQL's
    statistics are taken, as autovacuum keeps them on a live database; SQLite's are
    not, as nothing here runs ANALYZE (with them, SQLite would walk the sequence for
    "caused", most Events having no cause). No sort or bitmap priced out: these are
    IN lists."""

    def fill(t: Tx) -> None:
        t.put_work(make_work("w1"))
        for n in range(2000):
            cause = f"e{n - 1:04}" if n % 500 == 1 else ""
            work_id = "w1" if n % 100 == 0 else ""
            t.accept_event(make_event(f"e{n:04}", work_id=work_id, causation_id=cause))

    store = orm_store
    store.transact(Guard(), fill)
    sqlite = connections["default"].vendor == "sqlite"
    if not sqlite:
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE conduit_event")
    first = store.view(lambda t: t.event("e0000").sequence)
    reads: dict[str, tuple[Callable[[Tx], object], tuple[str, ...]]] = {
        "by id": (
            lambda t: t.find_events(ids=["e0007", "e1031"]),
            ("sqlite_autoindex_conduit_event_1 (id=?", "Index Cond: ((id)::text = ANY"),
        ),
        "caused": (
            lambda t: t.find_events(causes=["e0000", "e0500"], limit=101),
            ("event_causation",),
        ),
        "count caused": (
            lambda t: t.count_events(causes=["e0000", "e0500"]),
            ("event_causation",),
        ),
        "count of a Work": (
            lambda t: t.count_events(work_id="w1", after=first + 1000),
            ("event_work", "event_routed_work"),
        ),
    }
    for what, (fn, indexes) in reads.items():
        [(sql, params)] = view_statements(store, fn, lambda sql: "conduit_event" in sql)
        plan = plan_of(sql, params)
        if sqlite:
            assert "SCAN" not in plan, (what, sql, plan)
        else:
            assert "Seq Scan" not in plan, (what, sql, plan)
        assert any(i in plan for i in indexes), (what, sql, plan)
