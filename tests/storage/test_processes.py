"""What only the real database can prove: competing OS processes on one database.

The reference double runs in one process; these tests start real child processes on the
test database. The guarantees are the same on both engines, so the tests are too:
SQLite gets them from ``BEGIN IMMEDIATE`` writers and deferred WAL snapshots,
PostgreSQL from the writers' advisory lock taken before ``BEGIN``, SERIALIZABLE, and
REPEATABLE READ READ ONLY Views. Only the WAL check at the end is SQLite's alone.
"""

from __future__ import annotations

import json
import threading
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

from .support import make_timer, make_wait, park
from .support.proc import finish, release, spawn, wait_for

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
ready, go, owner, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
store = OrmStore()
start_line(ready, go)
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
    ready = [tmp_path / f"ready-{owner}" for owner in ("host-a", "host-b")]
    children = [
        spawn(CLAIMER, str(r), str(go), owner, str(n))
        for r, owner in zip(ready, ("host-a", "host-b"), strict=True)
    ]
    release(ready, go)

    wins = [set(json.loads(finish(c))) for c in children]
    assert wins[0].isdisjoint(wins[1]), "an attempt was claimed by both processes"
    assert wins[0] | wins[1] == set(range(n)), "an attempt was claimed by neither process"
    epochs = store.view(lambda tx: {x.epoch for x in tx.executions()})
    assert epochs == {1}, "a losing claim changed the epoch"


# Every process runs the same contests in the same order, so each one is really
# contested: claim attempt c<i>, fire timer t<i> (revision 1), wake wait wt<i> from the
# copy every process read before the start (revision 1). A winner bumps a shared KV
# counter in the same transaction: a lost update would show as a short count.
COMPETITOR = """
ready, go, owner, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
from dataclasses import replace
store = OrmStore()
waits = {w.id: w for w in store.view(lambda tx: tx.waits())}

def bump(tx):
    try:
        count = int(tx.kv_get("race", "wins"))
    except NotFound:
        count = 0
    tx.kv_put("race", "wins", str(count + 1).encode())

def claim(tx, i):
    tx.claim(f"cx{i}", owner, tx.now + seconds(60))

def fire(tx, i):
    tx.fire_timer(f"t{i}", 1)

def wake(tx, i):
    event = Event(id=f"wake-{i}", source="test.hooks", delivery_id=f"wake-{i}",
                  type="test.woke", payload=Payload("test.payload", b"{}"))
    stored, _ = tx.accept_event(event)
    tx.put_wait(replace(waits[f"wt{i}"], state=WaitState.WOKEN, woken_by=stored.event.id))

won = {"claim": [], "fire": [], "wake": []}
lost = {"claim": [], "fire": [], "wake": []}
start_line(ready, go)
for i in range(n):
    for name, op in (("claim", claim), ("fire", fire), ("wake", wake)):
        def body(tx):
            op(tx, i)
            bump(tx)
        try:
            store.transact(Guard(), body)
            won[name].append(i)
        except (Conflict, NotFound) as exc:
            lost[name].append([i, type(exc).__name__])
print(json.dumps({"won": won, "lost": lost}))
"""


def _seed_contests(store: OrmStore, n: int) -> None:
    def seed(tx):  # type: ignore[no-untyped-def]
        for i in range(n):
            tx.put_work(Work(id=f"c{i}", kind="test.race"))
            tx.put_execution(Execution(id=f"cx{i}", work_id=f"c{i}", attempt=1))
            tx.put_timer(make_timer(f"t{i}", fire_at=tx.now - seconds(1)))
            key = CorrelationKey("t", f"p{i}")
            tx.put_work(Work(id=f"p{i}", kind="test.race", keys=(key,)))
            tx.put_execution(Execution(id=f"px{i}", work_id=f"p{i}", attempt=1))
            tx.claim(f"px{i}", "seed", tx.now + seconds(600))
            park(tx, f"px{i}", make_wait(f"wt{i}", f"p{i}", f"px{i}", keys=[key]))

    store.transact(Guard(), seed)


