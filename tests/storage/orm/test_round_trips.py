"""The round trips of benchmark 1's transaction (bench/throughput.py): accept an Event
for a Work, claim its pending attempt, mark the Event routed; 1 and 10 of them per
transaction. Counted as the calls that reach the driver (an ``executemany`` is one, a
text of several statements is one; BEGIN and COMMIT are not seen), on both engines,
so a change that adds a statement per transaction or per operation shows here.

PostgreSQL, per transaction: the writers' lock, the metadata read (with the Event
sequence's last value), the flush (every write, the version log's rows, the tally,
the series tally, the clock row, COMMIT and the unlock in one text); per operation:
the Event's delivery lookup and the attempt, its Work and the Work's attempts. Before
issue 22's round-trip work: 13 and 58 (and COMMIT). The COMMIT in the flush's text
leans on psycopg, pinned here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from storage import (
    Binding,
    Conflict,
    CorrelationKey,
    Event,
    Execution,
    Guard,
    Payload,
    Tx,
    Work,
)
from storage.orm import OrmStore

from ..support import FakeClock

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

PAYLOAD = Payload("bench.order", b'{"id": "ord_0000"}')
# (operations per transaction) -> calls per engine.
EXPECTED = {
    "postgresql": {1: 7, 10: 43},
    # No lock statements (BEGIN IMMEDIATE), the sequence read, one executemany per table
    # and per tally upsert: the series tally's (issue 22) added one per transaction
    # (it was 12 and 48), which costs no round trip in-process; the version log's
    # insert (issue 32) one more (it was 13 and 49). On PostgreSQL it joins the
    # flush's text: no round trip.
    "sqlite": {1: 14, 10: 50},
}


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


def _prepare(store: OrmStore, count: int) -> None:
    def make(tx: Tx) -> None:
        for i in range(count):
            tx.put_work(
                Work(
                    id=f"w{i}",
                    kind="bench.order",
                    keys=(CorrelationKey("bench", f"ord_{i}"),),
                    context=PAYLOAD,
                )
            )
            tx.put_execution(
                Execution(id=f"x{i}", work_id=f"w{i}", attempt=1, binding=Binding("b", "python"))
            )

    store.transact(Guard(), make)


def _operations(tx: Tx, start: int, count: int) -> None:
    for i in range(start, start + count):
        event = Event(f"e{i}", "bench", f"e{i}", "bench.paid", work_id=f"w{i}", payload=PAYLOAD)
        stored, _ = tx.accept_event(event)
        tx.claim(f"x{i}", "worker", tx.now + 10**9)
        tx.mark_routed(stored.id, f"w{i}", "routed")


def _calls(store: OrmStore, start: int, count: int) -> list[str]:
    seen: list[str] = []

    def count_call(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(" ".join(sql.split())[:80])
        return execute(sql, params, many, context)

    with connections[store.using].execute_wrapper(count_call):
        store.transact(Guard(), lambda tx: _operations(tx, start, count))
    return seen


def test_benchmark_ones_transaction_takes_a_pinned_number_of_round_trips(
    store: OrmStore,
) -> None:
    _prepare(store, 12)
    store.transact(Guard(), lambda tx: _operations(tx, 0, 1))  # the sequence has moved
    expected = EXPECTED[connections[store.using].vendor]
    one = _calls(store, 1, 1)
    assert len(one) == expected[1], one
    ten = _calls(store, 2, 10)
    assert len(ten) == expected[10], ten


def test_events_of_one_transaction_take_consecutive_sequences_and_the_next_follows(
    store: OrmStore,
) -> None:
    _prepare(store, 6)
    first = store.transact(Guard(), lambda tx: _sequences(tx, 0, 1))
    batch = store.transact(Guard(), lambda tx: _sequences(tx, 1, 3))

    def fail_after_writing(tx: Tx) -> None:
        _sequences(tx, 4, 1)
        raise RuntimeError("the callback fails after its Event was written")

    with pytest.raises(RuntimeError):
        store.transact(Guard(), fail_after_writing)
    after = store.transact(Guard(), lambda tx: _sequences(tx, 5, 1))
    assert batch == [first[0] + 1, first[0] + 2, first[0] + 3]
    # A rolled-back transaction may leave a gap, never a repeat.
    assert after[0] > batch[-1]
    stored = store.view(lambda tx: [e.sequence for e in tx.events()])
    assert stored == [*first, *batch, *after]


def _sequences(tx: Tx, start: int, count: int) -> list[int]:
    out = []
    for i in range(start, start + count):
        event = Event(f"e{i}", "bench", f"e{i}", "bench.paid", work_id=f"w{i}", payload=PAYLOAD)
        stored, _ = tx.accept_event(event)
        out.append(stored.sequence)
    tx.flush()  # type: ignore[attr-defined]  # the INSERTs reach the database
    return out


@pytest.mark.postgres_only
def test_django_commits_nothing_after_a_commit_sent_in_a_statement_text() -> None:
    """What ``COMMIT_AND_UNLOCK`` leans on: atomic() exits without an error and without
    a second COMMIT when the transaction already ended inside it (psycopg skips a
    commit on an idle connection), and what the text wrote is committed."""
    from django.db import transaction

    conn = connections["default"]
    with transaction.atomic(using="default"), conn.cursor() as cursor:
        cursor.execute("INSERT INTO conduit_kv (namespace, key, value) VALUES ('n', 'k', '')")
        cursor.execute("COMMIT")
        assert conn.connection is not None
        assert conn.connection.info.transaction_status.name == "IDLE"
    with connections["view"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM conduit_kv WHERE namespace = 'n'")
        assert cursor.fetchone()[0] == 1
    connections["view"].close()


@pytest.mark.postgres_only
def test_a_conflict_in_the_committing_text_commits_nothing_and_releases_the_lock(
    store: OrmStore,
) -> None:
    """The flush's text fails at a write: the server skips its COMMIT and unlock, the
    transaction rolls back and the lock is released by its own statement after."""
    from storage.orm.store import WRITERS_LOCK

    _prepare(store, 1)

    def callback(tx: Tx) -> None:
        tx.put_work(Work(id="w9", kind="bench.order", keys=(CorrelationKey("bench", "taken"),)))
        with connections["default"].cursor() as cursor:  # behind the buffer's back
            cursor.execute(
                "INSERT INTO conduit_key (source, external_id, work_id, ordinal) "
                "VALUES ('bench', 'taken', 'somebody-else', 0)"
            )

    with pytest.raises(Conflict):
        store.transact(Guard(), callback)
    with connections["view"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = %s"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [WRITERS_LOCK],
        )
        assert cursor.fetchone()[0] == 0, "the writers' lock outlived the failed text"
    connections["view"].close()
    assert "w9" not in store.view(lambda tx: [w.id for w in tx.works()])
    store.transact(Guard(), lambda tx: _operations(tx, 0, 1))  # the next writer goes on
