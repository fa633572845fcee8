"""Identity and records (checklist §1, ID): IDs, revisions, the update check
order, backend-owned fields and copy isolation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from storage import Conflict, Invalid, NotFound, OutcomeKind, Scope, Store, StoredEvent, Tx, seconds

from ..support import (
    FakeClock,
    fails,
    get_execution,
    get_work,
    ids,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    outcome,
    payload,
    put_works,
    raises,
    start_attempt,
    tx,
)
from ._helpers import COMPLETED, FAILED, READY, RUNNING, X_COMPLETED, terminate

# ---------------------------------------------------------------------------------
# 1. Identity and records (ID)
# ---------------------------------------------------------------------------------


def test_empty_ids_rejected(store: Store, clock: FakeClock) -> None:
    """ID-02: every record with an empty ID is refused with Invalid and nothing is
    written."""
    start_attempt(store)

    def check(t: Tx) -> None:
        t.put_work(make_work("w2"))
        raises(Invalid, lambda: t.put_work(make_work("")), "ID-02 empty Work ID")
        raises(Invalid, lambda: t.accept_event(make_event("")), "ID-02 empty Event ID")
        raises(Invalid, lambda: t.put_scope(make_scope("")), "ID-02 empty Scope ID")
        raises(
            Invalid,
            lambda: t.put_execution(make_execution("", "w2", 1)),
            "ID-02 empty Execution ID",
        )
        raises(Invalid, lambda: t.put_timer(make_timer("", t.now)), "ID-02 empty Timer ID")
        raises(Invalid, lambda: t.put_wait(make_wait("", "w1", "x1")), "ID-02 empty Wait ID")

    tx(store, check)

    def listed(t: Tx) -> list[str]:
        return [
            *ids(t.works()),
            *ids(t.events()),
            *ids(t.scopes()),
            *ids(t.executions()),
            *ids(t.timers()),
            *ids(t.waits()),
        ]

    assert "" not in tx(store, listed), "ID-02: a record with an empty ID was stored"


def test_five_primitives(store: Store, clock: FakeClock) -> None:
    """ID-01, O-06: a Tx writes exactly five primitives (Work, Event, Execution,
    Timer/Wait, Scope); leases, outcomes, routes and keys are fields changed through
    them, and there is no direct wake operation."""

    def surface(t: Tx) -> tuple[list[str], list[str]]:
        names = [name for name in dir(t) if not name.startswith("_")]
        # put_run_record writes the other contract on the same Tx (durable-run-records.txt:
        # one DurableRunRecord per run, owned by a Session), not a coordination primitive.
        puts = sorted(
            name
            for name in names
            if name.startswith(("put_", "accept_")) and name != "put_run_record"
        )
        return puts, [name for name in names if "wake" in name or "delete_work" in name]

    puts, extra = tx(store, surface)
    assert puts == [
        "accept_event",
        "put_execution",
        "put_scope",
        "put_timer",
        "put_wait",
        "put_work",
    ], f"ID-01: a Tx creates records other than the five primitives: {puts}"
    assert extra == [], f"O-06/ID-13: a Tx exposes a wake or Work delete: {extra}"


def test_ids_stored_verbatim(store: Store, clock: FakeClock) -> None:
    """ID-02: caller-allocated IDs are stored verbatim, never generated or normalised."""
    work_id, scope_id, execution_id, event_id = (
        " Work/\u00dcn\u00efcode 1 ",
        "Scope:Mixed.Case",
        "X#1/attempt",
        "EVT 0001",
    )

    def write(t: Tx) -> None:
        t.put_scope(make_scope(scope_id))
        t.put_work(make_work(work_id, scope_id=scope_id))
        t.put_execution(make_execution(execution_id, work_id))
        t.accept_event(make_event(event_id, work_id=work_id))

    tx(store, write)

    def read(t: Tx) -> tuple[str, str, str, str, list[str]]:
        return (
            t.work(work_id).id,
            t.scope(scope_id).id,
            t.execution(execution_id).work_id,
            t.event(event_id).event.work_id,
            ids(t.works()),
        )

    assert tx(store, read) == (work_id, scope_id, work_id, work_id, [work_id]), (
        "ID-02: an ID was rewritten or normalised"
    )


def test_ids_never_reused(store: Store, clock: FakeClock) -> None:
    """ID-03: creating a Work or Execution whose ID exists, even terminal, conflicts."""
    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, COMPLETED))
    put_works(store, make_work("w2"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1")),
        "ID-03 Work ID reused after the Work became terminal",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(make_execution("x1", "w2", 1)),
        "ID-03 Execution ID reused for another Work",
    )
    assert get_work(store, "w1").state == COMPLETED, "ID-03: the terminal Work was replaced"
    assert get_execution(store, "x1").work_id == "w1", "ID-03: the Execution was replaced"


def test_create_if_absent(store: Store, clock: FakeClock) -> None:
    """ID-04: revision 0 creates with revision 1; revision 0 on an existing ID
    conflicts and leaves the record unchanged."""
    (created,) = put_works(store, make_work("w1"))
    assert created.revision == 1, f"ID-04: first revision is {created.revision}, expected 1"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1", state=READY, context=payload())),
        "ID-04 create over an existing Work",
    )
    assert get_work(store, "w1") == created, "ID-04: a refused create changed the record"


def test_revisions(store: Store, clock: FakeClock) -> None:
    """Scenario "revisions" (ID-04, ID-05, SC-01, T-06): exact revision or Conflict,
    +1 per write, retry with re-read state succeeds; for Work, Scope, Execution and
    Timer."""
    (w1,) = put_works(store, make_work("w1"))
    w2 = tx(store, lambda t: t.put_work(replace(w1, state=RUNNING)))
    assert w2.revision == w1.revision + 1 == 2, (
        f"revisions: Work revision went {w1.revision} -> {w2.revision}, expected 1 -> 2"
    )
    fails(store, Conflict, lambda t: t.put_work(replace(w1, state=FAILED)), "revisions stale")
    fails(store, Conflict, lambda t: t.put_work(replace(w2, revision=9, state=FAILED)), "revisions")
    assert get_work(store, "w1") == w2, "revisions: a stale update changed the Work"
    w3 = tx(store, lambda t: t.put_work(replace(t.work("w1"), state=FAILED)))
    assert (w3.revision, w3.state) == (3, FAILED), "revisions: retry with re-read state failed"

    s1 = tx(store, lambda t: t.put_scope(make_scope("s1")))
    s2 = tx(store, lambda t: t.put_scope(replace(s1, name="renamed")))
    assert (s1.revision, s2.revision) == (1, 2), "revisions: Scope revisions are not 1, 2"
    fails(store, Conflict, lambda t: t.put_scope(replace(s1, name="stale")), "revisions Scope")
    assert tx(store, lambda t: t.scope("s1")) == s2, "revisions: a stale update changed the Scope"

    put_works(store, make_work("w-x"))
    x1 = tx(store, lambda t: t.put_execution(make_execution("x1", "w-x")))
    x2 = tx(store, lambda t: t.put_execution(replace(x1, trace_id="trace-1")))
    assert (x1.revision, x2.revision) == (1, 2), "revisions: Execution revisions are not 1, 2"
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(replace(x1, trace_id="stale")),
        "revisions Execution",
    )
    assert get_execution(store, "x1") == x2, "revisions: a stale update changed the Execution"

    t1 = tx(store, lambda t: t.put_timer(make_timer("t1", clock() + seconds(60))))
    t2 = tx(store, lambda t: t.put_timer(replace(t1, fire_at=t1.fire_at + 1)))
    assert (t1.revision, t2.revision) == (1, 2), "revisions: Timer revisions are not 1, 2"
    fails(store, Conflict, lambda t: t.put_timer(replace(t1, purpose="x")), "revisions Timer")
    assert tx(store, lambda t: t.timer("t1")) == t2, "revisions: a stale update changed the Timer"


def test_update_check_order(store: Store, clock: FakeClock) -> None:
    """ID-05, ID-11 (lead rule): an update is checked for a missing record (NotFound),
    then its revision (Conflict), then the transition/immutability rules (Invalid)."""
    fails(
        store,
        NotFound,
        lambda t: t.put_work(replace(make_work("ghost"), revision=3)),
        "check order: update of a missing Work",
    )
    (w,) = put_works(store, make_work("w1"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(w, revision=5, kind="conduit.other", state=COMPLETED)),
        "check order: wrong revision and an invalid change",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(w, kind="conduit.other")),
        "check order: current revision and an invalid change",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_execution(replace(make_execution("ghost", "w1"), revision=2)),
        "check order: update of a missing Execution",
    )
    x = tx(store, lambda t: t.put_execution(make_execution("x1", "w1")))
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(
            replace(x, revision=4, state=X_COMPLETED, outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "check order: Execution wrong revision and an invalid transition",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(
            replace(x, state=X_COMPLETED, outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "check order: Execution pending -> completed",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(replace(make_scope("ghost"), revision=2)),
        "check order: update of a missing Scope",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_timer(replace(make_timer("ghost", clock()), revision=2)),
        "check order: update of a missing Timer",
    )


def test_backend_owned_fields_ignored(store: Store, clock: FakeClock) -> None:
    """ID-06, Q-08: revision, timestamps and latest_executor in the input are ignored;
    created time is the creating tx's now and never changes; updated time is the
    writing tx's now."""
    forged = replace(make_work("w1"), latest_executor="forged", created_at=5, updated_at=6)
    created, first_now = tx(store, lambda t: (t.put_work(forged), t.now))
    assert (created.created_at, created.updated_at) == (first_now, first_now), (
        "ID-06: Work timestamps were taken from the caller, not from tx.now"
    )
    assert created.latest_executor == "", "ID-06: a writer's latest_executor was stored"
    clock.advance(seconds=7)
    update = replace(created, state=RUNNING, created_at=1, updated_at=2, latest_executor="x")
    updated, second_now = tx(store, lambda t: (t.put_work(update), t.now))
    assert second_now > first_now, "ID-06: tx.now did not follow the clock"
    assert (updated.created_at, updated.updated_at) == (first_now, second_now), (
        "ID-06: an update changed created_at or did not set updated_at to tx.now"
    )
    assert get_work(store, "w1") == updated, "ID-06: the returned Work differs from the stored"

    def others(t: Tx) -> list[tuple[int, int]]:
        scope = t.put_scope(replace(make_scope("s1"), created_at=3, updated_at=4))
        timer = t.put_timer(replace(make_timer("t1", t.now), created_at=3, updated_at=4))
        execution = t.put_execution(
            replace(make_execution("x1"), created_at=3, updated_at=4, started_at=5, finished_at=6)
        )
        stored, _ = t.accept_event(replace(make_event("e1"), received_at=7))
        return [
            (scope.created_at, scope.updated_at),
            (timer.created_at, timer.updated_at),
            (execution.created_at, execution.updated_at),
            (stored.event.received_at, stored.event.received_at),
        ]

    clock.advance(seconds=1)
    stamps = tx(store, others)
    now = clock()
    assert stamps == [(now, now)] * 4, f"ID-06: forged timestamps were kept: {stamps}"
    execution = get_execution(store, "x1")
    assert (execution.started_at, execution.finished_at) == (0, 0), (
        "ID-06: a writer's started_at/finished_at was stored"
    )


