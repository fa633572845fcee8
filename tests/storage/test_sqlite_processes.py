"""What only the real SQLite backend can prove: competing OS processes on one file.

The reference double runs in one process; these tests start real child processes on
the test database file (WAL mode, ``BEGIN IMMEDIATE`` writers, deferred-snapshot Views).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.db import connections

from storage import (
    CorrelationKey,
    Execution,
    Guard,
    Work,
    seconds,
)
from storage.orm import OrmStore

from .proc import finish, spawn, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.multiprocess,
]


@pytest.fixture
def store() -> OrmStore:
    return OrmStore()


def _seed_attempts(store: OrmStore, n: int) -> None:
    def seed(tx):  # type: ignore[no-untyped-def]
        for i in range(n):
            tx.put_work(Work(id=f"w{i}", kind="test.race", keys=(CorrelationKey("t", f"{i}"),)))
            tx.put_execution(Execution(id=f"x{i}", work_id=f"w{i}", attempt=1))

    store.transact(Guard(), seed)


CLAIMER = """
go = Path(sys.argv[1]); owner = sys.argv[2]; n = int(sys.argv[3])
store = OrmStore()
while not go.exists():
    time.sleep(0.001)
won = []
for i in range(n):
    try:
        store.transact(Guard(), lambda tx: tx.claim(f"x{i}", owner, tx.now + seconds(60)))
        won.append(i)
    except Conflict:
        pass
print(json.dumps(won))
"""


def test_two_processes_claiming_the_same_attempt_exactly_one_wins(
    store: OrmStore, tmp_path: Path
) -> None:
    n = 40
    _seed_attempts(store, n)
    go = tmp_path / "go"
    children = [spawn(CLAIMER, str(go), owner, str(n)) for owner in ("host-a", "host-b")]
    time.sleep(0.5)  # let both import Django before the start line
    go.touch()
    import json

    wins = [set(json.loads(finish(c))) for c in children]
    assert wins[0].isdisjoint(wins[1]), "an attempt was claimed by both processes"
    assert wins[0] | wins[1] == set(range(n)), "an attempt was claimed by neither process"
    epochs = store.view(lambda tx: {x.epoch for x in tx.executions()})
    assert epochs == {1}, "a losing claim changed the epoch"


HOLDER = """
holding = Path(sys.argv[1]); release = Path(sys.argv[2])
store = OrmStore()
def hold(tx):
    tx.put_work(Work(id="held", kind="test.held"))
    holding.touch()
    deadline = time.monotonic() + 30
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
store.transact(Guard(), hold)
print("committed")
"""


def test_a_view_completes_while_another_process_holds_a_write_open(
    store: OrmStore, tmp_path: Path
) -> None:
    store.transact(Guard(), lambda tx: tx.put_work(Work(id="before", kind="test.held")))
    holding, release = tmp_path / "holding", tmp_path / "release"
    child = spawn(HOLDER, str(holding), str(release))
    try:
        wait_for(holding)
        started = time.monotonic()
        ids = store.view(lambda tx: [w.id for w in tx.works()])
        elapsed = time.monotonic() - started
    finally:
        release.touch()
    assert finish(child).strip() == "committed"
    assert ids == ["before"], "the View saw an uncommitted write"
    assert elapsed < 2.0, f"the View waited {elapsed:.2f}s behind the writer"
    assert [w.id for w in store.view(lambda tx: tx.works())] == ["before", "held"]


def test_a_writer_waits_for_another_processes_open_write(
    store: OrmStore, tmp_path: Path
) -> None:
    """BEGIN IMMEDIATE: a second writer queues (busy timeout), then commits after."""
    holding, release = tmp_path / "holding", tmp_path / "release"
    child = spawn(HOLDER, str(holding), str(release))
    wait_for(holding)
    release_at = time.monotonic() + 0.5
    import threading

    threading.Timer(0.5, release.touch).start()
    store.transact(Guard(), lambda tx: tx.put_work(Work(id="after", kind="test.held")))
    assert time.monotonic() >= release_at - 0.05, "the second writer did not wait its turn"
    finish(child)
    ids = [w.id for w in store.view(lambda tx: tx.works())]
    assert ids == ["after", "held"]


STAMPER = """
skew = int(sys.argv[1]); n = int(sys.argv[2]); go = Path(sys.argv[3])
# A process whose clock runs behind: Guard.now must still follow commit order.
store = OrmStore(clock=lambda: time.time_ns() + skew)
while not go.exists():
    time.sleep(0.001)
out = []
def stamp(tx):
    try:
        n0 = int(tx.kv_get("order", "counter"))
    except NotFound:
        n0 = 0
    tx.kv_put("order", "counter", str(n0 + 1).encode())
    return (n0 + 1, tx.now)
for _ in range(n):
    out.append(store.transact(Guard(), stamp))
print(json.dumps(out))
"""


def test_guard_now_follows_commit_order_across_processes(
    store: OrmStore, tmp_path: Path
) -> None:
    import json

    go = tmp_path / "go"
    skews = [0, -seconds(5), seconds(3)]  # one process 5 s behind, one 3 s ahead
    children = [spawn(STAMPER, str(skew), "60", str(go)) for skew in skews]
    time.sleep(0.5)
    go.touch()
    stamps = sorted(tuple(s) for c in children for s in json.loads(finish(c)))
    order = [n for n, _ in stamps]
    assert order == list(range(1, len(stamps) + 1)), "a counter increment was lost"
    nows = [now for _, now in stamps]
    assert nows == sorted(nows), "Guard.now decreased along commit order"


def test_every_connection_runs_wal_with_full_sync(store: OrmStore) -> None:
    for alias in ("default", "view"):
        with connections[alias].cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA synchronous")
            assert cursor.fetchone()[0] == 2  # FULL: a commit survives power loss