def test_many_processes_claiming_firing_and_waking_at_once_one_winner_each(
    store: OrmStore, tmp_path: Path
) -> None:
    """Competing connections (issue 8): four processes run every contest at once;
    each claim, timer fire and wake has exactly one winner, and no update is lost."""
    n, owners = 25, ["host-a", "host-b", "host-c", "host-d"]
    _seed_contests(store, n)
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{owner}" for owner in owners]
    children = [
        spawn(COMPETITOR, str(r), str(go), owner, str(n))
        for r, owner in zip(ready, owners, strict=True)
    ]
    release(ready, go)
    results = {owner: json.loads(finish(c)) for owner, c in zip(owners, children, strict=True)}

    for contest in ("claim", "fire", "wake"):
        winners: dict[int, list[str]] = {i: [] for i in range(n)}
        for owner, result in results.items():
            for i in result["won"][contest]:
                winners[i].append(owner)
        several = {i: w for i, w in winners.items() if len(w) != 1}
        assert not several, f"{contest}: not exactly one winner: {several}"
        losses = {kind for r in results.values() for _, kind in r["lost"][contest]}
        assert losses <= {"Conflict", "NotFound"}, f"{contest}: losers got {losses}"

    def final(tx):  # type: ignore[no-untyped-def]
        return (
            int(tx.kv_get("race", "wins")),
            {x.id: (x.owner, x.epoch) for x in tx.executions() if x.id.startswith("cx")},
            tx.timers(),
            [e.event.id for e in tx.events()],
            {w.id: (w.state.value, w.revision, w.woken_by) for w in tx.waits()},
        )

    wins, claims, timers, events, waits = store.view(final)
    assert wins == 3 * n, f"lost update: {3 * n} winning transactions counted {wins}"
    claim_winner = {f"cx{i}": owner for owner, r in results.items() for i in r["won"]["claim"]}
    assert claims == {x: (o, 1) for x, o in claim_winner.items()}, "a claim's lease is wrong"
    assert timers == [], "a fired timer is still armed"
    assert sorted(events) == sorted(
        [f"t{i}-fire" for i in range(n)] + [f"wake-{i}" for i in range(n)]
    ), "a timer fired or a wake was accepted more or less than once"
    assert waits == {f"wt{i}": ("woken", 2, f"wake-{i}") for i in range(n)}, "a wait was lost"


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
    holding, release_ = tmp_path / "holding", tmp_path / "release"
    child = spawn(HOLDER, str(holding), str(release_))
    try:
        wait_for(holding)
        started = time.monotonic()
        ids = store.view(lambda tx: [w.id for w in tx.works()])
        elapsed = time.monotonic() - started
    finally:
        release_.touch()
    assert finish(child).strip() == "committed"
    assert ids == ["before"], "the View saw an uncommitted write"
    assert elapsed < 2.0, f"the View waited {elapsed:.2f}s behind the writer"
    assert [w.id for w in store.view(lambda tx: tx.works())] == ["before", "held"]


def test_a_writer_waits_for_another_processes_open_write(store: OrmStore, tmp_path: Path) -> None:
    """Writers queue (SQLite: busy timeout on BEGIN IMMEDIATE; PostgreSQL: the writers'
    advisory lock), then commit after the open one, instead of failing with Conflict."""
    holding, release_ = tmp_path / "holding", tmp_path / "release"
    child = spawn(HOLDER, str(holding), str(release_))
    wait_for(holding)
    release_at = time.monotonic() + 0.5
    threading.Timer(0.5, release_.touch).start()
    store.transact(Guard(), lambda tx: tx.put_work(Work(id="after", kind="test.held")))
    assert time.monotonic() >= release_at - 0.05, "the second writer did not wait its turn"
    finish(child)
    ids = [w.id for w in store.view(lambda tx: tx.works())]
    assert ids == ["after", "held"]


STAMPER = """
skew, n = int(sys.argv[1]), int(sys.argv[2])
ready, go = Path(sys.argv[3]), Path(sys.argv[4])
# A process whose clock runs behind: Guard.now must still follow commit order.
store = OrmStore(clock=lambda: time.time_ns() + skew)
start_line(ready, go)
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


def test_guard_now_follows_commit_order_across_processes(store: OrmStore, tmp_path: Path) -> None:
    go = tmp_path / "go"
    skews = [0, -seconds(5), seconds(3)]  # one process 5 s behind, one 3 s ahead
    ready = [tmp_path / f"ready-{i}" for i in range(len(skews))]
    children = [
        spawn(STAMPER, str(skew), "60", str(r), str(go))
        for skew, r in zip(skews, ready, strict=True)
    ]
    release(ready, go)
    stamps = sorted(tuple(s) for c in children for s in json.loads(finish(c)))
    order = [n for n, _ in stamps]
    assert order == list(range(1, len(stamps) + 1)), "a counter increment was lost"
    nows = [now for _, now in stamps]
    assert nows == sorted(nows), "Guard.now decreased along commit order"


@pytest.mark.sqlite_only
def test_every_connection_runs_wal_with_full_sync(store: OrmStore) -> None:
    for alias in ("default", "view"):
        with connections[alias].cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA synchronous")
            assert cursor.fetchone()[0] == 2  # FULL: a commit survives power loss