def _try_mutate(fn: Callable[[], object]) -> None:
    """Mutate a returned value if its type allows it (read-only mappings may refuse)."""
    with contextlib.suppress(TypeError, AttributeError):
        fn()


def test_copy_isolation(store: Store, clock: FakeClock) -> None:
    """Scenario "copy isolation" (ID-07, KV-04, SC-04): mutating a caller object after
    the write, or a returned record, map or list, never changes stored state."""
    config: dict[str, Any] = {"retries": 3, "labels": ["a", "b"]}
    routes: list[Any] = [{"match": "github.*", "to": ["x"]}]
    secret_refs = ["vault:token"]
    written = tx(
        store,
        lambda t: t.put_scope(
            Scope(
                id="s1",
                config=config,
                routes=tuple(routes),
                secret_refs=tuple(secret_refs),
            )
        ),
    )
    config["retries"] = 99
    config["labels"].append("c")
    routes[0]["to"].append("y")
    secret_refs.append("vault:other")
    _try_mutate(lambda: written.config["labels"].append("w"))
    _try_mutate(lambda: written.routes[0]["to"].append("w"))

    expected_config = {"retries": 3, "labels": ["a", "b"]}
    expected_routes = ({"match": "github.*", "to": ["x"]},)
    first = tx(store, lambda t: t.scope("s1"))
    assert dict(first.config) == expected_config, (
        f"copy isolation: the stored Scope config aliases the caller's map: {first.config}"
    )
    assert first.routes == expected_routes, "copy isolation: stored routes alias the caller's"
    assert first.secret_refs == ("vault:token",), "copy isolation: secret refs aliased"

    _try_mutate(lambda: first.config.__setitem__("retries", 42))
    _try_mutate(lambda: first.config["labels"].append("z"))
    _try_mutate(lambda: first.routes[0]["to"].append("z"))
    second = tx(store, lambda t: t.scope("s1"))
    assert dict(second.config) == expected_config, (
        "copy isolation: mutating a returned Scope changed the stored config"
    )
    assert second.routes == expected_routes, (
        "copy isolation: mutating a returned Scope changed the stored routes"
    )

    put_works(store, make_work("w1"), make_work("w2"))

    def lists(t: Tx) -> tuple[int, int, int]:
        works = t.works()
        works.clear()
        t.kv_put("ns", "k", b"v")
        entries = t.kv_list("ns")
        entries.clear()
        events = t.events()
        events.append(cast(StoredEvent, None))
        return len(t.works()), len(t.kv_list("ns")), len(t.events())

    assert tx(store, lists) == (2, 1, 0), "copy isolation: a returned list aliases stored state"
