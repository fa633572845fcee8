"""The identifier rule on every reference field (issue 20): an Event's Work and
causation, its recorded Scope, a Timer's Work and its template Event's, a Wait's Work,
attempt and timeout Timer, an Execution's Work and executor, a Scope's parent. Each is
at most 255 bytes of UTF-8 without NUL, refused as Invalid before anything is written,
on every backend (on PostgreSQL these failed at commit as Unavailable, or as a driver
error in the lookup). The columns' own list is ``tests/storage/orm/test_column_rules``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from storage import ExecutionState, Invalid, NotFound, Outcome, OutcomeKind, Store, Tx

from ..support import (
    FakeClock,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    start_attempt,
    tx,
)

# 256 bytes in 86 characters: inside PostgreSQL's varchar(255), over the byte rule.
BAD = {"over-in-bytes": "€" * 85 + "x", "over-in-characters": "x" * 256, "nul": "w\x00"}

Write = Callable[[Tx, str], object]
Written = Callable[[Tx], object]

# field -> (the write carrying ``bad`` there, what that write would have added)
CASES: dict[str, tuple[Write, Written]] = {
    "event-work_id": (
        lambda t, bad: t.accept_event(make_event("e2", work_id=bad)),
        lambda t: [s.event.id for s in t.events()],
    ),
    "event-causation_id": (
        lambda t, bad: t.accept_event(make_event("e2", causation_id=bad)),
        lambda t: [s.event.id for s in t.events()],
    ),
    "event-scope": (
        lambda t, bad: t.set_event_scope("e1", bad),
        lambda t: t.event("e1").scope_id,
    ),
    "timer-work_id": (
        lambda t, bad: t.put_timer(make_timer("t2", work_id=bad)),
        lambda t: [timer.id for timer in t.timers()],
    ),
    "timer-template-work_id": (
        lambda t, bad: t.put_timer(
            make_timer("t2", template=make_event("t2-fire", source="core.timer", work_id=bad))
        ),
        lambda t: [timer.id for timer in t.timers()],
    ),
    "timer-template-causation_id": (
        lambda t, bad: t.put_timer(
            make_timer("t2", template=make_event("t2-fire", source="core.timer", causation_id=bad))
        ),
        lambda t: [timer.id for timer in t.timers()],
    ),
    "wait-work_id": (
        lambda t, bad: park(t, "x1", make_wait("wt2", work_id=bad)),
        lambda t: ([w.id for w in t.waits()], t.execution("x1").state),
    ),
    "wait-execution_id": (
        lambda t, bad: park(t, "x1", make_wait("wt2", execution_id=bad)),
        lambda t: ([w.id for w in t.waits()], t.execution("x1").state),
    ),
    "wait-timeout_timer_id": (
        lambda t, bad: park(t, "x1", make_wait("wt2", timeout_timer_id=bad)),
        lambda t: ([w.id for w in t.waits()], t.execution("x1").state),
    ),
    "execution-work_id": (
        lambda t, bad: t.put_execution(make_execution("x2", bad)),
        lambda t: [x.id for x in t.executions()],
    ),
    "execution-executor": (
        lambda t, bad: t.put_execution(make_execution("x2", "w2", executor=bad)),
        lambda t: [x.id for x in t.executions()],
    ),
    "scope-parent_id": (
        lambda t, bad: t.put_scope(make_scope("s2", parent_id=bad)),
        lambda t: [s.id for s in t.scopes()],
    ),
}


def _records(store: Store) -> None:
    """w1 with a claimed attempt x1 (for Waits), Work w2, Event e1, Scope s1."""
    start_attempt(store)

    def fn(t: Tx) -> None:
        t.put_work(make_work("w2"))
        t.accept_event(make_event("e1"))
        t.put_scope(make_scope("s1"))

    tx(store, fn)


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("field", CASES, ids=CASES.keys())
def test_it_refuses_a_reference_the_identifier_rule_forbids_with_nothing_written(
    store: Store, clock: FakeClock, field: str, bad: str
) -> None:
    write, written = CASES[field]
    _records(store)
    before = tx(store, written)

    with pytest.raises(Invalid):
        tx(store, lambda t: write(t, bad))

    assert tx(store, written) == before


def test_it_takes_every_reference_at_the_limit(store: Store, clock: FakeClock) -> None:
    at_limit = "€" * 85  # 255 bytes of UTF-8

    def fn(t: Tx) -> None:
        t.put_work(make_work(at_limit))
        t.put_scope(make_scope(at_limit))
        t.put_scope(make_scope("s2", parent_id=at_limit))
        t.accept_event(make_event(at_limit, delivery_id="d1", work_id=at_limit))
        t.accept_event(make_event("e2", work_id=at_limit, causation_id=at_limit))
        t.set_event_scope("e2", at_limit)
        t.put_timer(make_timer("t1", work_id=at_limit))
        t.put_execution(make_execution(at_limit, at_limit, executor=at_limit))

    tx(store, fn)

    event = tx(store, lambda t: t.event("e2"))
    assert (event.event.causation_id, event.scope_id) == (at_limit, at_limit)
    assert tx(store, lambda t: t.execution(at_limit).executor) == at_limit
    assert tx(store, lambda t: [x.id for x in t.timers(at_limit)]) == ["t1"]


def test_the_rule_keeps_a_wait_at_the_limit(store: Store, clock: FakeClock) -> None:
    at_limit = "€" * 85
    start_attempt(store, work_id=at_limit, execution_id=at_limit)

    def fn(t: Tx) -> None:
        fire = make_event("fire", source="core.timer", work_id=at_limit)
        t.put_timer(make_timer(at_limit, work_id=at_limit, template=fire))
        park(t, at_limit, make_wait("wt1", at_limit, at_limit, timeout_timer_id=at_limit))

    tx(store, fn)

    wait = tx(store, lambda t: t.wait("wt1"))
    assert (wait.work_id, wait.execution_id, wait.timeout_timer_id) == (at_limit,) * 3


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_a_lookup_of_an_id_no_record_can_have_is_not_found(
    store: Store, clock: FakeClock, bad: str
) -> None:
    # No record can hold it, so none is found: the same answer on every backend
    # (PostgreSQL refused a NUL in the query as a driver error, i.e. Unavailable).
    _records(store)
    for read in (
        lambda t: t.work(bad),
        lambda t: t.event(bad),
        lambda t: t.execution(bad),
        lambda t: t.timer(bad),
        lambda t: t.wait(bad),
        lambda t: t.scope(bad),
        lambda t: t.event_by_delivery("github", bad),
    ):
        with pytest.raises(NotFound):
            tx(store, read)
    assert tx(store, lambda t: (t.timers(bad), t.waits(bad), t.executions(bad))) == ([], [], [])


def _fail(store: Store, message: str) -> None:
    lease = start_attempt(store)

    def fn(t: Tx) -> None:
        x = t.execution("x1")
        failed = Outcome(OutcomeKind.FAILED, message)
        t.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failed))

    tx(store, fn, lease=lease)


@pytest.mark.parametrize("message", ["boom\x00at the end", "boom \ud800"], ids=["nul", "surrogate"])
def test_a_failure_message_that_cannot_be_stored_is_invalid_with_nothing_written(
    store: Store, clock: FakeClock, message: str
) -> None:
    # A NUL failed on PostgreSQL at commit as Unavailable (its JSON cannot hold
    # \u0000; the message also feeds the indexed error_group), a surrogate everywhere
    # as a UnicodeEncodeError.
    with pytest.raises(Invalid, match="outcome message"):
        _fail(store, message)
    x = tx(store, lambda t: t.execution("x1"))
    assert (x.state, x.outcome) == (ExecutionState.RUNNING, None)
