"""Everything about a correlation key reads the event_key index (migration 0021): the
Events carrying a key, newest first, first page and before a cursor, cost the Events
carrying it, never a scan of every Event. Migration 0021's backfill gives the Events
accepted before it their key rows. Plans as in test_runtime_page_plans."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator

import pytest
from django.db import connection, connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support import FakeClock, key, make_event
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

backfill = importlib.import_module("storage.migrations.0021_event_keys").backfill


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def _fill(store: OrmStore) -> None:
    def fill(t: Tx) -> None:
        for n in range(40):
            keys = [key(f"o-{n % 5}"), key(f"p-{n}")] if n % 2 else []
            t.accept_event(make_event(f"e{n:02}", keys=keys))

    store.transact(Guard(), fill)


def test_a_keys_events_are_read_through_the_key_index(store: OrmStore) -> None:
    _fill(store)
    o1 = key("o-1")
    reads: dict[str, Callable[[Tx], object]] = {
        "newest": lambda t: t.find_events(key=o1, newest_first=True, limit=5),
        "older": lambda t: t.find_events(key=o1, before=30, newest_first=True, limit=5),
    }
    for what, fn in reads.items():
        [(sql, params)] = view_statements(store, fn, lambda sql: "conduit_event" in sql)
        plan = plan_of(sql, params, no_bitmap=True)
        assert "INDEX event_key " in plan or "using event_key " in plan, (what, sql, plan)
        if connections["default"].vendor == "sqlite":
            # The Events themselves by their sequence (the primary key), never a scan.
            assert "SCAN conduit_event " not in plan + " ", (what, sql, plan)
        else:
            assert "Seq Scan" not in plan, (what, sql, plan)


def test_the_backfill_gives_earlier_events_their_key_rows(store: OrmStore) -> None:
    _fill(store)
    want = store.view(lambda t: [e.id for e in t.find_events(key=key("o-3"))])
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM conduit_event_key")
    assert store.view(lambda t: t.find_events(key=key("o-3"))) == []

    class Editor:
        def __init__(self) -> None:
            self.connection = connection

    backfill(None, Editor())
    assert store.view(lambda t: [e.id for e in t.find_events(key=key("o-3"))]) == want
    assert len(want) == 4
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM conduit_event_key")
        assert cursor.fetchone()[0] == 40  # two keys on each of the 20 keyed Events
