"""The audit by person reads the event_actor index (migration 0019) on each engine: an
operator's Events, newest first, first page and after a cursor, are one range of the
index in its own order, with no sort and no scan of every Event (a million-Event
history holds a few thousand operators' actions). Plans as in test_runtime_page_plans:
EXPLAIN QUERY PLAN on SQLite, EXPLAIN with sequential and bitmap scans priced out on
PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.db import connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support import FakeClock, make_event
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def test_an_actors_events_are_one_range_of_the_actor_index(store: OrmStore) -> None:
    def fill(t: Tx) -> None:
        for n in range(40):
            source, actor = ("core.manual", f"operator:u{n % 4}") if n % 2 else ("gh", "")
            t.accept_event(make_event(f"e{n:02}", source=source, actor=actor))

    store.transact(Guard(), fill)
    alice = ["operator:u1"]
    reads: dict[str, Callable[[Tx], object]] = {
        "newest": lambda t: t.find_events(actors=alice, newest_first=True, limit=5),
        "older": lambda t: t.find_events(actors=alice, before=30, newest_first=True, limit=5),
        "two actors": lambda t: t.find_events(actors=[*alice, "operator:u3"], limit=5),
    }
    vendor = connections["default"].vendor
    for what, fn in reads.items():
        [(sql, params)] = view_statements(store, fn, lambda sql: "conduit_event" in sql)
        plan = plan_of(sql, params, no_bitmap=True, no_sort=what != "two actors")
        assert "INDEX event_actor" in plan or "using event_actor " in plan, (what, sql, plan)
        if vendor == "sqlite":
            assert "SEARCH" in plan, (what, sql, plan)
            if what != "two actors":  # two ranges merge by a sort of what they hold
                assert "TEMP B-TREE" not in plan, (what, sql, plan)
        else:
            assert "Seq Scan" not in plan, (what, sql, plan)
            if what != "two actors":
                assert "Sort" not in plan, (what, sql, plan)


def test_the_newest_events_of_a_type_are_one_range_of_the_type_index(store: OrmStore) -> None:
    """The Work page's near misses of a Wait (console.works.waiting): the newest
    Events of the awaited types, a bounded read of event_type without a sort."""

    def fill(t: Tx) -> None:
        for n in range(40):
            t.accept_event(make_event(f"e{n:02}", type="approval.granted" if n % 3 else "x.y"))

    store.transact(Guard(), fill)
    [(sql, params)] = view_statements(
        store,
        lambda t: t.find_events(types=["approval.granted"], newest_first=True, limit=20),
        lambda sql: "conduit_event" in sql,
    )
    plan = plan_of(sql, params, no_bitmap=True, no_sort=True)
    assert "INDEX event_type" in plan or "using event_type " in plan, (sql, plan)
    if connections["default"].vendor == "sqlite":
        assert "TEMP B-TREE" not in plan, (sql, plan)
    else:
        assert "Seq Scan" not in plan, (sql, plan)
        assert "Sort" not in plan, (sql, plan)
