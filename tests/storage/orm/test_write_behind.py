"""The ORM transaction's write-behind buffer (``storage/orm/writebehind.py``).

What the shared cases cannot see: that writes really wait for the flush (the callback
issues no INSERT or UPDATE), that a read the buffer cannot answer flushes first, that
a batch of writes becomes a few ``executemany`` statements, and that a constraint
violation met at the flush fails the whole transaction, even one whose callback
swallowed it. Both engines: the buffer is the same code on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from django.db import connections

from storage import (
    Buckets,
    Conflict,
    ExecutionState,
    Guard,
    NotFound,
    OutcomeKind,
    Scope,
    TimerQuery,
    Tx,
    WorkQuery,
    WorkState,
)
from storage.orm import OrmStore

from ..support import (
    FakeClock,
    key,
    make_event,
    make_execution,
    make_timer,
    make_work,
    outcome,
    payload,
)

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()


class Statements:
    """The SQL the writers' connection runs, in order (``many`` for executemany, or for
    one of the statements PostgreSQL's flush sends together as one text, see
    ``PostgresDialect.send``); ``trips``: what went to the driver, one entry a call."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool]] = []
        self.trips: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        parts = [sql] if many else sql.split(";\n")
        self.trips.append(" ".join(sql.split()))
        self.seen.extend((" ".join(part.split()), many or len(parts) > 1) for part in parts)
        return execute(sql, params, many, context)

    def writes(self) -> list[tuple[str, bool]]:
        return [(sql, many) for sql, many in self.seen if sql.startswith(WRITES)]

    def writing_trips(self) -> list[str]:
        return [sql for sql in self.trips if sql.startswith(WRITES)]

    def mark(self) -> int:
        return len(self.seen)


@contextmanager
def watching() -> Iterator[Statements]:
    statements = Statements()
    with connections["default"].execute_wrapper(statements):
        yield statements


def test_reads_see_the_transactions_own_writes_before_any_is_sent(store: OrmStore) -> None:
    def callback(t: Tx) -> dict[str, Any]:
        t.put_scope(Scope(id="s1", name="s1", config={"region": "eu"}))
        work = t.put_work(make_work("w1", keys=[key("k1")], scope_id="s1", context=payload()))
        x = t.put_execution(make_execution("x1", "w1"))
        claimed = t.claim(x.id, "worker-1", t.now + 10**9)
        stored, _added = t.accept_event(make_event("e1", work_id="w1"))
        t.set_event_scope("e1", "s1")
        t.mark_routed("e1", "w1", "routed")
        t.put_timer(make_timer("t1", work_id="w1"))
        t.delete_timer("t1", 1)
        return {
            "work": t.work("w1"),
            "by_key": t.work_by_key(key("k1")).id,
            "live": [x.id for x in t.live_executions("w1")],
            "attempts": [x.attempt for x in t.executions("w1")],
            "claimed": claimed,
            "event": t.event("e1"),
            "by_delivery": t.event_by_delivery(stored.event.source, stored.event.delivery_id),
            "sequence": stored.sequence,
            "latest": t.latest_sequence(),
            "timers": t.timers("w1"),
            "scope": t.scope("s1"),
            "created": work,
        }

    with watching() as statements:
        seen = store.transact(Guard(), callback)
    writes = statements.writes()

    work = seen["work"]
    assert work.state is WorkState.RUNNING, work
    assert work.revision == 2, work
    assert seen["by_key"] == "w1"
    assert seen["live"] == ["x1"]
    assert seen["attempts"] == [1]
    assert seen["claimed"].state is ExecutionState.RUNNING
    assert seen["event"].scope_id == "s1"
    assert seen["event"].route.work_id == "w1"
    assert seen["by_delivery"] == seen["event"]
    assert seen["latest"] == seen["sequence"] > 0
    assert seen["timers"] == []
    assert seen["scope"].config == {"region": "eu"}
    # Everything above was answered from the buffer: the writes went out at commit,
    # after the last read, and the clock row is the very last statement.
    # (PostgreSQL's writers' lock is released by a SELECT after COMMIT: not a read.)
    sent = [sql for sql, _ in statements.seen if "pg_advisory" not in sql]
    last_read = max(i for i, sql in enumerate(sent) if sql.startswith("SELECT"))
    first_write = min(i for i, sql in enumerate(sent) if sql.startswith(WRITES))
    assert last_read < first_write, sent
    assert writes[-1][0].startswith("UPDATE conduit_meta"), writes
    # The Work was written once although created, given its executor and claimed.
    work_writes = [sql for sql, _ in writes if re.search(r"\bconduit_work\b", sql)]
    assert len(work_writes) == 1, work_writes
    assert work_writes[0].startswith("INSERT"), work_writes
    # Its tally rows too: one upsert of the final change, however many writes it took.
    tally_writes = [sql for sql, _ in writes if "conduit_work_tally" in sql]
    assert len(tally_writes) == 1, tally_writes

    def after(t: Tx) -> tuple[Any, ...]:
        return t.work("w1"), t.event("e1"), t.timers("w1"), t.latest_sequence()

    assert store.view(after) == (work, seen["event"], [], seen["sequence"])


