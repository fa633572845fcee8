"""What only PostgreSQL can prove: the writers' lock, SERIALIZABLE as the second line,
SQLSTATE translation, binary ordering under a linguistic default collation, and a dump
taken in one snapshot.

The shared cases and the multi-process tests already run on PostgreSQL when
DATABASE_URL selects it; these are the engine's own mechanisms. The throwaway cluster
of ``scripts/pg-throwaway.sh`` has an ICU en-US default collation, so the ordering test
would fail without the "C" collation on the ID and key columns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, IntegrityError, OperationalError, connections
from django.db.utils import InternalError
from pytest_django import Settings as SettingsWrapper

import storage.durability.postgres
from storage import Conflict, Guard, NotFound, ReadOnly, Tx, Unavailable, Work
from storage.durability.postgres import pg_dump_snapshot, pg_dump_with, pg_restore_dump
from storage.orm import OrmStore
from storage.orm.errors import translate_errors
from storage.orm.store import WRITERS_LOCK

from ..support import BLOCK_TIMEOUT, FakeClock, Worker, make_work, payload
from ..support.proc import finish, spawn, wait_for

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock: FakeClock) -> Iterator[OrmStore]:
    opened = OrmStore(clock=clock)
    yield opened
    opened.close()


def writers_lock_holders() -> int:
    """Sessions holding the writers' lock, seen from a connection that never takes it."""
    with connections["view"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = %s"
            # pg_locks is the cluster's: another test database (an xdist worker's) may
            # hold its own writers' lock meanwhile.
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [WRITERS_LOCK],
        )
        count: int = cursor.fetchone()[0]
    connections["view"].close()
    return count


# ---------------------------------------------------------------- SQLSTATE translation


def _raised_through_django(
    driver_error: Exception, wrapper: type[DatabaseError], *, writing: bool = False
) -> Exception:
    """What Django raises for a psycopg error: its own class, the driver's as cause."""
    try:
        with translate_errors(writing=writing):
            raise wrapper(str(driver_error)) from driver_error
    except Exception as exc:
        return exc
    raise AssertionError("translate_errors swallowed the error")


@pytest.mark.parametrize(
    ("driver_error", "wrapper", "expected"),
    [
        (psycopg.errors.SerializationFailure("40001"), OperationalError, Conflict),
        (psycopg.errors.DeadlockDetected("40P01"), OperationalError, Conflict),
        (psycopg.errors.UniqueViolation("23505"), IntegrityError, Conflict),
        (psycopg.errors.ReadOnlySqlTransaction("25006"), InternalError, ReadOnly),
        (psycopg.errors.LockNotAvailable("55P03"), OperationalError, Unavailable),
        (psycopg.errors.AdminShutdown("57P01"), OperationalError, Unavailable),
    ],
    ids=["serialization", "deadlock", "unique", "read-only", "lock-timeout", "shutdown"],
)
def test_driver_errors_become_storage_errors_by_sqlstate(
    driver_error: Exception, wrapper: type[DatabaseError], expected: type[Exception]
) -> None:
    raised = _raised_through_django(driver_error, wrapper)

    assert type(raised) is expected
    assert isinstance(raised.__cause__, wrapper)


def test_a_database_that_refuses_writes_is_unavailable_to_a_write_transaction() -> None:
    # In a View the refusal is the caller's mistake (ReadOnly, above); in a write
    # transaction it is the database's state (a standby, read-only maintenance): retried.
    refused = psycopg.errors.ReadOnlySqlTransaction("25006")
    raised = _raised_through_django(refused, InternalError, writing=True)

    assert type(raised) is Unavailable
    assert "refuses writes (read-only transaction)" in str(raised)


def test_a_write_into_a_read_only_database_is_unavailable(store: OrmStore) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SET default_transaction_read_only = on")
    try:
        with pytest.raises(Unavailable, match="read-only transaction"):
            store.transact(Guard(), lambda tx: tx.put_work(Work(id="ro", kind="t.ro")))
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = off")
    with pytest.raises(NotFound):
        store.view(lambda tx: tx.work("ro"))


# ---------------------------------------------------------------- the writers' lock


