"""The triage marks storage keeps on each Work (``Work.exhausted``, ``Work.error_group``)
and the selections built on them: the ``exhausted`` and ``error_group`` filters of a
WorkQuery, their facet counts, and ``error_groups``. On every backend.

The marks are settled at commit, so the order of the writes inside one transaction
does not matter; each case checks the marks against ``select_exhausted``, their
recomputation from the attempts and Timers.
"""

from __future__ import annotations

from dataclasses import replace

from storage import (
    ExecutionState,
    Invalid,
    Outcome,
    OutcomeKind,
    Store,
    Tx,
    WaitState,
    WorkOrder,
    WorkQuery,
    seconds,
)
from storage.meaning.series import select_exhausted
from storage.meaning.triage import NO_MESSAGE

from ..support import (
    FakeClock,
    fails,
    get_work,
    ids,
    make_execution,
    make_timer,
    make_wait,
    make_work,
    park,
    start_attempt,
    tx,
)
from ._helpers import CANCELLED, COMPLETED, FAILED, READY, X_COMPLETED, X_FAILED

OLDEST = WorkQuery(order=WorkOrder.CREATED_ASC)
CANCELLED_X = ExecutionState.CANCELLED


def _attempt(t: Tx, work_id: str, message: str | None, work_state: object = READY) -> None:
    """Run the Work's next attempt to failure (``message``) or completion (None), and
    move the Work to ``work_state``."""
    n = len(t.executions(work_id)) + 1
    x = t.put_execution(make_execution(f"{work_id}-x{n}", work_id, n))
    x = t.claim(x.id, "runner", t.now + seconds(30))
    if message is None:
        t.put_execution(replace(x, state=X_COMPLETED, outcome=Outcome(OutcomeKind.COMPLETED)))
    else:
        t.put_execution(replace(x, state=X_FAILED, outcome=Outcome(OutcomeKind.FAILED, message)))
    t.put_work(replace(t.work(work_id), state=work_state))


def _recomputed(t: Tx) -> list[str]:
    return ids(select_exhausted(OLDEST, t.works(), t.executions(), t.timers()))


def test_a_failed_attempt_left_without_a_timer_marks_its_work_exhausted(
    store: Store, clock: FakeClock
) -> None:
    tx(store, lambda t: [t.put_work(make_work(w)) for w in ("fresh", "ex", "backoff", "ok")])
    tx(store, lambda t: _attempt(t, "ex", "card 4242 declined"))

    def backoff(t: Tx) -> None:
        # The Timer is armed before the attempt fails, in the same transaction: the
        # marks are settled at commit, so the order cannot matter.
        t.put_timer(make_timer("retry", t.now + seconds(60), work_id="backoff"))
        _attempt(t, "backoff", "card 77 declined")

    tx(store, backoff)
    tx(store, lambda t: _attempt(t, "ok", None, COMPLETED))

    def read(t: Tx) -> dict[str, object]:
        return {
            "flagged": [w.id for w in t.works() if w.exhausted],
            "recomputed": _recomputed(t),
            "listed": ids(t.exhausted_works(OLDEST)),
            "query": ids(t.query_works(replace(OLDEST, exhausted=True))),
        }

    assert tx(store, read) == {
        "flagged": ["ex"],
        "recomputed": ["ex"],
        "listed": ["ex"],
        "query": ["ex"],
    }, "only ready Work with an ended attempt and no Timer is exhausted (not fresh, backoff)"


def test_the_exhausted_mark_follows_timers_and_new_attempts(store: Store, clock: FakeClock) -> None:
    tx(store, lambda t: t.put_work(make_work("w")))
    tx(store, lambda t: _attempt(t, "w", "boom"))
    seen = [get_work(store, "w").exhausted]
    timer = tx(store, lambda t: t.put_timer(make_timer("t", t.now + seconds(5), work_id="w")))
    seen.append(get_work(store, "w").exhausted)
    tx(store, lambda t: t.delete_timer("t", timer.revision))
    seen.append(get_work(store, "w").exhausted)
    tx(store, lambda t: t.put_execution(make_execution("w-x2", "w", 2)))
    seen.append(get_work(store, "w").exhausted)
    tx(store, lambda t: t.put_execution(replace(t.execution("w-x2"), state=CANCELLED_X)))
    seen.append(get_work(store, "w").exhausted)
    tx(store, lambda t: t.put_work(replace(t.work("w"), state=CANCELLED)))
    seen.append(get_work(store, "w").exhausted)
    assert seen == [True, False, True, False, True, False], (
        "exhausted while nothing will run it: a Timer or a pending attempt clears the "
        "mark, their end sets it again, a terminal Work never has it"
    )
    assert tx(store, _recomputed) == []


