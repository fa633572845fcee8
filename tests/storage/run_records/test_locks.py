"""The ownership mechanisms themselves: SQLite's OFD lock files and PostgreSQL's session
advisory locks (what ``pg_locks`` shows, the writers' lock apart, a cut connection)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest
from django.db import connections

from storage import Busy, Closed, Guard, Unavailable
from storage.ops.run_record_locks import FileLocks, _flock, _same_file, advisory_key
from storage.ops.run_record_sessions import OrmRunStore
from storage.orm import OrmStore
from storage.orm.store import WRITERS_LOCK

from ..support.run_records import ordinary_record


def test_lock_files_are_per_database_and_go_with_their_owner(tmp_path: Path) -> None:
    dev, test = (
        FileLocks(tmp_path, Path("/data/conduit.sqlite3")),
        FileLocks(tmp_path, Path("/data/test_conduit.sqlite3")),
    )
    hold = dev.take("run-1")
    assert dev.path("run-1").exists()
    assert dev.path("run-1") != test.path("run-1")
    with pytest.raises(Busy):
        dev.take("run-1")
    test.take("run-1").release()  # another database: another run
    assert dev.held({"run-1", "run-2"}) == {"run-1"}
    assert test.held({"run-1"}) == set()
    hold.release()
    assert not dev.path("run-1").exists(), "a released lock file is removed"
    assert dev.held({"run-1"}) == set()
    dev.take("run-1").release()
    assert list(tmp_path.iterdir()) == []


def test_an_acquire_never_keeps_a_lock_on_an_unlinked_file(tmp_path: Path) -> None:
    # The race a removing release opens: an acquire opened the file, the owner unlinked
    # it and let go, and the acquire then wins the lock on a file nobody else can see.
    # It must not keep that lock, or a third acquire would own the run at the same time.
    locks = FileLocks(tmp_path, Path("/data/conduit.sqlite3"))
    first = locks.take("run-1")
    stale = os.open(locks.path("run-1"), os.O_RDWR)  # an acquire between open and lock
    first.release()
    second = locks.take("run-1")  # a new file at the path
    try:
        fcntl.fcntl(stale, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK))  # wins the old inode
        assert not _same_file(stale, locks.path("run-1"))  # so take() would retry
        with pytest.raises(Busy):
            locks.take("run-1")
        assert locks.held({"run-1"}) == {"run-1"}
    finally:
        os.close(stale)
        second.release()
    assert locks.held({"run-1"}) == set()


def test_a_dead_holders_file_is_reused_and_then_removed(tmp_path: Path) -> None:
    locks = FileLocks(tmp_path, Path("/data/conduit.sqlite3"))
    locks.path("run-1").touch()  # left by a holder that was killed: no lock on it
    hold = locks.take("run-1")
    assert locks.held({"run-1"}) == {"run-1"}
    hold.release()
    assert not locks.path("run-1").exists()


def _run_locks() -> list[tuple[int, int, int, str]]:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT l.classid::bigint, l.objid::bigint, l.objsubid, a.application_name "
            "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return [tuple(r) for r in cursor.fetchall()]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_a_run_lock_is_a_two_key_advisory_lock_apart_from_the_writers(tmp_path: Path) -> None:
    store = OrmStore()
    runs = OrmRunStore(store)
    classid, objid = advisory_key("run-1")
    with runs.acquire("run-1") as session:
        unsigned = (classid & 0xFFFFFFFF, objid & 0xFFFFFFFF)
        assert [*unsigned, 2, "conduit run owner"] in [list(r) for r in _run_locks()]
        # The writers' lock (one bigint key, objsubid 1) is another namespace: saves and
        # other transactions go on while the run is owned.
        assert session.save(ordinary_record("run-1"), 0) == 1
        store.transact(Guard(), lambda tx: tx.kv_put("t", "k", b"v"))
        assert unsigned != (WRITERS_LOCK >> 32, WRITERS_LOCK & 0xFFFFFFFF)
    assert all(r[:2] != unsigned for r in _run_locks()), "close left the lock held"


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_a_session_whose_connection_was_cut_refuses_to_save() -> None:
    runs = OrmRunStore(OrmStore())
    session = runs.acquire("run-1")
    assert session.save(ordinary_record("run-1"), 0) == 1
    classid, objid = advisory_key("run-1")
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND objsubid = 2 AND classid::bigint = %s AND objid::bigint = %s "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [classid & 0xFFFFFFFF, objid & 0xFFFFFFFF],
        )
        assert cursor.fetchone() == (True,)
    with pytest.raises(Unavailable):
        session.save(ordinary_record("run-1", version="after the cut"), 1)
    with pytest.raises(Closed):  # lost ownership closed the Session
        session.load()
    deadline = time.monotonic() + 10
    while True:  # the server ends the session, and its lock, a moment after the signal
        try:
            again = runs.acquire("run-1")
            break
        except Busy:
            assert time.monotonic() < deadline, "the cut session's lock was never released"
            time.sleep(0.02)
    assert again.load().revision == 1, "the refused save wrote"
    again.close()
    session.close()
    session.close()