def test_a_returned_record_can_not_change_what_later_reads_see(store: OrmStore) -> None:
    """Records the buffer shares are immutable; a Scope (free JSON config) is not,
    so each read gets its own copy, as a read from the database would."""
    config: dict[str, Any] = {"limits": {"cpu": 1}}

    def callback(t: Tx) -> Scope:
        t.put_scope(Scope(id="s1", config=config))
        config["limits"]["cpu"] = 99  # the caller changes its own dict afterwards
        first = t.scope("s1")
        first.config["limits"]["cpu"] = 42  # and the copy it was given
        return t.scope("s1")

    assert store.transact(Guard(), callback).config == {"limits": {"cpu": 1}}
    assert store.view(lambda t: t.scope("s1")).config == {"limits": {"cpu": 1}}


def test_records_given_with_loose_types_read_back_as_stored(store: OrmStore) -> None:
    """A list where a tuple belongs, a string where an enum does: the buffer hands
    back what the database would, not the caller's object."""

    def callback(t: Tx) -> tuple[Any, Any]:
        t.put_work(replace(make_work("w1"), keys=[key("k1")]))  # type: ignore[arg-type]
        t.put_execution(make_execution("x1", "w1"))
        t.claim("x1", "worker-1", t.now + 10**9)
        loose = outcome("failed", "boom")  # type: ignore[arg-type]
        t.put_execution(replace(t.execution("x1"), state="failed", outcome=loose))
        return t.work("w1"), t.execution("x1")

    work, x = store.transact(Guard(), callback)
    assert type(work.keys) is tuple
    assert x.state is ExecutionState.FAILED
    assert x.outcome.kind is OutcomeKind.FAILED
    stored_work, stored_x = store.view(lambda t: (t.work("w1"), t.execution("x1")))
    assert stored_x == x
    # The triage marks settle at commit (storage.tx.base), after the callback's read.
    assert stored_work == replace(work, error_group="boom")


READS: list[tuple[str, Callable[[Tx], Any]]] = [
    ("query_works", lambda t: [w.id for w in t.query_works(WorkQuery())]),
    ("count_works", lambda t: t.count_works(WorkQuery())),
    ("work_facets", lambda t: dict(t.work_facets(WorkQuery()).state)),
    ("works", lambda t: [w.id for w in t.works()]),
    ("live_works", lambda t: [w.id for w in t.live_works()]),
    ("events", lambda t: [e.id for e in t.events()]),
    ("work_events", lambda t: [e.id for e in t.work_events("w2")]),
    ("due_timers", lambda t: [x.id for x in t.due_timers(t.now)]),
    ("timer_series", lambda t: t.timer_series(Buckets(t.now, 1, 2), TimerQuery())),
    ("kv_list", lambda t: t.kv_list("ns")),
]


@pytest.mark.parametrize(("name", "read"), READS, ids=[name for name, _ in READS])
def test_a_read_the_buffer_cannot_answer_flushes_first(
    store: OrmStore, name: str, read: Callable[[Tx], Any]
) -> None:
    store.transact(Guard(), lambda t: t.put_work(make_work("w1")))

    def callback(t: Tx) -> tuple[Any, int, int]:
        t.put_work(make_work("w2"))
        t.accept_event(make_event("e2", work_id="w2"))
        t.put_timer(make_timer("t2", fire_at=t.now))
        before = statements.mark()
        return read(t), before, statements.mark()

    with watching() as statements:
        result, before, after = store.transact(Guard(), callback)

    expected = {
        "query_works": ["w2", "w1"],
        "count_works": 2,
        "work_facets": {"ready": 2},
        "works": ["w1", "w2"],
        "live_works": ["w1", "w2"],
        "events": ["e2"],
        "work_events": ["e2"],
        "due_timers": ["t2"],
        "timer_series": [1, 0],
        "kv_list": [],
    }
    assert result == expected[name]
    sent = [sql for sql, _ in statements.seen[before:after]]
    assert any(sql.startswith("INSERT INTO conduit_work") for sql in sent), sent
    assert sent[-1].startswith("SELECT"), sent


