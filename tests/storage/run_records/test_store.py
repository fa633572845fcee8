"""The Store/Session contract of durable-run-records.txt on every backend: the reference
double (``MemoryRunStore``) and the database (``OrmRunStore``: SQLite with OFD locks, or
PostgreSQL with advisory locks when DATABASE_URL selects it). Test IDs read
``test_...[memory]`` and ``test_...[sqlite]``/``[postgresql]``.

Busy at once, the CAS table, run ID checks, overflow, close, copy isolation, UTF-8
refusals, format upgrade and refusal, ``owned``. The multi-process proofs are in
``test_run_processes.py``; the list query's agreement in ``test_run_queries.py``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from storage import (
    Busy,
    Closed,
    Conflict,
    Corrupt,
    Guard,
    Invalid,
    NotFound,
    ReadOnly,
    RecordsNewer,
    Store,
    read_only,
    view,
)
from storage.ops.run_record_sessions import RunStore
from storage.run_records import (
    MAX_REVISION,
    RUN_FORMAT,
    RUN_ID_MAX,
    AttemptState,
    DurableRunRecord,
    NodeAttemptRecord,
    RunQuery,
    StoredRun,
    encode,
)

from ..support.run_records import (
    ATTEMPT,
    RAW,
    ROOT,
    format1_json,
    open_run_store,
    ordinary_record,
    plant,
    row,
    streaming_record,
)

# Far more than a Busy answer takes (microseconds on SQLite, a connection and one
# statement on PostgreSQL), far less than any wait for the holder to let go would be.
AT_ONCE_S = 1.0


@pytest.fixture
def runs(request: pytest.FixtureRequest, store: Store, tmp_path: Path) -> Iterator[RunStore]:
    opened = open_run_store(request.node.callspec.params["store"], store)
    yield opened
    opened.close()


@pytest.fixture
def other(request: pytest.FixtureRequest, store: Store, tmp_path: Path) -> Iterator[RunStore]:
    """A second run store over the same data, as another part of the process opens."""
    opened = open_run_store(request.node.callspec.params["store"], store)
    yield opened
    opened.close()


def stored(store: Store, run_id: str) -> StoredRun | None:
    return view(store, None, lambda tx: tx.run_record(run_id))


# Ownership ------------------------------------------------------------------------------


def test_a_second_acquire_is_busy_at_once(runs: RunStore, other: RunStore) -> None:
    held = runs.acquire("run-1")
    for attempt in (runs, other):
        started = time.monotonic()
        with pytest.raises(Busy):
            attempt.acquire("run-1")
        elapsed = time.monotonic() - started
        assert elapsed < AT_ONCE_S, f"Busy took {elapsed:.3f}s: acquire waited for the owner"
    # Another run is independent.
    with runs.acquire("run-2") as second:
        assert second.run_id == "run-2"
    held.close()
    with other.acquire("run-1"):
        pass


def test_owned_is_truthful_and_disturbs_nothing(runs: RunStore, other: RunStore) -> None:
    a, b = runs.acquire("a"), runs.acquire("b")
    assert other.owned(["a", "b", "c"]) == {"a", "b"}
    assert runs.owned(iter(["c"])) == set()
    assert runs.owned([]) == set()
    for _ in range(20):  # asking again and again releases nothing and takes nothing
        assert other.owned(["a", "b", "c"]) == {"a", "b"}
    with pytest.raises(Busy):
        other.acquire("a")
    assert a.save(ordinary_record("a"), 0) == 1
    with other.acquire("c"):  # never asked about as a lock: owned took nothing
        assert runs.owned(["c"]) == {"c"}
    a.close()
    assert other.owned(["a", "b", "c"]) == {"b"}
    with other.acquire("a") as again:
        assert again.load().revision == 1
    b.close()
    with pytest.raises(Invalid):
        runs.owned(["ok", ""])


def test_close_is_idempotent_and_final(runs: RunStore) -> None:
    session = runs.acquire("run-1")
    session.save(ordinary_record("run-1"), 0)
    session.close()
    session.close()
    with pytest.raises(Closed):
        session.load()
    with pytest.raises(Closed):
        session.save(ordinary_record("run-1"), 1)
    assert runs.owned(["run-1"]) == set()

    with pytest.raises(RuntimeError), runs.acquire("run-1") as inside:
        raise RuntimeError("the body failed")
    with pytest.raises(Closed):
        inside.load()
    assert runs.owned(["run-1"]) == set(), "leaving the with block did not release"


def test_closing_the_run_store_closes_its_sessions(runs: RunStore, other: RunStore) -> None:
    first, second = runs.acquire("one"), runs.acquire("two")
    runs.close()
    runs.close()
    for session in (first, second):
        with pytest.raises(Closed):
            session.load()
    assert other.owned(["one", "two"]) == set()
    with pytest.raises(Closed):
        runs.acquire("three")
    with other.acquire("one"):
        pass


@pytest.mark.parametrize(
    "bad",
    ["", "x" * (RUN_ID_MAX + 1), "€" * 86, "half \ud800 surrogate", "nul\x00inside", 7],
    ids=["empty", "too-long", "too-many-bytes", "surrogate", "nul", "not-a-string"],
)
def test_a_bad_run_id_is_invalid(runs: RunStore, bad: object) -> None:
    with pytest.raises(Invalid):
        runs.acquire(bad)  # type: ignore[arg-type]
    with pytest.raises(Invalid):
        runs.owned([bad])  # type: ignore[list-item]


def test_the_longest_run_id_and_any_unicode_work(runs: RunStore, store: Store) -> None:
    for run_id in ("x" * RUN_ID_MAX, "€" * (RUN_ID_MAX // 3), "Run/Ünïcode 𝄞 中 %_"):
        with runs.acquire(run_id) as session:
            assert session.save(ordinary_record(run_id), 0) == 1
            assert session.load().run_id == run_id
        found = stored(store, run_id)
        assert found is not None
        assert found.record.run_id == run_id


# Compare-and-swap -----------------------------------------------------------------------


def test_save_follows_the_cas_table(runs: RunStore, store: Store) -> None:
    with runs.acquire("run-1") as session:
        with pytest.raises(NotFound):
            session.load()
        with pytest.raises(Conflict):
            session.save(ordinary_record("run-1"), 1)  # no record: only 0 creates
        assert stored(store, "run-1") is None
        first = ordinary_record("run-1", version="first")
        assert session.save(first, 0) == 1
        assert session.load() == replace(first, revision=1)
        with pytest.raises(Conflict):
            session.save(ordinary_record("run-1", version="again"), 0)
        # The stored revision is expected + 1 whatever the record says.
        second = replace(ordinary_record("run-1", version="second"), revision=99)
        assert session.save(second, 1) == 2
        for stale in (0, 1, 3, 1000):
            with pytest.raises(Conflict):
                session.save(ordinary_record("run-1", version=f"stale {stale}"), stale)
        assert session.load() == replace(second, revision=2), "a refused save changed it"
        assert session.save(ordinary_record("run-1", version="third"), 2) == 3


@pytest.mark.parametrize("expected", [-1, MAX_REVISION + 1, True, "1", 1.0])
def test_a_bad_expected_revision_is_invalid(runs: RunStore, store: Store, expected: object) -> None:
    with runs.acquire("run-1") as session, pytest.raises(Invalid):
        session.save(ordinary_record("run-1"), expected)  # type: ignore[arg-type]
    assert stored(store, "run-1") is None


def test_a_record_of_another_run_is_invalid(runs: RunStore, store: Store) -> None:
    with runs.acquire("mine") as session:
        session.save(ordinary_record("mine"), 0)
        with pytest.raises(Invalid):
            session.save(ordinary_record("theirs"), 1)
        with pytest.raises(Invalid):
            session.save({"RunID": "mine"}, 1)  # type: ignore[arg-type]
        assert session.load().revision == 1
    assert stored(store, "theirs") is None


def test_revisions_never_overflow(runs: RunStore, store: Store) -> None:
    near = MAX_REVISION - 1
    record = ordinary_record("old-run")
    plant(store, row("old-run", encode(replace(record, revision=near)), revision=near, fmt=2))
    with runs.acquire("old-run") as session:
        assert session.load().revision == near
        assert session.save(record, near) == MAX_REVISION
        assert session.load().revision == MAX_REVISION
        for expected in (MAX_REVISION, near):
            with pytest.raises(Conflict):
                session.save(ordinary_record("old-run", version="past the end"), expected)
        assert session.load() == replace(record, revision=MAX_REVISION)
    listed = view(store, None, lambda tx: tx.run_records(RunQuery()))
    assert [s.record.revision for s in listed] == [MAX_REVISION]


def test_a_failed_transaction_writes_no_record(store: Store) -> None:
    def save_then_fail(tx: object) -> None:
        assert tx.put_run_record(ordinary_record("run-1"), 0) == 1  # type: ignore[attr-defined]
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        store.transact(Guard(), save_then_fail)
    assert stored(store, "run-1") is None


def test_reads_refuse_to_save(store: Store) -> None:
    with pytest.raises(ReadOnly):
        view(store, None, lambda tx: tx.put_run_record(ordinary_record("run-1"), 0))
    with pytest.raises(ReadOnly):
        store.transact(
            Guard(), lambda tx: read_only(tx).put_run_record(ordinary_record("run-1"), 0)
        )
    assert stored(store, "run-1") is None


# Isolation ------------------------------------------------------------------------------


def test_loads_are_isolated_copies(runs: RunStore) -> None:
    scopes = dict(streaming_record("run-1").scopes)
    saved = replace(streaming_record("run-1"), scopes=scopes)
    with runs.acquire("run-1") as session:
        session.save(saved, 0)
        scopes.clear()  # the caller's dict: the record took its own copy
        first, second = session.load(), session.load()
    assert first == second == replace(saved, revision=1)
    assert first is not second
    assert first is not saved
    assert first.scopes is not second.scopes
    assert first.scopes[ROOT].nodes["fetch"].outputs[0].data == RAW
    with pytest.raises(TypeError):
        first.scopes["new"] = first.scopes[ROOT]  # type: ignore[index]
    with pytest.raises(TypeError):
        del first.scopes[ROOT].nodes["fetch"]  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.version = "changed"  # type: ignore[misc]


# UTF-8 ----------------------------------------------------------------------------------


def _bad_records(run_id: str) -> dict[str, DurableRunRecord]:
    good = ordinary_record(run_id)
    attempt = good.attempts[ATTEMPT]
    return {
        "metadata string": replace(good, version="v\ud800"),
        "map key": replace(good, attempts={"\udcff" + ATTEMPT: attempt}),
        "nested string": replace(
            good,
            attempts={
                ATTEMPT: NodeAttemptRecord(ROOT, "no\udc80de", "", 1, 1, AttemptState.CONFIRMED)
            },
        ),
    }


def test_invalid_utf8_is_refused_with_the_revision_unchanged(runs: RunStore, store: Store) -> None:
    with runs.acquire("run-1") as session:
        good = ordinary_record("run-1", version="é 中 𝄞")  # valid Unicode is preserved
        session.save(good, 0)
        for what, bad in _bad_records("run-1").items():
            with pytest.raises(Invalid):
                session.save(bad, 1)
            assert session.load() == replace(good, revision=1), f"{what}: record changed"
    with runs.acquire("fresh") as session:
        for bad in _bad_records("fresh").values():
            with pytest.raises(Invalid):
                session.save(bad, 0)
        with pytest.raises(NotFound):
            session.load()
    assert stored(store, "fresh") is None


def test_data_bytes_are_exempt_and_round_trip(runs: RunStore) -> None:
    every_byte = bytes(range(256)) * 3 + b"\xed\xa0\x80"  # an encoded surrogate, as bytes
    with runs.acquire("run-1") as session:
        session.save(ordinary_record("run-1", data=every_byte), 0)
        loaded = session.load()
    assert loaded.scopes[ROOT].nodes["fetch"].outputs[0].data == every_byte


# Formats --------------------------------------------------------------------------------


def test_format_1_loads_and_is_saved_as_format_2(runs: RunStore, store: Store) -> None:
    plant(store, row("legacy", format1_json("legacy", 3), revision=3, fmt=1))
    before = stored(store, "legacy")
    assert before is not None
    assert before.stored_format == 1
    with runs.acquire("legacy") as session:
        loaded = session.load()
        assert (loaded.format, loaded.revision, loaded.version) == (1, 3, "old")
        assert loaded.scopes[ROOT].nodes["fetch"].outputs[0].data == RAW
        assert session.save(loaded, 3) == 4
        upgraded = session.load()
        assert upgraded == replace(loaded, format=RUN_FORMAT, revision=4)
        # Now format 2, it can take incremental fields.
        assert session.save(streaming_record("legacy"), 4) == 5
    after = stored(store, "legacy")
    assert after is not None
    assert after.stored_format == RUN_FORMAT == after.record.format
    assert after.created_ns == before.created_ns
    assert after.updated_ns >= before.updated_ns


def test_unreadable_records_are_refused_on_load_and_listed_with_an_error(
    runs: RunStore, store: Store
) -> None:
    stream = {"s": {"Scope": ROOT, "NodeID": "n", "Key": "k", "Group": "g", "Generation": 1}}
    newer = format1_json("newer", 1).replace(b'"Format": 1', b'"Format": 3')
    planted = {
        "stream-in-format-1": (format1_json("stream-in-format-1", 1, Streams=stream), 1, Corrupt),
        "newer": (newer, 3, RecordsNewer),
        "not-utf8": (b'{"Format": 2, "RunID": "not-utf8\xff"}', 2, Corrupt),
        "surrogate": (format1_json("surrogate", 1).replace(b'"old"', b'"\\ud800"'), 1, Corrupt),
        "not-json": (b"{", 2, Corrupt),
        "wrong-run": (format1_json("someone-else", 1), 1, Corrupt),
        "wrong-revision": (format1_json("wrong-revision", 7), 1, Corrupt),
    }
    for run_id, (data, fmt, _) in planted.items():
        plant(store, row(run_id, data, fmt=fmt))
    for run_id, (_, _, error) in planted.items():
        with runs.acquire(run_id) as session, pytest.raises(error):
            session.load()
        with pytest.raises(error):
            stored(store, run_id)
    # Never overwrite a newer format, even with the right revision: it would drop fields.
    with runs.acquire("newer") as session, pytest.raises(RecordsNewer):
        session.save(ordinary_record("newer"), 1)
    raw = view(store, None, lambda tx: tx.run_records(RunQuery(limit=0)))
    assert {s.record.run_id for s in raw} == set(planted)
    assert all(s.error for s in raw), [s for s in raw if not s.error]
    newer_row = next(s for s in raw if s.record.run_id == "newer")
    assert (newer_row.stored_format, newer_row.record.revision) == (3, 1)
    assert view(store, None, lambda tx: tx.count_run_records(RunQuery())) == len(planted)