@pytest.mark.parametrize("outcome", ["commit", "raise", "conflict"])
def test_the_writers_lock_is_held_for_the_transaction_and_released_after(
    store: OrmStore, outcome: str
) -> None:
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w1")))
    held: list[int] = []

    def callback(tx: Tx) -> None:
        held.append(writers_lock_holders())
        if outcome == "raise":
            raise RuntimeError("callback failed")
        if outcome == "conflict":
            tx.put_work(make_work("w1"))  # already exists: Conflict
        tx.put_work(make_work("w2"))

    try:
        store.transact(Guard(), callback)
    except (RuntimeError, Conflict):
        assert outcome != "commit"

    assert held == [1], "the writers' lock was not held inside the transaction"
    assert writers_lock_holders() == 0, f"the writers' lock outlived a {outcome}"


def test_a_view_never_takes_the_writers_lock(store: OrmStore) -> None:
    assert store.view(lambda tx: writers_lock_holders()) == 0


def test_the_lock_dies_with_a_broken_session(store: OrmStore) -> None:
    """A writer whose connection dies mid-transaction (server restart, network) must
    not leave the lock behind: the next writer gets it at once."""
    pid: list[int] = []
    terminated = threading.Event()

    def doomed(tx: Tx) -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid.append(cursor.fetchone()[0])
        if not terminated.wait(BLOCK_TIMEOUT):
            raise RuntimeError("never terminated")
        tx.put_work(make_work("lost"))

    worker = Worker(lambda: store.transact(Guard(), doomed), name="doomed")
    deadline = time.monotonic() + BLOCK_TIMEOUT
    while not pid and time.monotonic() < deadline:
        time.sleep(0.01)
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid[0]])
    terminated.set()
    assert worker.join(), "the doomed writer never finished"
    assert isinstance(worker.error, Unavailable), f"a dead session gave {worker.error!r}"

    started = time.monotonic()
    store.transact(Guard(), lambda tx: tx.put_work(make_work("next")))
    assert time.monotonic() - started < 2.0, "the next writer waited for a dead session"
    assert store.view(lambda tx: [w.id for w in tx.works()]) == ["next"]


def test_a_connection_lost_before_commit_releases_the_lock(store: OrmStore) -> None:
    def lose_the_connection(tx: Tx) -> None:
        tx.put_work(make_work("w1"))
        connections["default"].connection.close()

    with pytest.raises(Unavailable):
        store.transact(Guard(), lose_the_connection)

    # The server ends a closed session, and releases its locks, when its backend reads
    # the end of the socket: soon, not at once (the suite saw it held once, under load).
    started = time.monotonic()
    while writers_lock_holders() and time.monotonic() - started < 2.0:
        time.sleep(0.02)
    assert writers_lock_holders() == 0, "the lost session still holds the lock after 2 s"
    started = time.monotonic()
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w2")))
    assert time.monotonic() - started < 2.0, "the next writer waited for the lost session"
    assert store.view(lambda tx: [w.id for w in tx.works()]) == ["w2"]