def test_a_large_transaction_writes_a_few_statements(store: OrmStore) -> None:
    def callback(t: Tx) -> None:
        for i in range(200):
            t.put_work(make_work(f"w{i:03d}", keys=[key(f"k{i}")]))
            t.accept_event(make_event(f"e{i:03d}", work_id=f"w{i:03d}"))
            t.mark_routed(f"e{i:03d}", f"w{i:03d}", "routed")
            x = t.put_execution(make_execution(f"x{i:03d}", f"w{i:03d}"))
            t.claim(x.id, "worker-1", t.now + 10**9)

    with watching() as statements:
        store.transact(Guard(), callback)

    # Work, Execution, Event and key inserts, the version log's rows, the tally's and
    # the series tally's upserts, then the clock row: one executemany each on SQLite,
    # one text for them all on PostgreSQL.
    written = [re.match(r"(?:INSERT INTO|UPDATE) (\w+)", sql) for sql, many in statements.writes()]
    tables = {m.group(1) for m in written if m}
    assert tables == {
        "conduit_event",
        "conduit_execution",
        "conduit_key",
        "conduit_work",
        "conduit_work_tally",
        "conduit_series_tally",
        "conduit_meta",
        "conduit_record_version",
    }
    one_text = connections["default"].vendor == "postgresql"
    assert len(statements.writing_trips()) == (1 if one_text else 8), statements.trips
    assert store.view(lambda t: t.count_works(WorkQuery(states=frozenset({WorkState.RUNNING}))))


def test_an_update_sets_only_the_columns_that_changed() -> None:
    clock = FakeClock()
    store = OrmStore(clock=clock)
    store.transact(Guard(), lambda t: t.put_work(make_work("w1")))
    clock.advance(1)

    with watching() as statements:
        store.transact(
            Guard(),
            lambda t: t.put_work(replace(t.work("w1"), state=WorkState.CANCELLED)),
        )

    (update,) = [sql for sql, _ in statements.writes() if re.search(r"\bconduit_work\b", sql)]
    # (Column names only: PostgreSQL's flush sends the values bound in the text.)
    assigned = re.findall(r"(\w+) = ", update.split(" SET ")[1].split(" WHERE ")[0])
    assert assigned == ["state", "updated_ns", "revision", "data"], update
    assert store.view(lambda t: t.work("w1")).state is WorkState.CANCELLED


def _plant_key_owner(source: str, external_id: str) -> None:
    """A row written behind storage's back, inside the open transaction: the buffer
    does not know it, so only the database's unique constraint can refuse the INSERT."""
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO conduit_key (source, external_id, work_id, ordinal) "
            "VALUES (%s, %s, %s, 0)",
            [source, external_id, "somebody-else"],
        )


def _nothing_of_it(store: OrmStore, version: int) -> None:
    def state(t: Tx) -> tuple[Any, ...]:
        return [w.id for w in t.works()], [e.id for e in t.events()], t.store_version()

    assert store.view(state) == (["w0"], [], version), "a failed transaction left rows"
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM conduit_key")
        assert cursor.fetchone()[0] == 0, "a failed transaction left a key row"


def test_a_conflict_at_the_commit_flush_leaves_nothing(store: OrmStore) -> None:
    version = store.transact(Guard(), lambda t: (t.put_work(make_work("w0")), t.store_version()))[1]
    version += 1

    def callback(t: Tx) -> None:
        t.put_work(make_work("w1", keys=[key("k1")]))  # the buffer saw k1 unowned
        t.accept_event(make_event("e1", work_id="w1"))
        _plant_key_owner(key("k1").source, "k1")

    with pytest.raises(Conflict, match="constraint"):
        store.transact(Guard(), callback)
    _nothing_of_it(store, version)


