"""Reads of a list of Work at once: each listed Work's latest attempt, Timers and Waits
(what a console page shows beside its rows, in one read per kind of record)."""

from __future__ import annotations

from dataclasses import replace

import storage
from storage import Invalid, OutcomeKind, Store, Tx, seconds

from ..support import (
    ids,
    make_execution,
    make_timer,
    make_wait,
    make_work,
    outcome,
    park,
    raises,
    start_attempt,
    tx,
)
from ._helpers import X_FAILED, X_PARKED, terminate


def _three_work(store: Store) -> None:
    """w1: attempts 1 (failed) and 2 (parked on wt1, with a timeout timer t1);
    w2: attempt 1 failed, a retry timer t2; w3: never attempted; w4: one attempt, a
    deleted timer t4."""
    start_attempt(store, work_id="w1", execution_id="x1")

    def first(t: Tx) -> None:
        terminate(t, "x1", X_FAILED, None)
        t.put_execution(make_execution("x2", "w1", 2))
        t.put_work(make_work("w2"))
        t.put_execution(make_execution("x3", "w2", 1))
        t.put_work(make_work("w3"))
        t.put_work(make_work("w4"))
        t.put_execution(make_execution("x4", "w4", 1))
        t.put_timer(make_timer("t4", t.now + seconds(60), work_id="w4", purpose="retry"))

    tx(store, first)

    def second(t: Tx) -> None:
        t.claim("x2", "runner-a", t.now + seconds(30))
        t.put_timer(make_timer("t1", t.now + seconds(600), work_id="w1", purpose="timeout"))
        park(t, "x2", make_wait("wt1", "w1", "x2", timeout_timer_id="t1"))
        t.claim("x3", "runner-b", t.now + seconds(30))
        boom = outcome(OutcomeKind.FAILED, "boom")
        t.put_execution(replace(t.execution("x3"), state=X_FAILED, outcome=boom))
        t.put_timer(make_timer("t2", t.now + seconds(5), work_id="w2", purpose="retry"))
        t.delete_timer("t4", t.timer("t4").revision)

    tx(store, second)


def test_latest_executions_gives_each_listed_work_its_highest_attempt(store: Store) -> None:
    _three_work(store)

    def read(t: Tx) -> dict[str, tuple[str, int, str]]:
        latest = t.latest_executions(["w1", "w2", "w3", "w4", "nope"])
        return {w: (x.id, x.attempt, x.state.value) for w, x in latest.items()}

    assert tx(store, read) == {
        "w1": ("x2", 2, X_PARKED.value),
        "w2": ("x3", 1, X_FAILED.value),
        "w4": ("x4", 1, "pending"),
    }
    latest = tx(store, lambda t: t.latest_executions(["w2"]))
    assert latest["w2"].outcome is not None
    assert latest["w2"].outcome.message == "boom"


def test_timers_of_lists_the_live_timers_of_the_listed_work_only(store: Store) -> None:
    _three_work(store)
    assert ids(tx(store, lambda t: t.timers_of(["w1", "w2", "w4"]))) == ["t1", "t2"]
    assert ids(tx(store, lambda t: t.timers_of(["w2"]))) == ["t2"]
    assert tx(store, lambda t: t.timers_of(["w3", "nope"])) == []


def test_waits_of_lists_every_wait_of_the_listed_work(store: Store) -> None:
    _three_work(store)
    waits = tx(store, lambda t: t.waits_of(["w2", "w1"]))
    assert [(w.id, w.execution_id, w.state.value) for w in waits] == [("wt1", "x2", "active")]
    assert tx(store, lambda t: t.waits_of(["w2", "w3"])) == []


def test_list_reads_see_the_transactions_own_writes(store: Store) -> None:
    """Written and read in one transaction: the ORM's write-behind buffer must not hide
    a fresh attempt, Timer or Wait from a set read."""
    _three_work(store)

    def write_then_read(t: Tx) -> tuple[int, list[str], list[str]]:
        t.put_work(make_work("w5"))
        t.put_execution(make_execution("x5", "w5", 1))
        t.put_timer(make_timer("t5", t.now + seconds(9), work_id="w5"))
        return (
            t.latest_executions(["w5"])["w5"].attempt,
            ids(t.timers_of(["w5"])),
            ids(t.waits_of(["w1"])),
        )

    assert tx(store, write_then_read) == (1, ["t5"], ["wt1"])


def test_list_reads_take_an_empty_list_and_refuse_a_bare_string(store: Store) -> None:
    _three_work(store)

    def check(t: Tx) -> None:
        assert t.latest_executions([]) == {}
        assert t.timers_of(()) == []
        assert t.waits_of([]) == []
        assert list(t.latest_executions(["w1", "w1"])) == ["w1"]
        raises(Invalid, lambda: t.latest_executions("w1"), "a bare string")
        raises(Invalid, lambda: t.timers_of([""]), "an empty ID")
        raises(Invalid, lambda: t.waits_of(["w\x00"]), "a NUL in an ID")

    tx(store, check)


def test_list_reads_answer_in_a_view(store: Store) -> None:
    _three_work(store)
    latest = storage.view(store, None, lambda t: t.latest_executions(["w1", "w2"]))
    assert {w: x.id for w, x in latest.items()} == {"w1": "x2", "w2": "x3"}
    assert ids(storage.view(store, None, lambda t: t.timers_of(["w1", "w2"]))) == ["t1", "t2"]


def test_list_reads_cover_more_work_than_one_query_takes(store: Store) -> None:
    """More IDs than one statement's parameter cap (chunked on the ORM backend)."""
    many = [f"m{i:05d}" for i in range(30_050)]

    def fill(t: Tx) -> None:
        for work_id in ("m00000", "m30049"):
            t.put_work(make_work(work_id))
            t.put_execution(make_execution(f"x-{work_id}", work_id, 1))

    tx(store, fill)
    latest = tx(store, lambda t: t.latest_executions(many))
    assert sorted(latest) == ["m00000", "m30049"]