def test_a_failed_unlock_ends_the_session_so_the_lock_goes_with_it(
    store: OrmStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Failure injection: the unlock statement fails on a live session. The session is
    closed (not handed back to the pool holding the lock). (A transaction that writes
    nothing: a writing one releases the lock in its COMMIT's text, test_round_trips.)"""
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w1")))  # the clock moved
    conn = connections["default"]
    real_cursor = conn.cursor

    class FailingUnlock:
        def __init__(self) -> None:
            self._cursor = real_cursor()

        def __enter__(self) -> FailingUnlock:
            return self

        def __exit__(self, *exc: object) -> None:
            self._cursor.close()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._cursor, name)

        def execute(self, sql: str, params: object = None) -> Any:
            if "pg_advisory_unlock" in sql:
                raise OperationalError("injected: the unlock failed")
            return self._cursor.execute(sql, params)

    def callback(tx: Tx) -> None:
        tx.works()  # nothing to write, not even the clock row (the clock stands still)
        monkeypatch.setattr(conn, "cursor", FailingUnlock)

    store.transact(Guard(), callback)
    monkeypatch.undo()

    assert "writers' lock was not released" in caplog.text
    assert writers_lock_holders() == 0, "a session kept the writers' lock"
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w2")))
    assert store.view(lambda tx: [w.id for w in tx.works()]) == ["w1", "w2"]


class UnlockedStore(OrmStore):
    """Negative control: writers without the advisory lock, SERIALIZABLE alone."""

    @contextmanager
    def _writers_serialised(self) -> Iterator[None]:
        yield


def _overlapping_increments(store: OrmStore) -> list[BaseException | None]:
    """Two transactions that each read a counter, then wait (up to 1 s) for the other
    to have read it too, then write it back plus one."""
    entered = {"a": threading.Event(), "b": threading.Event()}
    calls = {"a": 0, "b": 0}

    def increment(me: str, other: str) -> Callable[[], object]:
        def callback(tx: Tx) -> None:
            calls[me] += 1
            try:
                count = int(tx.kv_get("race", "count"))
            except NotFound:
                count = 0
            entered[me].set()
            entered[other].wait(1.0)
            tx.kv_put("race", "count", str(count + 1).encode())

        return lambda: store.transact(Guard(), callback)

    workers = [Worker(increment("a", "b"), "a"), Worker(increment("b", "a"), "b")]
    assert all(w.join() for w in workers), "an increment never finished"
    assert calls == {"a": 1, "b": 1}, f"a callback ran more than once: {calls}"
    return [w.error for w in workers]


def test_serializable_alone_turns_overlapping_writers_into_one_conflict() -> None:
    """Without the lock, SERIALIZABLE still loses no update: one of two overlapping
    read-modify-writes fails with Conflict (40001), not retried."""
    store = UnlockedStore(clock=FakeClock())
    errors = _overlapping_increments(store)

    assert sorted(type(e).__name__ for e in errors) == ["Conflict", "NoneType"]
    assert store.view(lambda tx: tx.kv_get("race", "count")) == b"1"


def test_the_writers_lock_queues_overlapping_writers_instead(store: OrmStore) -> None:
    errors = _overlapping_increments(store)

    assert errors == [None, None], f"queued writers failed: {errors}"
    assert store.view(lambda tx: tx.kv_get("race", "count")) == b"2"


def test_a_write_that_bypasses_the_lock_makes_a_racing_transact_conflict(
    store: OrmStore,
) -> None:
    """SERIALIZABLE as defence in depth: a row changed behind the lock's back (here a
    raw UPDATE) after the transaction's snapshot -> 40001 -> Conflict, callback once."""
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w1")))
    read, go = threading.Event(), threading.Event()
    calls: list[int] = []

    def callback(tx: Tx) -> None:
        calls.append(1)
        work = tx.work("w1")
        read.set()
        go.wait(BLOCK_TIMEOUT)
        tx.put_work(replace(work, context=payload(b'{"n": 2}')))

    worker = Worker(lambda: store.transact(Guard(), callback), name="racer")
    assert read.wait(BLOCK_TIMEOUT)
    with connections["default"].cursor() as cursor:
        cursor.execute("UPDATE conduit_work SET kind = kind WHERE id = 'w1'")
    go.set()
    assert worker.join()

    assert isinstance(worker.error, Conflict), f"the racing transact gave {worker.error!r}"
    assert "40001" in str(worker.error)
    assert calls == [1], "transact retried its callback"


# ---------------------------------------------------------------- ordering


TRICKY = ["B", "a", "a-b", "ab", "a_b", "A", "Z", "z", "é", "e", "f", "a b", "a.b", "10", "9"]


def test_ids_and_kv_keys_order_in_binary_under_any_default_collation(store: OrmStore) -> None:
    def seed(tx: Tx) -> None:
        for id in TRICKY:
            tx.put_work(Work(id=f"w{id}", kind="test.order"))
            tx.kv_put("order", f"k{id}", b"1")
            tx.kv_put(f"order/{id}", "k", b"1")

    store.transact(Guard(), seed)

    def read(tx: Tx) -> tuple[list[str], list[str], list[str], list[str]]:
        return (
            [w.id for w in tx.works()],
            [k for k, _ in tx.kv_list("order")],
            [k for k, _ in tx.kv_list("order", "ka")],
            tx.kv_namespaces(after="order"),
        )

    works, keys, prefixed, namespaces = store.view(read)
    assert works == sorted(f"w{i}" for i in TRICKY)
    assert keys == sorted(f"k{i}" for i in TRICKY)
    assert prefixed == sorted(f"k{i}" for i in TRICKY if i.startswith("a"))
    assert namespaces == sorted(f"order/{i}" for i in TRICKY)


def test_id_and_key_columns_are_collated_c() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns"
            " WHERE table_name LIKE 'conduit_%%' AND collation_name IS NOT NULL"
            " ORDER BY 1, 2"
        )
        collated = cursor.fetchall()
    assert collated == [
        ("conduit_execution", "id", "C"),
        ("conduit_kv", "key", "C"),
        # The namespaces' order is kv_namespaces' (migration 0025).
        ("conduit_kv", "namespace", "C"),
        # The version log's names, as their records' (equality only: C is the cheapest).
        ("conduit_record_version", "key", "C"),
        ("conduit_record_version", "record_id", "C"),
        ("conduit_record_version", "work_id", "C"),
        ("conduit_run_record", "run_id", "C"),
        ("conduit_scope", "id", "C"),
        ("conduit_timer", "id", "C"),
        ("conduit_wait", "id", "C"),
        ("conduit_work", "id", "C"),
    ]