def test_a_conflict_met_by_a_read_fails_the_transaction_even_when_swallowed(
    store: OrmStore,
) -> None:
    version = store.transact(Guard(), lambda t: (t.put_work(make_work("w0")), t.store_version()))[1]
    version += 1
    raised: list[str] = []

    def callback(t: Tx) -> None:
        t.put_work(make_work("w1", keys=[key("k1")]))
        t.accept_event(make_event("e1", work_id="w1"))
        _plant_key_owner(key("k1").source, "k1")
        for step in (
            lambda: t.count_works(WorkQuery()),  # flushes: the key INSERT fails
            lambda: t.put_work(make_work("w2")),  # the transaction is failed already
            lambda: t.work("w0"),
        ):
            try:
                step()
            except Conflict as exc:
                raised.append(str(exc))

    with pytest.raises(Conflict):
        store.transact(Guard(), callback)
    assert len(raised) == 3, raised
    assert "constraint" in raised[0], raised
    assert all("failed" in message for message in raised[1:]), raised
    _nothing_of_it(store, version)


def test_event_sequences_stay_consecutive_across_transactions(store: OrmStore) -> None:
    # Sequences are allocated at acceptance, before the rows are written; they must be
    # the ones the INSERTs would have drawn: no values drawn ahead and left unused (on
    # PostgreSQL a block drawn ahead left a gap after every transaction).
    def accept(ids: list[str]) -> list[int]:
        return store.transact(
            Guard(), lambda tx: [tx.accept_event(make_event(i))[0].sequence for i in ids]
        )

    first = accept(["e1", "e2"])  # blocks of 1 and 2 would have left one value unused
    second = accept(["e3"])
    third = accept(["e4", "e5"])
    assert first + second + third == list(range(first[0], first[0] + 5))


def test_a_set_read_keeps_its_rows_so_per_work_reads_that_follow_send_nothing(
    store: OrmStore,
) -> None:
    """``works_of``, ``latest_executions`` and ``timers_of`` keep what they read for the
    transaction (a bulk action's batch reads its Work so, then runs the rules on each):
    the per-Work reads after them are answered from the buffer, with what the database
    holds and the transaction's own writes, and a write after them is sent as usual."""

    def seed(t: Tx) -> None:
        for i in (1, 2):
            t.put_work(make_work(f"w{i}"))
            t.put_execution(make_execution(f"x{i}", f"w{i}"))
            t.put_timer(make_timer(f"t{i}", work_id=f"w{i}"))
        t.put_timer(make_timer("t9", work_id="w2"))
        t.delete_timer("t9", 1)  # a tombstone: listed neither by the set read nor per Work

    store.transact(Guard(), seed)
    ids = ["w1", "w2", "w3", "nope"]

    def per_work(t: Tx) -> list[Any]:
        found: list[Any] = []
        for work_id in ids:
            work = t.work(work_id) if work_id != "nope" else None
            found.append(
                (work, t.executions(work_id), t.live_executions(work_id), t.timers(work_id))
            )
        return found

    def set_reads(t: Tx) -> None:
        t.works_of(ids)
        t.latest_executions(ids)
        t.timers_of(ids)

    def reads(t: Tx) -> tuple[list[Any], list[str]]:
        t.put_work(make_work("w3"))  # written in this transaction, not yet sent
        t.put_execution(make_execution("x3", "w3"))
        set_reads(t)
        before = statements.mark()
        found = per_work(t)
        with pytest.raises(NotFound):
            t.work("nope")
        return found, [sql for sql, _ in statements.seen[before:]]

    with watching() as statements:
        found, sent = store.transact(Guard(), reads)

    assert sent == [], sent
    assert found == store.view(per_work)
    assert [[x.id for x in xs] for _, xs, _, _ in found] == [["x1"], ["x2"], ["x3"], []]
    assert [[t.id for t in ts] for _, _, _, ts in found] == [["t1"], ["t2"], [], []]

    def write(t: Tx) -> None:
        set_reads(t)
        claimed = t.claim("x1", "worker-1", t.now + 10**9)
        t.put_execution(
            replace(claimed, state=ExecutionState.COMPLETED, outcome=outcome(OutcomeKind.COMPLETED))
        )
        t.delete_timer("t2", 1)

    store.transact(Guard(), write)
    (w1, xs1, live1, _), (_, _, _, ts2) = store.view(per_work)[:2]
    assert [x.state for x in xs1] == [ExecutionState.COMPLETED]
    assert live1 == []
    assert w1.revision == 2  # claimed: the Work moved to running
    assert ts2 == []