def test_the_error_group_is_the_latest_failure_normalised(store: Store, clock: FakeClock) -> None:
    tx(store, lambda t: [t.put_work(make_work(w)) for w in ("a", "b", "c", "d", "e")])
    tx(store, lambda t: _attempt(t, "a", "order 8812 declined (req 3f9a0c1e77)"))
    tx(store, lambda t: _attempt(t, "b", "order 17 declined (req 0b1c2d3e4f)", FAILED))
    tx(store, lambda t: _attempt(t, "c", ""))
    tx(store, lambda t: _attempt(t, "d", "timeout after 30s", FAILED))
    tx(store, lambda t: _attempt(t, "e", "timeout after 30s"))
    # e is retried: its new attempt is pending, so its latest attempt did not fail.
    tx(store, lambda t: t.put_execution(make_execution("e-x2", "e", 2)))
    groups = tx(store, lambda t: {w.id: w.error_group for w in t.works()})
    assert groups == {
        "a": "order <n> declined (req <hex>)",
        "b": "order <n> declined (req <hex>)",
        "c": NO_MESSAGE,
        "d": "timeout after <id>",
        "e": "",
    }


def test_triage_filters_compose_with_the_others_and_count_in_facets(
    store: Store, clock: FakeClock
) -> None:
    def create(t: Tx) -> None:
        for w, kind in (("a", "billing.charge"), ("b", "billing.charge"), ("c", "mail.send")):
            t.put_work(make_work(w, kind=kind))
        t.put_work(make_work("d", kind="billing.charge"))

    tx(store, create)
    tx(store, lambda t: _attempt(t, "a", "declined 1"))
    tx(store, lambda t: _attempt(t, "b", "declined 2", FAILED))
    tx(store, lambda t: _attempt(t, "c", "declined 3"))
    key = "declined <n>"

    def read(t: Tx) -> dict[str, object]:
        billing = WorkQuery(kind="billing.charge", order=WorkOrder.CREATED_ASC)
        facets = t.work_facets(WorkQuery(kind="billing.charge"))
        return {
            "exhausted billing": ids(t.query_works(replace(billing, exhausted=True))),
            "count": t.count_works(WorkQuery(exhausted=True)),
            "group billing": ids(t.query_works(replace(billing, error_group=key))),
            "group failed": t.count_works(WorkQuery(error_group=key, states=frozenset({FAILED}))),
            "facet exhausted": facets.exhausted,
            "facet groups": dict(facets.error_group),
            "count_exhausted": t.count_exhausted(WorkQuery(kind="mail.send")),
        }

    assert tx(store, read) == {
        "exhausted billing": ["a"],
        "count": 2,
        "group billing": ["a", "b"],
        "group failed": 1,
        "facet exhausted": 1,
        "facet groups": {key: 2, "": 1},
        "count_exhausted": 1,
    }


def test_error_groups_count_failed_and_exhausted_work_only(store: Store, clock: FakeClock) -> None:
    names = ("a", "b", "c", "d", "e")
    tx(
        store,
        lambda t: [
            t.put_work(make_work(w, kind="db.read" if w < "d" else "api.call")) for w in names
        ],
    )
    times = {}
    for w, message, state in (
        ("a", "db down at 10.0.0.7", FAILED),
        ("b", "db down at 10.0.0.9", READY),
        ("c", "db down at 10.0.0.1", READY),
        ("d", "quota 5 of 5", FAILED),
        ("e", "quota 9 of 9", READY),
    ):
        clock.advance(seconds(1))
        tx(store, lambda t, w=w, m=message, s=state: _attempt(t, w, m, s))
        times[w] = get_work(store, w).updated_at
    # c waits out a backoff Timer: failed last, but neither failed nor exhausted.
    tx(store, lambda t: t.put_timer(make_timer("retry-c", t.now + seconds(60), work_id="c")))
    groups = tx(store, lambda t: t.error_groups(WorkQuery()))
    assert [(g.key, g.count, g.failed, g.exhausted) for g in groups] == [
        ("db down at <n>", 2, 1, 1),
        ("quota <n> of <n>", 2, 1, 1),
    ]
    db = groups[0]
    assert dict(db.kinds) == {"db.read": 2}
    assert (db.first_seen, db.last_seen) == (times["a"], times["b"])
    assert [g.key for g in tx(store, lambda t: t.error_groups(WorkQuery(), limit=1))] == [
        "db down at <n>"
    ]
    narrowed = tx(store, lambda t: t.error_groups(WorkQuery(kind="api.call")))
    assert [(g.key, g.count) for g in narrowed] == [("quota <n> of <n>", 2)]
    fails(store, Invalid, lambda t: t.error_groups(WorkQuery(), limit=-1), "a negative limit")


