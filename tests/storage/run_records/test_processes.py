"""Run ownership across OS processes, on both engines: it ends when the holder is
SIGKILLed, exactly one of several racing processes wins a run, ``owned`` in the holder's
own process releases nothing, and processes saving different runs at once all succeed
with consistent revisions. SQLite proves OFD locks; PostgreSQL session advisory locks."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from storage import Busy, view
from storage.ops.run_record_sessions import OrmRunStore
from storage.orm import OrmStore
from storage.run_records import RunQuery

from ..support.proc import finish, release, spawn, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.multiprocess,
]

# Every child opens the run store over the test database (its locks beside the file).
OPEN = """
from storage.ops.run_record_sessions import OrmRunStore
from storage.run_records import DurableRunRecord
runs = OrmRunStore(OrmStore())
"""

HOLDER = (
    OPEN
    + """
session = runs.acquire(sys.argv[1])
Path(sys.argv[2]).touch()
time.sleep(600)  # until killed
"""
)

TRY_ONCE = (
    OPEN
    + """
try:
    runs.acquire(sys.argv[1]).close()
    print("acquired")
except Busy:
    print("busy")
"""
)


@pytest.fixture
def runs() -> OrmRunStore:
    return OrmRunStore(OrmStore())


def acquire_within(runs: OrmRunStore, run_id: str, seconds: float) -> float:
    """Acquire ``run_id`` as soon as it is free; how long that took. PostgreSQL ends a
    killed client's session when it reads the closed socket, a moment after the kill."""
    started = time.monotonic()
    while True:
        try:
            runs.acquire(run_id).close()
            return time.monotonic() - started
        except Busy:
            if time.monotonic() - started > seconds:
                raise
            time.sleep(0.02)


def test_ownership_ends_when_the_holder_is_killed(runs: OrmRunStore, tmp_path: Path) -> None:
    held = tmp_path / "held"
    holder = spawn(HOLDER, "run-1", str(held))
    try:
        wait_for(held)
        with pytest.raises(Busy):
            runs.acquire("run-1")
        assert runs.owned(["run-1", "run-2"]) == {"run-1"}
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    assert holder.returncode == -signal.SIGKILL
    took = acquire_within(runs, "run-1", seconds=10)
    assert took < 5, f"run-1 stayed owned {took:.1f}s after its holder died"
    assert runs.owned(["run-1"]) == set()


def test_owned_in_the_holders_own_process_releases_nothing(
    runs: OrmRunStore, tmp_path: Path
) -> None:
    session = runs.acquire("run-1")
    for _ in range(5):
        # On SQLite this opens and closes the lock file in the holding process: with
        # classic POSIX locks that close would drop the lock.
        assert runs.owned(["run-1"]) == {"run-1"}
    assert finish(spawn(TRY_ONCE, "run-1")).split() == ["busy"]
    session.close()
    assert finish(spawn(TRY_ONCE, "run-1")).split() == ["acquired"]


RACER = (
    OPEN
    + """
ready, go, stop = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
start_line(ready, go)
try:
    session = runs.acquire(sys.argv[1])
except Busy:
    print("busy")
else:
    # Hold until every loser has answered, so each of them really met an owner.
    while not stop.exists():
        time.sleep(0.005)
    session.close()
    print("won")
"""
)


def test_processes_racing_for_one_run_exactly_one_wins(tmp_path: Path) -> None:
    n = 4
    go, stop = tmp_path / "go", tmp_path / "stop"
    ready = [tmp_path / f"ready-{i}" for i in range(n)]
    args = ["contested"]
    racers = [spawn(RACER, *args, str(r), str(go), str(stop)) for r in ready]
    release(ready, go)
    answers: list[str] = []
    try:
        deadline = time.monotonic() + 60
        # The losers answer at once; the winner only after the stop file.
        while sum(r.poll() is not None for r in racers) < n - 1:
            assert time.monotonic() < deadline, "losers never answered"
            time.sleep(0.01)
    finally:
        stop.touch()
        answers = [finish(r).strip() for r in racers]
    assert sorted(answers) == ["busy"] * (n - 1) + ["won"], answers


SAVER = (
    OPEN
    + """
ready, go, run_id, n = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[1], int(sys.argv[4])
start_line(ready, go)
revisions = []
with runs.acquire(run_id) as session:
    for i in range(n):
        record = DurableRunRecord(run_id=run_id, version=str(i + 1))
        revisions.append(session.save(record, i))
        assert session.load().revision == i + 1
print(json.dumps(revisions))
"""
)


def test_processes_saving_different_runs_at_once_all_succeed(tmp_path: Path) -> None:
    n, saves = 3, 15
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(n)]
    savers = [spawn(SAVER, f"run-{i}", str(r), str(go), str(saves)) for i, r in enumerate(ready)]
    release(ready, go)
    for saver in savers:
        assert json.loads(finish(saver)) == list(range(1, saves + 1))
    listed = view(OrmStore(), None, lambda tx: tx.run_records(RunQuery(limit=0)))
    assert sorted((s.record.run_id, s.record.revision, s.record.version) for s in listed) == [
        (f"run-{i}", saves, str(saves)) for i in range(n)
    ]
