"""EN-09: every read and scan surfaces a backend error instead of returning empty results.

A missing table is what a damaged or half-migrated database looks like to the store:
each read below, through a View and through a transaction, must raise ``Unavailable``
(a ``StorageError``), never answer ``[]``, ``0`` or ``None`` as if the store were empty.
The tables are renamed away, not dropped: the test database is shared by the whole
pytest process, so each test puts them back (and checks the schema is exactly as it
was) before pytest-django flushes it. SQLite only: this proves the ORM backend's error
boundary on the engine the suite's file database runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.db import connections

from storage import (
    CorrelationKey,
    Event,
    Guard,
    Scope,
    StorageError,
    Tx,
    Unavailable,
    Work,
    WorkQuery,
)
from storage.orm import OrmStore

from ..support import FakeClock

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    # sqlite_master and SQLite's "no such table" message; deselected on PostgreSQL.
    pytest.mark.sqlite_only,
]

EVENT_TABLE = "conduit_event"
WORK_TABLE = "conduit_work"
KEY = CorrelationKey("test.hooks", "issue-1")
TALLY_TABLE = "conduit_work_tally"
# A selection the tally cannot answer (a source filter): counted from the Work rows.
BY_SOURCE = WorkQuery(sources=frozenset({KEY.source}))

Read = Callable[[Tx], object]

# (table the read needs, read). Each would return something nonempty on the seeded
# store, so a read that swallowed the error could not pass for an empty one.
READS: list[tuple[str, Read]] = [
    (EVENT_TABLE, lambda t: t.events()),
    (EVENT_TABLE, lambda t: t.unrouted_events()),
    (EVENT_TABLE, lambda t: t.work_events("w1")),
    (EVENT_TABLE, lambda t: t.scope_events(["s1"])),
    (EVENT_TABLE, lambda t: t.latest_sequence()),
    (EVENT_TABLE, lambda t: t.event("e1")),
    (EVENT_TABLE, lambda t: t.event_by_delivery("test.hooks", "d-e1")),
    (WORK_TABLE, lambda t: t.works()),
    (WORK_TABLE, lambda t: t.live_works()),
    (WORK_TABLE, lambda t: t.query_works(WorkQuery())),
    (TALLY_TABLE, lambda t: t.count_works(WorkQuery())),
    (TALLY_TABLE, lambda t: t.work_facets(WorkQuery())),
    (WORK_TABLE, lambda t: t.count_works(BY_SOURCE)),
    (WORK_TABLE, lambda t: t.work_facets(BY_SOURCE)),
    (WORK_TABLE, lambda t: t.work("w1")),
    (WORK_TABLE, lambda t: t.work_by_key(KEY)),
]
READ_IDS = [
    "events",
    "unrouted_events",
    "work_events",
    "scope_events",
    "latest_sequence",
    "event",
    "event_by_delivery",
    "works",
    "live_works",
    "query_works",
    "count_works",
    "work_facets",
    "count_works_by_source",
    "work_facets_by_source",
    "work",
    "work_by_key",
]


def _schema() -> list[tuple[str, str, str, str | None]]:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        return list(cursor.fetchall())


@contextmanager
def table_missing(table: str) -> Iterator[None]:
    """Rename ``table`` away for the block, then back whatever happened; the schema
    must come back byte for byte (other tables' foreign keys follow the renames)."""
    before = _schema()
    hidden = f"{table}__hidden_by_test"
    with connections["default"].cursor() as cursor:
        cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{hidden}"')
    try:
        yield
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(f'ALTER TABLE "{hidden}" RENAME TO "{table}"')
        assert _schema() == before, f"renaming {table} back did not restore the schema"


@pytest.fixture
def store() -> Iterator[OrmStore]:
    """An ORM store holding one Work (with a key), a Scope and an unrouted Event of
    both, so every read in READS has something to return."""
    opened = OrmStore(clock=FakeClock())

    def seed(t: Tx) -> None:
        t.put_scope(Scope(id="s1", name="s1"))
        t.put_work(Work(id="w1", kind="conduit.test", keys=(KEY,), scope_id="s1"))
        t.accept_event(
            Event(
                id="e1",
                source="test.hooks",
                delivery_id="d-e1",
                type="test.happened",
                work_id="w1",
            )
        )
        t.set_event_scope("e1", "s1")

    opened.transact(Guard(), seed)
    yield opened
    opened.close()


def test_unavailable_is_a_storage_error() -> None:
    assert issubclass(Unavailable, StorageError)


@pytest.mark.parametrize(("table", "read"), READS, ids=READ_IDS)
def test_a_view_read_raises_unavailable_when_its_table_is_missing(
    store: OrmStore, table: str, read: Read
) -> None:
    with table_missing(table), pytest.raises(Unavailable, match=f"no such table: {table}"):
        store.view(read)
    assert store.view(read), "the read failed after the table came back"


@pytest.mark.parametrize(("table", "read"), READS, ids=READ_IDS)
def test_a_transaction_read_raises_unavailable_when_its_table_is_missing(
    store: OrmStore, table: str, read: Read
) -> None:
    with table_missing(table), pytest.raises(Unavailable, match=f"no such table: {table}"):
        store.transact(Guard(), read)
    assert store.transact(Guard(), read), "the read failed after the table came back"