def _ended_waiting(store: Store, work_id: str, types: list[str]) -> None:
    """``work_id``'s first attempt ends ``waiting`` (an executor that cannot resume)
    on a Wait for ``types`` with a timeout Timer, as the demo's support tickets do."""
    lease = start_attempt(store, work_id=work_id, execution_id=f"{work_id}-x1")

    def register(t: Tx) -> None:
        timer = t.put_timer(
            make_timer(
                f"{work_id}-timeout", t.now + seconds(30), work_id=work_id, purpose="timeout"
            )
        )
        wait = make_wait(
            f"{work_id}-wait", work_id, f"{work_id}-x1", types=types, timeout_timer_id=timer.id
        )
        park(t, f"{work_id}-x1", wait, terminal=True)

    tx(store, register, lease=lease)


def _time_out(t: Tx, work_id: str) -> None:
    """The runtime's timeout: the Timer fires, the Wait is cancelled, the Work is back
    to ready with no Timer (exhausted: nothing will run it again)."""
    timer = t.timer(f"{work_id}-timeout")
    t.fire_timer(timer.id, timer.revision)
    t.put_wait(replace(t.wait(f"{work_id}-wait"), state=WaitState.CANCELLED))
    t.put_work(replace(t.work(work_id), state=READY))


def test_a_timed_out_wait_groups_its_work_by_the_awaited_types(
    store: Store, clock: FakeClock
) -> None:
    _ended_waiting(store, "ticket-1", ["zendesk.ticket.replied"])
    _ended_waiting(store, "ticket-2", ["zendesk.ticket.replied"])
    _ended_waiting(store, "order-1", ["v2.order.paid", "v2.order.voided"])
    _ended_waiting(store, "still", ["zendesk.ticket.replied"])
    assert get_work(store, "ticket-1").error_group == "", "an active Wait groups nothing"
    clock.advance(31)
    tx(store, lambda t: _time_out(t, "ticket-1"))

    def reversed_order(t: Tx) -> None:
        # Settled at commit: the Work first, then the Wait, groups the same.
        t.put_work(replace(t.work("ticket-2"), state=READY))
        t.put_wait(replace(t.wait("ticket-2-wait"), state=WaitState.CANCELLED))
        timer = t.timer("ticket-2-timeout")
        t.fire_timer(timer.id, timer.revision)

    tx(store, reversed_order)
    tx(store, lambda t: _time_out(t, "order-1"))

    def read(t: Tx) -> dict[str, object]:
        return {
            "marks": {w.id: (w.exhausted, w.error_group) for w in t.works()},
            "recomputed": _recomputed(t),
            "groups": [(g.key, g.count, g.exhausted) for g in t.error_groups(WorkQuery())],
        }

    replied = "timed out waiting for zendesk.ticket.replied"
    either = "timed out waiting for v2.order.paid or v2.order.voided"
    assert tx(store, read) == {
        "marks": {
            "ticket-1": (True, replied),
            "ticket-2": (True, replied),
            "order-1": (True, either),
            "still": (False, ""),
        },
        "recomputed": ["order-1", "ticket-1", "ticket-2"],
        "groups": [(replied, 2, 2), (either, 1, 1)],
    }
    # Retried: the new attempt is the latest, which did not time out.
    tx(store, lambda t: t.put_execution(make_execution("ticket-1-x2", "ticket-1", 2)))
    assert get_work(store, "ticket-1").error_group == ""