# ---------------------------------------------------------------- dump in one snapshot


WRITER = """
stop, started = Path(sys.argv[1]), Path(sys.argv[2])
store = OrmStore()
i = 0
def write(tx):
    tx.put_work(Work(id=f"d{i:06d}", kind="test.dump"))
    tx.kv_put("dump", "count", str(i + 1).encode())
while not stop.exists():
    store.transact(Guard(), write)
    i += 1
    if i == 20:
        started.touch()
print(i)
"""


@contextmanager
def scratch_database(name: str) -> Iterator[str]:
    with connections["default"].cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _connect(dbname: str) -> psycopg.Connection[Any]:
    s = connections["default"].settings_dict
    return psycopg.connect(
        dbname=dbname, user=s["USER"], password=s["PASSWORD"], host=s["HOST"], port=s["PORT"]
    )


def test_pg_dump_snapshot_is_one_consistent_snapshot_while_writers_commit(
    store: OrmStore, tmp_path: Path
) -> None:
    stop, started = tmp_path / "stop", tmp_path / "started"
    writer = spawn(WRITER, str(stop), str(started))
    try:
        wait_for(started)
        dump = tmp_path / "conduit.dump"
        read_in_snapshot = int(pg_dump_with(dump, lambda tx: tx.kv_get("dump", "count")))
        # Let the writer commit a few more, so the live database moved past the dump.
        dumped_at = int(store.view(lambda tx: tx.kv_get("dump", "count")))
        deadline = time.monotonic() + 30
        while int(store.view(lambda tx: tx.kv_get("dump", "count"))) < dumped_at + 5:
            assert time.monotonic() < deadline, "the writer stalled"
            time.sleep(0.01)
    finally:
        stop.touch()
    total = int(finish(writer))

    assert dump.stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    target = connections["default"].settings_dict["NAME"] + "_restore"
    with scratch_database(target):
        pg_restore_dump(dump, dbname=target)
        with _connect(target) as conn:
            works = conn.execute(
                "SELECT count(*) FROM conduit_work WHERE kind = 'test.dump'"
            ).fetchone()
            counter = conn.execute(
                "SELECT value FROM conduit_kv WHERE namespace = 'dump' AND key = 'count'"
            ).fetchone()
    assert works is not None
    assert counter is not None
    # Every transaction wrote one Work and the counter together: a dump that read the
    # tables at different moments would disagree with itself.
    assert works[0] == int(bytes(counter[0])), "the dump is not one snapshot"
    assert works[0] == read_in_snapshot, "pg_dump_with read another snapshot than it dumped"
    assert 20 <= works[0] < total, f"dumped {works[0]} of {total} writes"


def test_a_dump_restores_into_another_database_and_again_over_it(
    store: OrmStore, tmp_path: Path
) -> None:
    store.transact(Guard(), lambda tx: tx.put_work(make_work("w1")))
    dump = tmp_path / "conduit.dump"
    pg_dump_snapshot(dump)

    target = connections["default"].settings_dict["NAME"] + "_restore"
    with scratch_database(target):
        pg_restore_dump(dump, dbname=target)
        pg_restore_dump(dump, dbname=target)  # --clean: restoring again replaces it
        with _connect(target) as conn:
            rows = conn.execute("SELECT id FROM conduit_work").fetchall()
    assert rows == [("w1",)]


def test_pg_dump_snapshot_reports_a_missing_pg_dump(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    settings.STORAGE_PG_BINDIR = str(tmp_path / "nowhere")
    with pytest.raises(Unavailable, match="pg_dump not found"):
        pg_dump_snapshot(tmp_path / "x.dump")
    assert list(tmp_path.iterdir()) == []


def test_pg_dump_snapshot_reports_a_failed_dump_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.durability.postgres, "pg_tool", lambda name: "/bin/false")
    with pytest.raises(Unavailable, match=r"pg_dump failed \(exit 1\)"):
        pg_dump_snapshot(tmp_path / "x.dump")
    assert list(tmp_path.iterdir()) == []
